package sim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/runner"
)

// Console runs sweeps and searches for a person at a terminal, as chaos
// sim does: what they found goes to Out, their progress to Err (none when
// Quiet). The text lives here, next to the results it reads, so that the
// command only maps flags to calls and results to exit codes.
type Console struct {
	Out, Err io.Writer
	Quiet    bool
}

// Run runs spec once, saying which run it is (then calling
// opts.Started), logging what the run logs on Err unless Quiet, and how
// much faster than real time the simulation went.
func (c Console) Run(ctx context.Context, spec runner.Spec, opts runner.Options) (runner.Outcome, error) {
	started, then := time.Now(), opts.Started
	opts.Started = func(dir string, seed uint64, clusterID string) {
		fmt.Fprintf(c.Out, "run %s\nseed %d\n", dir, seed)
		if then != nil {
			then(dir, seed, clusterID)
		}
	}
	opts.Log = func(format string, args ...any) {
		if !c.Quiet {
			fmt.Fprintf(c.Err, format+"\n", args...)
		}
	}
	if opts.Judging == nil {
		opts.Judging = runner.JudgingLine(c.Err, c.Quiet)
	}
	outcome, err := Run(ctx, spec, opts)
	if err == nil && !outcome.Interrupted {
		took := time.Since(started)
		fmt.Fprintf(c.Out, "simulated %s in %s (%.0fx)\n", spec.TimeLimit, took.Round(time.Millisecond), spec.TimeLimit.Seconds()/took.Seconds())
	}
	return outcome, err
}

// Sweep runs Sweep, showing its progress (in place of o.Done), then prints its table: runs and
// seeds by verdict, runs by anomaly found (and in how many it was
// forbidden), and each run that was not valid with the command that
// replays it (ShellCommand of o.Command's).
func (c Console) Sweep(ctx context.Context, spec runner.Spec, seeds []uint64, o SweepOptions) []SweepRun {
	started := time.Now()
	prog := c.progress(len(seeds))
	o.Done = prog.add
	runs := Sweep(ctx, spec, seeds, o)
	prog.end()
	printSweep(c.Out, runs, time.Since(started), func(seed uint64) string {
		if o.Command == nil {
			return ""
		}
		return ShellCommand(o.Command(seed))
	})
	return runs
}

// Shrink runs Shrink on spec (its seed given), showing each run of the
// search (in place of o.Progress), and prints the smallest run, with its
// replay command and where it is kept; an interrupted search that ran
// nothing but the run to shrink prints nothing more.
func (c Console) Shrink(ctx context.Context, spec runner.Spec, o ShrinkOptions) (Shrunk, error) {
	sched := "its schedule as the seed draws it"
	if len(spec.Windows) > 0 {
		sched = "its given schedule"
	}
	want := "its unexpected anomalies"
	if len(o.Target) > 0 {
		want = anomalyList(o.Target)
	}
	fmt.Fprintf(c.Out, "shrinking seed %d (%s, %s, %s) while it still shows %s, in at most %d runs\n",
		spec.Seed, spec.Normalized().Name, spec.TimeLimit, sched, want, cmp.Or(o.Runs, DefaultShrinkRuns))
	started := time.Now()
	o.Progress = c.shrinkStep
	res, err := Shrink(ctx, spec, o)
	if errors.Is(err, ErrNotFailing) {
		return res, fmt.Errorf("nothing to shrink: %w", err)
	}
	if err != nil || (res.Interrupted && res.Runs <= 1) {
		return res, err
	}
	printShrunk(c.Out, res, time.Since(started), replay(o.Command, res.Spec))
	fmt.Fprintf(c.Out, "run %s\nseed %d\n", res.Outcome.Dir, res.Spec.Seed)
	return res, nil
}

