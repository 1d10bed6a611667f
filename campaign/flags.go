package campaign

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/chaos-isr/chaos/broker/node"
	"github.com/chaos-isr/chaos/internal/cli"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/runner"
	"github.com/chaos-isr/chaos/shard"
)

// Flags are chaos campaign's command line as given: where the matrix
// comes from (a preset, a spec file or the matrix flags), the settings
// that override a preset's or a spec file's, and chaos run's flags after
// "--". Resolve makes them one Spec, and refuses a bad value in the words
// of every chaos command (--NAME: WHAT IS WRONG, got VALUE; WHAT IS
// ACCEPTED), so that the refusal names the flag rather than a field.
type Flags struct {
	Preset, SpecFile string
	// The matrix flags: comma lists, but for the nemeses, separated by
	// ';' as each is a comma list of faults.
	Acks, MinInsyncReplicas, Election, Nemesis string
	Runs                                       int
	TimeLimit, NemesisInterval                 time.Duration
	Runtime                                    string
	Parallel                                   int
	// Seed is the campaign seed, 0 if none was given; Shard the slice of
	// the runs to run, "K/N", or empty for all of them.
	Seed  uint64
	Shard string
	// RunArgs are chaos run's flags given after "--".
	RunArgs []string
	// FailOn is the least verdict that fails the campaign (--fail-on:
	// unknown or invalid, cli.FailOnExit).
	FailOn string
	// Store and JUnit are where the record and the JUnit report go;
	// DryRun plans and prints, InProcess runs each run in this process.
	Store, JUnit      string
	DryRun, InProcess bool
	// Given says whether the flag of that name was on the command line:
	// a setting given wins over the preset's or spec file's, and a
	// matrix flag given excludes them.
	Given func(name string) bool
	// CheckElection and CheckNemesis are chaos run's own checks of its
	// --election and --nemesis values, which the matrix flags take: a bad
	// one is refused as chaos run refuses it.
	CheckElection, CheckNemesis func(string) error
}

// Register defines chaos campaign's flags on fs, with their defaults, and
// takes Given from fs and chaos run's checks of --election and --nemesis.
func (f *Flags) Register(fs *pflag.FlagSet) {
	fs.StringVar(&f.Preset, "preset", "", PresetUsage())
	fs.StringVar(&f.SpecFile, "spec", "", "read the campaign from a JSON spec file (docs/campaigns.md)")
	fs.StringVar(&f.Acks, "acks", "-1", "acks of the matrix, a comma list of 0, 1, -1")
	fs.StringVar(&f.MinInsyncReplicas, "min-insync-replicas", "2", "min.insync.replicas of the matrix, a comma list")
	fs.StringVar(&f.Election, "election", "clean", "elections of the matrix, a comma list of clean, unclean, elr")
	fs.StringVar(&f.Nemesis, "nemesis", "none", "nemeses of the matrix, separated by ';' (each is a comma list as for chaos run)")
	fs.IntVar(&f.Runs, "runs", 1, "runs per cell")
	fs.DurationVar(&f.TimeLimit, "time-limit", 30*time.Second, "each run's --time-limit")
	fs.DurationVar(&f.NemesisInterval, "nemesis-interval", 0, "each run's --nemesis-interval (default: chaos run's choice, per cell: 10s, or shorter where that has no room for a window of each of the cell's kinds)")
	fs.Uint64Var(&f.Seed, "seed", 0, "campaign seed, from which every run's seed is derived (default: random, printed and stored)")
	fs.StringVar(&f.Store, "store", "store", "the result store directory")
	fs.StringVar(&f.JUnit, "junit", "", "also write a JUnit XML report to this file")
	fs.StringVar(&f.FailOn, "fail-on", cli.FailOnUnknown, cli.FailOnUsage+" (the record and the JUnit report keep every verdict)")
	fs.StringVar(&f.Runtime, "runtime", runner.RuntimeLocal, "every run's --runtime: "+runner.RunRuntimeUsage+"; or sim (every run in deterministic simulation, in this process, as chaos sim runs it)")
	fs.IntVar(&f.Parallel, "parallel", 0, "runs at once, in the sim runtime only (default: the cores there, 1 elsewhere)")
	fs.StringVar(&f.Shard, "shard", "", "run only the K-th of N slices of the planned runs, e.g. 2/4, or I+1/4 for a 0-based index I (needs --seed; chaos campaign merge joins the shards)")
	fs.BoolVar(&f.DryRun, "dry-run", false, "print the resolved spec and every run's seed and command, run nothing")
	fs.BoolVar(&f.InProcess, "in-process", false, "run every run in this process instead of a child chaos run process (no isolation: a run that crashes or hangs takes the campaign with it)")
	f.Given, f.CheckElection = fs.Changed, node.CheckElection
	f.CheckNemesis = func(s string) error { _, err := runner.ParseFaults(s); return err }
}

