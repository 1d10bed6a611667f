package campaign

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/runner"
)

// Spec is a campaign in the spec file format (chaos campaign --spec
// FILE), and what the presets and chaos campaign's flags are turned into:
// campaign.json's own results.CampaignSpec, which the record keeps
// (Record), with what a campaign does with one.
type Spec struct {
	results.CampaignSpec
}

// CellSpec is one explicit cell of a spec.
type CellSpec = results.CampaignCellSpec

// Acks is an acks setting as a spec gives it.
type Acks = results.Acks

// ParseAcks reads acks as chaos run's --acks takes it (0, 1, -1 or all),
// and refuses another in its words: the campaign's --acks and a spec
// file's acks are the same values.
func ParseAcks(s string) (Acks, error) {
	a, err := runner.ParseAcks(s)
	return Acks(a), err
}

// ParseSpec reads a spec file. Unknown fields are refused: a misspelt
// field would otherwise fall back to a default without a word, and the
// campaign would test something else.
func ParseSpec(data []byte) (Spec, error) {
	var s Spec
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(&s)
	return s, err
}

// Check refuses a spec whose settings no campaign can have, whatever its
// cells: fewer than one run, a time limit that is not positive, a
// negative nemesis interval, both explicit cells and matrix lists. (What
// is wrong with a cell, NewPlan says.)
func (s Spec) Check() error {
	switch {
	case s.Runs < 1:
		return fmt.Errorf("runs must be at least 1, got %d", s.Runs)
	case s.TimeLimit <= 0:
		return fmt.Errorf("the time limit must be positive, got %s", time.Duration(s.TimeLimit))
	case s.NemesisInterval < 0:
		return fmt.Errorf("the nemesis interval must be positive, got %s", time.Duration(s.NemesisInterval))
	case len(s.Cells) > 0 && (len(s.Acks)+len(s.MinInsyncReplicas)+len(s.Election)+len(s.Nemesis) > 0):
		return errors.New("a spec gives either cells or the matrix lists (acks, min_insync_replicas, election, nemesis), not both")
	}
	return nil
}

// Record is the spec as campaign.json keeps it: a copy, so that the
// record does not change with the spec.
func (s Spec) Record() results.CampaignSpec {
	r := s.CampaignSpec
	r.Acks, r.MinInsyncReplicas = slices.Clone(r.Acks), slices.Clone(r.MinInsyncReplicas)
	r.Election, r.Nemesis, r.RunArgs = slices.Clone(r.Election), slices.Clone(r.Nemesis), slices.Clone(r.RunArgs)
	r.Cells = slices.Clone(r.Cells)
	for i := range r.Cells {
		r.Cells[i].Bugs, r.Cells[i].RunArgs = slices.Clone(r.Cells[i].Bugs), slices.Clone(r.Cells[i].RunArgs)
	}
	return r
}

// shortTimings make faults bite within a short run: with Kafka's defaults
// (replica.lag.time.max.ms 10 s, a 3 s session timeout) a follower cut off
// for a 5 s fault window never leaves the ISR, so a 20-30 s run would test
// almost nothing.
var shortTimings = []string{"--replica-lag-time-max-ms", "2000", "--session-timeout-ms", "2000"}

