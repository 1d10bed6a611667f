package campaign

import (
	"strings"

	"bytes"
	"encoding/json"
	"github.com/chaos-isr/chaos/runner"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/results"
)

// TestCampaignSpecRecord: campaign.json keeps the spec as the store's
// results.CampaignSpec, which must encode exactly as the spec file format
// that --dry-run prints (a field Record forgets would vanish from the
// record).
func TestCampaignSpecRecord(t *testing.T) {
	specs := []Spec{{results.CampaignSpec{
		Cells: []CellSpec{{Acks: -1, MinInsyncReplicas: 2, Election: "unclean", Nemesis: "kill"}, {Acks: 0, MinInsyncReplicas: 1}},
		Runs:  2, TimeLimit: results.Duration(7 * time.Second), NemesisInterval: results.Duration(2 * time.Second), RunArgs: []string{"--nodes", "5"}, Runtime: "docker",
	}}}
	for _, name := range PresetNames() {
		p, _ := Preset(name)
		specs = append(specs, p)
	}
	for _, s := range specs {
		want, _ := json.Marshal(s)
		got, _ := json.Marshal(s.Record())
		if !bytes.Equal(got, want) {
			t.Errorf("campaign.json's spec:\n%s\nthe spec:\n%s", got, want)
		}
	}
}

// TestCampaignPresetIsACopy: a caller that changes a preset (chaos
// campaign appends the flags after "--" to its run_args) changes only its
// copy.
func TestCampaignPresetIsACopy(t *testing.T) {
	p, _ := Preset("seed")
	p.RunArgs = append(p.RunArgs, "--nodes", "5")
	p.Nemesis[0] = "kill"
	again, _ := Preset("seed")
	if len(again.RunArgs) != 4 || again.Nemesis[0] != "kill-leader" {
		t.Fatalf("the preset changed: %+v", again)
	}
}

// TestPresetSizes: what the help says of each preset's size is its plan's:
// the cells planned, the runs, and the first estimate Plan.Estimate makes.
func TestPresetSizes(t *testing.T) {
	usage := PresetUsage()
	for _, name := range PresetNames() {
		p, _ := Preset(name)
		plan, err := p.Plan(func(args []string) (runner.Spec, error) { return testBase(), nil })
		if err != nil {
			t.Fatalf("preset %s: %v", name, err)
		}
		z := p.Size()
		if z.Cells != len(plan.Cells) || z.Cells*z.Runs != plan.Runs() || z.Real != plan.Estimate() {
			t.Errorf("preset %s: size %+v, the plan has %d cells, %d runs, estimate %s", name, z, len(plan.Cells), plan.Runs(), plan.Estimate())
		}
		if !strings.Contains(usage, name+" (") || !strings.Contains(usage, z.String()) {
			t.Errorf("--preset's help does not say %s is %s:\n%s", name, z, usage)
		}
	}
}

// TestSeedPresetLosesUnsynced: the seed preset has a column whose fault
// loses unsynced writes (F2), the page-cache case, in which the model
// permits acks=-1 with min.insync.replicas=2 to lose acknowledged
// writes, so that the preset asks the seed's question of it too.
func TestSeedPresetLosesUnsynced(t *testing.T) {
	p, _ := Preset("seed")
	plan, err := p.Plan(func(args []string) (runner.Spec, error) { return testBase(), nil })
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, c := range plan.Cells {
		if c.Nemesis != "lose-unsynced" {
			continue
		}
		found++
		if s := c.Spec.Normalized(); !s.Settings.LoseUnsynced || !c.Model.LoseUnsynced {
			t.Errorf("%s: the brokers do not lose unsynced writes: settings %v, model %v", c.Label, s.Settings.LoseUnsynced, c.Model.LoseUnsynced)
		}
		if c.Acks == -1 && c.MinInsyncReplicas == 2 && c.Election == "clean" && c.Prediction != "lost-write permitted" {
			t.Errorf("%s: prediction %q, want lost-write permitted (F2, the last replica standing)", c.Label, c.Prediction)
		}
	}
	if found != 18 {
		t.Errorf("%d lose-unsynced cells, want one per configuration (18)", found)
	}
}
