package main

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/results"
)

// TestExternalClusterUp is the external runtime against a cluster chaos
// did not start for the run: a "chaos cluster up" of its own, faulted
// only through commands wired to that cluster's control socket, as a
// user's ssh or docker commands would fault theirs. A no-fault run is
// valid; killing leaders under acks=-1 and min.insync.replicas=2 is
// valid, with every kill and start in the history; under acks=1, cutting
// a leader off with the partition command loses acknowledged writes, and
// the guarantee model says it may.
func TestExternalClusterUp(t *testing.T) {
	base := freeBase(t, 3)
	data := t.TempDir()
	up := startChaos(t, nil, "cluster", "up", "--network-faults", "--data", data, "--base-port", strconv.Itoa(base),
		"--min-insync-replicas", "2", "--session-timeout-ms", "1500", "--replica-lag-time-max-ms", "1500")
	up.waitFor("ready", 30*time.Second)
	bin := chaosBin(t)
	addr := func(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }
	cluster := []string{"--runtime", "external", "--bootstrap", addr(base), "--quiet", "--seed", "5",
		"--node", "broker-1=" + addr(base), "--node", "broker-2=" + addr(base+1), "--node", "broker-3=" + addr(base+2),
		"--controller-node", "controller=" + addr(base-1),
		"--kill-cmd", bin + " cluster kill {name} --data " + data,
		"--start-cmd", bin + " cluster start {name} --data " + data,
		"--partition-cmd", bin + " cluster partition {name} {peers} --data " + data,
		"--slow-cmd", bin + " cluster slow {name} {peers} --delay {delay} --data " + data,
		"--heal-cmd", bin + " cluster heal --data " + data,
	}
	runOn := func(t *testing.T, cluster []string, args ...string) (string, int, string) {
		t.Helper()
		store := t.TempDir()
		out, code := runChaos(t, append(append([]string{"run", "--store", store}, cluster...), args...)...)
		runs, _ := filepath.Glob(filepath.Join(store, "*", "2*"))
		if len(runs) != 1 {
			t.Fatalf("%d runs in the store:\n%s", len(runs), out)
		}
		return out, code, runs[0]
	}
	run := func(t *testing.T, args ...string) (string, int, string) {
		t.Helper()
		return runOn(t, cluster, args...)
	}

	t.Run("no faults", func(t *testing.T) {
		out, code, dir := run(t, "--time-limit", "4s")
		if code != exitValid {
			t.Fatalf("exit %d, want valid:\n%s", code, out)
		}
		tc, err := results.ReadTestConfig(filepath.Join(dir, results.TestFile))
		if err != nil {
			t.Fatal(err)
		}
		if tc.Cluster.Runtime != "external" || len(tc.Cluster.Unsupported) != 1 || tc.Cluster.Unsupported[checker.CrashName] == "" {
			t.Errorf("chaos's own brokers answer replica reads: only crash (the runtime does not watch the nodes) should be unsupported, got %v", tc.Cluster.Unsupported)
		}
		res := readResults(t, dir)
		if r, _ := res.Get(checker.ReplicaDivergenceName); r.Valid != checker.Valid || r.Stats["replica-reads"] == 0 {
			t.Errorf("replica-divergence %s with %d replica reads: it should have been checked", r.Valid, r.Stats["replica-reads"])
		}
	})

	t.Run("kill-leader acks=-1", func(t *testing.T) {
		out, code, dir := run(t, "--acks", "-1", "--nemesis", "kill-leader", "--nemesis-interval", "3s", "--time-limit", "12s")
		if code != exitValid {
			t.Fatalf("exit %d, want valid:\n%s", code, out)
		}
		cmds := commands(t, dir)
		kills, starts := 0, 0
		for _, c := range cmds {
			if c.Exit != 0 {
				t.Errorf("command %+v failed", c)
			}
			switch c.Action {
			case "kill":
				kills++
			case "start":
				starts++
			}
		}
		if kills == 0 || kills != starts {
			t.Fatalf("%d kills and %d starts in the history, want as many of each and some", kills, starts)
		}
		if res := readResults(t, dir); res.FaultWindows["kill-leader"] != kills {
			t.Errorf("%d kill-leader windows judged for %d kills", res.FaultWindows["kill-leader"], kills)
		}
	})

	t.Run("slow-follower acks=-1", func(t *testing.T) {
		out, code, dir := run(t, "--acks", "-1", "--nemesis", "slow-follower", "--nemesis-interval", "4s", "--time-limit", "12s")
		if code != exitValid {
			t.Fatalf("exit %d, want valid:\n%s", code, out)
		}
		tc, err := results.ReadTestConfig(filepath.Join(dir, results.TestFile))
		if err != nil {
			t.Fatal(err)
		}
		if tc.Cluster.ReplicaLagTimeMaxMs != 1500 {
			t.Errorf("replica.lag.time.max.ms %d in test.json: the brokers describe 1500", tc.Cluster.ReplicaLagTimeMaxMs)
		}
		slowed := 0
		for _, c := range commands(t, dir) {
			if c.Action == "slow" && c.Exit == 0 && strings.Contains(c.Cmd, "--delay 1.5s") {
				slowed++
			}
		}
		if slowed == 0 {
			t.Fatalf("no slow command with the brokers' lag time in the history:\n%s", out)
		}
		// The fault bit: the slowed follower left the ISR.
		shrank := false
		ops, err := history.ReadFile(filepath.Join(dir, results.HistoryFile))
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range ops {
			if op.Process == history.MonitorProcess && op.Type == history.OK && op.Value.Sample != nil && op.Value.ISR != nil && len(op.Value.ISR) < 3 {
				shrank = true
				break
			}
		}
		if !shrank {
			t.Error("no monitor sample saw the ISR shrink: the slow command did not slow the follower out of it")
		}
	})

	t.Run("partition-leader acks=1", func(t *testing.T) {
		out, code, dir := run(t, "--acks", "1", "--nemesis", "partition-leader", "--nemesis-interval", "4s", "--time-limit", "14s", "--check-commands")
		if code != exitValid {
			t.Fatalf("exit %d, want valid (lost writes are permitted under acks=1):\n%s", code, out)
		}
		if !strings.Contains(out, "checked the fault commands: ran heal on 4 nodes; probed partition for each of 4 nodes") {
			t.Errorf("--check-commands did not say what it checked:\n%s", out)
		}
		res := readResults(t, dir)
		r, _ := res.Get(checker.LostWriteName)
		if r.Count == 0 || r.Forbidden != 0 || !r.Expected {
			t.Fatalf("lost-write count %d forbidden %d expected %v: a leader cut off under acks=1 should lose writes, permitted:\n%s", r.Count, r.Forbidden, r.Expected, out)
		}
		t.Logf("%d lost writes, all permitted", r.Count)
		parts := 0
		for _, c := range commands(t, dir) {
			if c.Action == "partition" {
				parts++
			}
		}
		if parts == 0 {
			t.Error("no partition command in the history")
		}
		// The simulation models chaos's own brokers, not the cluster the
		// run tested.
		out, code = runChaos(t, "sim", "--from", dir, "--store", t.TempDir())
		if code != exitErrorCode || !strings.Contains(out, "the run tested an external cluster") {
			t.Errorf("chaos sim --from an external run exited %d:\n%s", code, out)
		}
		// chaos check judges the stored run the same way.
		out, code = runChaos(t, "check", dir)
		if code != exitValid {
			t.Errorf("chaos check of the run exited %d, want valid:\n%s", code, out)
		}
	})

	// Without --controller-node the leader keeps its controller: the
	// fault is refused unless asked for weakened, and then marked so.
	apart := slices.DeleteFunc(slices.Clone(cluster), func(a string) bool {
		return a == "--controller-node" || strings.HasPrefix(a, "controller=")
	})
	t.Run("partition-leader without --controller-node", func(t *testing.T) {
		out, code := runChaos(t, append(append([]string{"run", "--store", t.TempDir()}, apart...), "--acks", "1", "--nemesis", "partition-leader", "--time-limit", "14s")...)
		if code != exitErrorCode || !strings.Contains(out, "partition-leader cannot be applied as documented without --controller-node") ||
			!strings.Contains(out, "--allow-weakened-faults") {
			t.Fatalf("exit %d, want the fault refused, naming --controller-node:\n%s", code, out)
		}
		out, code, dir := runOn(t, apart, "--acks", "1", "--nemesis", "partition-leader", "--nemesis-interval", "4s", "--time-limit", "14s", "--allow-weakened-faults")
		const why = "without --controller-node: the leader still reaches the controller"
		if code == exitErrorCode || !strings.Contains(out, "(weakened: partition-leader "+why) {
			t.Fatalf("exit %d, want a verdict marked weakened:\n%s", code, out)
		}
		res := readResults(t, dir)
		if !strings.HasPrefix(res.Weakened["partition-leader"], why) || res.FaultWindows["partition-leader"] == 0 {
			t.Errorf("results.json: weakened %v after %d windows", res.Weakened, res.FaultWindows["partition-leader"])
		}
		r, _ := res.Get(checker.LostWriteName)
		t.Logf("weakened partition-leader under acks=1 (the same seed as above): %d lost writes", r.Count)
		if out, code := runChaos(t, "check", dir); !strings.Contains(out, "(weakened: partition-leader "+why) {
			t.Errorf("chaos check of the run (exit %d) does not mark it weakened:\n%s", code, out)
		}
	})

	t.Run("a failing kill command stops the run", func(t *testing.T) {
		start := time.Now()
		out, code, dir := run(t, "--nemesis", "kill", "--kill-cmd", "false", "--nemesis-interval", "3s", "--time-limit", "60s")
		took := time.Since(start)
		t.Logf("a 60s run with --kill-cmd false ended after %s", took.Round(time.Millisecond))
		if code != exitUnknown || !strings.Contains(out, "verdict: UNKNOWN: stopped at the first failing fault command (in a kill window): kill command for broker-") ||
			!strings.Contains(out, "exited 1: false") {
			t.Fatalf("exit %d, want unknown naming the command:\n%s", code, out)
		}
		if took > 20*time.Second {
			t.Errorf("the run took %s of its 60s after the kill command failed", took)
		}
		if out, code := runChaos(t, "check", dir); code != exitUnknown || !strings.Contains(out, "stopped at the first failing fault command") {
			t.Errorf("chaos check of the stopped run exited %d:\n%s", code, out)
		}
	})

	t.Run("--check-commands refuses a broken command", func(t *testing.T) {
		start := time.Now()
		out, code, dir := run(t, "--nemesis", "kill", "--kill-cmd", "no-such-chaos-tool kill {name}", "--time-limit", "60s", "--check-commands")
		if code != exitErrorCode || !strings.Contains(out, "--check-commands: kill command for controller: no program no-such-chaos-tool") {
			t.Fatalf("exit %d, want the broken kill command refused:\n%s", code, out)
		}
		if took := time.Since(start); took > 15*time.Second {
			t.Errorf("refused after %s", took)
		}
		if _, err := os.Stat(filepath.Join(dir, results.HistoryFile)); err == nil {
			t.Error("a run refused by --check-commands has a history")
		}
	})
}

