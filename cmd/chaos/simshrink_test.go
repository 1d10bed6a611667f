package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/internal/planted"
	"github.com/chaos-isr/chaos/nemesis"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/runner"
	"github.com/chaos-isr/chaos/sim"
)

// asAcksAll judges a run as package planted does: a failure planted by
// holding scenario 1's history to acks=-1's promise.
func asAcksAll(t *testing.T) judgeFunc {
	return func(o runner.Outcome) []string {
		u, err := planted.AsAcksAll(o.Dir)
		if err != nil {
			t.Error(err)
		}
		return u
	}
}

// execSim runs chaos sim in process, judging shrunk and reproduced runs
// with judge, and returns its output (stdout and stderr) and exit code.
func execSim(t *testing.T, judge judgeFunc, args ...string) (string, int) {
	t.Helper()
	root := &cobra.Command{Use: "chaos", SilenceUsage: true, SilenceErrors: true}
	root.SetFlagErrorFunc(flagParseError)
	cmd, _ := newSimCmdFlags(judge)
	root.AddCommand(cmd)
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append([]string{"sim"}, args...))
	err := root.Execute()
	var ee *exitError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &ee):
		if ee.err != errSilent {
			out.WriteString(err.Error())
		}
		return out.String(), ee.code
	}
	t.Fatalf("chaos sim %v: %v", args, err)
	return "", 0
}

// scenario1 are chaos sim's flags for scenario 1 with kills and pauses
// mixed in, for a search to remove. A window of each kind is not the
// point (at 5 s three kinds need 40 s), so the schedule may leave one out.
func scenario1(store string, limit string) []string {
	return []string{"--store", store, "--acks", "1", "--min-insync-replicas", "1", "--nemesis", "partition-leader,kill,pause",
		"--nemesis-interval", "5s", "--allow-partial-schedule", "--replica-lag-time-max-ms", "2000", "--session-timeout-ms", "2000", "--time-limit", limit, "--quiet"}
}

