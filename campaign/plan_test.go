package campaign

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/runner"
)

func testBase() runner.Spec {
	b := runner.DefaultSpec()
	b.Store, b.Binary = "st", "/bin/chaos-test"
	b.Settings.ReplicaLagTimeMaxMs, b.Settings.SessionTimeoutMs = 2000, 2000
	return b
}

// TestCampaignPlanCells: the matrix expands acks outermost and the
// nemesis innermost; each cell's spec is the base varied by the cell and
// the campaign's settings, and nothing else; its args say the same.
func TestCampaignPlanCells(t *testing.T) {
	spec := results.CampaignSpec{Acks: []int{1, -1}, MinInsyncReplicas: []int{1, 2}, Nemesis: []string{"kill", "none"},
		Runs: 2, TimeLimit: results.Duration(20 * time.Second), NemesisInterval: results.Duration(5 * time.Second),
		RunArgs: []string{"--replica-lag-time-max-ms", "2000", "--session-timeout-ms", "2000"}, Runtime: "docker"}
	base := testBase()
	p, err := NewPlan(spec, base)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range p.Cells {
		names = append(names, c.Name)
	}
	want := []string{"acks1_isr1_clean_kill", "acks1_isr1_clean_none", "acks1_isr2_clean_kill", "acks1_isr2_clean_none",
		"acksall_isr1_clean_kill", "acksall_isr1_clean_none", "acksall_isr2_clean_kill", "acksall_isr2_clean_none"}
	if !slices.Equal(names, want) || p.Runs() != 16 || p.Store != "st" {
		t.Fatalf("cells %v, %d runs, store %q", names, p.Runs(), p.Store)
	}
	if e := p.Estimate(); e != 16*(20*time.Second+RunOverhead) {
		t.Errorf("estimate %s", e)
	}
	c := p.Cells[2]
	if c.Label != "acks=1 isr=2 clean kill" || c.Prediction != "lost-write permitted" || c.Model.Acks != 1 || c.Model.MinInsyncReplicas != 2 {
		t.Errorf("cell %+v", c.CampaignCellPlan)
	}
	// The base varied by the cell and the campaign, nothing else.
	w := base
	w.Name, w.Acks, w.Settings.MinInsyncReplicas, w.Faults = "acks1_isr2_clean_kill", 1, 2, []string{"kill"}
	w.TimeLimit, w.NemesisInterval, w.Runtime = 20*time.Second, 5*time.Second, "docker"
	if got, want := specJSON(t, c.Spec), specJSON(t, w); got != want {
		t.Errorf("cell spec\n%s\nwant\n%s", got, want)
	}
	wantArgs := "run --store st --name acks1_isr2_clean_kill --quiet --acks 1 --min-insync-replicas 2 --election clean --nemesis kill " +
		"--time-limit 20s --nemesis-interval 5s --runtime docker --replica-lag-time-max-ms 2000 --session-timeout-ms 2000"
	if got := strings.Join(c.Args, " "); got != wantArgs {
		t.Errorf("args\n%s\nwant\n%s", got, wantArgs)
	}
	if p.Cells[1].Spec.Faults != nil || p.Cells[1].Nemesis != "none" {
		t.Errorf("a cell without faults: %v %q", p.Cells[1].Spec.Faults, p.Cells[1].Nemesis)
	}
	// Without a nemesis interval or runtime the base's stay, and the args
	// do not name them.
	spec.NemesisInterval, spec.Runtime = 0, ""
	spec.TimeLimit = results.Duration(30 * time.Second)
	p, err = NewPlan(spec, base)
	if err != nil {
		t.Fatal(err)
	}
	if s := p.Cells[0].Spec; s.NemesisInterval != base.NemesisInterval || s.Runtime != runner.RuntimeLocal ||
		slices.Contains(p.Cells[0].Args, "--nemesis-interval") || slices.Contains(p.Cells[0].Args, "--runtime") {
		t.Errorf("defaults: %s %s %v", s.NemesisInterval, s.Runtime, p.Cells[0].Args)
	}
}

func specJSON(t *testing.T, s runner.Spec) string {
	t.Helper()
	path := t.TempDir() + "/spec.json"
	if err := s.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	back, err := runner.ReadSpecFile(path)
	if err != nil {
		t.Fatal(err)
	}
	path2 := t.TempDir() + "/spec.json"
	if err := back.WriteFile(path2); err != nil {
		t.Fatal(err)
	}
	a, b := readFile(t, path), readFile(t, path2)
	if a != b {
		t.Fatalf("a spec does not survive its file:\n%s\n%s", a, b)
	}
	return a
}

