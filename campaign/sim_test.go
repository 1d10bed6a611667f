package campaign

import (
	"context"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/runner"
	"github.com/chaos-isr/chaos/sim"
)

// simPlan is a tiny campaign in simulation: 2 cells x 3 runs of 10 s with
// short timings, in store.
func simPlan(t *testing.T, store string) *Plan {
	t.Helper()
	base := runner.DefaultSpec()
	base.Store, base.Rate = store, 200
	base.Settings.ReplicaLagTimeMaxMs, base.Settings.SessionTimeoutMs = 2000, 2000
	spec := results.CampaignSpec{Acks: []results.Acks{1}, MinInsyncReplicas: []int{1}, Nemesis: []string{"none", "partition-leader"}, Runs: 3,
		TimeLimit: results.Duration(10 * time.Second), NemesisInterval: results.Duration(3 * time.Second),
		RunArgs: []string{"--replica-lag-time-max-ms", "2000", "--session-timeout-ms", "2000", "--rate", "200"}, Runtime: runner.RuntimeSim}
	plan, err := NewPlan(spec, FixedBase(base), sim.Validate)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// simExecutor runs every run in simulation, as chaos campaign --runtime
// sim does.
var simExecutor = InProcess{Version: "test", Run: sim.Run}

// TestCampaignSimDeterministic: a campaign in simulation is its seed's
// alone. Run one at a time and then three at a time, the same campaign
// seed gives the same campaign.json but for the times and the run
// directories' timestamps (everything the runs measured included, which
// a real campaign's repeat cannot promise), each run's history.jsonl and
// results.json byte for byte, and the record in the plan's order.
func TestCampaignSimDeterministic(t *testing.T) {
	var files []string
	var stores []string
	for _, parallel := range []int{1, 3} {
		store := t.TempDir()
		plan := simPlan(t, store)
		start := time.Now()
		var ended []string
		rec, dir, err := Run(context.Background(), plan, Options{Seed: 7, Executor: simExecutor, Parallel: parallel,
			Command: []string{"chaos", "campaign"}, Versions: map[string]string{"chaos": "test"},
			RunEnded: func(p Progress, r results.CampaignRun) {
				ended = append(ended, p.Cell.Name+"/"+string(rune('0'+r.Run)))
			}})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("parallel %d: %s", parallel, time.Since(start).Round(time.Millisecond))
		want := []string{"acks1_isr1_clean_none/1", "acks1_isr1_clean_none/2", "acks1_isr1_clean_none/3",
			"acks1_isr1_clean_partition-leader/1", "acks1_isr1_clean_partition-leader/2", "acks1_isr1_clean_partition-leader/3"}
		if strings.Join(ended, " ") != strings.Join(want, " ") {
			t.Errorf("parallel %d: runs ended in the order %v, want the plan's %v", parallel, ended, want)
		}
		if rec.Status != StatusComplete || *rec.ExitCode != 0 {
			t.Fatalf("parallel %d: status %s exit %d", parallel, rec.Status, *rec.ExitCode)
		}
		for _, c := range rec.Cells {
			for _, r := range c.Runs {
				if r.Verdict != VerdictValid || r.Sends == nil || r.Sends.OK == 0 {
					t.Errorf("parallel %d: %s run %d: %+v", parallel, c.Name, r.Run, r)
				}
			}
		}
		// The faults bit: scenario 1 loses writes acks=1 permits.
		if c := rec.Cells[1]; c.Summary.ExpectedSeen["lost-write"] == 0 || c.Runs[0].FaultWindows == 0 {
			t.Errorf("parallel %d: the partition-leader cell showed no permitted loss: %+v", parallel, c.Summary)
		}
		files = append(files, filepath.Join(dir, results.CampaignFile))
		stores = append(stores, store)
	}
	if a, b := timeless(t, files[0]), timeless(t, files[1]); a != b {
		t.Fatalf("campaign.json one at a time:\n%s\nthree at a time:\n%s", a, b)
	}
	recs := []results.Campaign{readCampaign(t, files[0]), readCampaign(t, files[1])}
	for i, c := range recs[0].Cells {
		for k, r := range c.Runs {
			other := recs[1].Cells[i].Runs[k]
			for _, f := range []string{results.HistoryFile, results.ResultsFile} {
				x := readFile(t, filepath.Join(stores[0], r.Dir, f))
				y := readFile(t, filepath.Join(stores[1], other.Dir, f))
				if x != y {
					t.Errorf("%s run %d: %s differs between the repeats", c.Name, r.Run, f)
				}
			}
		}
	}
}

// timeless is a campaign.json with only what differs between two
// executions of one simulated campaign blanked: the times, the stores
// (the record's, the cells' args', the run directories' timestamps) and
// the shards a merged record lists.
func timeless(t *testing.T, file string) string {
	t.Helper()
	rec := readCampaign(t, file)
	var zero time.Time
	rec.Start, rec.End, rec.Store, rec.Merged = zero, nil, "", nil
	for _, c := range rec.Cells {
		c.Args = withStore(c.Args, "STORE")
		for i := range c.Runs {
			r := &c.Runs[i]
			r.Start, r.Seconds = zero, 0
			r.Dir = path.Dir(r.Dir) + "/TIMESTAMP"
		}
	}
	return string(marshal(t, rec))
}

func readCampaign(t *testing.T, file string) results.Campaign {
	t.Helper()
	rec, err := results.ReadCampaign(file)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestCampaignSimRefusedInParallel: runs started beside one that refuses
// its cell are left out of the record, so a refused cell reads as it does
// one run at a time: one error with the reason, the other runs skipped.
func TestCampaignSimRefusedInParallel(t *testing.T) {
	store := t.TempDir()
	plan := simPlan(t, store)
	for i := range plan.Cells {
		plan.Cells[i].Spec.Settings.Fsync = "bogus"
	}
	rec, _, err := Run(context.Background(), plan, Options{Seed: 1, Executor: simExecutor, Parallel: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rec.Cells {
		if len(c.Runs) != 1 || c.Runs[0].Run != 1 || c.Runs[0].Verdict != VerdictError || c.Refused == "" ||
			!strings.Contains(c.Refused, "bogus") || c.Summary.Errors != 1 || c.Summary.Planned != 3 {
			t.Errorf("cell %s: %+v", c.Name, c)
		}
	}
	if *rec.ExitCode != 3 {
		t.Errorf("exit %d", *rec.ExitCode)
	}
}

// TestCampaignInProcessPanic: a run that panics is that run's error, with
// the panic and its stack in the run's log and the run directory it had
// started; the campaign goes on to the next run.
func TestCampaignInProcessPanic(t *testing.T) {
	store := t.TempDir()
	plan := simPlan(t, store)
	calls := 0
	ex := InProcess{Run: func(ctx context.Context, s runner.Spec, o runner.Options) (runner.Outcome, error) {
		if calls++; calls == 1 {
			o.Started(filepath.Join(store, "somewhere"), s.Seed, "")
			var m map[string]int
			m["boom"]++
		}
		return sim.Run(ctx, s, o)
	}}
	rec, dir, err := Run(context.Background(), plan, Options{Seed: 1, Executor: ex})
	if err != nil {
		t.Fatal(err)
	}
	r := rec.Cells[0].Runs[0]
	if r.Verdict != VerdictError || !strings.Contains(r.Error, "panicked: assignment to entry in nil map") || r.Dir != "somewhere" ||
		rec.Cells[0].Refused != "" || len(rec.Cells[0].Runs) != 3 || rec.Cells[0].Runs[1].Verdict != VerdictValid {
		t.Fatalf("cell after a panic: %+v", rec.Cells[0])
	}
	if log := readFile(t, filepath.Join(dir, r.Log)); !strings.Contains(log, "panic: assignment to entry in nil map") ||
		!strings.Contains(log, "campaign.TestCampaignInProcessPanic") {
		t.Errorf("the log of the run that panicked:\n%s", log)
	}
}

// TestCampaignSimInterrupted: runs going side by side are all stopped by
// the end of the context, recorded as interrupted (with the history so
// far in their directories), and nothing after them starts.
func TestCampaignSimInterrupted(t *testing.T) {
	plan := simPlan(t, t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	interrupted := 0
	rec, _, err := Run(ctx, plan, Options{Seed: 3, Executor: simExecutor, Parallel: 2,
		RunStarted: func(p Progress) {
			if p.N == 3 {
				cancel()
			}
		},
		Interrupted: func() { interrupted++ }})
	if err != nil {
		t.Fatal(err)
	}
	var runs []results.CampaignRun
	for _, c := range rec.Cells {
		runs = append(runs, c.Runs...)
	}
	if rec.Status != StatusInterrupted || *rec.ExitCode != 130 || interrupted != 1 || len(runs) != 3 {
		t.Fatalf("status %s exit %d, %d interrupts, runs %+v", rec.Status, *rec.ExitCode, interrupted, runs)
	}
	if last := runs[2]; last.Verdict != VerdictInterrupted || last.Dir == "" {
		t.Errorf("the run going when interrupted: %+v", last)
	}
}
