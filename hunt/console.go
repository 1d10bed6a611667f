package hunt

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/internal/statusline"
	"github.com/chaos-isr/chaos/runner"
	"github.com/chaos-isr/chaos/sim"
)

// Console runs a hunt for chaos hunt: a progress line (runs, runs/s,
// coverage, findings), each finding with its scenario and replay command
// as it is found, the first finding shrunk, and a summary; and it keeps
// the hunt's record and page in the store as it goes (results.Hunt).
type Console struct {
	Out, Err io.Writer
	Quiet    bool
	// Command is the command line that started the hunt (os.Args): the
	// record keeps it, with the hunt's seed, as the command that repeats
	// the hunt.
	Command []string
}

// Run hunts with o and prints it; the result's ExitCode is chaos hunt's.
func (c Console) Run(ctx context.Context, o Options) (Result, error) {
	budget := []string{}
	if o.Runs > 0 {
		budget = append(budget, fmt.Sprintf("%d runs", o.Runs))
	}
	if o.Time > 0 {
		budget = append(budget, o.Time.String())
	}
	search := "feedback (mutating the scenarios that reached new coverage)"
	if !o.Feedback {
		search = "no feedback (every scenario drawn afresh)"
	}
	where := ""
	if rt := o.Base.Runtime; rt != runner.RuntimeSim && rt != "" {
		where = ", in real time on the " + rt + " runtime"
	}
	fmt.Fprintf(c.Out, "hunt seed %d: at most %s, %d at a time%s, %s\n", o.Seed, strings.Join(budget, " or "), max(o.Parallel, 1), where, search)
	judged := "every scenario judged as " + promise(o.Base)
	if o.Draw.Config {
		judged = "configuration drawn per scenario (--draw-config)"
	}
	fmt.Fprintf(c.Out, "%s; shard %s\n", judged, o.Shard)
	runner.SayBugs(c.Out, o.Base.Settings.Bugs)
	rec, err := newRecord(o, c.Command, time.Now())
	if err != nil {
		return Result{}, fmt.Errorf("the hunt's directory in the store: %w", err)
	}
	fmt.Fprintf(c.Out, "hunt directory: %s\n", rec.dir.Dir)
	warned := false
	keep := func(err error) {
		if err != nil && !warned {
			// The hunt goes on: what it finds is printed all the same.
			warned = true
			fmt.Fprintf(c.Err, "chaos: the hunt's record is not written: %v\n", err)
		}
	}
	line := statusline.New(c.Err)
	errShown := false
	progress := o.Progress
	o.Progress = func(p Progress) {
		if progress != nil {
			progress(p)
		}
		keep(rec.take(p))
		if p.Last.Err != nil && !errShown {
			// The first error, said once: the counts alone would hide
			// a setup that fails every run.
			errShown = true
			line.End()
			fmt.Fprintf(c.Err, "chaos: run %d ended in an error: %v\n", p.Last.Index+1, p.Last.Err)
		}
		if v := p.Last.Outcome.Verdict; v == checker.Invalid {
			line.End()
			c.finding(o, p.Last)
		}
		if !c.Quiet {
			line.Show(status(p))
		}
	}
	res, err := Run(ctx, o)
	line.End()
	if err != nil {
		return res, err
	}
	if len(res.Findings) > 0 && o.ShrinkRuns > 0 && ctx.Err() == nil {
		f := res.Findings[0]
		fmt.Fprintln(c.Out)
		shrunk, err := sim.Console{Out: c.Out, Err: c.Err, Quiet: c.Quiet}.Shrink(ctx, f.Spec, sim.ShrinkOptions{
			Runs: o.ShrinkRuns, Version: o.Version, Command: o.Command,
		})
		if err != nil {
			fmt.Fprintf(c.Out, "shrink: %v\n", err)
		}
		keep(rec.shrunk(0, shrunk, err))
	}
	keep(rec.end(res))
	if res.Stopped != nil {
		fmt.Fprintf(c.Err, "chaos: the hunt stopped after its first run, which ended in an error (every run would, on this runtime as it is): %v\n", res.Stopped)
	}
	c.summary(res)
	fmt.Fprintf(c.Out, "hunt page: %s\n", rec.page())
	return res, nil
}

func status(p Progress) string {
	rate := float64(p.Run) / max(p.Elapsed.Seconds(), 0.001)
	of := ""
	if p.Runs > 0 {
		of = fmt.Sprintf("/%d", p.Runs)
	}
	return fmt.Sprintf("[%d%s] %.1f runs/s  invalid %d  unknown %d  valid %d  errors %d  coverage %d (corpus %d)  %s",
		p.Run, of, rate, p.Invalid, p.Unknown, p.Valid, p.Errors, p.Coverage, p.Corpus, p.Elapsed.Round(time.Second))
}

