package campaign

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chaos-isr/chaos/broker/bug"
	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/nemesis"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/runner"
	"github.com/chaos-isr/chaos/shard"
)

// RunOverhead is what a run takes beyond its time limit: starting the
// cluster, the final reads, the checkers and the report (measured on a
// 2-core machine: 1-1.5 s). A campaign's first estimate uses it.
const RunOverhead = 2 * time.Second

// Plan is a campaign ready to run: its spec as resolved and its cells,
// each with the spec of its runs.
type Plan struct {
	Spec results.CampaignSpec
	// Store is the result store the runs write to (the base spec's).
	Store string
	Cells []Cell
	// Shard is the slice of the runs to run (the zero Shard: all); a
	// run's slice is that of its RunKey.
	Shard shard.Shard
}

// Cell is one configuration x nemesis of the matrix: what campaign.json
// records of it before any run, and the spec of its runs.
type Cell struct {
	results.CampaignCellPlan
	// Spec is every run's spec but for the seed and the command
	// test.json records (RunSpec adds them).
	Spec runner.Spec
}

// Runs is the number of runs planned in all (in the plan's shard).
func (p *Plan) Runs() int { return len(p.PlannedRuns()) }

// RunKey names a run for the shard assignment: its cell's name and its
// number, never its position, so that adding or removing cells moves no
// other run to another shard.
func RunKey(cellName string, run int) string { return fmt.Sprintf("%s/%d", cellName, run) }

// PlannedRun is one run of a plan: its cell (an index into the plan's
// cells), its number in the cell, and its place in the whole plan (from
// 1), which names its log: the same name whatever the parallelism, the
// refused cells before it, or the shard that runs it.
type PlannedRun struct{ Cell, Run, Pos int }

// PlannedRuns are the runs of the plan's shard in the plan's order: cell
// by cell, run by run.
func (p *Plan) PlannedRuns() []PlannedRun {
	var out []PlannedRun
	pos := 0
	for i, c := range p.Cells {
		for r := 1; r <= p.Spec.Runs; r++ {
			pos++
			if p.Shard.Has(RunKey(c.Name, r)) {
				out = append(out, PlannedRun{Cell: i, Run: r, Pos: pos})
			}
		}
	}
	return out
}

// SimSpeed is how many times faster than its time limit a simulated run
// goes, start to verdict, on one core (measured on a 2-core machine: the
// seed preset's 30 s runs took 0.6-1.5 s each). A campaign in simulation
// makes its first estimate from it.
const SimSpeed = 30

// Estimate is how long the plan takes one run at a time, before any run
// has said how long a run really takes here.
func (p *Plan) Estimate() time.Duration {
	return time.Duration(p.Runs()) * p.perRun()
}

// perRun is the first estimate of a run's time.
func (p *Plan) perRun() time.Duration {
	if p.Spec.Runtime == runner.RuntimeSim {
		return time.Duration(p.Spec.TimeLimit) / SimSpeed
	}
	return time.Duration(p.Spec.TimeLimit) + RunOverhead
}

// RunSpec is the spec of a cell's run (numbered from 1) in a campaign with
// this seed. program names the chaos binary in the command test.json
// records as the one that replays the run: program, the cell's Args and
// the run's --seed.
func (c *Cell) RunSpec(campaignSeed uint64, run int, program string) runner.Spec {
	s := c.Spec
	s.Faults = slices.Clone(c.Spec.Faults)
	s.Seed = RunSeed(campaignSeed, c.Name, run)
	s.Command = append(append([]string{program}, c.Args...), "--seed", strconv.FormatUint(s.Seed, 10))
	return s
}

// RunSeed derives a run's seed from the campaign seed, the cell's name and
// the run's number: shard.Hash (FNV-1a mixed with splitmix64's finalizer)
// of "<campaign seed>/<cell name>/<run>". Hashing the name rather than the cell's
// position keeps a cell's seeds when cells are added to or removed from a
// campaign. The top bit is cleared like chaos run's own random seeds, and
// 0 (which chaos run reads as "pick one") is avoided.
func RunSeed(campaign uint64, cellName string, run int) uint64 {
	if s := shard.Hash(fmt.Sprintf("%d/%s/%d", campaign, cellName, run)) >> 1; s != 0 {
		return s
	}
	return 1
}

// Base makes the spec a cell's runs start from, all but what the cell
// varies, out of the cell's own "chaos run" flags (CellSpec.RunArgs;
// none: the spec every cell without flags of its own shares), which
// follow the campaign's run args. chaos campaign reads them with chaos
// run's own flag set, and refuses the flags the campaign sets itself;
// FixedBase serves a campaign none of whose cells has flags of its own.
// An error refuses the cell (with none, the campaign).
type Base func(cellArgs []string) (runner.Spec, error)

