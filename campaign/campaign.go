package campaign

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/results/report"
	"github.com/chaos-isr/chaos/runner"
)

// Options are what a campaign adds to its plan: the seed, how runs are
// executed, what its record says of where it came from, and hooks to
// show it as it goes (each may be nil; all are called from Run's
// goroutine, one at a time).
type Options struct {
	// Seed is the campaign seed every run's seed derives from
	// (RunSeed); 0 draws one at random.
	Seed uint64
	// Executor runs each run; nil: InProcess.
	Executor Executor
	// Program names the chaos binary in the command each run's test.json
	// records as the one that replays it; empty: "chaos".
	Program string
	// Recorded in campaign.json as they are.
	Preset, SpecFile string
	Command          []string
	Versions         map[string]string
	// Kill closing kills the current run at once (a second interrupt);
	// the end of Run's context stops it in order.
	Kill <-chan struct{}

	// Started: the campaign's directory and first record are written.
	Started func(dir string, rec *results.Campaign)
	// RunStarted: a run begins; Tick: once a second while it goes.
	RunStarted func(p Progress)
	Tick       func(p Progress, elapsed time.Duration)
	// RunEnded: a run ended and the record holds it.
	RunEnded func(p Progress, r results.CampaignRun)
	// Interrupted: the context ended; the current run is being stopped
	// and no other run starts.
	Interrupted func()
	// IndexError: the index page could not be rendered (said once; the
	// record is written, and "chaos report" can render the page later).
	IndexError func(error)
}

// Progress says where a run stands in its campaign.
type Progress struct {
	// N is the run's number in the campaign, of Total planned.
	N, Total int
	Cell     *results.CampaignCell
	// Run is the run's number in its cell, of Cell.Summary.Planned.
	Run       int
	Seed      uint64
	TimeLimit time.Duration
	// Left estimates how long the runs still to go take: after a run,
	// from the runs so far that reached a verdict; 0 when none are left
	// or the campaign was interrupted.
	Left time.Duration
}

// Verdicts of runs and cells in campaign.json.
const (
	VerdictValid       = "valid"
	VerdictInvalid     = "invalid"
	VerdictUnknown     = "unknown"
	VerdictError       = "error"
	VerdictInterrupted = "interrupted"
	VerdictNotRun      = "not-run"
)

// Statuses of a campaign in campaign.json.
const (
	StatusRunning     = "running"
	StatusComplete    = "complete"
	StatusInterrupted = "interrupted"
)

// Run runs every run of the plan, one at a time, with opts.Executor, in a
// new campaign directory STORE/campaigns/<UTC timestamp>/ (its record
// campaign.json, the index page, each run's log in logs/), pointed at by
// STORE/campaigns/latest. It returns the record, with its status and exit
// code, and the directory. The end of ctx stops the current run in order
// (a minute later, or when opts.Kill closes, it is killed) and starts no
// other: the record then says interrupted, and its exit code is 130.
//
// A run the executor reports refused (an error before it had a run
// directory, exit 3) refuses its cell: the cell's remaining runs are not
// started. A run still going after twice its time limit plus 10 minutes
// is stopped as stuck and counted as an error. The error is non-nil when
// the record could not be written: then none of it can be trusted.
func Run(ctx context.Context, plan *Plan, opts Options) (*results.Campaign, string, error) {
	if opts.Seed == 0 {
		opts.Seed = runner.RandomSeed()
	}
	if opts.Program == "" {
		opts.Program = "chaos"
	}
	if opts.Executor == nil {
		opts.Executor = InProcess{}
	}
	start := time.Now()
	dir, err := results.NewRun(plan.Store, "campaigns", start)
	if err != nil {
		return nil, "", err
	}
	if err := os.MkdirAll(dir.Path("logs"), 0o755); err != nil {
		return nil, "", err
	}
	rec := &results.Campaign{
		Format: results.CampaignFormat, Seed: opts.Seed, Preset: opts.Preset, SpecFile: opts.SpecFile, Spec: plan.Spec,
		Store: plan.Store, Command: opts.Command, Versions: opts.Versions, Start: start.UTC(), Status: StatusRunning,
	}
	for _, c := range plan.Cells {
		rec.Cells = append(rec.Cells, &results.CampaignCell{CampaignCellPlan: c.CampaignCellPlan, Verdict: VerdictNotRun,
			Summary: results.CampaignSummary{Planned: plan.Spec.Runs}, Runs: []results.CampaignRun{}})
	}
	cr := &campaign{plan: plan, opts: opts, dir: dir, rec: rec, ctx: ctx, total: plan.Runs()}
	if err := cr.save(); err != nil {
		return nil, "", err
	}
	// campaigns/latest, not store/latest: that stays the newest *run*, so
	// "chaos check store/latest" keeps working during and after a campaign.
	if err := results.Relink(filepath.Join(plan.Store, "campaigns", "latest"), filepath.Base(dir.Dir)); err != nil {
		return nil, "", err
	}
	if opts.Started != nil {
		opts.Started(dir.Dir, rec)
	}
	var writeErr error
runs:
	for i, c := range rec.Cells {
		for r := 1; r <= plan.Spec.Runs; r++ {
			if cr.stopped() {
				break runs
			}
			rr, refused := cr.runOne(&plan.Cells[i], c, r)
			c.Runs = append(c.Runs, rr)
			Summarize(c)
			if err := cr.save(); err != nil && writeErr == nil {
				writeErr = err
			}
			if cr.opts.RunEnded != nil {
				cr.opts.RunEnded(cr.progress(c, r), rr)
			}
			if cr.interrupted {
				break runs
			}
			if refused {
				c.Refused = rr.Error
				if err := cr.save(); err != nil && writeErr == nil {
					writeErr = err
				}
				break
			}
		}
	}
	end := time.Now().UTC()
	rec.End = &end
	code := ExitCode(rec.Cells)
	rec.Status = StatusComplete
	if cr.interrupted {
		rec.Status, code = StatusInterrupted, runner.ExitInterrupted
	}
	rec.ExitCode = &code
	if err := cr.save(); err != nil && writeErr == nil {
		writeErr = err
	}
	return rec, dir.Dir, writeErr
}