// Reproduce runs Reproduce on run's spec with seeds, showing its
// progress (in place of o.Done), and prints the seed that showed run's unexpected anomalies,
// with its replay command, or that none did.
func (c Console) Reproduce(ctx context.Context, run Failed, seeds []uint64, o ReproduceOptions) Reproduction {
	target, tc, res := run.Results.Unexpected, run.Test, run.Results
	fmt.Fprintf(c.Out, "reproducing %s (%s, runtime %s, %d planned windows): %s\n", run.Dir, tc.Name, tc.Cluster.Runtime, len(tc.Schedule), anomalyList(target))
	if promise(res.Config) != promise(tc.CheckerConfig()) {
		// chaos check --acks and its kind rewrote results.json: the runs
		// here are judged by the configuration they run with.
		fmt.Fprintf(c.Out, "note: results.json was judged as %s; the simulated runs are judged as they ran, %s\n",
			promise(res.Config), promise(tc.CheckerConfig()))
	}
	fmt.Fprintf(c.Out, "seeds %s, %d at a time\n", seedRange(seeds), o.Parallel)
	started := time.Now()
	prog := c.progress(len(seeds))
	o.Done = func(r SweepRun, _ bool) { prog.add(r) }
	rep := Reproduce(ctx, run.Spec, seeds, target, o)
	prog.end()
	tally := map[string]int{}
	for _, r := range rep.Runs {
		v := r.Verdict()
		if v == "invalid" && (!rep.Found || r.Seed != rep.Run.Seed) {
			v = "invalid otherwise"
		}
		tally[v]++
	}
	counts := fmt.Sprintf("valid %d, invalid with other anomalies %d, unknown %d, error %d",
		tally["valid"], tally["invalid otherwise"], tally["unknown"], tally["error"])
	switch {
	case !rep.Found && rep.Interrupted:
		fmt.Fprintf(c.Out, "\ninterrupted after %d runs: not reproduced yet (%s)\n", len(rep.Runs), counts)
	case !rep.Found:
		fmt.Fprintf(c.Out, "\nnot reproduced: none of %d seeds showed %s in %s (%s).\n"+
			"Try more seeds (--runs, --seeds), or the bug may live where the simulation cannot look (docs/simulation.md: what it cannot model).\n",
			len(rep.Runs), anomalyList(target), time.Since(started).Round(time.Millisecond), counts)
	default:
		fmt.Fprintf(c.Out, "\nreproduced by seed %d, the %s of %d tried (%s), in %s\nreplay: %s\n",
			rep.Spec.Seed, ordinal(len(rep.Runs)), len(rep.Runs), counts, time.Since(started).Round(time.Millisecond), replay(o.Command, rep.Spec))
	}
	return rep
}

// replay is the shell command that replays spec: command's, or chaos
// sim's (ReplayCommand).
func replay(command func(runner.Spec) []string, spec runner.Spec) string {
	if command == nil {
		command = ReplayCommand
	}
	return ShellCommand(command(spec))
}

