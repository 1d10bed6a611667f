package campaign

import (
	"fmt"
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
	spec := results.CampaignSpec{Acks: []results.Acks{1, -1}, MinInsyncReplicas: []int{1, 2}, Nemesis: []string{"kill", "none"},
		Runs: 2, TimeLimit: results.Duration(20 * time.Second), NemesisInterval: results.Duration(5 * time.Second),
		RunArgs: []string{"--replica-lag-time-max-ms", "2000", "--session-timeout-ms", "2000"}, Runtime: "docker"}
	base := testBase()
	p, err := NewPlan(spec, FixedBase(base))
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
	p, err = NewPlan(spec, FixedBase(base))
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
	p1, err := NewPlan(one, FixedBase(testBase()))
	if err != nil {
		t.Fatal(err)
	}
	p2, err := NewPlan(two, FixedBase(testBase()))
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
	p, err := NewPlan(spec, FixedBase(testBase()))
	if err == nil || p != nil {
		t.Fatalf("planned %+v", p)
	}
	for _, want := range []string{
		"refusing the campaign: 6 impossible cell(s)",
		"acks=2 isr=1 clean none: acks must be 0, 1 or -1, got 2",
		"acks=1 isr=4 clean none: min.insync.replicas 4 exceeds the replication factor 3",
		"acks=1 isr=0 clean none: min.insync.replicas must be at least 1, got 0",
		`acks=1 isr=1 maybe none: election must be one of clean, unclean, elr, got "maybe"`,
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
	_, err = NewPlan(spec, FixedBase(base))
	for _, want := range []string{
		"2 impossible",
		"acks=-1 isr=2 clean kill: the replication factor 3 needs at least 3 nodes, there are 2",
		"acks=-1 isr=2 clean none: the replication factor 3 needs at least 3 nodes",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal lacks %q:\n%v", want, err)
		}
	}
	_, err = NewPlan(spec, FixedBase(testBase()))
	if err == nil || !strings.Contains(err.Error(), "1 impossible") ||
		!strings.Contains(err.Error(), "acks=-1 isr=2 clean kill: the time limit 9s is shorter than twice the nemesis interval 5s") {
		t.Errorf("a time limit with no room for a window: %v", err)
	}
}

// argsBase is a Base that reads a few chaos run flags (--rate N,
// --lose-unsynced, --bug NAME) into b and refuses any other, as chaos
// campaign's refuses a flag chaos run does not know.
func argsBase(b runner.Spec) Base {
	return func(args []string) (runner.Spec, error) {
		s := b
		s.Settings.Bugs = slices.Clone(b.Settings.Bugs)
		for i := 0; i < len(args); i++ {
			switch a := args[i]; a {
			case "--lose-unsynced":
				s.Settings.LoseUnsynced = true
			case "--rate", "--bug":
				if i++; i == len(args) {
					return runner.Spec{}, fmt.Errorf("flags for chaos run: flag needs an argument: %s", a)
				}
				if a == "--bug" {
					s.Settings.Bugs = append(s.Settings.Bugs, args[i])
					continue
				}
				r, err := strconv.ParseFloat(args[i], 64)
				if err != nil {
					return runner.Spec{}, fmt.Errorf("flags for chaos run: invalid argument %q for --rate", args[i])
				}
				s.Rate = r
			default:
				return runner.Spec{}, fmt.Errorf("flags for chaos run: unknown flag: %s", a)
			}
		}
		return s, nil
	}
}