// campaign is a campaign running.
type campaign struct {
	plan        *Plan
	opts        Options
	dir         *results.Run
	rec         *results.Campaign
	ctx         context.Context
	interrupted bool
	indexWarned bool
	total, done int
	// skipped counts the runs of refused cells, judged the runs that
	// reached a verdict and spent their time: the estimate of what is
	// left.
	skipped, judged int
	spent           time.Duration
}

// save rewrites the record and its index page: a campaign in progress can
// be watched (chaos serve) and one killed outright still shows what
// finished.
func (cr *campaign) save() error {
	if err := cr.dir.WriteJSON(results.CampaignFile, cr.rec); err != nil {
		return err
	}
	// The page is a view of campaign.json, which is written: a page that
	// cannot be rendered does not make the campaign's verdict an error.
	if err := report.WriteCampaign(cr.dir.Dir); err != nil && !cr.indexWarned {
		cr.indexWarned = true
		if cr.opts.IndexError != nil {
			cr.opts.IndexError(err)
		}
	}
	return nil
}

// stopped reports whether the campaign has been interrupted, saying so
// the first time.
func (cr *campaign) stopped() bool {
	if !cr.interrupted && cr.ctx.Err() != nil {
		cr.interrupted = true
		if cr.opts.Interrupted != nil {
			cr.opts.Interrupted()
		}
	}
	return cr.interrupted
}

func (cr *campaign) progress(c *results.CampaignCell, run int) Progress {
	p := Progress{N: cr.done, Total: cr.total, Cell: c, Run: run, Seed: RunSeed(cr.rec.Seed, c.Name, run),
		TimeLimit: time.Duration(cr.plan.Spec.TimeLimit)}
	if left := cr.total - cr.done - cr.skipped; left > 0 && !cr.interrupted {
		per := p.TimeLimit + RunOverhead
		if cr.judged > 0 {
			per = cr.spent / time.Duration(cr.judged)
		}
		p.Left = per * time.Duration(left)
	}
	return p
}

// runOne executes one run and records how it ended. refused reports that
// the run was refused before it started anything, which the cell's
// remaining runs would only repeat.
func (cr *campaign) runOne(cell *Cell, c *results.CampaignCell, run int) (rr results.CampaignRun, refused bool) {
	cr.done++
	spec := cell.RunSpec(cr.rec.Seed, run, cr.opts.Program)
	rr = results.CampaignRun{Run: run, Seed: spec.Seed, Start: time.Now().UTC()}
	rr.Log = filepath.Join("logs", fmt.Sprintf("%03d_%s_run%d.log", cr.done, c.Name, run))
	p := cr.progress(c, run)
	if cr.opts.RunStarted != nil {
		cr.opts.RunStarted(p)
	}
	start := time.Now()
	o, code, err := cr.exec(spec, cr.dir.Path(rr.Log), p)
	elapsed := time.Since(start)
	rr.Seconds = elapsed.Round(time.Millisecond).Seconds()
	refused = cr.record(&rr, o, code, err)
	if refused {
		cr.skipped += c.Summary.Planned - run
	}
	// Only runs that got as far as a verdict say how long a run takes; a
	// run refused in a millisecond would make the estimate absurd.
	if _, ok := verdictCodes[rr.Verdict]; ok {
		cr.spent += elapsed
		cr.judged++
	}
	return rr, refused
}

