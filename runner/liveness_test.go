package runner

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/history"
)

// TestLivenessRealCluster: on real processes, a broker whose follower stops
// fetching once it truncated (planted bug follower-stalls-after-truncation)
// leaves a partition short of its ISR after partition-leader heals: the
// final phase waits out the bound, and the run is INVALID by
// no-convergence, with the converge operation's failure in the history.
// The same run on a correct broker converges and is judged VALID by the
// liveness checks, which applied.
func TestLivenessRealCluster(t *testing.T) {
	spec := func(bugs ...string) Spec {
		s := shortSpec(t)
		s.Acks, s.Settings.MinInsyncReplicas = 1, 1
		s.TimeLimit, s.Faults, s.NemesisInterval = 8*time.Second, []string{"partition-leader"}, 3*time.Second
		s.Settings.Partitions, s.LivenessBound, s.ConvergeTimeout = 1, 4*time.Second, 4*time.Second
		s.Settings.Bugs = bugs
		return s
	}
	o, err := Run(context.Background(), spec("follower-stalls-after-truncation"), Options{Version: "test"})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	r, _ := o.Results.Get(checker.NoConvergenceName)
	if o.Verdict != checker.Invalid || r.Forbidden == 0 {
		t.Fatalf("with the bug: %s, no-convergence %s %v", o.Verdict, r.Valid, r.Details)
	}
	if l := o.Results.Liveness; l == nil || l.BoundMs != 4000 || len(l.Partitions) != 1 || l.Partitions[0].AfterMs != -1 {
		t.Errorf("liveness summary %+v", l)
	}
	ops, err := history.ReadFile(o.Dir + "/history.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	failed := false
	for _, op := range ops {
		failed = failed || (op.F == history.Converge && op.Type == history.Fail && strings.Contains(op.Error, "isr"))
	}
	if !failed {
		t.Error("the history has no failed converge operation naming the ISR")
	}

	o, err = Run(context.Background(), spec(), Options{Version: "test"})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	for _, name := range []string{checker.NoConvergenceName, checker.StuckPartitionName, checker.StuckConsumerName} {
		if r, _ := o.Results.Get(name); r.Valid != checker.Valid {
			t.Errorf("correct broker: %s %s %v", name, r.Valid, r.Details)
		}
	}
	if o.Verdict != checker.Valid {
		t.Errorf("correct broker: %s", o.Verdict)
	}
}
