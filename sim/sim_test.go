package sim

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/nemesis"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/runner"
)

// spec is a short simulated test in a store of the test's own: 3 brokers,
// acks=-1, min.insync.replicas=2, clean, with failure detection short
// enough for windows of a few seconds to move leaders.
func spec(t testing.TB, seed uint64, faults ...string) runner.Spec {
	s := runner.DefaultSpec()
	s.Runtime, s.Store, s.Seed = runner.RuntimeSim, t.TempDir(), seed
	s.TimeLimit, s.NemesisInterval, s.Faults = 20*time.Second, 4*time.Second, faults
	s.Settings.ReplicaLagTimeMaxMs, s.Settings.SessionTimeoutMs = 2000, 2000
	return s
}

func run(t testing.TB, s runner.Spec) runner.Outcome {
	t.Helper()
	o, err := Run(context.Background(), s, runner.Options{})
	if err != nil {
		t.Fatalf("seed %d: %v", s.Seed, err)
	}
	return o
}

func file(t testing.TB, o runner.Outcome, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(o.Dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReplay: the same seed and spec give the same history and results,
// byte for byte; ten seeds give ten different histories.
func TestReplay(t *testing.T) {
	faults := []string{"kill", "partition", "pause", "slow-follower"}
	a := run(t, spec(t, 7, faults...))
	b := run(t, spec(t, 7, faults...))
	for _, f := range []string{results.HistoryFile, results.ResultsFile} {
		if x, y := file(t, a, f), file(t, b, f); !bytes.Equal(x, y) || len(x) < 1000 {
			t.Errorf("%s differs between two runs of seed 7 (%d and %d bytes)", f, len(x), len(y))
		}
	}
	ops, err := history.ReadFile(filepath.Join(a.Dir, results.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	if windows := slices.IndexFunc(ops, func(op history.Op) bool { return strings.HasPrefix(op.F, "start-") }); windows < 0 {
		t.Fatal("no fault window in the replayed history")
	}

	seen := map[string]uint64{}
	for seed := uint64(1); seed <= 10; seed++ {
		s := spec(t, seed, faults...)
		s.TimeLimit = 10 * time.Second
		h := string(file(t, run(t, s), results.HistoryFile))
		if other, dup := seen[h]; dup {
			t.Errorf("seeds %d and %d gave the same history", other, seed)
		}
		seen[h] = seed
	}
}

// sweep runs n seeds of s, both cores at once, every run kept.
func sweep(t *testing.T, s runner.Spec, n int) []SweepRun {
	t.Helper()
	var seeds []uint64
	for i := 1; i <= n; i++ {
		seeds = append(seeds, uint64(i))
	}
	runs := Sweep(context.Background(), s, seeds, SweepOptions{Parallel: 2, KeepValid: true})
	if len(runs) != n {
		t.Fatalf("%d runs of %d", len(runs), n)
	}
	for _, r := range runs {
		if r.Err != nil || r.Outcome.Results == nil {
			t.Fatalf("seed %d: no verdict: %v", r.Seed, r.Err)
		}
	}
	return runs
}

func result(r SweepRun, name string) checker.Result {
	x, _ := r.Outcome.Results.Get(name)
	return x
}

// describe says what a run found, for failure messages.
func describe(r SweepRun) string {
	res := r.Outcome.Results
	var found []string
	for _, x := range res.Results {
		if x.Valid != checker.Valid {
			found = append(found, fmt.Sprintf("%s %s %d (%d forbidden)", x.Name, x.Valid, x.Count, x.Forbidden))
		}
	}
	return fmt.Sprintf("seed %d: %s, faults %v, unexpected %v, found %v (%s)", r.Seed, res.Valid, res.Faults, res.Unexpected, found, r.Outcome.Dir)
}

// The classic scenarios of docs/guarantees.md, in simulation: the
// losses each configuration permits are found in most seeds, and none
// where it promises none.

// TestScenario1: acks=1 with the leader cut off from its followers and
// the controller: writes only the old leader acknowledged are lost,
// which acks=1 permits.
func TestScenario1(t *testing.T) {
	s := spec(t, 0, "partition-leader")
	s.Acks, s.Settings.MinInsyncReplicas, s.NemesisInterval = 1, 1, 5*time.Second
	lost := 0
	for _, r := range sweep(t, s, 20) {
		lw := result(r, checker.LostWriteName)
		if r.Outcome.Verdict != checker.Valid || (lw.Valid == checker.Invalid && !lw.Expected) {
			t.Errorf("a loss acks=1 does not permit: %s", describe(r))
		}
		if lw.Valid == checker.Invalid {
			lost++
		}
	}
	if lost < 18 {
		t.Errorf("lost writes in %d of 20 seeds; want at least 90%%", lost)
	}
}

// scenario23 is scenarios 2 and 3: acks=-1, min.insync.replicas=1, the
// followers slowed until the ISR is the leader alone, then the leader
// killed.
func scenario23(t *testing.T, election string) []SweepRun {
	s := spec(t, 0, "slow-followers-kill-leader")
	s.Settings.MinInsyncReplicas, s.Settings.Election = 1, election
	s.TimeLimit, s.NemesisInterval = 25*time.Second, 8*time.Second
	s.Settings.ReplicaLagTimeMaxMs, s.Settings.SessionTimeoutMs = 1500, 1500
	return sweep(t, s, 10)
}

// TestScenario2: with unclean election a follower without the
// acknowledged writes becomes the leader: acknowledged, committed writes
// are lost, which unclean election permits.
func TestScenario2(t *testing.T) {
	lost := 0
	for _, r := range scenario23(t, "unclean") {
		lw := result(r, checker.LostWriteName)
		if r.Outcome.Verdict != checker.Valid {
			t.Errorf("unclean election permits every loss: %s", describe(r))
		}
		if lw.Valid == checker.Invalid && lw.Expected {
			lost++
		}
	}
	if lost < 8 {
		t.Errorf("acknowledged writes lost in %d of 10 seeds; want most", lost)
	}
}

// TestScenario3: the same with clean election loses nothing; the
// partition is unavailable until the leader returns.
func TestScenario3(t *testing.T) {
	for _, r := range scenario23(t, "clean") {
		lw := result(r, checker.LostWriteName)
		if r.Outcome.Verdict != checker.Valid || lw.Valid != checker.Valid || len(r.Outcome.Results.Faults) == 0 {
			t.Errorf("clean election: %s", describe(r))
		}
		if s := r.Outcome.Results.Ops["send"]; s.Fail+s.Info == 0 {
			t.Errorf("seed %d: no send failed while the partition had no leader: %+v", r.Seed, s)
		}
	}
}

// f1 are the fault kinds of class F1: every kind but those that destroy
// data (lose-unsynced, stop-followers-kill-leader, the disk faults).
func f1() []string {
	var out []string
	for _, f := range nemesis.Names() {
		if !nemesis.DestroysData([]string{f}) && !nemesis.NeedsGroup([]string{f}) && !nemesis.NeedsTxn([]string{f}) {
			out = append(out, f)
		}
	}
	return out
}

// TestScenario4: acks=-1, min.insync.replicas=2, clean election, every F1
// fault: no anomaly the configuration forbids, over many seeds.
func TestScenario4(t *testing.T) {
	n := 50
	if testing.Short() {
		n = 10
	}
	s := spec(t, 0, f1()...)
	s.Name, s.TimeLimit = "scenario4", 30*time.Second
	ran := map[string]bool{}
	for _, r := range sweep(t, s, n) {
		res := r.Outcome.Results
		if r.Outcome.Verdict != checker.Valid || len(res.Unexpected) > 0 || res.FaultClass != checker.FaultsF1 {
			t.Errorf("F1 under acks=-1 min.insync.replicas=2: %s", describe(r))
		}
		for _, f := range res.Faults {
			ran[f] = true
		}
	}
	if len(ran) < 10 {
		t.Errorf("only %d fault kinds ran over %d seeds: %v", len(ran), n, ran)
	}
}

// TestEveryFault runs each fault kind alone: it starts (recorded without
// an error, with the brokers it killed as the registry says), heals, and
// the run reaches a verdict that allows what the class of the fault
// permits.
func TestEveryFault(t *testing.T) {
	for _, f := range nemesis.Faults() {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			s := spec(t, 3, f.Name)
			if nemesis.NeedsGroup([]string{f.Name}) {
				s.SubVia = "subscribe"
			}
			if nemesis.NeedsTxn([]string{f.Name}) {
				s.Workload = "txn"
			}
			o := run(t, s)
			ops, err := history.ReadFile(filepath.Join(o.Dir, results.HistoryFile))
			if err != nil {
				t.Fatal(err)
			}
			starts, stops := 0, 0
			for _, op := range ops {
				switch {
				case op.Type == history.Info && op.F == "start-"+f.Name:
					starts++
					if op.Error != "" || len(op.Value.Targets) == 0 {
						t.Errorf("the window's start: %v %q", op.Value.Targets, op.Error)
					}
					if got := len(op.Value.KilledBrokers); got != f.Kills(3) {
						t.Errorf("killed %v, the registry says %d brokers", op.Value.KilledBrokers, f.Kills(3))
					}
				case op.Type == history.Info && op.F == "stop-"+f.Name:
					stops++
				}
			}
			if starts == 0 || starts != stops {
				t.Errorf("%d windows started, %d stopped", starts, stops)
			}
			res := o.Results
			if o.Verdict == "" || len(res.Faults) != 1 || res.Faults[0] != f.Name {
				t.Fatalf("verdict %q, faults %v", o.Verdict, res.Faults)
			}
			if f.LosesUnsynced {
				if res.FaultClass != checker.FaultsF2 || !res.Config.LoseUnsynced {
					t.Errorf("class %s, lose-unsynced %v: want F2 with brokers that lose unsynced writes", res.FaultClass, res.Config.LoseUnsynced)
				}
				return
			}
			if o.Verdict != checker.Valid || len(res.Unexpected) > 0 {
				t.Errorf("%s: %s, unexpected %v (%s)", f.Name, o.Verdict, res.Unexpected, o.Dir)
			}
		})
	}
}

// TestRefused: what a simulation cannot run is refused before anything
// runs, with the reason.
func TestRefused(t *testing.T) {
	for _, c := range []struct {
		edit func(*runner.Spec)
		want string
	}{
		{func(s *runner.Spec) { s.Runtime = runner.RuntimeDocker }, "runtime"},
		{func(s *runner.Spec) { s.BasePort = 9092 }, "listens on no port"},
		{func(s *runner.Spec) { s.Binary = "/bin/chaos" }, "runs no process"},
		{func(s *runner.Spec) { s.Faults = []string{"meteor"} }, `"meteor" is not a fault`},
		{func(s *runner.Spec) { s.Nodes = 2 }, "above nodes 2"},
	} {
		s := spec(t, 1)
		c.edit(&s)
		if _, err := Run(context.Background(), s, runner.Options{}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", s, err, c.want)
		}
		if entries, _ := os.ReadDir(s.Store); len(entries) > 0 {
			t.Errorf("a refused run left %d entries in the store", len(entries))
		}
	}
	if err := Simulated("meteor"); err == nil {
		t.Error("an unknown fault is simulated")
	}
	// Every kind of the registry is marked simulated today (a kind that
	// is not must be refused, which the registry's flag decides).
	for _, f := range nemesis.Names() {
		if err := Simulated(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestStoredLikeARun: a simulated run's store is a real run's: test.json
// with runtime sim and the command that replays it, a history in virtual
// time, results and a report; chaos check's judgement of the stored
// history is the verdict the run gave.
func TestStoredLikeARun(t *testing.T) {
	s := spec(t, 0, "kill")
	s.Command = []string{"chaos", "sim", "--nemesis", "kill"}
	o := run(t, s)
	tc, err := results.ReadTestConfig(filepath.Join(o.Dir, results.TestFile))
	if err != nil {
		t.Fatal(err)
	}
	if tc.Cluster.Runtime != runner.RuntimeSim || tc.Seed == 0 || tc.Seed != o.Seed || tc.Convergence == nil || !tc.Convergence.Converged {
		t.Errorf("test.json: runtime %q, seed %d (outcome %d), convergence %+v", tc.Cluster.Runtime, tc.Seed, o.Seed, tc.Convergence)
	}
	if want := fmt.Sprintf("--seed %d", o.Seed); !strings.HasSuffix(strings.Join(tc.Command, " "), want) {
		t.Errorf("replay command %q lacks %q", tc.Command, want)
	}
	ops, err := history.ReadFile(filepath.Join(o.Dir, results.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	last := ops[len(ops)-1].Time
	if limit := s.TimeLimit.Nanoseconds(); last < limit || last > limit+int64(time.Minute) {
		t.Errorf("the history ends at %s of virtual time; the workload ran %s", time.Duration(last), s.TimeLimit)
	}
	judged := checker.Check(ops, tc.CheckerConfig(), checker.Options{})
	if judged.Valid != o.Verdict {
		t.Errorf("the stored history judges %s, the run said %s", judged.Valid, o.Verdict)
	}
	for _, f := range []string{results.ResultsFile, results.ReportFile} {
		if _, err := os.Stat(filepath.Join(o.Dir, f)); err != nil {
			t.Error(err)
		}
	}
}

// TestInterrupted: a simulation whose context ends stops at once, with
// the history so far (every fault window closed) and a report without a
// verdict.
func TestInterrupted(t *testing.T) {
	s := spec(t, 5, "pause-majority")
	s.TimeLimit, s.NemesisInterval = 20*time.Minute, time.Second
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	o, err := Run(ctx, s, runner.Options{})
	if err != nil || !o.Interrupted || o.Verdict != "" || o.ExitCode() != runner.ExitInterrupted {
		t.Fatalf("outcome %+v, %v", o, err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("stopping took %s", took)
	}
	ops, err := history.ReadFile(filepath.Join(o.Dir, results.HistoryFile))
	if err != nil || len(ops) == 0 {
		t.Fatalf("history: %d ops, %v", len(ops), err)
	}
	if _, err := history.Pairs(ops); err != nil {
		t.Error(err)
	}
	starts, stops := 0, 0
	for _, op := range ops {
		if op.Type == history.Info {
			starts += strings.Count(op.F, "start-")
			stops += strings.Count(op.F, "stop-")
		}
	}
	if starts == 0 || starts != stops {
		t.Errorf("%d windows started, %d stopped", starts, stops)
	}
	if o.Report == "" {
		t.Errorf("no report: %s", o.ReportErr)
	}
}

// TestJudgedFromMemoryAsFromFile: a simulated run is judged from the ops
// it wrote, kept in memory; judging its history.jsonl read back as a
// stream (as chaos run and a long simulation do) gives the same
// results.json and report.html, byte for byte, and the same first
// detection, across fault kinds that kill, lose unsynced writes, cut the
// network and read replicas, and with a planted bug that makes anomalies
// to describe.
func TestJudgedFromMemoryAsFromFile(t *testing.T) {
	for i, c := range []struct {
		faults []string
		bugs   []string
	}{
		{faults: []string{"kill", "partition", "pause", "slow-follower"}},
		{faults: []string{"lose-unsynced", "kill-all"}},
		{faults: []string{"partition-leader"}, bugs: []string{"ack-before-replicate"}},
	} {
		s := spec(t, uint64(11+i), c.faults...)
		s.Settings.Bugs = c.bugs
		o := run(t, s)
		mem, memReport := file(t, o, results.ResultsFile), file(t, o, results.ReportFile)
		tc, err := results.ReadTestConfig(filepath.Join(o.Dir, results.TestFile))
		if err != nil {
			t.Fatal(err)
		}
		dir := &results.Run{Dir: o.Dir}
		streamed, err := runner.Judge(dir, tc, nil)
		if err != nil {
			t.Fatal(err)
		}
		if fromFile := file(t, o, results.ResultsFile); !bytes.Equal(mem, fromFile) {
			t.Errorf("%v %v: results.json judged from memory (%d bytes) and from the file (%d bytes) differ", c.faults, c.bugs, len(mem), len(fromFile))
		}
		if fromFile := file(t, o, results.ReportFile); !bytes.Equal(memReport, fromFile) {
			t.Errorf("%v %v: report.html from memory (%d bytes) and from the file (%d bytes) differ", c.faults, c.bugs, len(memReport), len(fromFile))
		}
		if (o.Detection == nil) != (streamed.Detection == nil) || (o.Detection != nil && *o.Detection != *streamed.Detection) {
			t.Errorf("%v %v: first detection from memory %+v, from the file %+v", c.faults, c.bugs, o.Detection, streamed.Detection)
		}
		if len(c.bugs) > 0 && o.Verdict != checker.Invalid {
			t.Errorf("%v: the planted bug %v was not caught (%s), so the anomaly details went untested", c.faults, c.bugs, o.Verdict)
		}
		if i == 0 {
			// A simulation too long to hold its history judges it
			// from the file, to the same results.
			long := func() runner.Outcome {
				defer func(n int) { keepOps = n }(keepOps)
				keepOps = 10
				return run(t, s)
			}()
			if b := file(t, long, results.ResultsFile); !bytes.Equal(mem, b) {
				t.Errorf("%v: results.json of a run that held its history (%d bytes) and of one that did not (%d bytes) differ", c.faults, len(mem), len(b))
			}
		}
	}
}
