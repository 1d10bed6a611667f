package main

import (
	"strings"
	"testing"

	"github.com/chaos-isr/chaos/results"
)

func TestTable(t *testing.T) {
	run := func(verdict string, expected ...string) results.CampaignRun {
		return results.CampaignRun{Run: 1, Seed: 3, Verdict: verdict, Expected: expected}
	}
	cell := func(name string, r results.CampaignRun) *results.CampaignCell {
		c := &results.CampaignCell{Runs: []results.CampaignRun{r}}
		c.Name, c.Label, c.Prediction = name, name, "lost-write permitted"
		c.Summary.Runs, c.Summary.ExpectedSeen = 1, map[string]int{}
		for _, n := range r.Expected {
			c.Summary.ExpectedSeen[n]++
		}
		return c
	}
	local := results.Campaign{Seed: 1, Cells: []*results.CampaignCell{
		cell("a", run("valid", "lost-write")), cell("b", run("valid", "lost-write", "stale-read")), cell("c", run("invalid")),
	}}
	local.Cells[2].Runs[0].Unexpected = []string{"lost-write"}
	sim := results.Campaign{Seed: 1, Cells: []*results.CampaignCell{
		cell("a", run("valid", "lost-write")), cell("b", run("valid", "lost-write")), cell("c", run("valid")),
	}}
	var b strings.Builder
	if err := table(&b, local, sim); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| a | lost-write permitted | VALID lost-write | VALID lost-write | lost-write 1/1 | yes |",
		"| no: local only: stale-read |",
		"| INVALID lost-write! | VALID | none in 1 | no: invalid locally, valid in sim; local only: lost-write |",
		"Run 1 agrees in 1 of 3 cells.",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, b.String())
		}
	}
	sim.Seed = 2
	if err := table(&b, local, sim); err == nil {
		t.Error("campaigns of different seeds compared")
	}
}