// exec runs spec with the executor and waits for it. The first interrupt
// stops the run in order; a second one (opts.Kill), a minute without an
// end, or a run that takes far longer than its time limit kills it.
func (cr *campaign) exec(spec runner.Spec, logPath string, p Progress) (runner.Outcome, int, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kill := make(chan struct{})
	killed := false
	killNow := func() {
		if !killed {
			killed = true
			close(kill)
		}
	}
	type result struct {
		o    runner.Outcome
		code int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		o, code, err := cr.opts.Executor.Exec(ctx, spec, logPath, kill)
		done <- result{o, code, err}
	}()
	// A run takes its time limit, the final phase (converge timeout, 60 s
	// by default) and the checkers; far beyond that it is stuck, and a
	// stuck run must not hold a CI job until its own timeout.
	limit := 2*spec.TimeLimit + 10*time.Minute
	watchdog := time.NewTimer(limit)
	defer watchdog.Stop()
	var tick <-chan time.Time
	if cr.opts.Tick != nil {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		tick = t.C
	}
	interrupt := cr.ctx.Done()
	if cr.interrupted {
		interrupt = nil
	}
	var stuck error
	var killAfter <-chan time.Time
	start := time.Now()
	for {
		select {
		case r := <-done:
			if stuck != nil {
				return r.o, -1, stuck
			}
			return r.o, r.code, r.err
		case <-interrupt:
			interrupt = nil
			cr.stopped()
			cancel()
			killAfter = time.After(time.Minute)
		case <-cr.opts.Kill:
			killNow()
		case <-killAfter:
			killNow()
		case <-watchdog.C:
			stuck = fmt.Errorf("the run was still running after %s; stopped", limit)
			cancel()
			killAfter = time.After(killGrace)
		case <-tick:
			cr.opts.Tick(p, time.Since(start))
		}
	}
}

// verdictCodes are the exit codes of runs that reached a verdict.
var verdictCodes = map[string]int{VerdictValid: 0, VerdictInvalid: 1, VerdictUnknown: 2}

// verdictOfCode is the verdict of a run's exit code; empty for a code that
// is not a verdict's.
func verdictOfCode(code int) string {
	for v, c := range verdictCodes {
		if c == code {
			return v
		}
	}
	return ""
}

// record fills in how a run ended, from its outcome and exit code, and
// reports whether it was refused: an error before it had a run directory.
func (cr *campaign) record(rr *results.CampaignRun, o runner.Outcome, code int, err error) (refused bool) {
	rr.ExitCode = code
	if o.Dir != "" {
		if rel, err := filepath.Rel(cr.plan.Store, o.Dir); err == nil {
			rr.Dir = filepath.ToSlash(rel)
		} else {
			rr.Dir = o.Dir
		}
		// Every run that got as far as writing test.json says how many
		// windows it scheduled: a cell that claims a nemesis must show
		// it scheduled faults.
		if tc, err := results.ReadTestConfig(filepath.Join(cr.plan.Store, rr.Dir, results.TestFile)); err == nil {
			rr.FaultWindows = len(tc.Schedule)
		}
	}
	verdict := verdictOfCode(code)
	switch {
	case cr.interrupted && verdict == "":
		// Stopped by the campaign's interrupt: not a failure of the run.
		rr.Verdict = VerdictInterrupted
		if err != nil {
			rr.Error = err.Error()
		}
	case err != nil:
		rr.Verdict, rr.Error = VerdictError, err.Error()
	case verdict != "":
		rr.Verdict = verdict
		if err := cr.readResults(rr, o, code); err != nil {
			rr.Verdict, rr.Error = VerdictError, err.Error()
		}
	default:
		rr.Verdict, rr.Error = VerdictError, runError(o, code)
		refused = code == runner.ExitError && rr.Dir == ""
	}
	return refused
}

// runError says why a run ended without a verdict.
func runError(o runner.Outcome, code int) string {
	if code == runner.ExitInterrupted {
		return "chaos run was interrupted from outside the campaign"
	}
	reason := o.Error
	if reason == "" {
		reason = "no reason recorded (see the run's log)"
	}
	if len(reason) > 300 {
		reason = reason[:300] + "..."
	}
	return fmt.Sprintf("exit %d: %s", code, reason)
}

// readResults fills in what results.json says about a run that reached a
// verdict.
func (cr *campaign) readResults(rr *results.CampaignRun, o runner.Outcome, code int) error {
	switch {
	case rr.Dir == "":
		return fmt.Errorf("chaos run exited %d without a run directory", code)
	case o.Verdict == "":
		return fmt.Errorf("chaos run exited %d, but its outcome has no verdict", code)
	case checker.ExitCode(o.Verdict) != code:
		return fmt.Errorf("chaos run exited %d, but its outcome says %s", code, o.Verdict)
	}
	res, err := results.ReadResults(filepath.Join(cr.plan.Store, rr.Dir, results.ResultsFile))
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