// readResults reads a run's results.json.
func readResults(t *testing.T, dir string) *checker.Results {
	t.Helper()
	res, err := results.ReadResults(filepath.Join(dir, results.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// commands are the fault commands a run's history records.
func commands(t *testing.T, dir string) []history.Command {
	t.Helper()
	ops, err := history.ReadFile(filepath.Join(dir, results.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	var out []history.Command
	for _, op := range ops {
		if op.Process == history.NemesisProcess && op.Value != nil && op.Value.FaultInfo != nil {
			out = append(out, op.Value.Commands...)
		}
	}
	return out
}

// TestExternalRefusedCLI: chaos run and chaos campaign refuse, before
// anything runs, faults the external runtime was given no commands for,
// external flags without the external runtime, and the external runtime
// without an address.
func TestExternalRefusedCLI(t *testing.T) {
	store := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--runtime", "external", "--bootstrap", "127.0.0.1:1", "--nemesis", "pause", "--time-limit", "30s"},
			"faults: pause cannot run on this external cluster: it needs pause (give --pause-cmd), resume (give --resume-cmd)"},
		{[]string{"run", "--bootstrap", "127.0.0.1:1"}, "--runtime: not external, but the external runtime's flags were given"},
		{[]string{"run", "--runtime", "external"}, "--bootstrap: missing"},
		{[]string{"run", "--runtime", "external", "--bootstrap", "h:1", "--bug", "ack-before-replicate"}, "--bug: not with --runtime external"},
		{[]string{"run", "--runtime", "external", "--bootstrap", "h:1", "--session-timeout-ms", "900"}, "--session-timeout-ms: not with --runtime external"},
		{[]string{"campaign", "--store", store, "--runtime", "external", "--nemesis", "kill", "--time-limit", "30s", "--", "--bootstrap", "127.0.0.1:1"},
			"faults: kill cannot run on this external cluster: it needs kill (give --kill-cmd), start (give --start-cmd)"},
	} {
		args := c.args
		if args[0] == "run" {
			args = append(args, "--store", store)
		}
		out, code := runChaos(t, args...)
		if code != exitErrorCode || !strings.Contains(out, c.want) {
			t.Errorf("chaos %s exited %d, want %d saying %q:\n%s", strings.Join(c.args, " "), code, exitErrorCode, c.want, out)
		}
	}
	if entries, _ := os.ReadDir(store); len(entries) > 0 {
		t.Errorf("refused runs left %d entries in the store", len(entries))
	}
}
