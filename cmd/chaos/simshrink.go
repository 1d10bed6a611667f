package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/nemesis"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/results/report"
	"github.com/chaos-isr/chaos/runner"
	"github.com/chaos-isr/chaos/sim"
)

// chaos sim --schedule, --shrink and --from: a schedule given window by
// window, the search for a smaller run that fails the same way, and the
// search for a seed that replays a stored run's failure in simulation.

// judgeFunc names the anomalies a run showed that are held against it:
// nil is its own results' (checker.Results.Unexpected). Tests plant a
// failure by judging under a stricter promise than the run had, as
// package sim's do.
type judgeFunc func(runner.Outcome) []string

const scheduleAccepted = "FAULT@START+LENGTH windows, comma-separated, in order, e.g. kill@5s+4s,partition@12s+5s"

// applySchedule puts --schedule into spec: its windows replace the
// seeded schedule of --nemesis and --nemesis-interval, which cannot be
// given with it.
func (f *simFlags) applySchedule(fl *pflag.FlagSet, spec *runner.Spec) error {
	if !fl.Changed("schedule") {
		return nil
	}
	for _, other := range []string{"nemesis", "nemesis-interval"} {
		if fl.Changed(other) {
			return flagError(other, fl.Lookup(other).Value.String(), "given with --schedule", "the schedule names its windows' faults and times: leave --"+other+" out")
		}
	}
	w, err := nemesis.ParseSchedule(f.schedule)
	if err == nil {
		err = w.Check(spec.TimeLimit)
	}
	if err != nil {
		return flagError("schedule", f.schedule, strings.ReplaceAll(err.Error(), "\n", "; "), scheduleAccepted+", ending by --time-limit")
	}
	for _, k := range w.Kinds() {
		if err := sim.Simulated(k); err != nil {
			return flagError("schedule", f.schedule, "not simulated", err.Error())
		}
	}
	spec.Windows, spec.Faults, spec.NemesisInterval = w, nil, 0
	return nil
}

// simArgs are chaos sim's flags for spec, those that differ from their
// defaults: the command that replays a run of it exactly (a given
// schedule as --schedule, else the faults and their interval).
func simArgs(s runner.Spec) []string {
	d := runner.DefaultSpec()
	var a []string
	add := func(differs bool, name, value string) {
		if differs {
			a = append(a, "--"+name, value)
		}
	}
	flag := func(set bool, name string) {
		if set {
			a = append(a, "--"+name)
		}
	}
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	st, ds := s.Settings, d.Settings
	add(s.Name != "", "name", s.Name)
	add(s.Store != d.Store, "store", s.Store)
	add(s.Nodes != d.Nodes, "nodes", strconv.Itoa(s.Nodes))
	add(s.Acks != d.Acks, "acks", i64(int64(s.Acks)))
	add(st.MinInsyncReplicas != ds.MinInsyncReplicas, "min-insync-replicas", i64(int64(st.MinInsyncReplicas)))
	add(st.ReplicationFactor != ds.ReplicationFactor, "replication-factor", i64(int64(st.ReplicationFactor)))
	add(st.Election != ds.Election, "election", st.Election)
	add(st.Partitions != ds.Partitions, "partitions", i64(int64(st.Partitions)))
	add(st.SessionTimeoutMs != ds.SessionTimeoutMs, "session-timeout-ms", i64(st.SessionTimeoutMs))
	add(st.ReplicaLagTimeMaxMs != ds.ReplicaLagTimeMaxMs, "replica-lag-time-max-ms", i64(st.ReplicaLagTimeMaxMs))
	add(st.ReplicaLagMaxMessages != ds.ReplicaLagMaxMessages, "replica-lag-max-messages", i64(st.ReplicaLagMaxMessages))
	add(st.ReplicaFetchWaitMaxMs != ds.ReplicaFetchWaitMaxMs, "replica-fetch-wait-max-ms", i64(int64(st.ReplicaFetchWaitMaxMs)))
	add(st.HeartbeatIntervalMs != ds.HeartbeatIntervalMs, "heartbeat-interval-ms", i64(st.HeartbeatIntervalMs))
	add(st.Fsync != ds.Fsync, "fsync", st.Fsync)
	flag(st.LoseUnsynced, "lose-unsynced")
	flag(st.NoAutoCreateTopics, "no-auto-create-topics")
	for _, b := range st.Bugs {
		add(true, "bug", b)
	}
	add(s.Concurrency != d.Concurrency, "concurrency", strconv.Itoa(s.Concurrency))
	add(s.Consumers != d.Consumers, "consumers", strconv.Itoa(s.Consumers))
	add(s.Rate != d.Rate, "rate", strconv.FormatFloat(s.Rate, 'f', -1, 64))
	add(s.TimeLimit != d.TimeLimit, "time-limit", s.TimeLimit.String())
	add(s.RequestTimeout != d.RequestTimeout, "request-timeout", s.RequestTimeout.String())
	add(s.ConvergeTimeout != d.ConvergeTimeout, "converge-timeout", s.ConvergeTimeout.String())
	add(s.MonitorInterval != d.MonitorInterval, "monitor-interval", s.MonitorInterval.String())
	switch {
	case len(s.Windows) > 0:
		add(true, "schedule", s.Windows.String())
	case len(s.Faults) > 0:
		add(true, "nemesis", strings.Join(s.Faults, ","))
		add(s.NemesisInterval != d.NemesisInterval, "nemesis-interval", s.NemesisInterval.String())
	}
	add(true, "seed", strconv.FormatUint(s.Seed, 10))
	return a
}

