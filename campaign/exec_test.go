package campaign

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/internal/testbin"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/runner"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

// TestCampaignExecutorsAgree runs one tiny campaign (2 cells x 1 run of
// 5 s) in this process and as child processes, with one campaign seed,
// into one store: the two campaign.json files are the same byte for byte
// once what differs between any two executions is normalized: times,
// durations, the run directories' timestamps, and what the runs measured
// (send counts, availability, and the permitted anomalies they happened
// to show). The plan, seeds, verdicts, exit codes, forbidden and
// undecided anomalies, fault windows, logs and the model are compared as
// they are.
func TestCampaignExecutorsAgree(t *testing.T) {
	if testing.Short() {
		t.Skip("many simulated runs: make test runs it, make test-fast does not")
	}
	bin, err := testbin.Path()
	if err != nil {
		t.Fatal(err)
	}
	store := t.TempDir()
	runArgs := []string{"--replica-lag-time-max-ms", "2000", "--session-timeout-ms", "2000", "--rate", "200"}
	base := runner.DefaultSpec()
	base.Store, base.Binary, base.Rate = store, bin, 200
	base.Settings.ReplicaLagTimeMaxMs, base.Settings.SessionTimeoutMs = 2000, 2000
	spec := results.CampaignSpec{Nemesis: []string{"none", "pause"}, Runs: 1, TimeLimit: results.Duration(5 * time.Second),
		NemesisInterval: results.Duration(2 * time.Second), RunArgs: runArgs, Runtime: runner.RuntimeLocal}
	plan, err := NewPlan(spec, FixedBase(base))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, ex := range []struct {
		name string
		ex   Executor
	}{{"in-process", InProcess{Version: "test"}}, {"child", Child{Exe: bin}}} {
		start := time.Now()
		var ended []string
		rec, dir, err := Run(context.Background(), plan, Options{
			Seed: 7, Executor: ex.ex, Program: bin, Command: []string{"chaos", "campaign", "--seed", "7"},
			Versions: map[string]string{"chaos": "test"},
			RunEnded: func(p Progress, r results.CampaignRun) { ended = append(ended, r.Verdict) },
		})
		if err != nil {
			t.Fatalf("%s: %v", ex.name, err)
		}
		t.Logf("%s: %s, runs %v", ex.name, time.Since(start).Round(time.Second), ended)
		if rec.Status != StatusComplete || len(ended) != 2 {
			t.Fatalf("%s: status %s, runs ended %v", ex.name, rec.Status, ended)
		}
		for _, c := range rec.Cells {
			r := c.Runs[0]
			if r.Verdict == VerdictError || r.Dir == "" || r.Seed != RunSeed(7, c.Name, 1) {
				t.Errorf("%s: %s: %+v", ex.name, c.Name, r)
			}
			// The log is for people; both say where the run is and how
			// it ended.
			if log := readFile(t, filepath.Join(dir, r.Log)); !strings.Contains(log, "run "+filepath.Join(store, r.Dir)+"\n") ||
				!strings.Contains(log, "verdict: "+strings.ToUpper(r.Verdict)) {
				t.Errorf("%s: the run's log:\n%s", ex.name, log)
			}
		}
		if rec.Cells[1].Runs[0].FaultWindows == 0 {
			t.Errorf("%s: the pause cell scheduled no fault window", ex.name)
		}
		files[ex.name] = filepath.Join(dir, results.CampaignFile)
	}
	in, child := normalized(t, files["in-process"]), normalized(t, files["child"])
	if !bytes.Equal(in, child) {
		t.Fatalf("campaign.json in-process:\n%s\nas child processes:\n%s", in, child)
	}
}

// normalized is a campaign.json with what differs between two executions
// of one plan blanked, after checking that the record reads back into
// results.Campaign without losing a byte.
func normalized(t *testing.T, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var rec results.Campaign
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	if again := marshal(t, rec); !bytes.Equal(again, data) {
		t.Fatalf("%s does not survive results.Campaign:\n%s\nread back:\n%s", file, data, again)
	}
	var zero time.Time
	rec.Start, rec.End = zero, nil
	for _, c := range rec.Cells {
		if c.Summary.Availability != nil {
			c.Summary.Availability = new(float64)
		}
		c.Summary.ExpectedSeen = nil
		// What a run observed depends on its timing, which no two
		// executions share.
		c.Observed, c.Summary.Observed, c.Summary.ExpectedInstances, c.Summary.Recovery = "", nil, nil, nil
		for i := range c.Runs {
			r := &c.Runs[i]
			r.Start, r.Seconds = zero, 0
			r.Dir = path.Dir(r.Dir) + "/TIMESTAMP"
			if r.Sends != nil {
				r.Sends = &checker.OpCounts{}
			}
			r.Expected = nil
			r.Observed, r.ExpectedInstances, r.WindowsBit, r.Recovery = "", nil, 0, nil
		}
	}
	return marshal(t, rec)
}