// FixedBase is the Base that is s, for a caller that made the spec
// every run shares itself: it refuses a cell with run args of its own,
// which it has no way to read.
func FixedBase(s runner.Spec) Base {
	return func(cellArgs []string) (runner.Spec, error) {
		if len(cellArgs) > 0 {
			return runner.Spec{}, fmt.Errorf("run_args %q: this campaign cannot read chaos run flags of a cell", cellArgs)
		}
		return s, nil
	}
}

// NewPlan checks every cell of spec and plans its runs as variations of
// its base (base(nil), or with the cell's run args base(RunArgs)): the
// cell's acks, min.insync.replicas, election, faults and planted bugs
// (besides those of the run args), the spec's time limit, nemesis
// interval (when set) and runtime (when set), and the cell's name. All
// impossible cells are named at once, with the reason, before anything
// runs: finding the fifth one twenty minutes in helps nobody. A cell's
// bugs must be known (chaos bugs) and its run args ones base accepts.
// What only a run can find out (a runtime that is not ready, a setting of
// the base the runner refuses) is left to the run, and refuses that cell
// only.
//
// Each of checks is asked about every cell's spec as well, and its
// refusal is the cell's: what the runtime cannot run, where this package
// cannot ask the runtime itself (chaos campaign --runtime sim passes the
// simulation's sim.Validate: a package that imports the simulation holds
// the in-memory cluster, which only sim and cmd/chaos may).
func NewPlan(spec results.CampaignSpec, base Base, checks ...func(runner.Spec) error) (*Plan, error) {
	shared, err := base(nil)
	if err != nil {
		return nil, err
	}
	p := &Plan{Spec: spec, Store: shared.Store}
	var problems []string
	seen := map[string]bool{}
	for _, cs := range cellSpecs(spec) {
		c, err := planCell(cs, spec, shared, base)
		for _, check := range checks {
			if err == nil {
				err = check(c.Spec)
			}
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", specLabel(cs), err))
			continue
		}
		if seen[c.Name] {
			problems = append(problems, fmt.Sprintf("%s: appears twice (use runs for repetitions)", c.Label))
			continue
		}
		seen[c.Name] = true
		p.Cells = append(p.Cells, c)
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("refusing the campaign: %d impossible cell(s):\n  %s", len(problems), strings.Join(problems, "\n  "))
	}
	return p, nil
}

// cellSpecs expands the matrix, acks outermost and the nemesis innermost,
// so neighbouring cells differ in the fault first. Lists left out are
// chaos run's defaults.
func cellSpecs(s results.CampaignSpec) []results.CampaignCellSpec {
	if len(s.Cells) > 0 {
		return s.Cells
	}
	acks, isr, el, nem := s.Acks, s.MinInsyncReplicas, s.Election, s.Nemesis
	if len(acks) == 0 {
		acks = []results.Acks{-1}
	}
	if len(isr) == 0 {
		isr = []int{2}
	}
	if len(el) == 0 {
		el = []string{"clean"}
	}
	if len(nem) == 0 {
		nem = []string{"none"}
	}
	var out []results.CampaignCellSpec
	for _, a := range acks {
		for _, e := range el {
			for _, m := range isr {
				for _, n := range nem {
					out = append(out, results.CampaignCellSpec{Acks: a, MinInsyncReplicas: m, Election: e, Nemesis: n})
				}
			}
		}
	}
	return out
}

func cellLabel(acks, isr int, election, nem string) string {
	return fmt.Sprintf("acks=%d isr=%d %s %s", acks, isr, election, nem)
}

// Scenario is a cell's label without its bugs: the configuration, the
// nemesis and the cell's own run args ("acks=-1 isr=2 clean kill-leader
// [--lose-unsynced]"), what a detection campaign's row names.
func Scenario(c results.CampaignCellPlan) string {
	return cellLabel(c.Acks, c.MinInsyncReplicas, cmp.Or(c.Election, "clean"), cmp.Or(c.Nemesis, "none")) + argsLabel(c.RunArgs)
}

// label is a cell's label: its scenario and the bugs it plants
// ("... bug=ack-before-replicate").
func label(c results.CampaignCellPlan) string { return Scenario(c) + bugsLabel(c.Bugs) }

// specLabel names a cell of a spec the plan refused, as written.
func specLabel(cs results.CampaignCellSpec) string {
	return cellLabel(int(cs.Acks), cs.MinInsyncReplicas, cmp.Or(cs.Election, "clean"), cmp.Or(cs.Nemesis, "none")) + argsLabel(cs.RunArgs) + bugsLabel(cs.Bugs)
}