// replayCommand is what a run's test.json records as the command that
// replays it: this program's path, sim, and spec's flags.
func replayCommand(s runner.Spec) []string {
	return append([]string{os.Args[0], "sim"}, simArgs(s)...)
}

// shellCommand is a command to paste into a shell, the program by its
// base name.
func shellCommand(args []string) string {
	args = slices.Clone(args)
	args[0] = filepath.Base(args[0])
	return report.ShellJoin(args)
}

// shrinkProgress prints each run of a search as it ends.
func shrinkProgress(w io.Writer, quiet bool) func(sim.ShrinkStep) {
	return func(st sim.ShrinkStep) {
		if quiet {
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
		fmt.Fprintf(w, "[%*d/%d] %s: %s\n", len(strconv.Itoa(st.Budget)), st.Run, st.Budget, st.What, how)
	}
}

func anomalyList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// simShrink shrinks the run of spec (its seed given), prints the search
// and the smallest run with its replay command, and exits as that run's
// verdict does.
func simShrink(out, errOut io.Writer, spec runner.Spec, f *simFlags, target []string, judge judgeFunc) (int, error) {
	ctx, _, stop := interruptContext(errOut, "stopping the search")
	defer stop()
	sched := "its schedule as the seed draws it"
	if len(spec.Windows) > 0 {
		sched = "its given schedule"
	}
	want := "its unexpected anomalies"
	if len(target) > 0 {
		want = anomalyList(target)
	}
	fmt.Fprintf(out, "shrinking seed %d (%s, %s, %s) while it still shows %s, in at most %d runs\n",
		spec.Seed, spec.Normalized().Name, spec.TimeLimit, sched, want, f.shrinkRuns)
	started := time.Now()
	res, err := sim.Shrink(ctx, spec, sim.ShrinkOptions{
		Runs: f.shrinkRuns, Target: target, Version: fullVersion(), Command: replayCommand,
		Unexpected: judge, Progress: shrinkProgress(errOut, f.run.quiet),
	})
	if errors.Is(err, sim.ErrNotFailing) {
		return 0, fmt.Errorf("nothing to shrink: %w", err)
	}
	if err != nil {
		return 0, err
	}
	if res.Interrupted && res.Runs <= 1 {
		return exitInterrupted, nil
	}
	printShrunk(out, res, time.Since(started))
	fmt.Fprintf(out, "run %s\nseed %d\n", res.Outcome.Dir, res.Spec.Seed)
	code, err := sayOutcome(out, errOut, res.Outcome, nil)
	if res.Interrupted {
		return exitInterrupted, err
	}
	return code, err
}

// printShrunk prints what a search found: the sizes before and after,
// the schedules, and the replay command.
func printShrunk(out io.Writer, res sim.Shrunk, took time.Duration) {
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
	fmt.Fprintf(out, "replay: %s\n\n", shellCommand(replayCommand(n)))
}

// fromAllowed are the flags --from takes: everything else is the stored
// run's configuration.
var fromAllowed = []string{"from", "store", "quiet", "seed", "seeds", "runs", "parallel", "shrink", "shrink-runs"}

// defaultFromRuns is how many seeds --from tries when neither --runs nor
// --seeds says.
const defaultFromRuns = 100

// simFrom reads a stored run (its test.json and results.json), sweeps
// seeds of its configuration and planned windows in simulation until one
// shows its unexpected anomalies, and prints that seed's replay command;
// with --shrink, it then shrinks that run.
func simFrom(cmd *cobra.Command, f *simFlags, judge judgeFunc) (int, error) {
	out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
	fl := cmd.Flags()
	var others []string
	fl.Visit(func(x *pflag.Flag) {
		if !slices.Contains(fromAllowed, x.Name) {
			others = append(others, "--"+x.Name)
		}
	})
	if len(others) > 0 {
		return 0, flagError("from", f.from, "given with "+strings.Join(others, ", "),
			"the configuration, workload and schedule are the stored run's; --from takes only "+strings.Join(fromAllowed[1:], ", "))
	}
	tc, res, err := readFailedRun(f.from)
	if err != nil {
		return 0, err
	}
	// The planned windows in whole milliseconds, as the simulation runs
	// them anyway: the replay command's --schedule reads better.
	spec := sim.Explicit(runner.StoredSpec(tc))
	spec.Store, spec.Runtime = f.run.store, runner.RuntimeSim
	if err := sim.Validate(spec); err != nil {
		return 0, flagError("from", f.from, "the run cannot be simulated: "+strings.ReplaceAll(err.Error(), "\n", "; "), "a run whose faults the simulation models (README)")
	}
	if !fl.Changed("seed") {
		f.run.seed = max(tc.Seed, 1)
	}
	if f.runs == 0 && f.seeds == "" {
		f.runs = defaultFromRuns
	}
	seeds, err := f.sweepSeeds(fl.Changed("seed"))
	if err != nil {
		return 0, err
	}
	switch {
	case fl.Changed("shrink-runs") && !f.shrink:
		return 0, flagError("shrink-runs", f.shrinkRuns, "without --shrink", "add --shrink, or leave --shrink-runs out")
	case f.shrinkRuns < 1:
		return 0, flagError("shrink-runs", f.shrinkRuns, "below 1", "the most simulations the search may run, e.g. 200")
	}
	if err := stopIfValidating(cmd); err != nil {
		return 0, err
	}
	target := res.Unexpected
	fmt.Fprintf(out, "reproducing %s (%s, runtime %s, %d planned windows): %s\n", f.from, tc.Name, tc.Cluster.Runtime, len(tc.Schedule), anomalyList(target))
	if promise(res.Config) != promise(tc.CheckerConfig()) {
		// chaos check --acks and its kind rewrote results.json: the runs
		// here are judged by the configuration they run with.
		fmt.Fprintf(out, "note: results.json was judged as %s; the simulated runs are judged as they ran, %s\n",
			promise(res.Config), promise(tc.CheckerConfig()))
	}
	fmt.Fprintf(out, "seeds %s, %d at a time\n", seedRange(seeds), f.parallel)
	ctx, _, stop := interruptContext(errOut, "stopping the search")
	started := time.Now()
	prog := newSweepProgress(errOut, len(seeds), f.run.quiet)
	rep := sim.Reproduce(ctx, spec, seeds, target, sim.ReproduceOptions{
		Parallel: f.parallel, Version: fullVersion(), Command: replayCommand, Unexpected: judge,
		Done: func(r sim.SweepRun, _ bool) { prog.add(r) },
	})
	prog.end()
	interrupted := ctx.Err() != nil
	stop()
	tally := map[string]int{}
	for _, r := range rep.Runs {
		v := runVerdict(r)
		if v == "invalid" && (!rep.Found || r.Seed != rep.Run.Seed) {
			v = "invalid otherwise"
		}
		tally[v]++
	}
	counts := fmt.Sprintf("valid %d, invalid with other anomalies %d, unknown %d, error %d",
		tally["valid"], tally["invalid otherwise"], tally["unknown"], tally["error"])
	if !rep.Found {
		if interrupted {
			fmt.Fprintf(out, "\ninterrupted after %d runs: not reproduced yet (%s)\n", len(rep.Runs), counts)
			return exitInterrupted, nil
		}
		fmt.Fprintf(out, "\nnot reproduced: none of %d seeds showed %s in %s (%s).\n"+
			"Try more seeds (--runs, --seeds), or the bug may live where the simulation cannot look (README: what it cannot model).\n",
			len(rep.Runs), anomalyList(target), time.Since(started).Round(time.Millisecond), counts)
		return exitUnknown, nil
	}
	found := spec
	found.Seed = rep.Run.Seed
	fmt.Fprintf(out, "\nreproduced by seed %d, the %s of %d tried (%s), in %s\nreplay: %s\n",
		found.Seed, ordinal(len(rep.Runs)), len(rep.Runs), counts, time.Since(started).Round(time.Millisecond), shellCommand(replayCommand(found)))
	if f.shrink {
		fmt.Fprintln(out)
		return simShrink(out, errOut, found, f, target, judge)
	}
	fmt.Fprintf(out, "run %s\nseed %d\n", rep.Run.Outcome.Dir, found.Seed)
	return sayOutcome(out, errOut, rep.Run.Outcome, rep.Run.Err)
}

// readFailedRun reads a stored run's test.json and results.json, and
// refuses one that shows no unexpected anomaly.
func readFailedRun(dir string) (results.TestConfig, *checker.Results, error) {
	const what = "a run directory (store/<test>/<time>, or store/latest) whose results.json shows an unexpected anomaly"
	var pe *fs.PathError
	tc, err := results.ReadTestConfig(filepath.Join(dir, results.TestFile))
	if errors.As(err, &pe) {
		return tc, nil, flagError("from", dir, "no test.json there", what+runsHint(nearestDir(dir)))
	}
	if err != nil {
		return tc, nil, flagError("from", dir, err.Error(), what)
	}
	res, err := results.ReadResults(filepath.Join(dir, results.ResultsFile))
	if errors.As(err, &pe) {
		return tc, nil, flagError("from", dir, "no results.json: the run has no verdict", "judge it first: chaos check "+dir)
	}
	if err != nil {
		return tc, nil, flagError("from", dir, err.Error(), what)
	}
	if len(res.Unexpected) == 0 {
		return tc, nil, flagError("from", dir, fmt.Sprintf("the run shows no unexpected anomaly (verdict %s): nothing to reproduce", strings.ToUpper(runVerdict(sim.SweepRun{Outcome: runner.Outcome{Verdict: res.Valid}}))), what)
	}
	return tc, res, nil
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

// seedRange names a sweep's seeds briefly: "5-104", or a list.
func seedRange(seeds []uint64) string {
	if n := len(seeds); n > 1 && seeds[n-1]-seeds[0] == uint64(n-1) {
		return fmt.Sprintf("%d-%d", seeds[0], seeds[n-1])
	}
	return seedList(seeds, 10)
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
