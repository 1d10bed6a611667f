package report

import (
	"strings"
	"testing"

	"github.com/chaos-isr/chaos/nemesis"
)

// TestEveryFamilyHasABandColour: a fault window's band is classed by its
// family (faultFamily); a family the stylesheet does not colour would be
// drawn black over the plot.
func TestEveryFamilyHasABandColour(t *testing.T) {
	css, err := templateFS.ReadFile("templates/common.tmpl")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, fam := range nemesis.Families(nemesis.Names()) {
		if seen[fam] {
			continue
		}
		seen[fam] = true
		if !strings.Contains(string(css), ".band.f-"+fam+" {") {
			t.Errorf("family %s has no .band.f-%s rule in common.tmpl", fam, fam)
		}
	}
}