// TestCampaignRunSpecSeeds: a run's spec is its cell's with the run's
// seed, derived from the campaign seed, the cell's name and the run's
// number, and the command that replays it. A cell keeps its seeds when
// others are added.
func TestCampaignRunSpecSeeds(t *testing.T) {
	one := results.CampaignSpec{Cells: []results.CampaignCellSpec{{Acks: 1, MinInsyncReplicas: 1, Nemesis: "pause"}},
		Runs: 3, TimeLimit: results.Duration(10 * time.Second), NemesisInterval: results.Duration(2 * time.Second)}
	two := one
	two.Cells = append([]results.CampaignCellSpec{{Acks: -1, MinInsyncReplicas: 2, Nemesis: "kill"}}, one.Cells...)
	p1, err := NewPlan(one, testBase())
	if err != nil {
		t.Fatal(err)
	}
	p2, err := NewPlan(two, testBase())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint64]bool{}
	for run := 1; run <= 3; run++ {
		s := p1.Cells[0].RunSpec(99, run, "/x/chaos")
		if s.Seed != RunSeed(99, "acks1_isr1_clean_pause", run) || seen[s.Seed] {
			t.Errorf("run %d: seed %d", run, s.Seed)
		}
		seen[s.Seed] = true
		if again := p2.Cells[1].RunSpec(99, run, "/x/chaos"); again.Seed != s.Seed {
			t.Errorf("run %d: seed %d once another cell was added, %d before", run, again.Seed, s.Seed)
		}
		if other := p1.Cells[0].RunSpec(100, run, "/x/chaos"); other.Seed == s.Seed {
			t.Errorf("run %d: the same seed under another campaign seed", run)
		}
		want := append(append([]string{"/x/chaos"}, p1.Cells[0].Args...), "--seed", strconv.FormatUint(s.Seed, 10))
		if !slices.Equal(s.Command, want) {
			t.Errorf("command %q, want %q", s.Command, want)
		}
	}
	if p1.Cells[0].Spec.Seed != 0 || p1.Cells[0].Spec.Command != nil {
		t.Errorf("RunSpec changed the cell's spec: %+v", p1.Cells[0].Spec)
	}
}

// TestCampaignPlanRefusesImpossibleCells: every impossible cell is named
// with its reason, all at once, and no plan is made.
func TestCampaignPlanRefusesImpossibleCells(t *testing.T) {
	spec := results.CampaignSpec{Cells: []results.CampaignCellSpec{
		{Acks: -1, MinInsyncReplicas: 2, Nemesis: "kill"}, // fine
		{Acks: 2, MinInsyncReplicas: 1},
		{Acks: 1, MinInsyncReplicas: 4},
		{Acks: 1, MinInsyncReplicas: 0},
		{Acks: 1, MinInsyncReplicas: 1, Election: "maybe"},
		{Acks: 1, MinInsyncReplicas: 1, Nemesis: "meteor"},
		{Acks: -1, MinInsyncReplicas: 2, Nemesis: "kill"}, // twice
	}, Runs: 1, TimeLimit: results.Duration(20 * time.Second), NemesisInterval: results.Duration(5 * time.Second)}
	p, err := NewPlan(spec, testBase())
	if err == nil || p != nil {
		t.Fatalf("planned %+v", p)
	}
	for _, want := range []string{
		"refusing the campaign: 6 impossible cell(s)",
		"acks=2 isr=1 clean none: acks must be 0, 1 or -1, got 2",
		"acks=1 isr=4 clean none: min.insync.replicas 4 exceeds the replication factor 3",
		"acks=1 isr=0 clean none: min.insync.replicas must be at least 1, got 0",
		`acks=1 isr=1 maybe none: election must be clean or unclean, got "maybe"`,
		`acks=1 isr=1 clean meteor: unknown nemesis "meteor"`,
		"acks=-1 isr=2 clean kill: appears twice",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal lacks %q:\n%v", want, err)
		}
	}
	// What depends on the base and the campaign's timing.
	base := testBase()
	base.Nodes = 2
	spec = results.CampaignSpec{Nemesis: []string{"kill", "none"}, Runs: 1, TimeLimit: results.Duration(9 * time.Second),
		NemesisInterval: results.Duration(5 * time.Second)}
	_, err = NewPlan(spec, base)
	for _, want := range []string{
		"2 impossible",
		"acks=-1 isr=2 clean kill: the replication factor 3 needs at least 3 nodes, there are 2",
		"acks=-1 isr=2 clean none: the replication factor 3 needs at least 3 nodes",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal lacks %q:\n%v", want, err)
		}
	}
	_, err = NewPlan(spec, testBase())
	if err == nil || !strings.Contains(err.Error(), "1 impossible") ||
		!strings.Contains(err.Error(), "acks=-1 isr=2 clean kill: the time limit 9s is shorter than twice the nemesis interval 5s") {
		t.Errorf("a time limit with no room for a window: %v", err)
	}
}