// presetDocs say what each preset is for (PresetDoc).
var presetDocs = map[string]string{
	"smoke": "for CI: a cell that must be valid and one whose faults must bite",
	"seed":  "the seed's question: acks x election x min.insync.replicas x fault",
	"bugs":  "detection: every planted bug in its scenario, and a control per scenario",
}

// PresetDoc says what preset name is for.
func PresetDoc(name string) string { return presetDocs[name] }

// PresetSize says how big preset name is, from its spec (Spec.Size).
func PresetSize(name string) string {
	p, ok := Preset(name)
	if !ok {
		return ""
	}
	return p.Size().String()
}

// PresetUsage is --preset's help: each preset, what it is for and its
// size, from the preset itself.
func PresetUsage() string {
	var parts []string
	for _, name := range PresetNames() {
		parts = append(parts, fmt.Sprintf("%s (%s; %s)", name, presetDocs[name], PresetSize(name)))
	}
	return "a predefined campaign: " + strings.Join(parts, "; ")
}

// RunFlags reads chaos run's flags into the spec every run of a campaign
// starts from, in the campaign's store. chaos campaign passes chaos run's
// own flag set, so that a campaign and a run read a flag alike; its error
// refuses the campaign, or the cell whose run args it read.
type RunFlags func(args []string) (runner.Spec, error)

// matrixFlags define cells: they cannot be mixed with a preset or a spec
// file.
var matrixFlags = []string{"acks", "min-insync-replicas", "election", "nemesis"}

// runArgsOwned are chaos run's flags the campaign sets itself: passing
// them through would silently contradict the matrix or the store layout.
var runArgsOwned = []string{
	"store", "name", "quiet", "seed", "acks", "min-insync-replicas", "election", "nemesis",
	"time-limit", "nemesis-interval", "runtime", "spec-file", "outcome-file", "fail-on",
}