// TestCampaignPlanBugsAndRunArgs: a cell's bugs are planted in its runs
// (in chaos bugs' order, with those of the run args), its run args apply
// after the campaign's; its name, label and args say both, so that its
// args and a seed replay a run, and cells that differ only in them are
// apart.
func TestCampaignPlanBugsAndRunArgs(t *testing.T) {
	spec := results.CampaignSpec{Cells: []results.CampaignCellSpec{
		{Acks: -1, MinInsyncReplicas: 2, Nemesis: "partition-leader", Bugs: []string{"unclean-when-clean", "ack-before-replicate"}},
		{Acks: -1, MinInsyncReplicas: 2, Nemesis: "partition-leader", Bugs: []string{"ack-before-replicate"}, RunArgs: []string{"--rate", "50", "--lose-unsynced"}},
		{Acks: -1, MinInsyncReplicas: 2, Nemesis: "partition-leader", Bugs: []string{"ack-before-replicate"}, RunArgs: []string{"--rate", "60"}},
		{Acks: -1, MinInsyncReplicas: 2, Nemesis: "partition-leader", RunArgs: []string{"--bug", "hw-ignores-isr"}, Bugs: []string{"hw-ignores-isr", "read-past-hw"}},
		{Acks: -1, MinInsyncReplicas: 2, Nemesis: "partition-leader"},
	}, Runs: 2, TimeLimit: results.Duration(20 * time.Second), NemesisInterval: results.Duration(5 * time.Second),
		RunArgs: []string{"--rate", "100"}, Runtime: runner.RuntimeSim}
	base := testBase()
	base.Rate = 100
	p, err := NewPlan(spec, argsBase(base))
	if err != nil {
		t.Fatal(err)
	}
	type want struct{ name, label, args string }
	const common = "sim --store st --name %s --quiet --acks -1 --min-insync-replicas 2 --election clean --nemesis partition-leader --time-limit 20s --nemesis-interval 5s --rate 100"
	for i, w := range []want{
		{"acksall_isr2_clean_partition-leader_bug-ack-before-replicate_bug-unclean-when-clean",
			"acks=-1 isr=2 clean partition-leader bug=ack-before-replicate,unclean-when-clean", " --bug ack-before-replicate --bug unclean-when-clean"},
		{"acksall_isr2_clean_partition-leader_bug-ack-before-replicate_rate-50-lose-unsynced",
			"acks=-1 isr=2 clean partition-leader [--rate 50 --lose-unsynced] bug=ack-before-replicate", " --bug ack-before-replicate --rate 50 --lose-unsynced"},
		{"acksall_isr2_clean_partition-leader_bug-ack-before-replicate_rate-60",
			"acks=-1 isr=2 clean partition-leader [--rate 60] bug=ack-before-replicate", " --bug ack-before-replicate --rate 60"},
		{"acksall_isr2_clean_partition-leader_bug-hw-ignores-isr_bug-read-past-hw_bug-hw-ignores-isr",
			"acks=-1 isr=2 clean partition-leader [--bug hw-ignores-isr] bug=hw-ignores-isr,read-past-hw", " --bug read-past-hw --bug hw-ignores-isr"},
		{"acksall_isr2_clean_partition-leader", "acks=-1 isr=2 clean partition-leader", ""},
	} {
		c := p.Cells[i]
		if c.Name != w.name || c.Label != w.label || strings.Join(c.Args, " ") != fmt.Sprintf(common, w.name)+w.args {
			t.Errorf("cell %d:\n name  %s\n label %s\n args  %s\nwant\n name  %s\n label %s\n args  %s", i, c.Name, c.Label,
				strings.Join(c.Args, " "), w.name, w.label, fmt.Sprintf(common, w.name)+w.args)
		}
		if !slices.Equal(c.Spec.Settings.Bugs, c.Bugs) || c.Spec.Name != c.Name || c.Spec.Store != "st" {
			t.Errorf("cell %d: spec bugs %v, name %s, store %s; plan bugs %v", i, c.Spec.Settings.Bugs, c.Spec.Name, c.Spec.Store, c.Bugs)
		}
	}
	if c := p.Cells[1]; c.Spec.Rate != 50 || !c.Spec.Settings.LoseUnsynced || !slices.Equal(c.RunArgs, []string{"--rate", "50", "--lose-unsynced"}) ||
		Scenario(c.CampaignCellPlan) != "acks=-1 isr=2 clean partition-leader [--rate 50 --lose-unsynced]" {
		t.Errorf("run args not applied: rate %g, lose-unsynced %v, run args %v", c.Spec.Rate, c.Spec.Settings.LoseUnsynced, c.RunArgs)
	}
	if c := p.Cells[0]; c.Spec.Rate != 100 || !slices.Equal(c.Bugs, []string{"ack-before-replicate", "unclean-when-clean"}) {
		t.Errorf("cell 0: rate %g, bugs %v", c.Spec.Rate, c.Bugs)
	}
	if c := p.Cells[4]; c.Bugs != nil || c.Spec.Settings.Bugs != nil {
		t.Errorf("the control cell plants %v", c.Bugs)
	}
	// A long list of run args makes a name of bounded length, still its
	// own.
	long := []string{"--rate", "50", "--lose-unsynced", "--rate", "51", "--rate", "52", "--rate", "53", "--rate", "54", "--rate", "55"}
	if a, b := argsName(long), argsName(append(long[:len(long)-1:len(long)-1], "56")); len(a) > 60 || a == b {
		t.Errorf("long args named %q and %q", a, b)
	}
}