// presets are the campaigns the issue names. They are specs like any
// other, so "chaos campaign --preset NAME --dry-run" shows one in the spec
// file format as a starting point.
var presets = map[string]Spec{
	// smoke is for CI: one cell that must be valid and one that must show
	// its teeth, about 45 s in all on a 2-core machine.
	"smoke": {CampaignSpec: results.CampaignSpec{
		Cells: []CellSpec{
			// The headline guarantee: no acknowledged write lost under
			// crashes and pauses.
			{Acks: -1, MinInsyncReplicas: 2, Election: "clean", Nemesis: "kill,pause"},
			// docs/guarantees.md scenario 1: lost writes are permitted, and
			// usually seen.
			{Acks: 1, MinInsyncReplicas: 1, Election: "clean", Nemesis: "partition-leader"},
		},
		Runs:      1,
		TimeLimit: results.Duration(20 * time.Second),
		// 3.5 s has room for a window of kill and one of pause in 20 s
		// whatever the seed (nemesis.CoverTimeLimit); 5 s had not.
		NemesisInterval: results.Duration(3500 * time.Millisecond),
		RunArgs:         shortTimings,
	}},
	// seed is the seed's whole question as one matrix (its size: Size).
	// slow-followers-kill-leader is the seed's own scenario 2: followers
	// slowed out of the ISR, then the leader lost, which only an unclean
	// election turns into lost acknowledged writes. lose-unsynced kills a
	// broker with its unsynced writes (F2: the brokers keep them in memory,
	// as a power loss would lose them), the page-cache case, where even
	// acks=-1 with min.insync.replicas=2 may lose data (the last replica
	// standing). stop-followers-kill-leader is KIP-966's case, the last
	// replica standing with its followers down cleanly: clean and unclean
	// election lose acknowledged writes, ELR must not.
	"seed": {CampaignSpec: results.CampaignSpec{
		Acks:              []Acks{0, 1, -1},
		Election:          []string{"clean", "unclean", "elr"},
		MinInsyncReplicas: []int{1, 2},
		Nemesis:           []string{"kill-leader", "partition-leader", "slow-follower", "slow-followers-kill-leader", "lose-unsynced", "stop-followers-kill-leader"},
		Runs:              1,
		TimeLimit:         results.Duration(30 * time.Second),
		NemesisInterval:   results.Duration(5 * time.Second),
		RunArgs:           shortTimings,
	}},
	// bugs is the detection campaign (bugs.go): every planted bug in the
	// scenario that exposes it, and a control cell per scenario; in
	// simulation, with --runs. Each cell has its own nemesis interval, in
	// its run args.
	"bugs": {CampaignSpec: results.CampaignSpec{
		Cells:     bugsCells,
		Runs:      3,
		TimeLimit: results.Duration(30 * time.Second),
		RunArgs:   shortTimings,
	}},
}

// Preset is the preset of that name, a copy the caller may change.
func Preset(name string) (Spec, bool) {
	p, ok := presets[name]
	if !ok {
		return Spec{}, false
	}
	return Spec{p.Record()}, true
}

// CellCount is how many cells the spec has: its explicit cells, or every
// combination of its matrix lists (a list left out counts once). Help
// says a preset's size with it, so that the text grows with the preset.
func (s Spec) CellCount() int { return len(cellSpecs(s.Record())) }

// PresetNames lists the presets, sorted.
func PresetNames() []string {
	var names []string
	for n := range presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Size is how big a campaign is before it is planned: its cells, runs per
// cell and time limit, and the first estimates of how long it takes one
// run at a time, for real and in simulation (what Plan.Estimate says
// before any run). The help's words for a preset come from it, so they
// cannot drift from the preset.
type Size struct {
	Cells, Runs     int
	TimeLimit       time.Duration
	Real, Simulated time.Duration
}

// Size is the spec's size as written (a matrix's cells are the product of
// its lists, chaos run's defaults for those left out).
func (s Spec) Size() Size {
	z := Size{Cells: len(cellSpecs(s.Record())), Runs: max(s.Runs, 1), TimeLimit: time.Duration(s.TimeLimit)}
	n := time.Duration(z.Cells * z.Runs)
	z.Real, z.Simulated = n*(z.TimeLimit+RunOverhead), n*z.TimeLimit/SimSpeed
	return z
}

// String says it as the help does: "60 cells x 1 run of 30s: about 32
// minutes, about 60 s on one core in simulation".
func (z Size) String() string {
	runs := "runs"
	if z.Runs == 1 {
		runs = "run"
	}
	return fmt.Sprintf("%d cells x %d %s of %s: about %s, about %s on one core in simulation", z.Cells, z.Runs, runs, z.TimeLimit, About(z.Real), About(z.Simulated))
}

// About is a duration as a person says it: "40 s", "1 minute", "32
// minutes".
func About(d time.Duration) string {
	switch m := int(d.Round(time.Minute) / time.Minute); {
	case d < 90*time.Second:
		return fmt.Sprintf("%d s", int(d.Round(time.Second)/time.Second))
	case m == 1:
		return "1 minute"
	default:
		return fmt.Sprintf("%d minutes", m)
	}
}
