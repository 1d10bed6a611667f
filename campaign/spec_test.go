package campaign

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/results"
)

// TestCampaignSpecRecord: campaign.json keeps the spec as the store's
// results.CampaignSpec, which must encode exactly as the spec file format
// that --dry-run prints (a field Record forgets would vanish from the
// record).
func TestCampaignSpecRecord(t *testing.T) {
	specs := []Spec{{
		Cells: []CellSpec{{Acks: -1, MinInsyncReplicas: 2, Election: "unclean", Nemesis: "kill"}, {Acks: 0, MinInsyncReplicas: 1}},
		Runs:  2, TimeLimit: results.Duration(7 * time.Second), NemesisInterval: results.Duration(2 * time.Second), RunArgs: []string{"--nodes", "5"}, Runtime: "docker",
	}}
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
