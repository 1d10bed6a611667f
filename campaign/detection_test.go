package campaign

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/runner"
	"github.com/chaos-isr/chaos/sim"
)

// detectionSpec is a tiny detection campaign in simulation: 3 runs of
// 20 s of ack-before-replicate's scenario (acks=-1, min.insync=2, the
// leader cut off every 5 s) and of the same cell without the bug, its
// control.
func detectionSpec() results.CampaignSpec {
	cell := results.CampaignCellSpec{Acks: -1, MinInsyncReplicas: 2, Nemesis: "partition-leader"}
	bugged := cell
	bugged.Bugs = []string{"ack-before-replicate"}
	return results.CampaignSpec{Cells: []results.CampaignCellSpec{bugged, cell}, Runs: 3,
		TimeLimit: results.Duration(20 * time.Second), NemesisInterval: results.Duration(5 * time.Second), Runtime: runner.RuntimeSim}
}

func detectionPlan(t *testing.T, store string) *Plan {
	t.Helper()
	base := runner.DefaultSpec()
	base.Store, base.Rate = store, 200
	plan, err := NewPlan(detectionSpec(), FixedBase(base), sim.Validate)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// TestCampaignDetectionSim: a detection campaign records, per cell, the
// runs that caught its bug, the anomalies that did, and the medians of the
// caught runs' first detections, each run's detection being a client
// operation of its history; the control cell has no false alarm; the
// record reads back the same; and the index page shows the detection
// matrix beside the run list.
func TestCampaignDetectionSim(t *testing.T) {
	store := t.TempDir()
	start := time.Now()
	rec, dir, err := Run(context.Background(), detectionPlan(t, store), Options{Seed: 5, Executor: simExecutor, Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("6 runs in %s", time.Since(start).Round(time.Millisecond))
	if testing.Verbose() {
		t.Logf("%+v", rec.Detection)
		for _, r := range rec.Cells[0].Runs {
			t.Logf("run %d %s %v %+v", r.Run, r.Verdict, r.Unexpected, r.Detection)
		}
	}
	if len(rec.Detection) != 2 {
		t.Fatalf("detection %+v", rec.Detection)
	}
	bugRow, control := rec.Detection[0], rec.Detection[1]
	if bugRow.Cell != "acksall_isr2_clean_partition-leader_bug-ack-before-replicate" || bugRow.Scenario != "acks=-1 isr=2 clean partition-leader" ||
		len(bugRow.Bugs) != 1 || bugRow.Bugs[0] != (results.CampaignBug{Name: "ack-before-replicate", Node: "broker"}) ||
		bugRow.Planned != 3 || bugRow.Runs != 3 || bugRow.Caught == 0 || bugRow.Anomalies["lost-write"] == 0 {
		t.Fatalf("the bug's row: %+v", bugRow)
	}
	if bugRow.Timed != bugRow.Caught || bugRow.MedianTime == nil || bugRow.MedianOps == nil ||
		*bugRow.MedianTime <= 0 || time.Duration(*bugRow.MedianTime) > 20*time.Second || *bugRow.MedianOps <= 0 {
		t.Fatalf("the bug's medians: %+v", bugRow)
	}
	if control.Bugs != nil || control.Runs != 3 || control.Caught != 0 || control.Anomalies != nil || control.Timed != 0 ||
		control.Scenario != "acks=-1 isr=2 clean partition-leader" {
		t.Fatalf("the control row: %+v", control)
	}
	// Each caught run's detection is the completion of a client operation
	// of its history, at its time; the median is one of them.
	medianSeen := false
	for _, r := range rec.Cells[0].Runs {
		if r.Verdict != VerdictInvalid {
			continue
		}
		d := r.Detection
		if d == nil {
			t.Fatalf("run %d is caught without a detection: %+v", r.Run, r)
		}
		ops, err := history.ReadFile(filepath.Join(store, r.Dir, results.HistoryFile))
		if err != nil {
			t.Fatal(err)
		}
		op := ops[d.Op]
		if op.Index != d.Op || op.Process < 0 || op.Type == history.Invoke || time.Duration(d.Time) != time.Duration(op.Time).Round(time.Millisecond) ||
			!strings.Contains(strings.Join(r.Unexpected, " "), d.Anomaly) {
			t.Errorf("run %d: detection %+v at %s", r.Run, d, op)
		}
		var n int64
		for _, o := range ops[:d.Op+1] {
			if o.Process >= 0 && o.Type != history.Invoke {
				n++
			}
		}
		if d.Ops != n {
			t.Errorf("run %d: %d ops to detection, the history says %d", r.Run, d.Ops, n)
		}
		medianSeen = medianSeen || (d.Time == *bugRow.MedianTime)
	}
	if !medianSeen {
		t.Errorf("the median time %s is no run's", time.Duration(*bugRow.MedianTime))
	}
	for _, r := range rec.Cells[1].Runs {
		if r.Verdict != VerdictValid || r.Detection != nil {
			t.Errorf("control run %d: %+v", r.Run, r)
		}
	}
	back := readCampaign(t, filepath.Join(dir, results.CampaignFile))
	if !reflect.DeepEqual(back.Detection, rec.Detection) || !reflect.DeepEqual(back.Cells[0].Runs[0].Detection, rec.Cells[0].Runs[0].Detection) ||
		!reflect.DeepEqual(back.Cells[0].Bugs, []string{"ack-before-replicate"}) {
		t.Errorf("campaign.json reads back\n%+v\nwrote\n%+v", back.Detection, rec.Detection)
	}
	if again := Detection(back.Cells); !reflect.DeepEqual(again, rec.Detection) {
		t.Errorf("recomputed from the record: %+v", again)
	}
	page := readFile(t, filepath.Join(dir, results.CampaignIndexFile))
	if i := strings.Index(page, `id="detection"`); i < 0 {
		t.Errorf("the index page has no detection matrix")
	} else {
		m := page[i:]
		m = m[:strings.Index(m, "</table>")]
		for _, want := range []string{"ack-before-replicate", "broker", "acks=-1 isr=2 clean partition-leader", "lost-write", "control"} {
			if !strings.Contains(m, want) {
				t.Errorf("the detection matrix lacks %q:\n%s", want, m)
			}
		}
	}
}

// TestCampaignDetectionMerge: the shards of a detection campaign merge
// into the detection record of the whole, recomputed from the merged
// runs.
func TestCampaignDetectionMerge(t *testing.T) {
	whole := t.TempDir()
	rec, _, err := Run(context.Background(), detectionPlan(t, whole), Options{Seed: 8, Executor: simExecutor, Parallel: 2})
	if err != nil {
		t.Fatal(err)
	}
	var shards []string
	planned := 0
	for k := 1; k <= 2; k++ {
		store := t.TempDir()
		plan := detectionPlan(t, store)
		plan.Shard.K, plan.Shard.N = k, 2
		part, _, err := Run(context.Background(), plan, Options{Seed: 8, Executor: simExecutor, Parallel: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(part.Detection) != 2 {
			t.Fatalf("shard %d/2: detection %+v", k, part.Detection)
		}
		planned += part.Detection[0].Planned + part.Detection[1].Planned
		shards = append(shards, store)
	}
	if planned != 6 {
		t.Errorf("the shards planned %d runs, not 6", planned)
	}
	merged, _, err := Merge(filepath.Join(t.TempDir(), "merged"), shards)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(merged.Detection, rec.Detection) {
		t.Errorf("merged detection\n%+v\nthe whole campaign's\n%+v", merged.Detection, rec.Detection)
	}
}

// TestCampaignDetectionAbsentWithoutBugs: a campaign that plants no bug
// has no detection record (campaign.json stays as it was).
func TestCampaignDetectionAbsentWithoutBugs(t *testing.T) {
	c := &results.CampaignCell{CampaignCellPlan: results.CampaignCellPlan{Name: "x"}}
	if d := Detection([]*results.CampaignCell{c}); d != nil {
		t.Errorf("a campaign without bugs has a detection record: %+v", d)
	}
}
