package hunt

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/runner"
	"github.com/chaos-isr/chaos/sim"
)

// TestInvariantSeesEarlyRejoin: with isr-early-rejoin planted, one of the
// first drawn scenarios records a breach of the ISR invariant (a follower
// in the ISR without committed records) and is judged INVALID for it;
// the same scenario on the correct broker records none and is valid.
func TestInvariantSeesEarlyRejoin(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	for i := range 30 {
		spec := Draw(runSeed(7, i), base(t, "isr-early-rejoin"), DrawOptions{})
		out, err := sim.Run(context.Background(), spec, runner.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(out.Results.Unexpected, checker.ISRInvariantName) {
			continue
		}
		if breaches(t, out.Dir) == 0 {
			t.Fatalf("run %d: isr-invariant unexpected but the history records no breach", i)
		}
		spec.Settings.Bugs = nil
		ok, err := sim.Run(context.Background(), spec, runner.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if n := breaches(t, ok.Dir); n > 0 || ok.ExitCode() != 0 {
			t.Fatalf("run %d on the correct broker: %d breaches, unexpected %v", i, n, ok.Results.Unexpected)
		}
		return
	}
	t.Fatal("isr-early-rejoin broke no run's ISR invariant in 30 drawn scenarios")
}

func breaches(t *testing.T, dir string) int {
	t.Helper()
	ops, err := history.ReadFile(filepath.Join(dir, results.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, op := range ops {
		if op.F == history.Invariant && op.Type == history.Info {
			n++
		}
	}
	return n
}
