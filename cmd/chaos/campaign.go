package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/chaos-isr/chaos/campaign"
	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/results/report"
	"github.com/chaos-isr/chaos/runner"
	"github.com/chaos-isr/chaos/shard"
	"github.com/chaos-isr/chaos/sim"
)

// chaos campaign is flags and output: the matrix flags, chaos run's flags
// after "--" read into the base spec every run shares, the dry run's
// listing, the progress lines and the summary table. Package campaign
// holds the spec file format and the presets, plans the runs, executes
// them (as child "chaos run" processes by default, or in this process
// with --in-process) and keeps the record.

// runArgsOwned are "chaos run" flags the campaign sets itself; passing them
// through would silently contradict the matrix or the store layout.
var runArgsOwned = []string{
	"store", "name", "quiet", "seed", "acks", "min-insync-replicas", "election", "nemesis",
	"time-limit", "nemesis-interval", "runtime", "spec-file", "outcome-file",
}

type campaignFlags struct {
	preset, spec, store, junit  string
	runtime                     string
	acks, minISR, election, nem string
	runs, parallel              int
	timeLimit, nemInterval      time.Duration
	seed                        uint64
	shard                       string
	dryRun, inProcess           bool
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
election, nemesis) is run --runs times, each run a "chaos run" child process (or, with
--in-process, in this process) with a seed derived from the campaign's --seed, so the same
seed replays every run. The matrix comes from the flags, from --spec FILE, or from
--preset smoke|seed. Flags after -- go to every "chaos run" (e.g. -- --nodes 5).

With --runtime sim every run is a "chaos sim" run in deterministic simulation, in this
process, --parallel at a time (the cores by default): the seed preset's 36 runs take
seconds, not 19 minutes, and replay exactly.

--shard K/N (with --seed) runs only the K-th of N slices of the planned runs, so that N
machines can share a campaign; "chaos campaign merge" joins their stores into one.

Prints a line per run and a table per cell: the verdicts, what the guarantee model
predicted, the anomalies seen as permitted and those seen unexpectedly, and availability.
A spec file's cells may plant bugs on purpose ("bugs": names chaos bugs lists) and take
chaos run flags of their own ("run_args"): such a detection campaign first prints, per
cell, whether its runs caught its bugs (an anomaly the configuration forbids), with which
anomalies and how soon (median time and operations to first detection), and a control
cell's (one without bugs) false alarms.
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
	fl.StringVar(&f.preset, "preset", "", "a predefined campaign: smoke (CI, 2 runs of 20 s, about 45 s), seed (the full 36-cell matrix of 30 s runs, about 19 minutes) or bugs (a detection campaign: every planted bug in its scenario and a control per scenario, 21 cells x 3 runs of 30 s; about 35 minutes, a minute with --runtime sim)")
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
	fl.StringVar(&f.runtime, "runtime", runtimeLocal, "every run's --runtime: "+runtimeUsage+"; or sim (every run in deterministic simulation, in this process, as chaos sim runs it)")
	fl.IntVar(&f.parallel, "parallel", 0, "runs at once, in the sim runtime only (default: the cores there, 1 elsewhere)")
	fl.StringVar(&f.shard, "shard", "", "run only the K-th of N slices of the planned runs, e.g. 2/4, or I+1/4 for a 0-based index I (needs --seed; chaos campaign merge joins the shards)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print the resolved spec and every run's seed and command, run nothing")
	fl.BoolVar(&f.inProcess, "in-process", false, "run every run in this process instead of a child chaos run process (no isolation: a run that crashes or hangs takes the campaign with it)")
	f.matrixFlags = []string{"acks", "min-insync-replicas", "election", "nemesis"}
	cmd.AddCommand(newCampaignMergeCmd())
	return cmd
}

