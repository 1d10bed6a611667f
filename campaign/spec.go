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
// FILE), and what the presets and chaos campaign's flags are turned into.
// campaign.json keeps it as the store's results.CampaignSpec (Record),
// which encodes the same.
type Spec struct {
	// The matrix: every combination of these lists is a cell. Lists left
	// out default to the "chaos run" defaults (acks -1,
	// min.insync.replicas 2, clean, no nemesis).
	Acks              []Acks   `json:"acks,omitempty"`
	MinInsyncReplicas []int    `json:"min_insync_replicas,omitempty"`
	Election          []string `json:"election,omitempty"`
	// Nemesis lists one fault list per cell, each a comma list as
	// "chaos run --nemesis" takes it ("none" for no faults).
	Nemesis []string `json:"nemesis,omitempty"`
	// Cells lists cells explicitly instead of a matrix, for campaigns
	// that are not a cross product (the smoke preset).
	Cells           []CellSpec       `json:"cells,omitempty"`
	Runs            int              `json:"runs,omitempty"`
	TimeLimit       results.Duration `json:"time_limit,omitempty"`
	NemesisInterval results.Duration `json:"nemesis_interval,omitempty"`
	// RunArgs are further "chaos run" flags for every run, e.g.
	// ["--replica-lag-time-max-ms", "2000"].
	RunArgs []string `json:"run_args,omitempty"`
	// Runtime is every run's runtime: local (the default), docker or sim.
	Runtime string `json:"runtime,omitempty"`
}

// CellSpec is one explicit cell. Election defaults to clean and the
// nemesis to none.
type CellSpec struct {
	Acks              Acks   `json:"acks"`
	MinInsyncReplicas int    `json:"min_insync_replicas"`
	Election          string `json:"election,omitempty"`
	Nemesis           string `json:"nemesis,omitempty"`
	// Bugs are planted in the cell's cluster on purpose (chaos bugs): a
	// detection campaign's cells. None in a real test.
	Bugs []string `json:"bugs,omitempty"`
	// RunArgs are further "chaos run" flags of this cell's runs, after
	// the spec's own RunArgs (the scenario that exposes a bug, say).
	RunArgs []string `json:"run_args,omitempty"`
}

// UnmarshalJSON requires acks and min_insync_replicas: acks=0 is a real
// configuration, so a forgotten field must not quietly become one.
func (c *CellSpec) UnmarshalJSON(b []byte) error {
	var raw struct {
		Acks              *Acks    `json:"acks"`
		MinInsyncReplicas *int     `json:"min_insync_replicas"`
		Election          string   `json:"election"`
		Nemesis           string   `json:"nemesis"`
		Bugs              []string `json:"bugs"`
		RunArgs           []string `json:"run_args"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return fmt.Errorf("cell %s: %w", b, err)
	}
	if raw.Acks == nil || raw.MinInsyncReplicas == nil {
		return fmt.Errorf("cell %s: acks and min_insync_replicas are required", b)
	}
	*c = CellSpec{Acks: *raw.Acks, MinInsyncReplicas: *raw.MinInsyncReplicas, Election: raw.Election, Nemesis: raw.Nemesis,
		Bugs: raw.Bugs, RunArgs: raw.RunArgs}
	return nil
}

// Acks reads acks as a number or as a string ("all", "-1"), the two ways
// people write it. Whether the number is one Kafka knows is the plan's
// question (NewPlan names every impossible cell at once).
type Acks int

func (a *Acks) UnmarshalJSON(b []byte) error {
	var n int
	if err := json.Unmarshal(b, &n); err == nil {
		*a = Acks(n)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("acks must be 0, 1, -1 or \"all\", got %s", b)
	}
	v, err := ParseAcks(s)
	if err != nil {
		return err
	}
	*a = v
	return nil
}

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

// Record is the spec as campaign.json keeps it.
func (s Spec) Record() results.CampaignSpec {
	r := results.CampaignSpec{
		MinInsyncReplicas: s.MinInsyncReplicas, Election: s.Election, Nemesis: s.Nemesis, Runs: s.Runs,
		TimeLimit: s.TimeLimit, NemesisInterval: s.NemesisInterval, RunArgs: s.RunArgs, Runtime: s.Runtime,
	}
	for _, a := range s.Acks {
		r.Acks = append(r.Acks, int(a))
	}
	for _, c := range s.Cells {
		r.Cells = append(r.Cells, results.CampaignCellSpec{Acks: int(c.Acks), MinInsyncReplicas: c.MinInsyncReplicas, Election: c.Election, Nemesis: c.Nemesis,
			Bugs: slices.Clone(c.Bugs), RunArgs: slices.Clone(c.RunArgs)})
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
	"smoke": {
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
	},
	// seed is the seed's whole question as one matrix (its size: Size).
	// slow-followers-kill-leader is the seed's own scenario 2: followers
	// slowed out of the ISR, then the leader lost, which only an unclean
	// election turns into lost acknowledged writes. lose-unsynced kills a
	// broker with its unsynced writes (F2: the brokers keep them in memory,
	// as a power loss would lose them), the page-cache case, where even
	// acks=-1 with min.insync.replicas=2 may lose data (the last replica
	// standing).
	"seed": {
		Acks:              []Acks{0, 1, -1},
		Election:          []string{"clean", "unclean"},
		MinInsyncReplicas: []int{1, 2},
		Nemesis:           []string{"kill-leader", "partition-leader", "slow-follower", "slow-followers-kill-leader", "lose-unsynced"},
		Runs:              1,
		TimeLimit:         results.Duration(30 * time.Second),
		NemesisInterval:   results.Duration(5 * time.Second),
		RunArgs:           shortTimings,
	},
	// bugs is the detection campaign (bugs.go): every planted bug in the
	// scenario that exposes it, and a control cell per scenario; in
	// simulation, with --runs. Each cell has its own nemesis interval, in
	// its run args.
	"bugs": {
		Cells:     bugsCells,
		Runs:      3,
		TimeLimit: results.Duration(30 * time.Second),
		RunArgs:   shortTimings,
	},
}

// Preset is the preset of that name, a copy the caller may change.
func Preset(name string) (Spec, bool) {
	p, ok := presets[name]
	if !ok {
		return Spec{}, false
	}
	p.Cells = slices.Clone(p.Cells)
	p.Acks, p.MinInsyncReplicas = slices.Clone(p.Acks), slices.Clone(p.MinInsyncReplicas)
	p.Election, p.Nemesis = slices.Clone(p.Election), slices.Clone(p.Nemesis)
	p.RunArgs = slices.Clone(p.RunArgs)
	return p, true
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