func argsLabel(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return " [" + strings.Join(args, " ") + "]"
}

func bugsLabel(bugs []string) string {
	if len(bugs) == 0 {
		return ""
	}
	return " bug=" + strings.Join(bugs, ",")
}

// argsName is what a cell's run args add to its name, so that cells that
// differ only in them are apart in the store and draw other seeds: the
// args without their dashes ("_lose-unsynced-fsync-never"), or, past 48
// characters, their start and a hash of them all.
func argsName(args []string) string {
	if len(args) == 0 {
		return ""
	}
	var words []string
	for _, a := range args {
		if a = strings.Trim(strings.ReplaceAll(a, "=", "-"), "-"); a != "" {
			words = append(words, a)
		}
	}
	name := strings.Join(words, "-")
	if len(name) > 48 {
		name = fmt.Sprintf("%s-%08x", name[:39], uint32(shard.Hash(strings.Join(args, "\x00"))))
	}
	return "_" + name
}

func planCell(cs results.CampaignCellSpec, spec results.CampaignSpec, shared runner.Spec, base Base) (Cell, error) {
	s := shared
	if len(cs.RunArgs) > 0 {
		var err error
		if s, err = base(cs.RunArgs); err != nil {
			return Cell{}, err
		}
		s.Store = shared.Store
	}
	// The cell's bugs join those its run args plant; a run args' bug is
	// in the args already, the cell's own get a --bug each.
	argBugs := s.Settings.Bugs
	bugs, err := bug.ParseSet(append(slices.Clone(argBugs), cs.Bugs...))
	if err != nil {
		return Cell{}, err
	}
	s.Settings.Bugs = bugs.Names()
	var bugArgs []string
	for _, b := range s.Settings.Bugs {
		if !slices.Contains(argBugs, b) {
			bugArgs = append(bugArgs, "--bug", b)
		}
	}
	acks := int(cs.Acks)
	if err := checker.CheckAcks(acks); err != nil {
		return Cell{}, err
	}
	election := cmp.Or(cs.Election, "clean")
	if err := checker.CheckElection(election); err != nil {
		return Cell{}, err
	}
	faults, err := nemesis.Parse(cs.Nemesis)
	if err != nil {
		return Cell{}, err
	}
	nem := "none"
	if len(faults) > 0 {
		nem = strings.Join(faults, ",")
	}
	s.Settings.MinInsyncReplicas, s.Settings.Election = int32(cs.MinInsyncReplicas), election
	s.Acks, s.Faults, s.TimeLimit = int16(acks), faults, time.Duration(spec.TimeLimit)
	intervalGiven := spec.NemesisInterval > 0 || setsFlag(cs.RunArgs, "nemesis-interval")
	if spec.NemesisInterval > 0 && !setsFlag(cs.RunArgs, "nemesis-interval") {
		// A cell's own interval (its run args) wins over the campaign's.
		s.NemesisInterval = time.Duration(spec.NemesisInterval)
	}
	if spec.Runtime != "" {
		s.Runtime = spec.Runtime
	}
	s.Name = results.TestName(s.DefaultName() + argsName(cs.RunArgs))
	s.Seed, s.Command = 0, nil
	if err := fitCell(&s, intervalGiven); err != nil {
		return Cell{}, err
	}
	rf := int(s.Settings.ReplicationFactor)
	switch {
	case cs.MinInsyncReplicas < 1:
		return Cell{}, fmt.Errorf("min.insync.replicas must be at least 1, got %d", cs.MinInsyncReplicas)
	case rf < 1:
		return Cell{}, fmt.Errorf("the replication factor must be at least 1, got %d", rf)
	case cs.MinInsyncReplicas > rf:
		return Cell{}, fmt.Errorf("min.insync.replicas %d exceeds the replication factor %d: acks=-1 writes could never succeed", cs.MinInsyncReplicas, rf)
	case rf > s.Nodes:
		return Cell{}, fmt.Errorf("the replication factor %d needs at least %d nodes, there are %d", rf, rf, s.Nodes)
	case len(faults) > 0 && s.NemesisInterval <= 0:
		return Cell{}, fmt.Errorf("the nemesis interval must be positive, got %s", s.NemesisInterval)
	case len(faults) > 0 && s.TimeLimit < nemesis.MinTimeLimit(s.NemesisInterval):
		// Below it no fault window fits, whatever the seed, and the cell
		// would claim faults it never injected.
		return Cell{}, fmt.Errorf("the time limit %s is shorter than twice the nemesis interval %s: no fault window fits", s.TimeLimit, s.NemesisInterval)
	}
	// The prediction is what the model permits if every listed fault
	// runs, under the storage settings the run will have (a fault
	// destroys data only where the brokers lose unsynced writes); the
	// run itself is judged by the faults that did run.
	model := s.Model()
	perm := checker.Permitted(model)
	prediction := checker.LostWriteName + " forbidden"
	if perm[checker.LostWriteName].Permitted {
		prediction = checker.LostWriteName + " permitted"
	}
	c := Cell{
		CampaignCellPlan: results.CampaignCellPlan{
			Name: s.Name, Acks: acks, MinInsyncReplicas: cs.MinInsyncReplicas, Election: election, Nemesis: nem,
			Bugs: slices.Clone(s.Settings.Bugs), RunArgs: slices.Clone(cs.RunArgs),
			Args:  append(append(runArgs(s, spec), bugArgs...), cs.RunArgs...),
			Model: model, Permitted: perm, Prediction: prediction,
		},
		Spec: s,
	}
	c.Label = label(c.CampaignCellPlan)
	return c, nil
}