// Resolve turns the flags, a preset or a spec file into one spec, with
// runFlags reading its run args: a flag given wins over the preset's or
// spec file's setting, so "--preset seed --runs 5" does what it says.
func (f Flags) Resolve(runFlags RunFlags) (Spec, error) {
	var spec Spec
	var matrixSet []string
	for _, n := range matrixFlags {
		if f.Given(n) {
			matrixSet = append(matrixSet, "--"+n)
		}
	}
	if err := cli.CheckFailOn(f.FailOn); err != nil {
		return spec, err
	}
	switch {
	case f.Given("runs") && f.Runs < 1:
		return spec, fmt.Errorf("--runs: fewer than 1, got %d; the runs per cell, 1 or more", f.Runs)
	case f.Given("time-limit") && f.TimeLimit <= 0:
		return spec, fmt.Errorf("--time-limit: not positive, got %s; each run's duration, e.g. 30s", f.TimeLimit)
	case f.NemesisInterval < 0:
		return spec, fmt.Errorf("--nemesis-interval: negative, got %s; a duration such as 5s, or leave it out for chaos run's choice", f.NemesisInterval)
	}
	var err error
	switch {
	case f.Preset != "" && f.SpecFile != "":
		return spec, errors.New("--preset and --spec exclude each other")
	case (f.Preset != "" || f.SpecFile != "") && len(matrixSet) > 0:
		return spec, fmt.Errorf("%s cannot be combined with --preset or --spec: the matrix comes from one place (copy the spec from --dry-run into a file and edit it)", strings.Join(matrixSet, ", "))
	case f.Preset != "":
		p, ok := Preset(f.Preset)
		if !ok {
			names := PresetNames()
			return spec, fmt.Errorf("--preset: not a preset, got %q; use %s or %s", f.Preset, strings.Join(names[:len(names)-1], ", "), names[len(names)-1])
		}
		spec = p
	case f.SpecFile != "":
		spec, err = readSpecFlag(f.SpecFile)
	default:
		spec, err = f.matrix()
	}
	if err != nil {
		return spec, err
	}
	if f.Given("runs") || spec.Runs == 0 {
		spec.Runs = f.Runs
	}
	if f.Given("time-limit") || spec.TimeLimit == 0 {
		spec.TimeLimit = results.Duration(f.TimeLimit)
	}
	if f.Given("nemesis-interval") {
		spec.NemesisInterval = results.Duration(f.NemesisInterval)
	}
	if f.Given("runtime") || spec.Runtime == "" {
		spec.Runtime = f.Runtime
	}
	if rt := spec.Runtime; rt != runner.RuntimeSim && rt != runner.RuntimeExternal && !slices.Contains(runner.Runtimes(), rt) {
		return spec, fmt.Errorf("--runtime: not a runtime, got %q; use %s (or %s: every run in simulation; or %s: a cluster you run, with chaos run's --bootstrap and fault commands after --)",
			rt, strings.Join(runner.Runtimes(), " or "), runner.RuntimeSim, runner.RuntimeExternal)
	}
	switch {
	case f.Parallel < 0:
		return spec, fmt.Errorf("--parallel: negative, got %d; runs at once, e.g. the number of cores", f.Parallel)
	case f.Parallel > 1 && spec.Runtime != runner.RuntimeSim:
		// A real run's timing is part of what it tests.
		return spec, fmt.Errorf("--parallel: more than one run at a time outside the sim runtime, got %d; "+
			"real runs side by side would compete for the CPU and change what they test; use --runtime sim, or leave it out", f.Parallel)
	}
	spec.RunArgs = append(spec.RunArgs, f.RunArgs...)
	if err := spec.Check(); err != nil {
		return spec, err
	}
	base, err := runFlags(spec.RunArgs)
	if err != nil {
		return spec, err
	}
	if spec.Runtime == runner.RuntimeSim && base.BasePort != 0 {
		return spec, fmt.Errorf("flags for chaos run: %w", noPorts(base.BasePort))
	}
	// runFlags read them, so every "--" argument here is a flag of chaos
	// run.
	if owned := ownedFlags(spec.RunArgs); len(owned) > 0 {
		return spec, fmt.Errorf("flags for chaos run: %s set by the campaign itself (use the campaign's flags or the matrix)", strings.Join(owned, ", "))
	}
	return spec, nil
}

// ParseShard reads the slice of the runs to run.
func (f Flags) ParseShard() (shard.Shard, error) {
	sh, err := shard.Parse(f.Shard)
	switch {
	case err != nil:
		return sh, fmt.Errorf("--shard: %s, got %q; e.g. 2/4, the second of four slices of the runs", err, f.Shard)
	case !sh.Whole() && f.Seed == 0:
		// Each shard would draw its own campaign seed, and plan other runs.
		return sh, fmt.Errorf("--shard: given without --seed, got %q; every shard must plan the same runs: give them all the same --seed", f.Shard)
	}
	return sh, nil
}

// readSpecFlag reads --spec's file.
func readSpecFlag(file string) (Spec, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		reason := err.Error()
		var pe *fs.PathError
		if errors.As(err, &pe) {
			reason = pe.Err.Error()
		}
		return Spec{}, fmt.Errorf("--spec: cannot be read (%s), got %q; a JSON campaign spec file (docs/campaigns.md)", reason, file)
	}
	spec, err := ParseSpec(data)
	if err != nil {
		return spec, fmt.Errorf("--spec: not a campaign spec (%s), got %q; a JSON campaign spec; --preset seed --dry-run prints one", err, file)
	}
	return spec, nil
}