// finding prints a run the configuration forbids: what it showed, its
// scenario, the command that replays it and its report.
func (c Console) finding(ho Options, a Attempt) {
	o := a.Outcome
	fmt.Fprintf(c.Out, "\nFOUND at run %d: INVALID: %s\n", a.Index+1, strings.Join(o.Results.Unexpected, ", "))
	fmt.Fprintf(c.Out, "  scenario: %s\n", Describe(a.Spec))
	fmt.Fprintf(c.Out, "  %s %s\n", againLabel(a.Spec), ho.again(a.Spec))
	if o.Report != "" {
		fmt.Fprintf(c.Out, "  report:   %s\n", o.Report)
	}
}

// againLabel names a finding's command: a simulated run replays byte for
// byte; a real one runs the same scenario again, another interleaving.
func againLabel(spec runner.Spec) string {
	if spec.Runtime == runner.RuntimeSim {
		return "replay:  "
	}
	return "run again:"
}

func (c Console) summary(res Result) {
	rate := float64(res.Runs) / max(res.Elapsed.Seconds(), 0.001)
	fmt.Fprintf(c.Out, "\nhunt: %d runs in %s (%.1f runs/s): %d invalid, %d unknown, %d valid, %d errors; coverage %d sequences, corpus %d scenarios\n",
		res.Runs, res.Elapsed.Round(time.Second), rate, res.Invalid, res.Unknown, res.Valid, res.Errors, res.Coverage, res.Corpus)
	if len(res.Growth) > 0 {
		fmt.Fprintf(c.Out, "coverage growth: %s\n", growth(res.Growth))
	}
	for _, u := range res.Unknowns[:min(len(res.Unknowns), 5)] {
		fmt.Fprintf(c.Out, "unknown at run %d: %s\n", u.Index+1, u.Outcome.Dir)
	}
	if res.Interrupted {
		fmt.Fprintln(c.Out, "interrupted")
	}
}

// growth shows the coverage at ten points of the hunt, so that a plateau
// shows: "run 200: 1500, run 400: 2100, ...".
func growth(g []int) string {
	var parts []string
	step := max(len(g)/10, 1)
	for i := step - 1; i < len(g); i += step {
		parts = append(parts, fmt.Sprintf("%d: %d", i+1, g[i]))
	}
	if (len(g)-1)%step != step-1 {
		parts = append(parts, fmt.Sprintf("%d: %d", len(g), g[len(g)-1]))
	}
	return strings.Join(parts, ", ")
}

// ExitCode is chaos hunt's exit code, as a sweep's: 1 if a run was
// invalid, else 3 if one ended in an error, else 2 if one was unknown,
// else 0; 130 when interrupted before a finding.
func (r Result) ExitCode() int {
	switch {
	case r.Invalid > 0:
		return 1
	case r.Interrupted:
		return runner.ExitInterrupted
	case r.Errors > 0:
		return 3
	case r.Unknown > 0:
		return 2
	}
	return 0
}

// promise is the configuration a spec is judged by, in a few words.
func promise(s runner.Spec) string {
	acks := fmt.Sprint(s.Acks)
	return fmt.Sprintf("acks=%s min.insync.replicas=%d %s election", acks, s.Settings.MinInsyncReplicas, s.Settings.Election)
}

// Describe is a drawn scenario in one line: the cluster, the workload and
// the windows.
func Describe(s runner.Spec) string {
	st := s.Settings
	producers := fmt.Sprintf("%d producers", s.Concurrency)
	if s.Retries > 0 {
		producers += fmt.Sprintf(" retrying %d", s.Retries)
	}
	if s.Idempotent {
		producers += " idempotent"
	}
	if s.MaxInFlight > 1 {
		producers += fmt.Sprintf(" %d in flight", s.MaxInFlight)
	}
	consumers := fmt.Sprintf("%d consumers", s.Consumers)
	if s.Consumers < 0 {
		consumers = "a consumer per partition"
	}
	cluster := fmt.Sprintf("%d brokers, %d partitions, session %dms, lag %dms/%d msgs, fetch wait %dms",
		s.Nodes, st.Partitions, st.SessionTimeoutMs, st.ReplicaLagTimeMaxMs, st.ReplicaLagMaxMessages, st.ReplicaFetchWaitMaxMs)
	if s.Runtime == runner.RuntimeExternal {
		// Its brokers' settings are its own, which the spec does not know.
		cluster = fmt.Sprintf("the external cluster's brokers, %d partitions", st.Partitions)
	}
	return fmt.Sprintf("%s; %s at %g/s, %s, request timeout %s; %s; windows %s",
		cluster, producers, s.Rate, consumers, s.RequestTimeout, s.TimeLimit, s.Windows)
}
