package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/cluster"
	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/nemesis"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/results/report"
	"github.com/chaos-isr/chaos/runner"
)

// A campaign runs every run as a child "chaos run" process rather than in
// process: a run owns a whole cluster, its signal handling and its exit
// code, and a child that crashes or hangs takes only its own run with it.
// The store layout and results.json stay exactly what "chaos run" writes,
// so "chaos check" judges a campaign's runs like any other.

// runOverhead is what a run takes beyond its time limit: starting the
// cluster, the final reads, the checkers and the report (measured on a
// 2-core machine: 1-1.5 s). The campaign's first estimate uses it.
const runOverhead = 2 * time.Second

// runArgsOwned are "chaos run" flags the campaign sets itself; passing them
// through would silently contradict the matrix or the store layout.
var runArgsOwned = []string{
	"store", "name", "quiet", "seed", "acks", "min-insync-replicas", "election", "nemesis",
	"time-limit", "nemesis-interval", "runtime",
}

// campaignSpec is a campaign in the spec file format (--spec FILE), and
// what the presets and the flags are turned into. campaign.json keeps it
// as the store's results.CampaignSpec (record), which encodes the same.
type campaignSpec struct {
	// The matrix: every combination of these lists is a cell. Lists left
	// out default to the "chaos run" defaults (acks -1,
	// min.insync.replicas 2, clean, no nemesis).
	Acks              []acksValue `json:"acks,omitempty"`
	MinInsyncReplicas []int       `json:"min_insync_replicas,omitempty"`
	Election          []string    `json:"election,omitempty"`
	// Nemesis lists one fault list per cell, each a comma list as
	// "chaos run --nemesis" takes it ("none" for no faults).
	Nemesis []string `json:"nemesis,omitempty"`
	// Cells lists cells explicitly instead of a matrix, for campaigns
	// that are not a cross product (the smoke preset).
	Cells           []cellSpec `json:"cells,omitempty"`
	Runs            int        `json:"runs,omitempty"`
	TimeLimit       duration   `json:"time_limit,omitempty"`
	NemesisInterval duration   `json:"nemesis_interval,omitempty"`
	// RunArgs are further "chaos run" flags for every run, e.g.
	// ["--replica-lag-time-max-ms", "2000"].
	RunArgs []string `json:"run_args,omitempty"`
	// Runtime is every run's --runtime: local (the default) or docker.
	Runtime string `json:"runtime,omitempty"`
}

// cellSpec is one explicit cell. Election defaults to clean and the
// nemesis to none.
type cellSpec struct {
	Acks              acksValue `json:"acks"`
	MinInsyncReplicas int       `json:"min_insync_replicas"`
	Election          string    `json:"election,omitempty"`
	Nemesis           string    `json:"nemesis,omitempty"`
}

