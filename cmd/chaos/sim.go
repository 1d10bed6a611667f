package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/results/report"
	"github.com/chaos-isr/chaos/runner"
	"github.com/chaos-isr/chaos/shard"
	"github.com/chaos-isr/chaos/sim"
)

// simFlags are chaos run's flags and those of a sweep.
type simFlags struct {
	run       runFlags
	seeds     string
	runs      int
	parallel  int
	keepValid bool
	// schedule, shrink and from: simshrink.go.
	schedule   string
	shrink     bool
	shrinkRuns int
	from       string
	shard      string
}

func newSimCmd() *cobra.Command {
	cmd, _ := newSimCmdFlags(nil)
	return cmd
}

// newSimCmdFlags is chaos sim and the values its flags parse into, with
// judge naming the anomalies held against a run when it shrinks or
// reproduces one (nil: its own verdict's; tests plant a failure with
// another).
func newSimCmdFlags(judge judgeFunc) (*cobra.Command, *simFlags) {
	f := new(simFlags)
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Run a test in deterministic simulation, replayable from its seed",
		Long: `Run a test in deterministic simulation: the same broker and controller state machines,
workload, nemesis, monitor, final phase and checkers as chaos run, on a cluster simulated
in memory on a virtual clock. Every choice (message delays and order, the workload's
timing, the faults' times and targets) comes from --seed, so the same seed and flags give
the same history.jsonl and results.json, byte for byte: a failure found once comes back
with "chaos sim ... --seed N", the command the report prints. A 60 s test takes about a
second.

It takes chaos run's flags (not --runtime or --base-port) and writes the run to the store
as chaos run does, with runtime "sim" in test.json; times in the history are virtual.
Exit code as chaos run's: 0 valid, 1 invalid, 2 unknown, 3 an error, 130 interrupted.

A sweep runs many seeds, --parallel at a time: --seeds 1-1000 (or a list such as
1,5,9-12), or --runs N for N seeds from --seed on. Only the runs that were not valid
stay in the store (--keep-valid keeps all); it prints a table of verdicts and anomalies
and each failing seed with its replay command, and exits with the worst: 1 if any run
was invalid, else 3 if any ended in an error, else 2 if any was unknown, else 0.

--schedule gives the fault windows themselves, FAULT@START+LENGTH, comma-separated
(kill@5s+4s,partition@12s+5s), in place of the schedule --nemesis and --nemesis-interval
draw from the seed; the seed still drives every other choice.

--shrink takes a failing run (its flags and --seed) and searches for a smaller run that
still shows every anomaly it showed that its configuration forbids: fewer and shorter
fault windows, a shorter time limit, fewer partitions, producers and consumers, a lower
rate. It replays each candidate from the same seed, at most --shrink-runs of them, keeps
only the smallest in the store, and prints it with its replay command (with --schedule).
Exit code: the smallest run's verdict; 3 if the run shows nothing forbidden to shrink.

--from DIR takes a stored run (chaos run's or chaos sim's: its test.json and results.json)
and runs its configuration, workload and planned windows in simulation, seed after seed
(--runs N from the run's seed, default 100, or --seeds), until one shows the unexpected
anomalies the run showed; it keeps that run, prints its replay command, and with --shrink
shrinks it. Exit code: 1 when a seed reproduced it, 2 when none did.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exitWith(simTest(cmd, f, judge))
		},
	}
	f.run.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.seeds, "seeds", "", "sweep: run these seeds, e.g. 1-1000 or 1,5,9-12")
	fl.IntVar(&f.runs, "runs", 0, "sweep: run this many seeds, from --seed on (default: a random first seed)")
	fl.IntVar(&f.parallel, "parallel", runtime.GOMAXPROCS(0), "sweep: runs at once")
	fl.BoolVar(&f.keepValid, "keep-valid", false, "sweep: keep the valid runs in the store too")
	fl.StringVar(&f.schedule, "schedule", "", "the fault windows themselves, in place of --nemesis's seeded schedule: FAULT@START+LENGTH,..., e.g. kill@5s+4s,partition@12s+5s")
	fl.BoolVar(&f.shrink, "shrink", false, "search for a smaller run of --seed that still shows its unexpected anomalies, and print its replay command")
	fl.IntVar(&f.shrinkRuns, "shrink-runs", sim.DefaultShrinkRuns, "shrink: the most simulations the search runs")
	fl.StringVar(&f.from, "from", "", "a stored run directory: sweep seeds of its configuration and schedule until one shows its unexpected anomalies")
	fl.StringVar(&f.shard, "shard", "", "sweep: run only the K-th of N slices of the seeds, e.g. 2/4, or I+1/4 for a 0-based index I (with --runs, needs --seed)")
	// A simulation has no runtime to choose and no ports.
	_ = fl.MarkHidden("runtime")
	_ = fl.MarkHidden("base-port")
	return cmd, f
}

func simTest(cmd *cobra.Command, f *simFlags, judge judgeFunc) (int, error) {
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	fl := cmd.Flags()
	if f.from != "" {
		return simFrom(cmd, f, judge)
	}
	spec, err := f.simSpec(fl)
	if err != nil {
		return 0, err
	}
	if f.shrink || fl.Changed("shrink-runs") {
		if err := f.checkShrink(fl); err != nil {
			return 0, err
		}
	}
	seeds, err := f.sweepSeeds(fl.Changed("seed"))
	if err != nil {
		return 0, err
	}
	if err := stopIfValidating(cmd); err != nil {
		return 0, err
	}
	if f.shrink {
		// The replay command of each run of the search is its own spec's
		// flags (replayCommand), not these.
		spec.Command = nil
		return simShrink(out, errOut, spec, f, nil, judge)
	}
	if seeds != nil {
		return simSweep(out, errOut, spec, seeds, f)
	}
	ctx, _, stop := interruptContext(errOut, "stopping the simulation")
	defer stop()
	started := time.Now()
	outcome, err := sim.Run(ctx, spec, runner.Options{
		Version: fullVersion(),
		Started: func(dir string, seed uint64, _ string) {
			fmt.Fprintf(out, "run %s\nseed %d\n", dir, seed)
			sayBugs(out, spec.Settings.Bugs)
		},
		Log: func(format string, args ...any) {
			if !f.run.quiet {
				fmt.Fprintf(errOut, format+"\n", args...)
			}
		},
	})
	if err == nil && !outcome.Interrupted {
		took := time.Since(started)
		fmt.Fprintf(out, "simulated %s in %s (%.0fx)\n", spec.TimeLimit, took.Round(time.Millisecond), spec.TimeLimit.Seconds()/took.Seconds())
	}
	return sayOutcome(out, errOut, outcome, err)
}

// simSpec is the spec of chaos sim's flags, checked flag by flag as chaos
// run's are, then as a simulation.
func (f *simFlags) simSpec(fl *pflag.FlagSet) (runner.Spec, error) {
	if fl.Changed("runtime") && f.run.runtime != runner.RuntimeSim {
		return runner.Spec{}, flagError("runtime", f.run.runtime, "not the simulation", "chaos sim runs in the sim runtime; chaos run runs local and docker")
	}
	if fl.Changed("base-port") {
		return runner.Spec{}, flagError("base-port", f.run.basePort, "no ports in a simulation", "leave it out")
	}
	// chaos run's checks, for a runtime they know.
	f.run.runtime = runtimeLocal
	acks, faults, err := f.run.validate()
	if err != nil {
		return runner.Spec{}, err
	}
	for _, name := range faults {
		if err := sim.Simulated(name); err != nil {
			return runner.Spec{}, flagError("nemesis", name, "not simulated", err.Error())
		}
	}
	spec := f.run.spec(acks, faults)
	spec.Runtime = runner.RuntimeSim
	if err := f.applySchedule(fl, &spec); err != nil {
		return runner.Spec{}, err
	}
	if err := sim.Validate(spec); err != nil {
		return runner.Spec{}, flagCombination(err, f.run)
	}
	return spec, nil
}

// checkShrink refuses a search without its one run to shrink.
func (f *simFlags) checkShrink(fl *pflag.FlagSet) error {
	const one = "--shrink shrinks one failing run: its flags and --seed N, as its replay command says"
	switch {
	case !f.shrink:
		return flagError("shrink-runs", f.shrinkRuns, "without --shrink", "add --shrink, or leave --shrink-runs out")
	case fl.Changed("seeds"):
		return flagError("seeds", f.seeds, "given with --shrink", one)
	case fl.Changed("runs"):
		return flagError("runs", f.runs, "given with --shrink", one)
	case !fl.Changed("seed"):
		return flagError("seed", nil, "missing", one)
	case f.run.seed == 0:
		return flagError("seed", f.run.seed, "not a seed to shrink", one)
	case f.shrinkRuns < 1:
		return flagError("shrink-runs", f.shrinkRuns, "below 1", "the most simulations the search may run, e.g. 200")
	}
	return nil
}

// maxSweep bounds a sweep's seeds: a typo such as 1-1000000000 must not
// start a billion runs.
const maxSweep = 1_000_000

// sweepSeeds are the seeds of a sweep (--seeds, or --runs from --seed),
// those of its --shard only, nil for one run.
func (f *simFlags) sweepSeeds(seedSet bool) ([]uint64, error) {
	sh, err := shard.Parse(f.shard)
	switch {
	case err != nil:
		return nil, flagError("shard", f.shard, err.Error(), "e.g. 2/4, the second of four slices of the seeds")
	case sh.Whole():
		return f.allSeeds(seedSet)
	case f.seeds == "" && f.runs == 0:
		return nil, flagError("shard", f.shard, "given without a sweep", "a sweep's seeds are sharded: add --seeds or --runs")
	case f.seeds == "" && f.run.seed == 0:
		// Each shard would draw its own first seed, and sweep other seeds.
		// (--from's first seed is its run's.)
		return nil, flagError("shard", f.shard, "given with --runs but without --seed", "every shard must sweep the same seeds: give them all the same --seed, or --seeds")
	}
	all, err := f.allSeeds(seedSet)
	if err != nil {
		return nil, err
	}
	// A seed is its own key: a seed keeps its shard when the sweep grows.
	// (Not nil even when this shard has none: nil is one run.)
	seeds := []uint64{}
	for _, s := range all {
		if sh.Has(strconv.FormatUint(s, 10)) {
			seeds = append(seeds, s)
		}
	}
	return seeds, nil
}

// allSeeds are every seed of a sweep, nil for one run.
func (f *simFlags) allSeeds(seedSet bool) ([]uint64, error) {
	switch {
	case f.seeds != "" && f.runs != 0:
		return nil, flagError("runs", f.runs, "given with --seeds", "use one: --seeds lists the seeds, --runs counts them from --seed")
	case f.seeds != "" && seedSet:
		return nil, flagError("seed", f.run.seed, "given with --seeds", "use one: --seeds lists every seed of the sweep")
	case f.runs < 0 || f.runs > maxSweep:
		return nil, flagError("runs", f.runs, "out of range", fmt.Sprintf("1 to %d runs, or 0 for one run", maxSweep))
	case f.parallel < 1:
		return nil, flagError("parallel", f.parallel, "below 1", "runs at once, e.g. the number of cores")
	case f.seeds != "":
		return parseSeeds(f.seeds)
	case f.runs > 0:
		first := f.run.seed
		if first == 0 {
			first = runner.RandomSeed()
		}
		seeds := make([]uint64, f.runs)
		for i := range seeds {
			seeds[i] = first + uint64(i)
		}
		return seeds, nil
	}
	return nil, nil
}

// parseSeeds reads --seeds: a comma list of seeds and ranges A-B.
func parseSeeds(s string) ([]uint64, error) {
	bad := func(what string) error {
		return flagError("seeds", s, what, "seeds and ranges of seeds above 0, e.g. 1-1000 or 1,5,9-12")
	}
	var out []uint64
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		a, err := strconv.ParseUint(lo, 10, 64)
		if err != nil || a == 0 {
			return nil, bad(fmt.Sprintf("%q is not a seed", part))
		}
		b := a
		if isRange {
			if b, err = strconv.ParseUint(hi, 10, 64); err != nil || b < a {
				return nil, bad(fmt.Sprintf("%q is not a range from low to high", part))
			}
		}
		if b-a >= maxSweep || len(out)+int(b-a+1) > maxSweep {
			return nil, bad(fmt.Sprintf("more than %d seeds", maxSweep))
		}
		for x := a; ; x++ {
			if !slices.Contains(out, x) {
				out = append(out, x)
			}
			if x == b {
				break
			}
		}
	}
	return out, nil
}

// sweepFlags are the flags of a sweep that a replay of one of its runs
// leaves out: the flags that take a value, then the others.
var (
	sweepValueFlags = []string{"seeds", "runs", "parallel", "seed", "shard"}
	sweepBoolFlags  = []string{"keep-valid"}
)

// replayArgs is the command that replays one run of a sweep: the sweep's
// own, without its sweep flags, with the run's seed.
func replayArgs(args []string, seed uint64) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		name, _, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		switch {
		case !strings.HasPrefix(args[i], "--"):
			out = append(out, args[i])
		case slices.Contains(sweepValueFlags, name):
			if !hasValue {
				i++
			}
		case slices.Contains(sweepBoolFlags, name):
		default:
			out = append(out, args[i])
		}
	}
	return append(out, "--seed", strconv.FormatUint(seed, 10))
}

// simSweep runs a sweep, prints its progress, the table of verdicts and
// anomalies and the failing seeds, and returns the worst exit code.
func simSweep(out, errOut io.Writer, spec runner.Spec, seeds []uint64, f *simFlags) (int, error) {
	ctx, _, stop := interruptContext(errOut, "stopping the sweep")
	defer stop()
	fmt.Fprintf(out, "sweep of %d seeds, %d at a time: %s, %s each\n", len(seeds), f.parallel, spec.Normalized().Name, spec.TimeLimit)
	sayBugs(out, spec.Settings.Bugs)
	started := time.Now()
	prog := newSweepProgress(errOut, len(seeds), f.run.quiet)
	args := slices.Clone(os.Args)
	runs := sim.Sweep(ctx, spec, seeds, sim.SweepOptions{
		Parallel: f.parallel, KeepValid: f.keepValid, Version: fullVersion(),
		Command: func(seed uint64) []string { return replayArgs(args, seed) },
		Done:    prog.add,
	})
	prog.end()
	printSweep(out, runs, time.Since(started), func(seed uint64) string {
		a := replayArgs(args, seed)
		a[0] = filepath.Base(a[0])
		return report.ShellJoin(a)
	})
	if ctx.Err() != nil {
		return exitInterrupted, nil
	}
	return sweepExit(runs), nil
}

// sweepProgress shows a sweep's progress: one line rewritten on a
// terminal, else a line every tenth of the runs.
type sweepProgress struct {
	w       io.Writer
	total   int
	tty     bool
	quiet   bool
	started time.Time
	counts  map[string]int
	done    int
}

func newSweepProgress(w io.Writer, total int, quiet bool) *sweepProgress {
	tty := false
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil {
			tty = fi.Mode()&os.ModeCharDevice != 0
		}
	}
	return &sweepProgress{w: w, total: total, tty: tty, quiet: quiet, started: time.Now(), counts: map[string]int{}}
}

func (p *sweepProgress) add(r sim.SweepRun) {
	p.done++
	p.counts[runVerdict(r)]++
	if p.quiet || (!p.tty && p.done%max(p.total/10, 1) != 0 && p.done != p.total) {
		return
	}
	elapsed := time.Since(p.started)
	left := time.Duration(float64(elapsed) / float64(p.done) * float64(p.total-p.done))
	line := fmt.Sprintf("[%*d/%d] valid %d  invalid %d  unknown %d  error %d  %s, ~%s left", len(strconv.Itoa(p.total)), p.done, p.total,
		p.counts["valid"], p.counts["invalid"], p.counts["unknown"], p.counts["error"], elapsed.Round(time.Second), left.Round(time.Second))
	if p.tty {
		fmt.Fprintf(p.w, "\r%s\x1b[K", line)
	} else {
		fmt.Fprintln(p.w, line)
	}
}

func (p *sweepProgress) end() {
	if p.tty && !p.quiet {
		fmt.Fprintln(p.w)
	}
}

// runVerdict names how a run of a sweep ended.
func runVerdict(r sim.SweepRun) string {
	switch {
	case r.Err != nil || r.Outcome.Error != "":
		return "error"
	case r.Outcome.Interrupted:
		return "interrupted"
	case r.Outcome.Verdict == checker.Valid:
		return "valid"
	case r.Outcome.Verdict == checker.Invalid:
		return "invalid"
	}
	return "unknown"
}

// printSweep prints a sweep's table: runs and seeds by verdict, runs by
// anomaly found (and in how many it was forbidden), and each run that was
// not valid with its replay command.
func printSweep(out io.Writer, runs []sim.SweepRun, took time.Duration, replay func(seed uint64) string) {
	fmt.Fprintf(out, "\n%d runs in %s\n", len(runs), took.Round(time.Millisecond))
	bySeed := map[string][]uint64{}
	type tally struct{ runs, unexpected int }
	anomalies := map[string]*tally{}
	for _, r := range runs {
		v := runVerdict(r)
		bySeed[v] = append(bySeed[v], r.Seed)
		if res := r.Outcome.Results; res != nil {
			for _, x := range res.Results {
				if x.Valid != checker.Invalid {
					continue
				}
				t := anomalies[x.Name]
				if t == nil {
					t = &tally{}
					anomalies[x.Name] = t
				}
				t.runs++
				if x.Forbidden > 0 {
					t.unexpected++
				}
			}
		}
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "VERDICT\tRUNS\tSEEDS")
	for _, v := range []string{"valid", "invalid", "unknown", "error", "interrupted"} {
		if v == "interrupted" && len(bySeed[v]) == 0 {
			continue
		}
		seeds := ""
		if v != "valid" {
			seeds = seedList(bySeed[v], 20)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\n", v, len(bySeed[v]), seeds)
	}
	tw.Flush()
	if len(anomalies) > 0 {
		fmt.Fprintln(out)
		tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "ANOMALY\tRUNS FOUND\tRUNS FORBIDDEN")
		for _, name := range checker.Names() {
			if t := anomalies[name]; t != nil {
				fmt.Fprintf(tw, "%s\t%d\t%d\n", name, t.runs, t.unexpected)
			}
		}
		tw.Flush()
	}
	var failing []sim.SweepRun
	for _, r := range runs {
		if v := runVerdict(r); v != "valid" && v != "interrupted" {
			failing = append(failing, r)
		}
	}
	if len(failing) == 0 {
		return
	}
	fmt.Fprintln(out, "\nruns that were not valid (each replays with its command):")
	for _, r := range failing {
		what := strings.ToUpper(runVerdict(r))
		switch {
		case r.Err != nil:
			what += ": " + r.Err.Error()
		case r.Outcome.Results != nil && len(r.Outcome.Results.Unexpected) > 0:
			what += ": " + strings.Join(r.Outcome.Results.Unexpected, ", ")
		}
		fmt.Fprintf(out, "  seed %d %s\n    %s\n", r.Seed, what, replay(r.Seed))
		if r.Outcome.Report != "" {
			fmt.Fprintf(out, "    report: %s\n", r.Outcome.Report)
		}
	}
}

// seedList is seeds, at most n of them, then how many more.
func seedList(seeds []uint64, n int) string {
	var parts []string
	for _, s := range seeds[:min(n, len(seeds))] {
		parts = append(parts, strconv.FormatUint(s, 10))
	}
	if len(seeds) > n {
		parts = append(parts, fmt.Sprintf("(%d more)", len(seeds)-n))
	}
	return strings.Join(parts, " ")
}

// sweepExit is the worst of the runs' exit codes: 1 if any was invalid,
// else 3 if any ended in an error, else 2 if any was unknown, else 0.
func sweepExit(runs []sim.SweepRun) int {
	worst := exitValid
	for _, r := range runs {
		switch runVerdict(r) {
		case "invalid":
			return exitInvalid
		case "error":
			worst = exitErrorCode
		case "unknown":
			if worst == exitValid {
				worst = exitUnknown
			}
		}
	}
	return worst
}