// runArgs are the "chaos run" arguments, less --seed, that run the cell's
// spec but for its own bugs and run args, which the cell's Args add:
// campaign.json records them, and with the seed they replay a run. The
// settings the campaign leaves alone are the spec's RunArgs, which the
// base spec was made from. A simulated run's are "chaos sim"'s, which
// takes chaos run's flags and is the sim runtime.
func runArgs(s runner.Spec, spec results.CampaignSpec) []string {
	nem := "none"
	if len(s.Faults) > 0 {
		nem = strings.Join(s.Faults, ",")
	}
	command := "run"
	if s.Runtime == runner.RuntimeSim {
		command = "sim"
	}
	args := []string{command, "--store", s.Store, "--name", s.Name, "--quiet",
		"--acks", strconv.Itoa(int(s.Acks)), "--min-insync-replicas", strconv.Itoa(int(s.Settings.MinInsyncReplicas)),
		"--election", s.Settings.Election, "--nemesis", nem, "--time-limit", s.TimeLimit.String()}
	if spec.NemesisInterval > 0 || s.NemesisIntervalChosen {
		// A chosen interval too: the replay need not choose it again.
		args = append(args, "--nemesis-interval", s.NemesisInterval.String())
	}
	if s.Runtime != runner.RuntimeLocal && s.Runtime != runner.RuntimeSim {
		args = append(args, "--runtime", s.Runtime)
	}
	return append(args, spec.RunArgs...)
}

// fitCell is chaos run's rule for a cell's schedule (runner.FitSchedule),
// in a campaign's words: with no interval given by the campaign or the
// cell, each cell gets the longest up to chaos run's default that has
// room for a window of each of its kinds; one given that has none is
// refused, as chaos run refuses it, unless the run args allow a partial
// schedule. The interval must be chosen before the time limit is checked
// against it: a chosen one always leaves room for a window.
func fitCell(s *runner.Spec, intervalGiven bool) error {
	if len(s.Faults) == 0 {
		return nil
	}
	k := len(s.Faults)
	if !intervalGiven {
		if s.ChooseNemesisInterval() || s.AllowPartialSchedule {
			return nil
		}
		return fmt.Errorf("the time limit %s has no room for a window of each of the %d kinds %s, even at the shortest nemesis interval chosen (%s): "+
			"give a time limit of %s or more, or pass -- --allow-partial-schedule to run the kinds that fit",
			s.TimeLimit, k, strings.Join(s.Faults, ","), nemesis.MinChosenInterval, nemesis.CoverTimeLimit(k, nemesis.MinChosenInterval))
	}
	need, short := s.ScheduleShort()
	if !short || s.AllowPartialSchedule {
		return nil
	}
	alt := ""
	if iv, ok := nemesis.FitInterval(k, s.TimeLimit, s.NemesisInterval); ok {
		alt = fmt.Sprintf(", a nemesis interval of %s or less", iv)
	}
	return fmt.Errorf("the nemesis interval %s has no room for a window of each of the %d kinds %s in the time limit %s, whatever the seed: "+
		"give a time limit of %s or more%s (or none, to have one chosen per cell), or pass -- --allow-partial-schedule to run the kinds that fit",
		s.NemesisInterval, k, strings.Join(s.Faults, ","), s.TimeLimit, need, alt)
}

// setsFlag says whether args set the flag --name (as "--name V" or
// "--name=V").
func setsFlag(args []string, name string) bool {
	return slices.ContainsFunc(args, func(a string) bool { return a == "--"+name || strings.HasPrefix(a, "--"+name+"=") })
}
