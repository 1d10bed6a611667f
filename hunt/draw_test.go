package hunt

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/nemesis"

	"github.com/chaos-isr/chaos/runner"
	"github.com/chaos-isr/chaos/sim"
)

// TestDrawValid: every drawn scenario is one the simulation runs (its
// spec validates), the same seed draws the same one, and the draws cover
// the ranges they claim.
func TestDrawValid(t *testing.T) {
	base := runner.DefaultSpec()
	base.Runtime, base.Store = runner.RuntimeSim, t.TempDir()
	kinds := map[string]bool{}
	armed := map[string]int{} // by event
	windows := 0
	for seed := uint64(1); seed <= 500; seed++ {
		s := Draw(seed, base, DrawOptions{Config: seed%2 == 0})
		if err := sim.Validate(s); err != nil {
			t.Fatalf("seed %d: %v\n%+v", seed, err, s)
		}
		if again := Draw(seed, base, DrawOptions{Config: seed%2 == 0}); !reflect.DeepEqual(s, again) {
			t.Fatalf("seed %d drew two specs", seed)
		}
		for _, k := range s.Normalized().Faults {
			kinds[k] = true
		}
		for _, w := range s.Windows {
			windows++
			for _, p := range strings.Split(w.Fault, "+") {
				if tr := nemesis.TriggerOf(p); tr != nil {
					armed[tr.Event]++
					if tr.Delay > 50*time.Millisecond {
						t.Errorf("seed %d: %s waits %s after its event, more than a few round trips", seed, p, tr.Delay)
					}
				}
			}
		}
		parent := Draw(seed+1000, base, DrawOptions{})
		for _, sp := range []runner.Spec{s, Mutate(parent, seed, base, DrawOptions{}), Mutate(s, seed+7, base, DrawOptions{})} {
			lag := time.Duration(sp.Settings.ReplicaLagTimeMaxMs) * time.Millisecond
			for _, w := range sp.Windows {
				if need := nemesis.Settle(w.Fault, lag); w.End-w.Start < need {
					t.Errorf("seed %d: window %s lasts %s, shorter than the %s its fault needs to take effect", seed, w, w.End-w.Start, need)
				}
			}
		}
	}
	for _, e := range nemesis.TriggerEvents() {
		if armed[e.Name] == 0 {
			t.Errorf("no window of 500 draws armed on %s", e.Name)
		}
	}
	t.Logf("%d windows, armed on events: %v", windows, armed)
	if len(kinds) < len(Kinds()) {
		t.Errorf("500 draws used %d of %d kinds", len(kinds), len(Kinds()))
	}
}
