package runner

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/nemesis"
	"github.com/chaos-isr/chaos/results"
)

// TestRealLanes: on real processes, a network window holds (the
// controller's messages to one follower dropped) while two process
// windows kill and restart leaders beside it; the two lanes' operations
// pair in the history, each window closes after the faults of its own
// lane only, and the run is judged as any other (the correct broker
// fences the zombie's stale fetches: VALID).
func TestRealLanes(t *testing.T) {
	s := shortSpec(t)
	s.Faults, s.NemesisInterval, s.TimeLimit = nil, 0, 10*time.Second
	w, err := nemesis.ParseSchedule("zombie-follower@1s+6.5s,kill-leader@2s+1.5s,kill-leader@4.5s+1.5s")
	if err != nil {
		t.Fatal(err)
	}
	s.Windows = w
	o, err := Run(context.Background(), s, Options{})
	if err != nil {
		t.Fatalf("run: %v (%+v)", err, o)
	}
	ops, err := history.ReadFile(filepath.Join(o.Dir, results.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := history.Pairs(ops); err != nil {
		t.Fatalf("operations do not pair: %v", err)
	}
	var seq []string
	for _, op := range ops {
		if op.Process != history.NemesisProcess || op.Type != history.Info {
			continue
		}
		if op.Error != "" {
			t.Errorf("%s failed: %s", op.F, op.Error)
		}
		seq = append(seq, op.F)
		if op.F == "start-zombie-follower" && !strings.Contains(strings.Join(op.Value.Targets, " "), "controller -> broker-") {
			t.Errorf("the zombie's targets: %v", op.Value.Targets)
		}
		if op.F == "stop-kill-leader" && !strings.Contains(strings.Join(op.Value.Targets, " "), "restart broker-") {
			t.Errorf("a kill window's heal restarts its broker: %v", op.Value.Targets)
		}
		if op.F == "stop-zombie-follower" && strings.Join(op.Value.Targets, " ") != "network" {
			t.Errorf("the network window's heal heals the network only: %v", op.Value.Targets)
		}
	}
	want := "start-zombie-follower start-kill-leader stop-kill-leader start-kill-leader stop-kill-leader stop-zombie-follower"
	if got := strings.Join(seq, " "); got != want {
		t.Fatalf("nemesis %s, want %s", got, want)
	}
	if o.Verdict != checker.Valid {
		t.Fatalf("verdict %s, unexpected %v (%s)", o.Verdict, o.Results.Unexpected, o.Dir)
	}
}