// Verdict names how a run of a sweep ended: valid, invalid, unknown,
// error or interrupted.
func (r SweepRun) Verdict() string {
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

// SweepExitCode is the worst of the runs' exit codes: 1 if any was
// invalid, else 3 if any ended in an error, else 2 if any was unknown,
// else 0.
func SweepExitCode(runs []SweepRun) int {
	worst := checker.ExitCode(checker.Valid)
	for _, r := range runs {
		switch r.Verdict() {
		case "invalid":
			return checker.ExitCode(checker.Invalid)
		case "error":
			worst = runner.ExitError
		case "unknown":
			if worst == checker.ExitCode(checker.Valid) {
				worst = checker.ExitCode(checker.Unknown)
			}
		}
	}
	return worst
}

// progress shows a sweep's progress: one line rewritten on a terminal,
// else a line every tenth of the runs.
type progress struct {
	w       io.Writer
	total   int
	tty     bool
	quiet   bool
	started time.Time
	counts  map[string]int
	done    int
}

func (c Console) progress(total int) *progress {
	tty := false
	if f, ok := c.Err.(*os.File); ok {
		if fi, err := f.Stat(); err == nil {
			tty = fi.Mode()&os.ModeCharDevice != 0
		}
	}
	return &progress{w: c.Err, total: total, tty: tty, quiet: c.Quiet, started: time.Now(), counts: map[string]int{}}
}

func (p *progress) add(r SweepRun) {
	p.done++
	p.counts[r.Verdict()]++
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

func (p *progress) end() {
	if p.tty && !p.quiet {
		fmt.Fprintln(p.w)
	}
}

// printSweep prints a sweep's table (see Console.Sweep).
func printSweep(out io.Writer, runs []SweepRun, took time.Duration, replay func(seed uint64) string) {
	fmt.Fprintf(out, "\n%d runs in %s\n", len(runs), took.Round(time.Millisecond))
	bySeed := map[string][]uint64{}
	type tally struct{ runs, unexpected int }
	anomalies := map[string]*tally{}
	for _, r := range runs {
		v := r.Verdict()
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
	var failing []SweepRun
	for _, r := range runs {
		if v := r.Verdict(); v != "valid" && v != "interrupted" {
			failing = append(failing, r)
		}
	}
	if len(failing) == 0 {
		return
	}
	fmt.Fprintln(out, "\nruns that were not valid (each replays with its command):")
	for _, r := range failing {
		what := strings.ToUpper(r.Verdict())
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

// seedRange names a sweep's seeds briefly: "5-104", or a list.
func seedRange(seeds []uint64) string {
	if n := len(seeds); n > 1 && seeds[n-1]-seeds[0] == uint64(n-1) {
		return fmt.Sprintf("%d-%d", seeds[0], seeds[n-1])
	}
	return seedList(seeds, 10)
}

// shrinkStep prints a run of a search as it ends.
func (c Console) shrinkStep(st ShrinkStep) {
	if c.Quiet {
		return
	}
	var how string
	switch {
	case st.Err != nil:
		how = "error: " + st.Err.Error()
	case st.Fails:
		how = "still fails (" + anomalyList(st.Unexpected) + ")"
	case len(st.Unexpected) == 0:
		how = "passes"
	default:
		how = "no " + strings.Join(st.Missing, ", ") + " (shows " + anomalyList(st.Unexpected) + ")"
	}
	fmt.Fprintf(c.Err, "[%*d/%d] %s: %s\n", len(strconv.Itoa(st.Budget)), st.Run, st.Budget, st.What, how)
}

func anomalyList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// printShrunk prints what a search found: the sizes before and after,
// the schedules, and the replay command.
func printShrunk(out io.Writer, res Shrunk, took time.Duration, replay string) {
	o, n := res.Original, res.Spec
	how := "done"
	switch {
	case res.Interrupted:
		how = "interrupted: the smallest run so far"
	case res.Exhausted:
		how = "stopped at the budget of runs (--shrink-runs): a larger one may shrink further"
	}
	fmt.Fprintf(out, "\nshrunk in %d runs (%s), %s\n", res.Runs, took.Round(time.Millisecond), how)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\tBEFORE\tAFTER")
	row := func(name string, a, b any) { fmt.Fprintf(tw, "%s\t%v\t%v\n", name, a, b) }
	row("fault windows", res.OriginalSize.Windows, res.Size.Windows)
	row("client ops", res.OriginalSize.Ops, res.Size.Ops)
	row("time limit", o.TimeLimit, n.TimeLimit)
	row("producers", o.Concurrency, n.Concurrency)
	row("consumers", o.Consumers, n.Consumers)
	row("partitions", o.Settings.Partitions, n.Settings.Partitions)
	row("rate (sends/s)", o.Rate, n.Rate)
	tw.Flush()
	fmt.Fprintf(out, "schedule before: %s\nschedule after:  %s\n", o.Windows, n.Windows)
	fmt.Fprintf(out, "still shows: %s\n", anomalyList(res.Target))
	fmt.Fprintf(out, "replay: %s\n\n", replay)
}

// promise is what a configuration promises, in a few words.
func promise(c checker.Config) string {
	s := fmt.Sprintf("acks=%d min.insync.replicas=%d %s election", c.Acks, c.MinInsyncReplicas, c.Election)
	if c.ClientRetries {
		s += ", client retries"
	}
	if c.MaxInFlight > 1 {
		s += fmt.Sprintf(", %d requests in flight", c.MaxInFlight)
	}
	return s
}

func ordinal(n int) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return strconv.Itoa(n) + suffix
}
