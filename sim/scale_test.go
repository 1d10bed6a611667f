package sim

import (
	"context"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/internal/heapmeter"

	"github.com/chaos-isr/chaos/runner"
)

// TestSimulationMemorySlope measures what a simulation of the default test
// holds once its events are over (the final reads done, its cluster not
// yet let go), after 1 and 4 simulated minutes. With its spill file, a
// log's batches and their index entries (40 bytes a batch on each
// replica) are out of the heap, as is the invariant watch's record of
// each committed batch (16): what grows is little more than the history
// writer's buffer, as long as its longest line (a final read). Measured,
// 16 KB a simulated second at the default 500 sends a second; with the
// index entries in the heap it was 115 KB, with the brokers' batches in
// memory 221 KB, and with the final reads reachable once recorded (the
// timeouts' events held them) 169 KB. Each fails it.
func TestSimulationMemorySlope(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates five minutes of the default test")
	}
	defer func(n int) { keepOps = n }(keepOps)
	keepOps = 0 // the operations are not what is measured
	held := func(limit time.Duration) uint64 {
		spec := runner.DefaultSpec()
		spec.Runtime, spec.Store, spec.Seed, spec.TimeLimit = runner.RuntimeSim, t.TempDir(), 3, limit
		spec = spec.Normalized()
		dir, err := newRunDir(spec.Store, spec.Name)
		if err != nil {
			t.Fatal(err)
		}
		base := heapmeter.Live()
		var at uint64
		simulated = func() { at = heapmeter.Live() }
		defer func() { simulated = nil }()
		if _, _, err := simulate(context.Background(), spec, dir, "sim", runner.Options{}); err != nil {
			t.Fatal(err)
		}
		return at - min(at, base)
	}
	h1, h4 := held(time.Minute), held(4*time.Minute)
	perSec := float64(int64(h4)-int64(h1)) / 180
	t.Logf("held %d MB after 1 simulated minute, %d MB after 4: %.0f KB a simulated second", h1>>20, h4>>20, perSec/1024)
	if perSec > 48<<10 {
		t.Errorf("a simulation holds %.0f KB more for each simulated second (at most 48 KB)", perSec/1024)
	}
}