// replayLine is the words of the replay command out printed (the last
// one), program name first.
func replayLine(t *testing.T, out string) []string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^replay: (\S+ sim .*)$`).FindAllStringSubmatch(out, -1)
	if len(m) == 0 {
		t.Fatalf("no replay command:\n%s", out)
	}
	return strings.Fields(m[len(m)-1][1])
}

func latestRun(t *testing.T, store string) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(filepath.Join(store, "latest"))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func readRunFile(t *testing.T, dir, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSimArgs: the flags chaos sim prints for a spec parse back to that
// spec, field for field: a replay command runs exactly the run.
func TestSimArgs(t *testing.T) {
	w, err := nemesis.ParseSchedule("partition-leader@1.2s+3.45s,kill@6s+1s")
	if err != nil {
		t.Fatal(err)
	}
	given := runner.DefaultSpec()
	given.Store, given.Seed, given.Windows, given.Faults, given.NemesisInterval = "somewhere else", 5, w, nil, 0
	odd := runner.DefaultSpec()
	odd.Name, odd.Store, odd.Seed, odd.Nodes = "mine", "st", 1<<62, 5
	odd.Acks, odd.Concurrency, odd.Consumers, odd.Rate = 1, 2, 0, 12.5
	odd.TimeLimit, odd.RequestTimeout, odd.ConvergeTimeout, odd.MonitorInterval = 7500*time.Millisecond, 2*time.Second, 30*time.Second, 0
	// Two kinds at 3s need 16.5s: said to be allowed, and said again.
	odd.Faults, odd.NemesisInterval, odd.AllowPartialSchedule = []string{"kill", "pause"}, 3*time.Second, true
	st := &odd.Settings
	st.ReplicationFactor, st.MinInsyncReplicas, st.Election, st.Partitions = 4, 1, "unclean", 1
	st.SessionTimeoutMs, st.ReplicaLagTimeMaxMs, st.ReplicaLagMaxMessages = 1500, 2500, 10
	st.ReplicaFetchWaitMaxMs, st.HeartbeatIntervalMs, st.Fsync = 100, 100, "interval:100ms"
	st.LoseUnsynced, st.NoAutoCreateTopics = true, true
	// The default interval, too short for four kinds in 60s: the replay
	// must say it, or it would choose another.
	partial := runner.DefaultSpec()
	partial.Seed, partial.Faults, partial.AllowPartialSchedule = 3, []string{"kill", "partition", "pause", "slow-follower"}, true
	for _, want := range []runner.Spec{given, odd, partial} {
		want.Runtime = runner.RuntimeSim
		args := sim.Args(want)
		cmd, f := newSimCmdFlags(nil)
		if err := cmd.ParseFlags(args); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		got, err := f.sim.Parsed(cmd.Flags(), f.run.Seed).Spec(f.run)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		got.Command = nil
		if !reflect.DeepEqual(got, want) {
			t.Errorf("chaos sim %s parsed as\n%+v\nwant\n%+v", strings.Join(args, " "), got, want)
		}
	}
}

// TestSimShrink: chaos sim --shrink on a planted failure prints a smaller
// run that still fails, keeps only it in the store, and its replay
// command, run by the real binary, reproduces its history byte for byte.
func TestSimShrink(t *testing.T) {
	store := t.TempDir()
	judge := asAcksAll(t)
	args := append(scenario1(store, "25s"), "--seed", "5", "--shrink", "--shrink-runs", "60")
	out, code := execSim(t, judge, args...)
	if code == exitErrorCode {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	sizes := regexp.MustCompile(`(?m)^fault windows +(\d+) +(\d+)\n^client ops +(\d+) +(\d+)$`).FindStringSubmatch(out)
	num := func(i int) int {
		n, _ := strconv.Atoi(sizes[i])
		return n
	}
	if sizes == nil || num(2) >= num(1) || num(4)*10 >= num(3) {
		t.Fatalf("windows and ops did not shrink (%q):\n%s", sizes, out)
	}
	for _, want := range []string{"shrinking seed 5 ", "shrunk in ", "schedule before: kill@", "still shows: lost-write"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	replay := replayLine(t, out)
	if !slices.Contains(replay, "--schedule") || !slices.Contains(replay, "--seed") || slices.Contains(replay, "--shrink") {
		t.Errorf("replay %v", replay)
	}
	runs, _ := filepath.Glob(filepath.Join(store, "*", "2*"))
	kept := latestRun(t, store)
	if len(runs) != 1 || runs[0] != kept {
		t.Fatalf("the store keeps %v; want the shrunk run only", runs)
	}
	// The exit code is the shrunk run's own verdict's (acks=1 permits its
	// losses: valid, or unknown once no consumer is left to judge polls).
	if res, err := results.ReadResults(filepath.Join(kept, results.ResultsFile)); err != nil || res.ExitCode() != code {
		t.Errorf("exit %d for a run whose verdict is %v (%v)", code, res, err)
	}
	tc, err := results.ReadTestConfig(filepath.Join(kept, results.TestFile))
	if err != nil || !tc.ScheduleGiven || !slices.Equal(tc.Command[1:], replay[1:]) {
		t.Errorf("test.json: given %v, command %v (%v); want the replay %v", tc.ScheduleGiven, tc.Command, err, replay)
	}
	if got := judge(runner.Outcome{Dir: kept}); !slices.Contains(got, checker.LostWriteName) {
		t.Errorf("the shrunk run shows %v", got)
	}

	again, replayCode := runChaos(t, replay[1:]...)
	if replayCode != code {
		t.Fatalf("replay: exit %d:\n%s", code, again)
	}
	if a, b := readRunFile(t, kept, results.HistoryFile), readRunFile(t, latestRun(t, store), results.HistoryFile); !bytes.Equal(a, b) || latestRun(t, store) == kept {
		t.Errorf("the replay stored another history (%d bytes, the shrunk run's %d)", len(b), len(a))
	}
}

// TestSimFrom: chaos sim --from refuses a run with nothing forbidden,
// says when no seed reproduces a failure, and finds the seed that does:
// a stored simulated run's own seed comes first, and replays its history
// byte for byte.
func TestSimFrom(t *testing.T) {
	store := t.TempDir()
	out, code := runChaos(t, append(append([]string{"sim"}, scenario1(store, "20s")...), "--seed", "4")...)
	if code != exitValid {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	failed := latestRun(t, store)
	out, code = runChaos(t, "sim", "--from", failed, "--store", store)
	if code != exitErrorCode || !strings.Contains(out, "shows no unexpected anomaly (verdict VALID): nothing to reproduce") {
		t.Errorf("a valid run: exit %d:\n%s", code, out)
	}

	// The failure to reproduce: the run judged as acks=-1 in its
	// results.json, as chaos check writes it.
	if out, code := runChaos(t, "check", failed, "--acks", "-1", "--skip-linearizability", "--out", filepath.Join(failed, results.ResultsFile)); code != exitInvalid {
		t.Fatalf("chaos check --acks -1: exit %d:\n%s", code, out)
	}
	// Judged as they run (acks=1), the simulated runs permit the loss.
	other := t.TempDir()
	out, code = runChaos(t, "sim", "--from", failed, "--store", other, "--runs", "2")
	if code != exitUnknown || !strings.Contains(out, "not reproduced: none of 2 seeds showed lost-write") ||
		!strings.Contains(out, "note: results.json was judged as acks=-1") {
		t.Errorf("not reproduced: exit %d:\n%s", code, out)
	}
	if runs, _ := filepath.Glob(filepath.Join(other, "*", "2*")); len(runs) != 0 {
		t.Errorf("runs left in the store: %v", runs)
	}

	out, code = execSim(t, asAcksAll(t), "--from", failed, "--store", other, "--runs", "5")
	if code != exitValid || !strings.Contains(out, "reproduced by seed 4, the 1st of 1 tried") {
		t.Fatalf("reproduced: exit %d:\n%s", code, out)
	}
	found := latestRun(t, other)
	if a, b := readRunFile(t, failed, results.HistoryFile), readRunFile(t, found, results.HistoryFile); !bytes.Equal(a, b) {
		t.Errorf("the run's own seed and planned windows ran another history (%d bytes, the run's %d)", len(b), len(a))
	}
	tc, err := results.ReadTestConfig(filepath.Join(failed, results.TestFile))
	if err != nil {
		t.Fatal(err)
	}
	// The planned windows in whole milliseconds, which is how the
	// simulation runs them anyway.
	want := sim.Explicit(runner.StoredSpec(tc)).Windows.String()
	if replay := replayLine(t, out); !slices.Contains(replay, want) || len(tc.Schedule) == 0 {
		t.Errorf("replay %v; want --schedule %s", replay, want)
	}

	// Then shrunk, in one command.
	out, code = execSim(t, asAcksAll(t), "--from", failed, "--store", other, "--seeds", "4", "--shrink", "--shrink-runs", "6")
	if code != exitValid || !strings.Contains(out, "reproduced by seed 4") || !strings.Contains(out, "shrunk in 6 runs") {
		t.Errorf("reproduced and shrunk: exit %d:\n%s", code, out)
	}
}

// TestSimFromRealRun: --from takes a real run's test.json (one chaos run
// wrote, kept in the store's schema fixtures): its configuration and its
// one planned window run in simulation. Its results.json here claims a
// lost write the simulated runs do not show, so none reproduces it.
func TestSimFromRealRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	stored := filepath.Join("..", "..", "results", "testdata", "stored")
	tc, err := os.ReadFile(filepath.Join(stored, "test-faults.json"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := results.ReadResults(filepath.Join(stored, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	res.Valid, res.Unexpected = checker.Invalid, []string{checker.LostWriteName}
	r := &results.Run{Store: filepath.Dir(dir), Test: "run", Dir: dir}
	if err := os.WriteFile(r.Path(results.TestFile), tc, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteJSON(results.ResultsFile, res); err != nil {
		t.Fatal(err)
	}
	store := t.TempDir()
	out, code := runChaos(t, "sim", "--from", dir, "--store", store, "--runs", "2")
	for _, want := range []string{"(acks-1_isr2_clean_kill+pause, runtime local, 1 planned windows): lost-write", "seeds 5516238859686224221-5516238859686224222",
		"not reproduced: none of 2 seeds showed lost-write", "valid 2"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in (exit %d):\n%s", want, code, out)
		}
	}
	if code != exitUnknown {
		t.Errorf("exit %d", code)
	}
	if runs, _ := filepath.Glob(filepath.Join(store, "*", "2*")); len(runs) != 0 {
		t.Errorf("runs left in the store: %v", runs)
	}
}
