package main

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/results"
)

// TestExternalTrigger: a fault armed on an event works on a cluster the
// tester did not start, through the external runtime's commands: chaos
// run --nemesis kill-leader+kill-leader:leader-change~0ms against a
// "chaos cluster up" kills a leader with the kill command, watches the
// brokers' metadata for the election that follows, and kills the new
// leader with the kill command too; the history says what fired it, and
// the run is valid under acks=-1 and min.insync.replicas=2.
func TestExternalTrigger(t *testing.T) {
	base := freeBase(t, 3)
	data := t.TempDir()
	up := startChaos(t, nil, "cluster", "up", "--data", data, "--base-port", strconv.Itoa(base),
		"--min-insync-replicas", "2", "--session-timeout-ms", "1500", "--replica-lag-time-max-ms", "1500")
	up.waitFor("ready", 30*time.Second)
	bin := chaosBin(t)
	addr := func(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }
	store := t.TempDir()
	out, code := runChaos(t, "run", "--store", store, "--runtime", "external", "--bootstrap", addr(base), "--quiet", "--seed", "3",
		"--node", "broker-1="+addr(base), "--node", "broker-2="+addr(base+1), "--node", "broker-3="+addr(base+2),
		"--kill-cmd", bin+" cluster kill {name} --data "+data,
		"--start-cmd", bin+" cluster start {name} --data "+data,
		"--acks", "-1", "--nemesis", "kill-leader+kill-leader:leader-change~0ms", "--nemesis-interval", "4s", "--time-limit", "20s")
	if code != exitValid {
		t.Fatalf("exit %d, want valid:\n%s", code, out)
	}
	runs, _ := filepath.Glob(filepath.Join(store, "*", "2*"))
	if len(runs) != 1 {
		t.Fatalf("%d runs in the store:\n%s", len(runs), out)
	}
	ops, err := history.ReadFile(filepath.Join(runs[0], results.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	fired := 0
	for _, op := range ops {
		if op.Process != history.NemesisProcess || op.Type != history.Info || op.F != "start-kill-leader" || op.Error != "" {
			continue
		}
		targets := strings.Join(op.Value.Targets, "; ")
		if !strings.Contains(targets, "fired on leader-change: ") {
			continue
		}
		t.Logf("at %s: %s", time.Duration(op.Time), targets)
		if len(op.Value.Commands) != 1 || op.Value.Commands[0].Action != "kill" || op.Value.Commands[0].Exit != 0 ||
			!strings.Contains(targets, "new leader of partition") || len(op.Value.KilledBrokers) != 1 {
			t.Errorf("the triggered kill: commands %+v, targets %q, killed %v", op.Value.Commands, targets, op.Value.KilledBrokers)
		}
		fired++
	}
	if fired == 0 {
		t.Fatalf("no kill fired on a leader change:\n%s", out)
	}
	if res := readResults(t, runs[0]); res.FaultWindows["kill-leader"] < 2*fired {
		t.Errorf("%d kill-leader windows judged for %d fired and as many timed", res.FaultWindows["kill-leader"], fired)
	}
}