// UnmarshalJSON requires acks and min_insync_replicas: acks=0 is a real
// configuration, so a forgotten field must not quietly become one.
func (c *cellSpec) UnmarshalJSON(b []byte) error {
	var raw struct {
		Acks              *acksValue `json:"acks"`
		MinInsyncReplicas *int       `json:"min_insync_replicas"`
		Election          string     `json:"election"`
		Nemesis           string     `json:"nemesis"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return fmt.Errorf("cell %s: %w", b, err)
	}
	if raw.Acks == nil || raw.MinInsyncReplicas == nil {
		return fmt.Errorf("cell %s: acks and min_insync_replicas are required", b)
	}
	*c = cellSpec{Acks: *raw.Acks, MinInsyncReplicas: *raw.MinInsyncReplicas, Election: raw.Election, Nemesis: raw.Nemesis}
	return nil
}

// acksValue reads acks as a number or as a string ("all", "-1"), the two
// ways people write it.
type acksValue int

func (a *acksValue) UnmarshalJSON(b []byte) error {
	var n int
	if err := json.Unmarshal(b, &n); err == nil {
		*a = acksValue(n)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("acks must be 0, 1, -1 or \"all\", got %s", b)
	}
	v, err := parseAcks(s)
	if err != nil {
		return err
	}
	*a = acksValue(v)
	return nil
}

// duration is a time.Duration written as "30s" in JSON, as on the command
// line and in campaign.json.
type duration = results.Duration

// record is the spec as campaign.json keeps it.
func (s campaignSpec) record() results.CampaignSpec {
	r := results.CampaignSpec{
		MinInsyncReplicas: s.MinInsyncReplicas, Election: s.Election, Nemesis: s.Nemesis, Runs: s.Runs,
		TimeLimit: s.TimeLimit, NemesisInterval: s.NemesisInterval, RunArgs: s.RunArgs, Runtime: s.Runtime,
	}
	for _, a := range s.Acks {
		r.Acks = append(r.Acks, int(a))
	}
	for _, c := range s.Cells {
		r.Cells = append(r.Cells, results.CampaignCellSpec{Acks: int(c.Acks), MinInsyncReplicas: c.MinInsyncReplicas, Election: c.Election, Nemesis: c.Nemesis})
	}
	return r
}

// cell is one configuration of the campaign, ready to run.
type cell = results.CampaignCellPlan

type campaignFlags struct {
	preset, spec, store, junit  string
	runtime                     string
	acks, minISR, election, nem string
	runs                        int
	timeLimit, nemInterval      time.Duration
	seed                        uint64
	dryRun                      bool
	// matrixFlags define cells; they cannot be mixed with a preset or a
	// spec file.
	matrixFlags []string
}

func newCampaignCmd() *cobra.Command {
	var f campaignFlags
	cmd := &cobra.Command{
		Use:   "campaign [flags] [-- chaos run flags]",
		Short: "Run a matrix of configurations x nemeses x runs and tabulate prediction against observation",
		Long: `Run a campaign: every cell of a matrix of configurations (acks, min.insync.replicas,
election, nemesis) is run --runs times, each run a "chaos run" child process with a seed
derived from the campaign's --seed, so the same seed replays every run. The matrix comes
from the flags, from --spec FILE, or from --preset smoke|seed. Flags after -- go to every
"chaos run" (e.g. -- --replica-lag-time-max-ms 2000 --nodes 5).

Prints a line per run and a table per cell: the verdicts, what the guarantee model
predicted, the anomalies seen as permitted and those seen unexpectedly, and availability.
Writes STORE/campaigns/<timestamp>/campaign.json (and STORE/campaigns/latest), and with
--junit a JUnit XML file. Exit code, from the worst run: 1 if any run was invalid, else 3
if any run ended in an error, else 2 if any was unknown, else 0; 3 also for a refused
campaign; 130 interrupted.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 && cmd.ArgsLenAtDash() != 0 {
				return fmt.Errorf("unexpected argument %q (flags for chaos run go after --)", args[0])
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return exitWith(runCampaign(cmd, f, args))
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.preset, "preset", "", "a predefined campaign: smoke (CI, 2 runs of 20 s, about 45 s) or seed (the full 36-cell matrix of 30 s runs, about 19 minutes)")
	fl.StringVar(&f.spec, "spec", "", "read the campaign from a JSON spec file (see README)")
	fl.StringVar(&f.acks, "acks", "-1", "acks of the matrix, a comma list of 0, 1, -1")
	fl.StringVar(&f.minISR, "min-insync-replicas", "2", "min.insync.replicas of the matrix, a comma list")
	fl.StringVar(&f.election, "election", "clean", "elections of the matrix, a comma list of clean, unclean")
	fl.StringVar(&f.nem, "nemesis", "none", "nemeses of the matrix, separated by ';' (each is a comma list as for chaos run)")
	fl.IntVar(&f.runs, "runs", 1, "runs per cell")
	fl.DurationVar(&f.timeLimit, "time-limit", 30*time.Second, "each run's --time-limit")
	fl.DurationVar(&f.nemInterval, "nemesis-interval", 0, "each run's --nemesis-interval (default: chaos run's)")
	fl.Uint64Var(&f.seed, "seed", 0, "campaign seed, from which every run's seed is derived (default: random, printed and stored)")
	fl.StringVar(&f.store, "store", "store", "the result store directory")
	fl.StringVar(&f.junit, "junit", "", "also write a JUnit XML report to this file")
	fl.StringVar(&f.runtime, "runtime", runtimeLocal, "every run's --runtime: "+runtimeUsage)
	fl.BoolVar(&f.dryRun, "dry-run", false, "print the resolved spec and every run's seed and command, run nothing")
	f.matrixFlags = []string{"acks", "min-insync-replicas", "election", "nemesis"}
	return cmd
}

// resolveSpec turns the flags, a preset or a spec file into one spec.
func resolveSpec(cmd *cobra.Command, f campaignFlags, passthrough []string) (campaignSpec, error) {
	fl := cmd.Flags()
	var spec campaignSpec
	var matrixSet []string
	for _, n := range f.matrixFlags {
		if fl.Changed(n) {
			matrixSet = append(matrixSet, "--"+n)
		}
	}
	switch {
	case fl.Changed("runs") && f.runs < 1:
		return spec, flagError("runs", f.runs, "fewer than 1", "the runs per cell, 1 or more")
	case fl.Changed("time-limit") && f.timeLimit <= 0:
		return spec, flagError("time-limit", f.timeLimit, "not positive", "each run's duration, e.g. 30s")
	case f.nemInterval < 0:
		return spec, flagError("nemesis-interval", f.nemInterval, "negative", "a duration such as 5s, or leave it out for chaos run's 10s")
	}
	switch {
	case f.preset != "" && f.spec != "":
		return spec, errors.New("--preset and --spec exclude each other")
	case (f.preset != "" || f.spec != "") && len(matrixSet) > 0:
		return spec, fmt.Errorf("%s cannot be combined with --preset or --spec: the matrix comes from one place (copy the spec from --dry-run into a file and edit it)", strings.Join(matrixSet, ", "))
	case f.preset != "":
		p, ok := presets[f.preset]
		if !ok {
			return spec, flagError("preset", f.preset, "not a preset", "use "+strings.Join(sortedPresetNames(), " or "))
		}
		spec = p
		spec.RunArgs = slices.Clone(p.RunArgs)
	case f.spec != "":
		data, err := os.ReadFile(f.spec)
		if err != nil {
			reason := err.Error()
			var pe *fs.PathError
			if errors.As(err, &pe) {
				reason = pe.Err.Error()
			}
			return spec, flagError("spec", f.spec, "cannot be read ("+reason+")", "a JSON campaign spec file (README: chaos campaign)")
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		// A misspelt field would otherwise fall back to a default without
		// a word, and the campaign would test something else.
		dec.DisallowUnknownFields()
		if err := dec.Decode(&spec); err != nil {
			return spec, flagError("spec", f.spec, "not a campaign spec ("+err.Error()+")", "a JSON campaign spec; --preset seed --dry-run prints one")
		}
	default:
		for _, s := range splitList(f.acks, ",") {
			a, err := parseAcks(s)
			if err != nil {
				return spec, err
			}
			spec.Acks = append(spec.Acks, acksValue(a))
		}
		for _, s := range splitList(f.minISR, ",") {
			n, err := strconv.Atoi(s)
			if err != nil {
				return spec, flagError("min-insync-replicas", s, "not a number", "a comma list of numbers, e.g. 1,2")
			}
			if n < 1 {
				return spec, flagError("min-insync-replicas", n, "fewer than 1", "a comma list of numbers from 1 to the replication factor, e.g. 1,2")
			}
			spec.MinInsyncReplicas = append(spec.MinInsyncReplicas, n)
		}
		spec.Election = splitList(f.election, ",")
		for _, e := range spec.Election {
			if err := checkElection(e); err != nil {
				return spec, err
			}
		}
		spec.Nemesis = splitList(f.nem, ";")
		for _, n := range spec.Nemesis {
			if _, err := parseNemesisFlag(n); err != nil {
				return spec, err
			}
		}
		for _, l := range []struct {
			name, value string
			n           int
		}{{"acks", f.acks, len(spec.Acks)}, {"min-insync-replicas", f.minISR, len(spec.MinInsyncReplicas)}, {"election", f.election, len(spec.Election)}, {"nemesis", f.nem, len(spec.Nemesis)}} {
			if l.n == 0 {
				return spec, flagError(l.name, l.value, "an empty list", "at least one value, or the matrix has no cells")
			}
		}
	}
	// The scalar settings: a flag given on the command line wins over the
	// preset or spec, so "--preset seed --runs 5" does what it says.
	if fl.Changed("runs") || spec.Runs == 0 {
		spec.Runs = f.runs
	}
	if fl.Changed("time-limit") || spec.TimeLimit == 0 {
		spec.TimeLimit = duration(f.timeLimit)
	}
	if fl.Changed("nemesis-interval") {
		spec.NemesisInterval = duration(f.nemInterval)
	}
	if fl.Changed("runtime") || spec.Runtime == "" {
		spec.Runtime = f.runtime
	}
	if err := checkRuntime(spec.Runtime); err != nil {
		return spec, err
	}
	spec.RunArgs = append(spec.RunArgs, passthrough...)
	switch {
	case spec.Runs < 1:
		return spec, fmt.Errorf("runs must be at least 1, got %d", spec.Runs)
	case spec.TimeLimit <= 0:
		return spec, fmt.Errorf("the time limit must be positive, got %s", time.Duration(spec.TimeLimit))
	case spec.NemesisInterval < 0:
		return spec, fmt.Errorf("the nemesis interval must be positive, got %s", time.Duration(spec.NemesisInterval))
	case len(spec.Cells) > 0 && (len(spec.Acks)+len(spec.MinInsyncReplicas)+len(spec.Election)+len(spec.Nemesis) > 0):
		return spec, errors.New("a spec gives either cells or the matrix lists (acks, min_insync_replicas, election, nemesis), not both")
	}
	rfl := newRunCmd().Flags()
	if err := rfl.Parse(spec.RunArgs); err != nil {
		run := newRunCmd()
		(&cobra.Command{Use: "chaos"}).AddCommand(run)
		return spec, fmt.Errorf("flags for chaos run: %w", flagParseError(run, err))
	}
	if rfl.NArg() > 0 {
		return spec, fmt.Errorf("flags for chaos run: unexpected argument %q", rfl.Arg(0))
	}
	// The names are read off the arguments rather than with Changed:
	// chaos run's constructor sets --min-insync-replicas itself.
	var owned []string
	for _, a := range spec.RunArgs {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if strings.HasPrefix(a, "--") && slices.Contains(runArgsOwned, name) && !slices.Contains(owned, "--"+name) {
			owned = append(owned, "--"+name)
		}
	}
	if len(owned) > 0 {
		return spec, fmt.Errorf("flags for chaos run: %s set by the campaign itself (use the campaign's flags or the matrix)", strings.Join(owned, ", "))
	}
	return spec, nil
}

func sortedPresetNames() []string {
	var names []string
	for n := range presets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func splitList(s, sep string) []string {
	var out []string
	for _, p := range strings.Split(s, sep) {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// cellSpecs expands the matrix, acks outermost and the nemesis innermost,
// so neighbouring cells differ in the fault first.
func (s campaignSpec) cellSpecs() []cellSpec {
	if len(s.Cells) > 0 {
		return s.Cells
	}
	acks, isr, el, nem := s.Acks, s.MinInsyncReplicas, s.Election, s.Nemesis
	if len(acks) == 0 {
		acks = []acksValue{-1}
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
	var out []cellSpec
	for _, a := range acks {
		for _, e := range el {
			for _, m := range isr {
				for _, n := range nem {
					out = append(out, cellSpec{Acks: a, MinInsyncReplicas: m, Election: e, Nemesis: n})
				}
			}
		}
	}
	return out
}

// planCampaign checks every cell and builds its "chaos run" arguments. All
// impossible cells are named at once, with the reason, before anything
// runs: finding the fifth one twenty minutes in helps nobody.
func planCampaign(spec campaignSpec, store string) ([]cell, error) {
	var cells []cell
	var problems []string
	seen := map[string]bool{}
	for _, cs := range spec.cellSpecs() {
		c, err := planCell(cs, spec, store)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", cellLabel(int(cs.Acks), cs.MinInsyncReplicas, orDefault(cs.Election, "clean"), orDefault(cs.Nemesis, "none")), err))
			continue
		}
		if seen[c.Name] {
			problems = append(problems, fmt.Sprintf("%s: appears twice (use runs for repetitions)", c.Label))
			continue
		}
		seen[c.Name] = true
		cells = append(cells, c)
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("refusing the campaign: %d impossible cell(s):\n  %s", len(problems), strings.Join(problems, "\n  "))
	}
	return cells, nil
}

func cellLabel(acks, isr int, election, nem string) string {
	return fmt.Sprintf("acks=%d isr=%d %s %s", acks, isr, election, nem)
}

func planCell(cs cellSpec, spec campaignSpec, store string) (cell, error) {
	acks := int(cs.Acks)
	if acks != 0 && acks != 1 && acks != -1 {
		return cell{}, fmt.Errorf("acks must be 0, 1 or -1, got %d", acks)
	}
	election := orDefault(cs.Election, "clean")
	if election != "clean" && election != "unclean" {
		return cell{}, fmt.Errorf("election must be clean or unclean, got %q", election)
	}
	faults, err := nemesis.Parse(cs.Nemesis)
	if err != nil {
		return cell{}, err
	}
	nem := "none"
	if len(faults) > 0 {
		nem = strings.Join(faults, ",")
	}
	named := runner.DefaultSpec()
	named.Acks, named.Settings.MinInsyncReplicas, named.Settings.Election, named.Faults = int16(acks), int32(cs.MinInsyncReplicas), election, faults
	name := results.TestName(named.DefaultName())
	args := []string{"run", "--store", store, "--name", name, "--quiet",
		"--acks", strconv.Itoa(acks), "--min-insync-replicas", strconv.Itoa(cs.MinInsyncReplicas),
		"--election", election, "--nemesis", nem, "--time-limit", time.Duration(spec.TimeLimit).String()}
	if spec.NemesisInterval > 0 {
		args = append(args, "--nemesis-interval", time.Duration(spec.NemesisInterval).String())
	}
	if spec.Runtime != "" && spec.Runtime != runtimeLocal {
		args = append(args, "--runtime", spec.Runtime)
	}
	args = append(args, spec.RunArgs...)

	// Reading the arguments back with chaos run's own flag set checks them
	// exactly as the child will, and gives the values the child will use
	// (its defaults included) without a second copy of them here.
	fl := newRunCmd().Flags()
	if err := fl.Parse(args[1:]); err != nil {
		return cell{}, err
	}
	nodes, _ := fl.GetInt("nodes")
	rf, _ := fl.GetInt16("replication-factor")
	interval, _ := fl.GetDuration("nemesis-interval")
	switch {
	case cs.MinInsyncReplicas < 1:
		return cell{}, fmt.Errorf("min.insync.replicas must be at least 1, got %d", cs.MinInsyncReplicas)
	case rf < 1:
		return cell{}, fmt.Errorf("the replication factor must be at least 1, got %d", rf)
	case cs.MinInsyncReplicas > int(rf):
		return cell{}, fmt.Errorf("min.insync.replicas %d exceeds the replication factor %d: acks=-1 writes could never succeed", cs.MinInsyncReplicas, rf)
	case int(rf) > nodes:
		return cell{}, fmt.Errorf("the replication factor %d needs at least %d nodes, there are %d", rf, rf, nodes)
	case len(faults) > 0 && interval <= 0:
		return cell{}, fmt.Errorf("the nemesis interval must be positive, got %s", interval)
	case len(faults) > 0 && time.Duration(spec.TimeLimit) < 2*interval:
		// The schedule fits a quiet period and a window of at least 3/4
		// interval each before limit-interval/2: below 2 intervals no
		// fault window fits, whatever the seed, and the cell would claim
		// faults it never injected.
		return cell{}, fmt.Errorf("the time limit %s is shorter than twice the nemesis interval %s: no fault window fits", time.Duration(spec.TimeLimit), interval)
	}
	// The prediction is what the model permits if every listed fault
	// runs, under the storage settings the run will have (a fault
	// destroys data only where the brokers lose unsynced writes); the
	// run itself is judged by the faults that did run.
	fsync, _ := fl.GetString("fsync")
	lose, _ := fl.GetBool("lose-unsynced")
	model := checker.Config{
		Acks: acks, MinInsyncReplicas: cs.MinInsyncReplicas, Election: election, ReplicationFactor: int(rf),
		Faults: faults, Declared: runner.DeclaredFaults(faults, nodes), FaultsRecorded: true,
		LoseUnsynced: lose || nemesis.LosesUnsynced(faults), Fsync: fsync,
		MaxInFlight: 1,
	}
	perm := checker.Permitted(model)
	prediction := checker.LostWriteName + " forbidden"
	if perm[checker.LostWriteName].Permitted {
		prediction = checker.LostWriteName + " permitted"
	}
	return cell{
		Name: name, Label: cellLabel(acks, cs.MinInsyncReplicas, election, nem), Acks: acks,
		MinInsyncReplicas: cs.MinInsyncReplicas, Election: election, Nemesis: nem, Args: args,
		Model: model, Permitted: perm, Prediction: prediction,
	}, nil
}

// runSeed derives a run's seed from the campaign seed, the cell's name and
// the run's number: FNV-1a of "<campaign seed>/<cell name>/<run>", mixed
// with splitmix64's finalizer (FNV alone leaves the seeds of runs 1 and 2
// sharing their top half). Hashing the name rather than the cell's
// position keeps a cell's seeds when cells are added to or removed from a
// campaign. The top bit is cleared like chaos run's own random seeds, and
// 0 (which chaos run reads as "pick one") is avoided.
func runSeed(campaign uint64, cellName string, run int) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s/%d", campaign, cellName, run)
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	if s := x >> 1; s != 0 {
		return s
	}
	return 1
}

// Run and cell verdicts in campaign.json.
const (
	verdictValid       = "valid"
	verdictInvalid     = "invalid"
	verdictUnknown     = "unknown"
	verdictError       = "error"
	verdictInterrupted = "interrupted"
	verdictNotRun      = "not-run"
)

// campaignRecord is campaign.json, whose schema the store owns: it is
// rewritten after every run, and the index page is rendered from it. A
// cell's Verdict is the worst of its runs' (see worstVerdict).
type (
	campaignRecord = results.Campaign
	cellRecord     = results.CampaignCell
	cellSummary    = results.CampaignSummary
	runRecord      = results.CampaignRun
)

// verdictRank orders verdicts for the exit code: an invalid run is the
// finding a campaign exists for and is never hidden behind a flaky one; an
// error means a run tested nothing, a bigger hole than a checker that could
// not decide, so it outranks unknown.
var verdictRank = map[string]int{verdictValid: 0, verdictUnknown: 1, verdictError: 2, verdictInvalid: 3}

func worstVerdict(runs []runRecord) string {
	worst := verdictNotRun
	for _, r := range runs {
		rank, ok := verdictRank[r.Verdict]
		if !ok {
			continue
		}
		if w, ok := verdictRank[worst]; !ok || rank > w {
			worst = r.Verdict
		}
	}
	return worst
}

func verdictExitCode(v string) int {
	switch v {
	case verdictInvalid:
		return exitInvalid
	case verdictError:
		return exitErrorCode
	case verdictUnknown:
		return exitUnknown
	}
	return exitValid
}

// campaignExitCode is the exit code of the worst cell.
func campaignExitCode(cells []*cellRecord) int { return verdictExitCode(worstOfCells(cells)) }

func summarize(c *cellRecord) {
	s := cellSummary{Planned: c.Summary.Planned}
	var ok, sent int64
	for _, r := range c.Runs {
		switch r.Verdict {
		case verdictValid:
			s.Valid++
		case verdictInvalid:
			s.Invalid++
		case verdictUnknown:
			s.Unknown++
		case verdictError:
			s.Errors++
		case verdictInterrupted:
			s.Interrupted++
			continue
		}
		s.Runs++
		for _, a := range r.Expected {
			if s.ExpectedSeen == nil {
				s.ExpectedSeen = map[string]int{}
			}
			s.ExpectedSeen[a]++
		}
		for _, a := range r.Unexpected {
			if s.Unexpected == nil {
				s.Unexpected = map[string]int{}
			}
			s.Unexpected[a]++
		}
		if r.Sends != nil {
			ok += r.Sends.OK
			sent += r.Sends.Invoke
		}
	}
	// Under acks=0 nothing is acknowledged, so no loss can be observed:
	// "lost-write 0/n" there would blame the faults for the workload.
	if c.Permitted[checker.LostWriteName].Permitted && c.Acks != 0 && s.Runs > s.Errors {
		if s.ExpectedSeen == nil {
			s.ExpectedSeen = map[string]int{}
		}
		s.ExpectedSeen[checker.LostWriteName] += 0
	}
	if c.Acks != 0 && sent > 0 {
		a := float64(ok) / float64(sent)
		s.Availability = &a
	}
	c.Summary = s
	c.Verdict = worstVerdict(c.Runs)
}

func runCampaign(cmd *cobra.Command, f campaignFlags, passthrough []string) (int, error) {
	out := cmd.OutOrStdout()
	spec, err := resolveSpec(cmd, f, passthrough)
	if err != nil {
		return 0, err
	}
	cells, err := planCampaign(spec, f.store)
	if err != nil {
		return 0, err
	}
	if err := stopIfValidating(cmd); err != nil {
		return 0, err
	}
	seed := f.seed
	if seed == 0 {
		seed = runner.RandomSeed()
	}
	total := len(cells) * spec.Runs
	if f.dryRun {
		data, _ := json.MarshalIndent(spec, "", "  ")
		fmt.Fprintf(out, "seed %d\n%d cells x %d runs, each %s\nspec:\n%s\n", seed, len(cells), spec.Runs, time.Duration(spec.TimeLimit), data)
		i := 0
		for _, c := range cells {
			for r := 1; r <= spec.Runs; r++ {
				i++
				s := runSeed(seed, c.Name, r)
				fmt.Fprintf(out, "[%d/%d] %s run %d/%d seed %d: chaos %s --seed %d\n", i, total, c.Label, r, spec.Runs, s, report.ShellJoin(c.Args), s)
			}
		}
		return 0, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	start := time.Now()
	dir, err := results.NewRun(f.store, "campaigns", start)
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(dir.Path("logs"), 0o755); err != nil {
		return 0, err
	}
	rec := &campaignRecord{
		Format: results.CampaignFormat, Seed: seed, Preset: f.preset, SpecFile: f.spec, Spec: spec.record(), Store: f.store,
		Command: os.Args, Versions: map[string]string{"chaos": fullVersion(), "go": runtime.Version()},
		Start: start.UTC(), Status: "running",
	}
	for _, c := range cells {
		rec.Cells = append(rec.Cells, &cellRecord{CampaignCellPlan: c, Verdict: verdictNotRun, Summary: cellSummary{Planned: spec.Runs}, Runs: []runRecord{}})
	}
	// The record and its index page are rewritten after every run, so a
	// campaign in progress can be watched (chaos serve) and one killed
	// outright still shows what finished.
	indexWarned := false
	save := func() error {
		if err := dir.WriteJSON("campaign.json", rec); err != nil {
			return err
		}
		// The page is a view of campaign.json, which is written: a page
		// that cannot be rendered is said once, and "chaos report" can
		// render it later; it does not make the campaign's verdict an
		// error.
		if err := report.WriteCampaign(dir.Dir); err != nil && !indexWarned {
			indexWarned = true
			fmt.Fprintf(cmd.ErrOrStderr(), "chaos: campaign index not written: %v\n", err)
		}
		return nil
	}
	if err := save(); err != nil {
		return 0, err
	}
	// campaigns/latest, not store/latest: that stays the newest *run*, so
	// "chaos check store/latest" keeps working during and after a campaign.
	if err := results.Relink(filepath.Join(f.store, "campaigns", "latest"), filepath.Base(dir.Dir)); err != nil {
		return 0, err
	}
	fmt.Fprintf(out, "campaign %s\nseed %d\n%d cells x %d runs, each %s (about %s in all)\n",
		dir.Dir, seed, len(cells), spec.Runs, time.Duration(spec.TimeLimit), (time.Duration(total) * (time.Duration(spec.TimeLimit) + runOverhead)).Round(time.Second))

	cr := &campaignRunner{
		out: out, tty: isTerminal(out), exe: exe, store: f.store, dir: dir, rec: rec, total: total,
		timeLimit: time.Duration(spec.TimeLimit), sigs: make(chan os.Signal, 4),
	}
	signal.Notify(cr.sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(cr.sigs)
	var writeErr error
runs:
	for _, c := range rec.Cells {
		for r := 1; r <= spec.Runs; r++ {
			if cr.pollSignal() {
				break runs
			}
			rr, refused := cr.runOne(c, r)
			c.Runs = append(c.Runs, rr)
			summarize(c)
			if err := save(); err != nil && writeErr == nil {
				writeErr = err
			}
			if cr.interrupted {
				break runs
			}
			if refused {
				c.Refused = rr.Error
				break
			}
		}
	}
	end := time.Now().UTC()
	rec.End = &end
	code := campaignExitCode(rec.Cells)
	rec.Status = "complete"
	if cr.interrupted {
		rec.Status, code = "interrupted", exitInterrupted
	}
	rec.ExitCode = &code
	if err := save(); err != nil && writeErr == nil {
		writeErr = err
	}
	printCampaignSummary(out, rec, dir.Path("campaign.json"))
	fmt.Fprintf(out, "index: %s\n", dir.Path(results.CampaignIndexFile))
	if f.junit != "" {
		if err := writeJUnit(f.junit, rec); err != nil && writeErr == nil {
			writeErr = err
		}
	}
	if writeErr != nil {
		// Results that were not written are worse than a failed cell: the
		// campaign's record cannot be trusted.
		return 0, writeErr
	}
	return code, nil
}

type campaignRunner struct {
	out         io.Writer
	tty         bool
	exe, store  string
	dir         *results.Run
	rec         *campaignRecord
	total, done int
	// skipped counts runs of refused cells, judged the runs that reached
	// a verdict and spent their time: the estimate of what is left.
	skipped, judged int
	spent           time.Duration
	timeLimit       time.Duration
	sigs            chan os.Signal
	interrupted     bool
}

// pollSignal reports whether the campaign has been interrupted, noticing a
// signal that arrived between runs.
func (cr *campaignRunner) pollSignal() bool {
	select {
	case <-cr.sigs:
		cr.interrupted = true
	default:
	}
	return cr.interrupted
}

// runOne runs one "chaos run" child and reads back what it left. refused
// reports that chaos run refused the cell before starting anything, which
// the remaining runs of the cell would only repeat.
func (cr *campaignRunner) runOne(c *cellRecord, run int) (rr runRecord, refused bool) {
	cr.done++
	seed := runSeed(cr.rec.Seed, c.Name, run)
	rr = runRecord{Run: run, Seed: seed, Start: time.Now().UTC()}
	rr.Log = filepath.Join("logs", fmt.Sprintf("%03d_%s_run%d.log", cr.done, c.Name, run))
	prefix := fmt.Sprintf("[%d/%d] %s run %d/%d ...", cr.done, cr.total, c.Label, run, c.Summary.Planned)
	if !cr.tty {
		fmt.Fprint(cr.out, prefix)
	}
	start := time.Now()
	code, runErr := cr.exec(c, seed, cr.dir.Path(rr.Log), prefix)
	elapsed := time.Since(start)
	rr.Seconds = elapsed.Round(time.Millisecond).Seconds()
	rr.ExitCode = code
	logText, _ := os.ReadFile(cr.dir.Path(rr.Log))
	if d := runDirFromLog(logText); d != "" {
		if rel, err := filepath.Rel(cr.store, d); err == nil {
			rr.Dir = rel
		} else {
			rr.Dir = d
		}
		cr.faultWindows(&rr)
	}
	switch {
	case cr.interrupted && code != exitValid && code != exitInvalid && code != exitUnknown:
		// Stopped by the campaign's interrupt (SIGTERM, or SIGKILL on a
		// second one): not a failure of the run.
		rr.Verdict = verdictInterrupted
		if runErr != nil {
			rr.Error = runErr.Error()
		}
	case runErr != nil:
		rr.Verdict, rr.Error = verdictError, runErr.Error()
	case code == exitValid || code == exitInvalid || code == exitUnknown:
		rr.Verdict = map[int]string{exitValid: verdictValid, exitInvalid: verdictInvalid, exitUnknown: verdictUnknown}[code]
		if err := cr.readResults(&rr); err != nil {
			rr.Verdict, rr.Error = verdictError, err.Error()
		}
	default:
		rr.Verdict, rr.Error = verdictError, errorFromLog(logText, code)
		refused = code == exitErrorCode && rr.Dir == ""
	}
	if refused {
		cr.skipped += c.Summary.Planned - run
	}
	// Only runs that got as far as a verdict say how long a run takes; a
	// run refused in a millisecond would make the estimate absurd.
	if rr.Verdict == verdictValid || rr.Verdict == verdictInvalid || rr.Verdict == verdictUnknown {
		cr.spent += elapsed
		cr.judged++
	}
	line := prefix + " " + describeRun(rr) + " " + elapsed.Round(time.Second).String()
	if left := cr.total - cr.done - cr.skipped; left > 0 && !cr.interrupted {
		per := cr.timeLimit + runOverhead
		if cr.judged > 0 {
			per = cr.spent / time.Duration(cr.judged)
		}
		line += fmt.Sprintf(", ~%s left", (per * time.Duration(left)).Round(time.Second))
	}
	if cr.tty {
		fmt.Fprintf(cr.out, "\r%s\x1b[K\n", line)
	} else {
		fmt.Fprintln(cr.out, strings.TrimPrefix(line, prefix))
	}
	return rr, refused
}

// exec starts the child and waits for it. The first SIGINT or SIGTERM is
// forwarded as SIGTERM, so the run stops its cluster and exits 130; a
// second one, or a run that takes far longer than its time limit, gets
// SIGKILL, and its brokers die with it (they have PR_SET_PDEATHSIG on the
// run).
func (cr *campaignRunner) exec(c *cellRecord, seed uint64, logPath, prefix string) (int, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return -1, err
	}
	defer logf.Close()
	args := append(slices.Clone(c.Args), "--seed", strconv.FormatUint(seed, 10))
	cmd := exec.Command(cr.exe, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Own process group: a Ctrl-C at the terminal reaches only the
		// campaign, which stops the run in order instead of the terminal
		// killing both at once.
		Setpgid: true,
		// If the campaign dies, even by SIGKILL, the kernel kills the run.
		Pdeathsig: syscall.SIGKILL,
	}
	if err := cluster.Spawn(cmd); err != nil {
		return -1, fmt.Errorf("start chaos run: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	// A run takes its time limit, the final phase (converge timeout, 60 s
	// by default) and the checkers; far beyond that it is stuck, and a
	// stuck run must not hold a CI job until its own timeout.
	watchdog := time.NewTimer(2*cr.timeLimit + 10*time.Minute)
	defer watchdog.Stop()
	var tick <-chan time.Time
	if cr.tty {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		tick = t.C
		fmt.Fprintf(cr.out, "\r%s\x1b[K", prefix)
	}
	var stuck error
	var kill <-chan time.Time
	start := time.Now()
	for {
		select {
		case err := <-done:
			var ee *exec.ExitError
			switch {
			case stuck != nil:
				return -1, stuck
			case err == nil:
				return 0, nil
			case errors.As(err, &ee) && ee.ExitCode() >= 0:
				return ee.ExitCode(), nil
			case errors.As(err, &ee):
				return -1, fmt.Errorf("chaos run died: %s", ee.ProcessState)
			default:
				return -1, err
			}
		case <-cr.sigs:
			if !cr.interrupted {
				cr.interrupted = true
				fmt.Fprintf(cr.out, "\ninterrupted: stopping the current run (interrupt again to kill it)\n")
				_ = cmd.Process.Signal(syscall.SIGTERM)
				kill = time.After(time.Minute)
			} else {
				_ = cmd.Process.Kill()
			}
		case <-kill:
			_ = cmd.Process.Kill()
		case <-watchdog.C:
			stuck = fmt.Errorf("chaos run still running after %s; stopped", 2*cr.timeLimit+10*time.Minute)
			_ = cmd.Process.Signal(syscall.SIGTERM)
			kill = time.After(30 * time.Second)
		case <-tick:
			el := time.Since(start).Round(time.Second)
			if el <= cr.timeLimit {
				fmt.Fprintf(cr.out, "\r%s %s/%s\x1b[K", prefix, el, cr.timeLimit)
			} else {
				fmt.Fprintf(cr.out, "\r%s final reads and checks %s\x1b[K", prefix, el)
			}
		}
	}
}

// readResults fills in what results.json and test.json say about a run
// that reached a verdict.
func (cr *campaignRunner) readResults(rr *runRecord) error {
	if rr.Dir == "" {
		return fmt.Errorf("chaos run exited %d without printing its run directory", rr.ExitCode)
	}
	dir := filepath.Join(cr.store, rr.Dir)
	res, err := results.ReadResults(filepath.Join(dir, results.ResultsFile))
	if err != nil {
		return err
	}
	rr.Expected, rr.Unexpected = res.Expected, res.Unexpected
	for _, r := range res.Results {
		if r.Valid == checker.Unknown && !r.Expected {
			rr.Unknown = append(rr.Unknown, r.Name)
		}
	}
	if s, ok := res.Ops[history.Send]; ok {
		rr.Sends = &s
	}
	return nil
}

// faultWindows reads the run's schedule from test.json, for every run that
// got as far as writing one: a cell that claims a nemesis must show it
// scheduled faults.
func (cr *campaignRunner) faultWindows(rr *runRecord) {
	if tc, err := results.ReadTestConfig(filepath.Join(cr.store, rr.Dir, results.TestFile)); err == nil {
		rr.FaultWindows = len(tc.Schedule)
	}
}

// runDirFromLog finds the "run DIR" line chaos run prints first.
func runDirFromLog(log []byte) string {
	sc := bufio.NewScanner(bytes.NewReader(log))
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "run "); ok {
			return strings.TrimSpace(d)
		}
	}
	return ""
}

// errorFromLog finds why a run failed: the "chaos: ..." line main prints,
// else the last line of output.
func errorFromLog(log []byte, code int) string {
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	reason := ""
	for i := len(lines) - 1; i >= 0; i-- {
		if r, ok := strings.CutPrefix(lines[i], "chaos: "); ok {
			reason = r
			break
		}
	}
	if reason == "" && len(lines) > 0 {
		reason = lines[len(lines)-1]
	}
	if len(reason) > 300 {
		reason = reason[:300] + "..."
	}
	if code == exitInterrupted {
		return "chaos run was interrupted from outside the campaign"
	}
	return fmt.Sprintf("exit %d: %s", code, reason)
}

func describeRun(rr runRecord) string {
	var b strings.Builder
	b.WriteString(strings.ToUpper(rr.Verdict))
	var notes []string
	if len(rr.Unexpected) > 0 {
		notes = append(notes, "unexpected: "+strings.Join(rr.Unexpected, ", "))
	}
	if len(rr.Unknown) > 0 && rr.Verdict == verdictUnknown {
		notes = append(notes, "unknown: "+strings.Join(rr.Unknown, ", "))
	}
	if len(rr.Expected) > 0 {
		notes = append(notes, "expected: "+strings.Join(rr.Expected, ", "))
	}
	if rr.Error != "" {
		notes = append(notes, rr.Error)
	}
	if len(notes) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(notes, "; "))
	}
	return b.String()
}

func printCampaignSummary(out io.Writer, rec *campaignRecord, path string) {
	fmt.Fprintf(out, "\ncampaign seed %d, %s\n", rec.Seed, rec.Status)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CELL\tRUNS\tVALID\tINVALID\tUNKNOWN\tERROR\tMODEL\tEXPECTED SEEN\tUNEXPECTED\tAVAILABILITY")
	for _, c := range rec.Cells {
		s := c.Summary
		avail := "-"
		if s.Availability != nil {
			avail = fmt.Sprintf("%.1f%%", 100**s.Availability)
		} else if c.Acks == 0 {
			avail = "n/a (acks=0)"
		}
		runs := fmt.Sprintf("%d/%d", s.Runs, s.Planned)
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\n", c.Label, runs, s.Valid, s.Invalid, s.Unknown, s.Errors,
			c.Prediction, countsOf(s.ExpectedSeen, s.Runs), countsOf(s.Unexpected, s.Runs), avail)
	}
	tw.Flush()
	fmt.Fprintln(out, "\nruns:")
	for _, c := range rec.Cells {
		for _, r := range c.Runs {
			where := r.Dir
			if where != "" {
				where = filepath.Join(rec.Store, where)
			} else {
				where = "(no run directory; see " + filepath.Join(filepath.Dir(path), r.Log) + ")"
			}
			fmt.Fprintf(out, "  %s run %d (seed %d): %s %s\n", c.Label, r.Run, r.Seed, r.Verdict, where)
		}
		if c.Refused != "" {
			skipped := ""
			if n := c.Summary.Planned - len(c.Runs); n > 0 {
				skipped = fmt.Sprintf(" (%d more runs skipped)", n)
			}
			fmt.Fprintf(out, "  %s: refused by chaos run%s: %s\n", c.Label, skipped, c.Refused)
		}
	}
	fmt.Fprintf(out, "campaign: %s\n", path)
	var bad []string
	for _, c := range rec.Cells {
		if c.Verdict != verdictValid && c.Verdict != verdictNotRun {
			bad = append(bad, c.Label+": "+c.Verdict)
		}
	}
	code := 0
	if rec.ExitCode != nil {
		code = *rec.ExitCode
	}
	switch {
	case rec.Status == "interrupted":
		fmt.Fprintf(out, "verdict: INTERRUPTED (exit %d)\n", code)
	case len(bad) == 0:
		fmt.Fprintf(out, "verdict: VALID (exit %d)\n", code)
	default:
		fmt.Fprintf(out, "verdict: %s (exit %d): %s\n", strings.ToUpper(worstOfCells(rec.Cells)), code, strings.Join(bad, "; "))
	}
}

func worstOfCells(cells []*cellRecord) string {
	var all []runRecord
	for _, c := range cells {
		all = append(all, c.Runs...)
	}
	return worstVerdict(all)
}

// countsOf formats "lost-write 2/3, stale-read 3/3", in the checkers'
// order.
func countsOf(m map[string]int, runs int) string {
	if len(m) == 0 {
		return "-"
	}
	var parts []string
	for _, n := range checker.Names() {
		if c, ok := m[n]; ok {
			parts = append(parts, fmt.Sprintf("%s %d/%d", n, c, runs))
		}
	}
	return strings.Join(parts, ", ")
}

// JUnit XML, in the shape Jenkins, GitLab and GitHub's test reporters
// read: one testsuite per cell, one testcase per run. An invalid run is a
// <failure> (the system broke a promise); an error and an unknown verdict
// are <error>s (no verdict was reached: JUnit's meaning of error, and not
// <skipped>, which dashboards show as green); an interrupted run, and one
// never started, is <skipped>.
type junitTestsuites struct {
	XMLName  xml.Name         `xml:"testsuites"`
	Name     string           `xml:"name,attr"`
	Tests    int              `xml:"tests,attr"`
	Failures int              `xml:"failures,attr"`
	Errors   int              `xml:"errors,attr"`
	Skipped  int              `xml:"skipped,attr"`
	Time     string           `xml:"time,attr"`
	Suites   []junitTestsuite `xml:"testsuite"`
}

type junitTestsuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitTestcase `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitTestcase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	Skipped   *junitProblem `xml:"skipped,omitempty"`
	SystemOut *junitText    `xml:"system-out,omitempty"`
}

// Texts are CDATA so that their lines stay lines for a human reading the
// file (chardata would write every newline as &#xA;).
type junitProblem struct {
	Message string `xml:"message,attr,omitempty"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",cdata"`
}

type junitText struct {
	Text string `xml:",cdata"`
}

func junitReport(rec *campaignRecord) junitTestsuites {
	ts := junitTestsuites{Name: "chaos campaign seed " + strconv.FormatUint(rec.Seed, 10)}
	var total float64
	for _, c := range rec.Cells {
		s := junitTestsuite{Name: c.Name, Properties: []junitProperty{
			{"label", c.Label}, {"acks", strconv.Itoa(c.Acks)}, {"min.insync.replicas", strconv.Itoa(c.MinInsyncReplicas)},
			{"election", c.Election}, {"nemesis", c.Nemesis}, {"prediction", c.Prediction},
		}}
		var secs float64
		for _, r := range c.Runs {
			tc := junitTestcase{Name: fmt.Sprintf("run %d", r.Run), Classname: c.Name, Time: fmt.Sprintf("%.3f", r.Seconds)}
			if s.Timestamp == "" {
				s.Timestamp = r.Start.Format("2006-01-02T15:04:05")
			}
			out := fmt.Sprintf("seed %d\n", r.Seed)
			if r.Dir != "" {
				out += "run directory " + filepath.Join(rec.Store, r.Dir) + "\n"
			}
			if len(r.Expected) > 0 {
				out += "permitted anomalies seen: " + strings.Join(r.Expected, ", ") + "\n"
			}
			tc.SystemOut = &junitText{out}
			switch r.Verdict {
			case verdictInvalid:
				tc.Failure = &junitProblem{Type: "invalid", Message: "unexpected anomalies: " + strings.Join(r.Unexpected, ", "),
					Text: anomalyWhy(c, r.Unexpected)}
				s.Failures++
			case verdictUnknown:
				tc.Error = &junitProblem{Type: "unknown", Message: "no verdict: checkers could not judge " + strings.Join(r.Unknown, ", ")}
				s.Errors++
			case verdictError:
				tc.Error = &junitProblem{Type: "error", Message: r.Error}
				s.Errors++
			case verdictInterrupted:
				tc.Skipped = &junitProblem{Message: "interrupted"}
				s.Skipped++
			}
			secs += r.Seconds
			s.Cases = append(s.Cases, tc)
		}
		for r := len(c.Runs) + 1; r <= c.Summary.Planned; r++ {
			why := "not run: the campaign was interrupted"
			if c.Refused != "" {
				why = "not run: chaos run refused the cell"
			}
			s.Cases = append(s.Cases, junitTestcase{Name: fmt.Sprintf("run %d", r), Classname: c.Name, Time: "0", Skipped: &junitProblem{Message: why}})
			s.Skipped++
		}
		s.Tests = len(s.Cases)
		s.Time = fmt.Sprintf("%.3f", secs)
		total += secs
		ts.Tests += s.Tests
		ts.Failures += s.Failures
		ts.Errors += s.Errors
		ts.Skipped += s.Skipped
		ts.Suites = append(ts.Suites, s)
	}
	ts.Time = fmt.Sprintf("%.3f", total)
	return ts
}

func anomalyWhy(c *cellRecord, names []string) string {
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%s is forbidden here: %s\n", n, c.Permitted[n].Why)
	}
	return b.String()
}

func writeJUnit(path string, rec *campaignRecord) error {
	data, err := xml.MarshalIndent(junitReport(rec), "", "  ")
	if err != nil {
		return err
	}
	return results.WriteFileAtomic(path, append([]byte(xml.Header), append(data, '\n')...))
}