// TestCampaignPlanRefusesBadBugsAndRunArgs: an unknown bug, a run arg the
// base refuses, or a cell whose run args a fixed base cannot read, is
// that cell's refusal with the reason, beside every other.
func TestCampaignPlanRefusesBadBugsAndRunArgs(t *testing.T) {
	spec := results.CampaignSpec{Cells: []results.CampaignCellSpec{
		{Acks: -1, MinInsyncReplicas: 2, Nemesis: "kill", Bugs: []string{"ack-before-replicate"}}, // fine
		{Acks: -1, MinInsyncReplicas: 2, Nemesis: "kill", Bugs: []string{"no-such-bug"}},
		{Acks: -1, MinInsyncReplicas: 2, Nemesis: "kill", RunArgs: []string{"--bogus"}},
		{Acks: -1, MinInsyncReplicas: 2, Nemesis: "kill", RunArgs: []string{"--rate", "fast"}},
		{Acks: -1, MinInsyncReplicas: 2, Nemesis: "kill", RunArgs: []string{"--bug", "nope"}},
		{Acks: -1, MinInsyncReplicas: 2, Nemesis: "kill", Bugs: []string{"ack-before-replicate"}}, // twice
	}, Runs: 1, TimeLimit: results.Duration(20 * time.Second), NemesisInterval: results.Duration(5 * time.Second)}
	_, err := NewPlan(spec, argsBase(testBase()))
	for _, want := range []string{
		"refusing the campaign: 5 impossible cell(s)",
		`acks=-1 isr=2 clean kill bug=no-such-bug: unknown bug "no-such-bug": known bugs are ack-before-replicate, `,
		"acks=-1 isr=2 clean kill [--bogus]: flags for chaos run: unknown flag: --bogus",
		`acks=-1 isr=2 clean kill [--rate fast]: flags for chaos run: invalid argument "fast" for --rate`,
		`acks=-1 isr=2 clean kill [--bug nope]: unknown bug "nope"`,
		"acks=-1 isr=2 clean kill bug=ack-before-replicate: appears twice",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal lacks %q:\n%v", want, err)
		}
	}
	spec.Cells = spec.Cells[:3]
	_, err = NewPlan(spec, FixedBase(testBase()))
	if err == nil || !strings.Contains(err.Error(), "2 impossible") ||
		!strings.Contains(err.Error(), `acks=-1 isr=2 clean kill [--bogus]: run_args ["--bogus"]: this campaign cannot read chaos run flags of a cell`) {
		t.Errorf("a fixed base and a cell's run args: %v", err)
	}
}

// TestCampaignPlanFitsEachCellsKinds: a cell whose kinds have no room for
// a window each at chaos run's default interval gets the interval chaos
// run would choose, in its spec and its args, when the campaign gives
// none; a campaign interval without that room refuses the cell with the
// time limit that has it, unless the runs allow a partial schedule.
func TestCampaignPlanFitsEachCellsKinds(t *testing.T) {
	spec := results.CampaignSpec{Nemesis: []string{"kill,pause,partition", "kill"}, Runs: 1, TimeLimit: results.Duration(30 * time.Second)}
	p, err := NewPlan(spec, FixedBase(testBase()))
	if err != nil {
		t.Fatal(err)
	}
	three, one := p.Cells[0], p.Cells[1]
	if s := three.Spec; s.NemesisInterval != 3700*time.Millisecond || !s.NemesisIntervalChosen ||
		!strings.Contains(strings.Join(three.Args, " "), "--time-limit 30s --nemesis-interval 3.7s") {
		t.Errorf("three kinds in 30 s: interval %s, chosen %v, args %v", s.NemesisInterval, s.NemesisIntervalChosen, three.Args)
	}
	for seed := uint64(1); seed <= 100; seed++ {
		s := three.Spec
		s.Seed = seed
		if miss := s.Schedule().Uncovered(s.Faults); len(miss) > 0 {
			t.Fatalf("seed %d: %v without a window", seed, miss)
		}
	}
	if s := one.Spec; s.NemesisInterval != runner.DefaultNemesisInterval || s.NemesisIntervalChosen || slices.Contains(one.Args, "--nemesis-interval") {
		t.Errorf("one kind in 30 s keeps the default: %s, chosen %v, args %v", s.NemesisInterval, s.NemesisIntervalChosen, one.Args)
	}

	spec.NemesisInterval = results.Duration(5 * time.Second)
	_, err = NewPlan(spec, FixedBase(testBase()))
	if err == nil || !strings.Contains(err.Error(), "1 impossible") ||
		!strings.Contains(err.Error(), "kill,pause,partition: the nemesis interval 5s has no room for a window of each of the 3 kinds kill,pause,partition in the time limit 30s, whatever the seed: give a time limit of 40s or more, a nemesis interval of 3.7s or less") ||
		!strings.Contains(err.Error(), "--allow-partial-schedule") {
		t.Errorf("a campaign interval too long for a cell: %v", err)
	}
	partial := testBase()
	partial.AllowPartialSchedule = true
	p, err = NewPlan(spec, FixedBase(partial))
	if err != nil || p.Cells[0].Spec.NemesisInterval != 5*time.Second {
		t.Errorf("with --allow-partial-schedule: %v", err)
	}

	// Too short even at the floor, with no interval given.
	spec.NemesisInterval, spec.TimeLimit = 0, results.Duration(5*time.Second)
	_, err = NewPlan(spec, FixedBase(testBase()))
	if err == nil || !strings.Contains(err.Error(), "the time limit 5s has no room for a window of each of the 3 kinds kill,pause,partition, even at the shortest nemesis interval chosen (1s): give a time limit of 8s or more") {
		t.Errorf("three kinds in 5 s: %v", err)
	}
}
