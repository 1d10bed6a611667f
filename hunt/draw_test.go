package hunt

import (
	"reflect"
	"testing"

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
	}
	if len(kinds) < len(Kinds()) {
		t.Errorf("500 draws used %d of %d kinds", len(kinds), len(Kinds()))
	}
}