// matrix is the spec of the matrix flags.
func (f Flags) matrix() (Spec, error) {
	var spec Spec
	for _, s := range splitList(f.Acks, ",") {
		a, err := ParseAcks(s)
		if err != nil {
			return spec, err
		}
		spec.Acks = append(spec.Acks, a)
	}
	for _, s := range splitList(f.MinInsyncReplicas, ",") {
		n, err := strconv.Atoi(s)
		if err != nil {
			return spec, fmt.Errorf("--min-insync-replicas: not a number, got %q; a comma list of numbers, e.g. 1,2", s)
		}
		if n < 1 {
			return spec, fmt.Errorf("--min-insync-replicas: fewer than 1, got %d; a comma list of numbers from 1 to the replication factor, e.g. 1,2", n)
		}
		spec.MinInsyncReplicas = append(spec.MinInsyncReplicas, n)
	}
	spec.Election = splitList(f.Election, ",")
	for _, e := range spec.Election {
		if err := f.CheckElection(e); err != nil {
			return spec, err
		}
	}
	spec.Nemesis = splitList(f.Nemesis, ";")
	for _, n := range spec.Nemesis {
		if err := f.CheckNemesis(n); err != nil {
			return spec, err
		}
	}
	for _, l := range []struct {
		name, value string
		n           int
	}{{"acks", f.Acks, len(spec.Acks)}, {"min-insync-replicas", f.MinInsyncReplicas, len(spec.MinInsyncReplicas)},
		{"election", f.Election, len(spec.Election)}, {"nemesis", f.Nemesis, len(spec.Nemesis)}} {
		if l.n == 0 {
			return spec, fmt.Errorf("--%s: an empty list, got %q; at least one value, or the matrix has no cells", l.name, l.value)
		}
	}
	return spec, nil
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

// noPorts refuses chaos run's --base-port in simulation.
func noPorts(port int) error {
	return fmt.Errorf("--base-port: no ports in a simulation, got %d; leave it out", port)
}

// Base is the spec's Base: its run args and a cell's own, read by
// runFlags. A cell's run args may not set what the campaign sets (but for
// its own --nemesis-interval, which wins over the campaign's), nor, in
// simulation, a port.
func (s Spec) Base(runFlags RunFlags) Base {
	return func(cellArgs []string) (runner.Spec, error) {
		b, err := runFlags(append(slices.Clone(s.RunArgs), cellArgs...))
		if err != nil {
			return b, err
		}
		// A cell may set its own nemesis interval: the scenario that
		// exposes a bug may need windows of 100 ms or of 15 s.
		if owned := slices.DeleteFunc(ownedFlags(cellArgs), func(f string) bool { return f == "--nemesis-interval" }); len(owned) > 0 {
			return runner.Spec{}, fmt.Errorf("run_args: %s set by the campaign itself (use the cell's fields)", strings.Join(owned, ", "))
		}
		if len(cellArgs) > 0 && s.Runtime == runner.RuntimeSim && b.BasePort != 0 {
			return b, fmt.Errorf("run_args: %w", noPorts(b.BasePort))
		}
		return b, nil
	}
}

// Plan plans the spec's runs (NewPlan) on its Base, checks and all.
func (s Spec) Plan(runFlags RunFlags, checks ...func(runner.Spec) error) (*Plan, error) {
	return NewPlan(s.Record(), s.Base(runFlags), checks...)
}

// ownedFlags are the flags among args, already read as chaos run's, that
// the campaign sets itself.
func ownedFlags(args []string) []string {
	var owned []string
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if strings.HasPrefix(a, "--") && slices.Contains(runArgsOwned, name) && !slices.Contains(owned, "--"+name) {
			owned = append(owned, "--"+name)
		}
	}
	return owned
}