func marshal(t *testing.T, rec results.Campaign) []byte {
	t.Helper()
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(data, '\n')
}

// executors are both executors, with the test's chaos binary.
func executors(t *testing.T) (string, []Executor) {
	t.Helper()
	bin, err := testbin.Path()
	if err != nil {
		t.Fatal(err)
	}
	return bin, []Executor{InProcess{Version: "test"}, Child{Exe: bin}}
}

// TestCampaignRefusedCell: a run refused before it starts anything (here
// a setting the runner refuses) refuses its cell: one error with the
// reason, the cell's other runs skipped, the next cell run; the same with
// either executor.
func TestCampaignRefusedCell(t *testing.T) {
	bin, exs := executors(t)
	for _, ex := range exs {
		base := runner.DefaultSpec()
		base.Store, base.Binary = t.TempDir(), bin
		base.Settings.Fsync = "bogus"
		plan, err := NewPlan(results.CampaignSpec{Nemesis: []string{"none", "pause"}, Runs: 3, TimeLimit: results.Duration(5 * time.Second),
			NemesisInterval: results.Duration(2 * time.Second)}, FixedBase(base))
		if err != nil {
			t.Fatal(err)
		}
		rec, _, err := Run(context.Background(), plan, Options{Seed: 1, Executor: ex})
		if err != nil {
			t.Fatal(err)
		}
		const why = `exit 3: settings.fsync: not an fsync policy, got "bogus"`
		for _, c := range rec.Cells {
			if len(c.Runs) != 1 || c.Runs[0].Verdict != VerdictError || c.Runs[0].ExitCode != 3 || c.Runs[0].Dir != "" ||
				!strings.HasPrefix(c.Runs[0].Error, why) || c.Refused != c.Runs[0].Error || c.Summary.Errors != 1 {
				t.Errorf("%T: cell %s: %+v", ex, c.Name, c)
			}
		}
		if *rec.ExitCode != 3 || rec.Status != StatusComplete {
			t.Errorf("%T: exit %d, status %s", ex, *rec.ExitCode, rec.Status)
		}
	}
}

// TestCampaignInterrupted: the end of the context stops the run going in
// order (and Kill at once), starts no other, and leaves no process behind;
// the record says interrupted and the exit code is 130; with either
// executor.
func TestCampaignInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("many simulated runs: make test runs it, make test-fast does not")
	}
	bin, exs := executors(t)
	for _, mode := range []string{"stop", "kill"} {
		for _, ex := range exs {
			base := runner.DefaultSpec()
			base.Store, base.Binary = t.TempDir(), bin
			plan, err := NewPlan(results.CampaignSpec{Nemesis: []string{"pause", "kill"}, Runs: 1, TimeLimit: results.Duration(time.Minute),
				NemesisInterval: results.Duration(2 * time.Second)}, FixedBase(base))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			kill := make(chan struct{})
			interrupted := 0
			start := time.Now()
			rec, _, err := Run(ctx, plan, Options{Seed: 1, Executor: ex, Kill: kill,
				RunStarted: func(Progress) {
					time.AfterFunc(4*time.Second, func() {
						cancel()
						if mode == "kill" {
							close(kill)
						}
					})
				},
				Interrupted: func() { interrupted++ },
			})
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s %T: stopped after %s: %+v", mode, ex, time.Since(start).Round(100*time.Millisecond), rec.Cells[0].Runs)
			r := rec.Cells[0].Runs
			if rec.Status != StatusInterrupted || *rec.ExitCode != 130 || interrupted != 1 || len(r) != 1 || r[0].Verdict != VerdictInterrupted ||
				r[0].Dir == "" || len(rec.Cells[1].Runs) != 0 {
				t.Fatalf("%T: %d interrupts, record %+v, runs %+v", ex, interrupted, rec, r)
			}
			if left := processesIn(t, base.Store); len(left) > 0 {
				t.Errorf("%T: processes left behind: %v", ex, left)
			}
		}
	}
}

// processesIn lists the processes whose command line names dir.
func processesIn(t *testing.T, dir string) []string {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var out []string
	for _, p := range procs {
		data, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(data), dir) {
			out = append(out, strings.ReplaceAll(string(data), "\x00", " "))
		}
	}
	return out
}