// resolveSpec turns the flags, a preset or a spec file into one spec.
func resolveSpec(cmd *cobra.Command, f campaignFlags, passthrough []string) (campaign.Spec, error) {
	fl := cmd.Flags()
	var spec campaign.Spec
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
		p, ok := campaign.Preset(f.preset)
		if !ok {
			names := campaign.PresetNames()
			return spec, flagError("preset", f.preset, "not a preset", "use "+strings.Join(names[:len(names)-1], ", ")+" or "+names[len(names)-1])
		}
		spec = p
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
		if spec, err = campaign.ParseSpec(data); err != nil {
			return spec, flagError("spec", f.spec, "not a campaign spec ("+err.Error()+")", "a JSON campaign spec; --preset seed --dry-run prints one")
		}
	default:
		for _, s := range splitList(f.acks, ",") {
			a, err := parseAcks(s)
			if err != nil {
				return spec, err
			}
			spec.Acks = append(spec.Acks, campaign.Acks(a))
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
		spec.TimeLimit = results.Duration(f.timeLimit)
	}
	if fl.Changed("nemesis-interval") {
		spec.NemesisInterval = results.Duration(f.nemInterval)
	}
	if fl.Changed("runtime") || spec.Runtime == "" {
		spec.Runtime = f.runtime
	}
	if err := checkCampaignRuntime(spec.Runtime); err != nil {
		return spec, err
	}
	switch {
	case f.parallel < 0:
		return spec, flagError("parallel", f.parallel, "negative", "runs at once, e.g. the number of cores")
	case f.parallel > 1 && spec.Runtime != runner.RuntimeSim:
		// A real run's timing is part of what it tests.
		return spec, flagError("parallel", f.parallel, "more than one run at a time outside the sim runtime",
			"real runs side by side would compete for the CPU and change what they test; use --runtime sim, or leave it out")
	}
	spec.RunArgs = append(spec.RunArgs, passthrough...)
	if err := spec.Check(); err != nil {
		return spec, err
	}
	base, err := baseSpec(spec.RunArgs, f.store)
	if err != nil {
		return spec, err
	}
	if spec.Runtime == runner.RuntimeSim && base.BasePort != 0 {
		return spec, fmt.Errorf("flags for chaos run: %w", flagError("base-port", base.BasePort, "no ports in a simulation", "leave it out"))
	}
	// Parsed above, so every "--" argument here is a flag of chaos run.
	if owned := ownedFlags(spec.RunArgs); len(owned) > 0 {
		return spec, fmt.Errorf("flags for chaos run: %s set by the campaign itself (use the campaign's flags or the matrix)", strings.Join(owned, ", "))
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

// baseSpec is what every run of a campaign shares: chaos run's flags given
// after "--" (or a spec file's run_args), read by chaos run's own flag set
// into chaos run's spec, in the campaign's store. The campaign varies the
// rest per cell and run.
func baseSpec(runArgs []string, store string) (runner.Spec, error) {
	run, f := newRunCmdFlags()
	(&cobra.Command{Use: "chaos"}).AddCommand(run)
	if err := run.Flags().Parse(runArgs); err != nil {
		return runner.Spec{}, fmt.Errorf("flags for chaos run: %w", flagParseError(run, err))
	}
	if run.Flags().NArg() > 0 {
		return runner.Spec{}, fmt.Errorf("flags for chaos run: unexpected argument %q", run.Flags().Arg(0))
	}
	// The spec takes known bugs only, and would leave an unknown one out.
	if _, err := f.bugs.parse(); err != nil {
		return runner.Spec{}, fmt.Errorf("flags for chaos run: %w", err)
	}
	// Acks and faults are the cells'.
	s := f.spec(-1, nil)
	s.Store, s.Command = store, nil
	return s, nil
}

// planCampaign plans the spec's runs in the store.
func planCampaign(spec campaign.Spec, store string) (*campaign.Plan, error) {
	var checks []func(runner.Spec) error
	if spec.Runtime == runner.RuntimeSim {
		// Refuses a fault the simulation does not model, with every other
		// impossible cell, before anything runs.
		checks = append(checks, sim.Validate)
	}
	return campaign.NewPlan(spec.Record(), campaignBase(spec, store), checks...)
}

// campaignBase is the campaign's campaign.Base: the spec's run args and
// a cell's own, read by chaos run's flag set (baseSpec). A cell's run
// args may not set what the campaign sets (but for its own
// --nemesis-interval, which wins over the campaign's), nor, in
// simulation, a port.
func campaignBase(spec campaign.Spec, store string) campaign.Base {
	return func(cellArgs []string) (runner.Spec, error) {
		s, err := baseSpec(append(slices.Clone(spec.RunArgs), cellArgs...), store)
		if err != nil {
			return s, err
		}
		// A cell may set its own nemesis interval: the scenario that
		// exposes a bug may need windows of 100 ms or of 15 s.
		if owned := slices.DeleteFunc(ownedFlags(cellArgs), func(f string) bool { return f == "--nemesis-interval" }); len(owned) > 0 {
			return runner.Spec{}, fmt.Errorf("run_args: %s set by the campaign itself (use the cell's fields)", strings.Join(owned, ", "))
		}
		if len(cellArgs) > 0 && spec.Runtime == runner.RuntimeSim && s.BasePort != 0 {
			return s, fmt.Errorf("run_args: %w", flagError("base-port", s.BasePort, "no ports in a simulation", "leave it out"))
		}
		return s, nil
	}
}

// ownedFlags are the flags among args, already parsed as chaos run's,
// that the campaign sets itself.
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

func runCampaign(cmd *cobra.Command, f campaignFlags, passthrough []string) (int, error) {
	out := cmd.OutOrStdout()
	spec, err := resolveSpec(cmd, f, passthrough)
	if err != nil {
		return 0, err
	}
	sh, err := shard.Parse(f.shard)
	switch {
	case err != nil:
		return 0, flagError("shard", f.shard, err.Error(), "e.g. 2/4, the second of four slices of the runs")
	case !sh.Whole() && f.seed == 0:
		// Each shard would draw its own campaign seed, and plan other runs.
		return 0, flagError("shard", f.shard, "given without --seed", "every shard must plan the same runs: give them all the same --seed")
	}
	plan, err := planCampaign(spec, f.store)
	if err != nil {
		return 0, err
	}
	plan.Shard = sh
	if err := stopIfValidating(cmd); err != nil {
		return 0, err
	}
	seed := f.seed
	if seed == 0 {
		seed = runner.RandomSeed()
	}
	planned := plan.PlannedRuns()
	sharded := ""
	if !sh.Whole() {
		sharded = fmt.Sprintf("shard %s: %d of the %d runs\n", sh, len(planned), len(plan.Cells)*spec.Runs)
	}
	if f.dryRun {
		data, _ := json.MarshalIndent(spec, "", "  ")
		fmt.Fprintf(out, "seed %d\n%d cells x %d runs, each %s\n%sspec:\n%s\n", seed, len(plan.Cells), spec.Runs, time.Duration(spec.TimeLimit), sharded, data)
		for i, r := range planned {
			c := plan.Cells[r.Cell]
			s := campaign.RunSeed(seed, c.Name, r.Run)
			fmt.Fprintf(out, "[%d/%d] %s run %d/%d seed %d: chaos %s --seed %d\n", i+1, len(planned), c.Label, r.Run, spec.Runs, s, report.ShellJoin(c.Args), s)
		}
		return 0, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	var executor campaign.Executor = campaign.Child{Exe: exe}
	parallel := 1
	switch {
	case spec.Runtime == runner.RuntimeSim:
		// A simulated run needs no process of its own (package campaign
		// says why), and runs side by side never disturb each other.
		executor = campaign.InProcess{Version: fullVersion(), Run: sim.Run}
		parallel = cmp.Or(f.parallel, runtime.GOMAXPROCS(0))
	case f.inProcess:
		executor = campaign.InProcess{Version: fullVersion()}
	}
	ctx, kill, stop := campaignInterrupts()
	defer stop()
	line := newProgressLine(out)
	opts := campaign.Options{
		Seed: seed, Executor: executor, Program: exe, Preset: f.preset, SpecFile: f.spec, Command: os.Args,
		Versions: map[string]string{"chaos": fullVersion(), "go": runtime.Version()}, Kill: kill, Parallel: parallel,
		Started: func(dir string, _ *results.Campaign) {
			fmt.Fprintf(out, "campaign %s\nseed %d\n%d cells x %d runs, each %s (about %s in all)\n%s",
				dir, seed, len(plan.Cells), spec.Runs, time.Duration(spec.TimeLimit), (plan.Estimate() / time.Duration(parallel)).Round(time.Second), sharded)
		},
		RunEnded: func(p campaign.Progress, rr results.CampaignRun) {
			took := time.Duration(rr.Seconds * float64(time.Second))
			// A simulated run takes a second or less: whole seconds would
			// say nothing.
			if spec.Runtime == runner.RuntimeSim {
				took = took.Round(10 * time.Millisecond)
			} else {
				took = took.Round(time.Second)
			}
			s := runPrefix(p) + " " + describeRun(rr) + " " + took.String()
			if p.Left > 0 {
				s += fmt.Sprintf(", ~%s left", p.Left.Round(time.Second))
			}
			line.finish(s)
		},
		Interrupted: func() {
			what := "the current run"
			if parallel > 1 {
				what = "the runs going"
			}
			fmt.Fprintf(out, "\ninterrupted: stopping %s (interrupt again to kill it)\n", what)
		},
		IndexError: func(err error) { fmt.Fprintf(cmd.ErrOrStderr(), "chaos: campaign index not written: %v\n", err) },
	}
	// Several runs at once have no one line to show: each says only how
	// it ended.
	if parallel == 1 {
		opts.RunStarted = func(p campaign.Progress) { line.begin(runPrefix(p)) }
	}
	if line.tty {
		opts.Tick = func(p campaign.Progress, elapsed time.Duration) {
			el := elapsed.Round(time.Second)
			if el <= p.TimeLimit {
				line.show(fmt.Sprintf("%s %s/%s", runPrefix(p), el, p.TimeLimit))
			} else {
				line.show(fmt.Sprintf("%s final reads and checks %s", runPrefix(p), el))
			}
		}
	}
	rec, dir, writeErr := campaign.Run(ctx, plan, opts)
	if rec == nil {
		return 0, writeErr
	}
	printCampaignSummary(out, rec, filepath.Join(dir, results.CampaignFile))
	fmt.Fprintf(out, "index: %s\n", filepath.Join(dir, results.CampaignIndexFile))
	if f.junit != "" {
		if err := campaign.WriteJUnit(f.junit, rec); err != nil && writeErr == nil {
			writeErr = err
		}
	}
	if writeErr != nil {
		// Results that were not written are worse than a failed cell: the
		// campaign's record cannot be trusted.
		return 0, writeErr
	}
	return *rec.ExitCode, nil
}

// runPrefix begins a run's progress line: "[14/36] acks=1 isr=1 clean
// partition-leader run 1/1 ...".
func runPrefix(p campaign.Progress) string {
	return fmt.Sprintf("[%d/%d] %s run %d/%d ...", p.N, p.Total, p.Cell.Label, p.Run, p.Cell.Summary.Planned)
}

// campaignInterrupts watches for SIGINT and SIGTERM: the first ends the
// context (the campaign stops its run in order and starts no other), a
// second closes kill (the run is killed at once). The campaign still
// writes its record either way. stop ends the watch.
func campaignInterrupts() (ctx context.Context, kill <-chan struct{}, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	killc := make(chan struct{})
	sigs := make(chan os.Signal, 2)
	done := make(chan struct{})
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		for _, act := range []func(){cancel, func() { close(killc) }} {
			select {
			case <-sigs:
				act()
			case <-done:
				return
			}
		}
	}()
	return ctx, killc, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}

func describeRun(rr results.CampaignRun) string {
	var b strings.Builder
	b.WriteString(strings.ToUpper(rr.Verdict))
	var notes []string
	if len(rr.Unexpected) > 0 {
		notes = append(notes, "unexpected: "+strings.Join(rr.Unexpected, ", "))
	}
	if len(rr.Unknown) > 0 && rr.Verdict == campaign.VerdictUnknown {
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

func printCampaignSummary(out io.Writer, rec *results.Campaign, path string) {
	sharded := ""
	if rec.Shard != nil {
		sharded = fmt.Sprintf(", shard %d/%d", rec.Shard.Index, rec.Shard.Count)
	}
	fmt.Fprintf(out, "\ncampaign seed %d%s, %s\n", rec.Seed, sharded, rec.Status)
	// A detection campaign's bug cells are its detection matrix's rows;
	// the matrix of cells holds the others.
	matrix := slices.ContainsFunc(rec.Cells, func(c *results.CampaignCell) bool { return len(c.Bugs) == 0 }) || len(rec.Detection) == 0
	if len(rec.Detection) > 0 {
		printDetection(out, rec)
		if matrix {
			fmt.Fprintln(out, "\ncells without bugs:")
		}
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	if matrix {
		fmt.Fprintln(tw, "CELL\tRUNS\tVALID\tINVALID\tUNKNOWN\tERROR\tMODEL\tEXPECTED SEEN\tUNEXPECTED\tAVAILABILITY")
	}
	for _, c := range rec.Cells {
		s := c.Summary
		if rec.Shard != nil && s.Planned == 0 || len(c.Bugs) > 0 {
			continue // another shard's, or the detection matrix's
		}
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
		if c.Verdict != campaign.VerdictValid && c.Verdict != campaign.VerdictNotRun {
			bad = append(bad, c.Label+": "+c.Verdict)
		}
	}
	code := 0
	if rec.ExitCode != nil {
		code = *rec.ExitCode
	}
	switch {
	case rec.Status == campaign.StatusInterrupted:
		fmt.Fprintf(out, "verdict: INTERRUPTED (exit %d)\n", code)
	case len(rec.Detection) > 0:
		sayDetection(out, rec, code)
	case len(bad) == 0:
		fmt.Fprintf(out, "verdict: VALID (exit %d)\n", code)
	default:
		fmt.Fprintf(out, "verdict: %s (exit %d): %s\n", strings.ToUpper(campaign.WorstOfCells(rec.Cells)), code, strings.Join(bad, "; "))
	}
}

// sayDetection is a detection campaign's last line: how many bug cells
// caught their bugs in every run, and what failed it (misses, false
// alarms, errors), as the exit code counts them.
func sayDetection(out io.Writer, rec *results.Campaign, code int) {
	var cells, all int
	var problems []string
	for _, d := range rec.Detection {
		name := "control " + d.Scenario
		if len(d.Bugs) > 0 {
			cells++
			names := make([]string, len(d.Bugs))
			for i, b := range d.Bugs {
				names[i] = b.Name
			}
			name = strings.Join(names, "+")
		}
		switch {
		case len(d.Bugs) > 0 && d.Runs > 0 && d.Caught == d.Runs:
			all++
		case len(d.Bugs) > 0 && d.Caught == 0:
			problems = append(problems, fmt.Sprintf("%s not caught (0/%d)", name, d.Runs))
		case len(d.Bugs) > 0:
			problems = append(problems, fmt.Sprintf("%s caught in %d/%d", name, d.Caught, d.Runs))
		case d.Caught > 0:
			problems = append(problems, fmt.Sprintf("%s: %d false alarm(s)", name, d.Caught))
		}
		if d.Errors > 0 {
			problems = append(problems, fmt.Sprintf("%s: %d error(s)", name, d.Errors))
		}
	}
	word := "DETECTED"
	if code != 0 {
		word = "NOT ALL DETECTED"
	}
	fmt.Fprintf(out, "detection: %s (exit %d): %d of %d bug cells caught in every run", word, code, all, cells)
	if len(problems) > 0 {
		fmt.Fprintf(out, "; %s", strings.Join(problems, "; "))
	}
	fmt.Fprintln(out)
}

// printDetection prints a detection campaign's matrix: per cell its bugs
// and where they live, its scenario, the runs that ended of those planned,
// the runs that caught the bugs (NOT CAUGHT when none did), the
// anomalies that caught them in how many runs, and the medians of the
// caught runs' first detections; a control cell's false alarms.
func printDetection(out io.Writer, rec *results.Campaign) {
	fmt.Fprintln(out, "detection (a run catches its cell's bugs when it finds an anomaly the configuration forbids):")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BUG\tNODE\tSCENARIO\tRUNS\tCAUGHT\tCAUGHT BY\tMEDIAN TIME\tMEDIAN OPS")
	for _, d := range rec.Detection {
		if rec.Shard != nil && d.Planned == 0 {
			continue // another shard's
		}
		var names, nodes []string
		for _, b := range d.Bugs {
			names = append(names, b.Name)
			if !slices.Contains(nodes, b.Node) {
				nodes = append(nodes, b.Node)
			}
		}
		name, node := strings.Join(names, ","), strings.Join(nodes, ",")
		control := len(d.Bugs) == 0
		if control {
			name, node = "control (no bug)", "-"
		}
		pct := ""
		if d.Runs > 0 {
			pct = fmt.Sprintf(" (%.0f%%)", 100*float64(d.Caught)/float64(d.Runs))
		}
		caught := fmt.Sprintf("%d/%d%s", d.Caught, d.Runs, pct)
		switch {
		case d.Runs == 0:
			caught = "no run yet"
		case control && d.Caught == 0:
			caught = fmt.Sprintf("no false alarm (0/%d)", d.Runs)
		case control:
			caught = fmt.Sprintf("FALSE ALARMS %d/%d", d.Caught, d.Runs)
		case d.Caught == 0:
			caught = fmt.Sprintf("NOT CAUGHT (0/%d)", d.Runs)
		}
		runs := fmt.Sprintf("%d/%d", d.Runs, d.Planned)
		if d.Errors > 0 {
			runs += fmt.Sprintf(" (%d errors)", d.Errors)
		}
		median, ops := "-", "-"
		if d.MedianTime != nil && d.MedianOps != nil {
			median, ops = time.Duration(*d.MedianTime).String(), strconv.FormatInt(*d.MedianOps, 10)
			if d.Timed < d.Caught {
				median += fmt.Sprintf(" (%d timed)", d.Timed)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, node, d.Scenario, runs, caught, countsOf(d.Anomalies, d.Runs), median, ops)
	}
	tw.Flush()
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
