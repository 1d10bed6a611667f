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
	// Kill closing kills the runs going at once (a second interrupt);
	// the end of Run's context stops them in order.
	Kill <-chan struct{}
	// Parallel is how many runs go at once; 0 or 1: one at a time. Only
	// runs that cannot disturb each other may share the machine: simulated
	// ones, whose every choice comes from their seed. A real run's timing
	// is part of what it tests, and a second run beside it changes it.
	// Whatever the parallelism, the record lists the runs in the plan's
	// order and the hooks see them end in that order.
	Parallel int

	// Started: the campaign's directory and first record are written.
	Started func(dir string, rec *results.Campaign)
	// RunStarted: a run begins; Tick: once a second while it goes (only
	// when one run goes at a time).
	RunStarted func(p Progress)
	Tick       func(p Progress, elapsed time.Duration)
	// RunEnded: a run ended and the record holds it.
	RunEnded func(p Progress, r results.CampaignRun)
	// Interrupted: the context ended; the runs going are being stopped
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
	// Left estimates how long the runs not yet started take: after a
	// run, from the runs so far that reached a verdict; 0 when none are
	// left or the campaign was interrupted.
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

// Run runs every run of the plan, opts.Parallel at a time, with
// opts.Executor, in a new campaign directory STORE/campaigns/<UTC
// timestamp>/ (its record campaign.json, the index page, each run's log
// in logs/), pointed at by STORE/campaigns/latest. It returns the record,
// with its status and exit code, and the directory. The end of ctx stops
// the runs going in order (a minute later, or when opts.Kill closes, they
// are killed) and starts no other: the record then says interrupted, and
// its exit code is 130.
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
	opts.Parallel = max(opts.Parallel, 1)
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
	if !plan.Shard.Whole() {
		rec.Shard = &results.CampaignShard{Index: plan.Shard.K, Count: plan.Shard.N}
	}
	jobs := plan.PlannedRuns()
	planned := make([]int, len(plan.Cells))
	for _, j := range jobs {
		planned[j.Cell]++
	}
	for i, c := range plan.Cells {
		rec.Cells = append(rec.Cells, &results.CampaignCell{CampaignCellPlan: c.CampaignCellPlan, Verdict: VerdictNotRun,
			Summary: results.CampaignSummary{Planned: planned[i]}, Runs: []results.CampaignRun{}})
	}
	cr := &campaign{plan: plan, opts: opts, dir: dir, rec: rec, ctx: ctx, jobs: jobs,
		refused: make([]bool, len(plan.Cells)), stopAll: make(chan struct{}), killAll: make(chan struct{})}
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
	cr.runAll()
	end := time.Now().UTC()
	rec.End = &end
	code := ExitCode(rec.Cells)
	rec.Status = StatusComplete
	if cr.interrupted {
		rec.Status, code = StatusInterrupted, runner.ExitInterrupted
	}
	rec.ExitCode = &code
	if err := cr.save(); err != nil && cr.writeErr == nil {
		cr.writeErr = err
	}
	return rec, dir.Dir, cr.writeErr
}

// campaign is a campaign running. Its fields belong to Run's goroutine;
// the runs' goroutines (execute) read only plan, opts and the two
// channels.
type campaign struct {
	plan        *Plan
	opts        Options
	dir         *results.Run
	rec         *results.Campaign
	ctx         context.Context
	jobs        []PlannedRun
	interrupted bool
	indexWarned bool
	writeErr    error
	// next is the index in jobs of the next run to start, started counts
	// the runs started; refused marks the cells a run refused, whose runs
	// not yet started never start.
	next, started int
	refused       []bool
	// judged counts the runs that reached a verdict, spent their time:
	// the estimate of what is left.
	judged int
	spent  time.Duration
	// stopAll closes on an interrupt (every run going stops in order),
	// killAll when they are to be killed.
	stopAll, killAll chan struct{}
	killed           bool
}

// ended is a run that ended, as its goroutine hands it to Run's.
type ended struct {
	i       int // its index in jobs
	p       Progress
	o       runner.Outcome
	code    int
	err     error
	elapsed time.Duration
	rr      results.CampaignRun
	// refused: the run was refused before it started anything.
	refused bool
}

// runAll starts the planned runs, opts.Parallel at a time, each on a goroutine of
// its own, and records them as they end in the plan's order: a run that
// ends before one started earlier waits for it, so the record and the
// hooks are the same whatever the parallelism and whichever run is
// quicker.
func (cr *campaign) runAll() {
	parallel := cr.opts.Parallel
	endings := make(chan ended)
	waiting := map[int]*ended{}
	commit, running := 0, 0
	var tick <-chan time.Time
	if cr.opts.Tick != nil && parallel == 1 {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		tick = t.C
	}
	// current is the run going when one goes at a time, for the ticks.
	var current Progress
	var currentStart time.Time
	interrupt, kill := cr.ctx.Done(), cr.opts.Kill
	var killAfter <-chan time.Time
	stop := func() {
		if cr.interrupted {
			return
		}
		cr.interrupted = true
		interrupt = nil
		if cr.opts.Interrupted != nil {
			cr.opts.Interrupted()
		}
		close(cr.stopAll)
		killAfter = time.After(time.Minute)
	}
	// commitReady records the runs that ended, up to the first one still
	// going.
	commitReady := func() {
		for ; commit < cr.next; commit++ {
			e, ok := waiting[commit]
			if !ok {
				return
			}
			delete(waiting, commit)
			if e != nil {
				cr.commit(e)
			}
		}
	}
	for {
		// A run that ended is recorded before the next starts, so that
		// one at a time the hooks see a run end before the next begin.
		commitReady()
		for running < parallel && cr.next < len(cr.jobs) {
			if cr.ctx.Err() != nil {
				stop()
			}
			if cr.interrupted {
				break
			}
			i, j := cr.next, cr.jobs[cr.next]
			cr.next++
			if cr.refused[j.Cell] {
				waiting[i] = nil
				continue
			}
			running++
			cr.started++
			p := cr.progress(j)
			current, currentStart = p, time.Now()
			if cr.opts.RunStarted != nil {
				cr.opts.RunStarted(p)
			}
			go func() { endings <- cr.execute(i, j, p) }()
		}
		commitReady()
		if running == 0 {
			return
		}
		select {
		case e := <-endings:
			running--
			j := cr.jobs[e.i]
			if e.refused = cr.record(&e.rr, e.o, e.code, e.err); e.refused {
				cr.refused[j.Cell] = true
			}
			// Only runs that got as far as a verdict say how long a run
			// takes; a run refused in a millisecond would make the
			// estimate absurd.
			if _, ok := verdictCodes[e.rr.Verdict]; ok {
				cr.spent += e.elapsed
				cr.judged++
			}
			waiting[e.i] = &e
		case <-interrupt:
			stop()
		case <-kill:
			kill = nil
			cr.killRuns()
		case <-killAfter:
			killAfter = nil
			cr.killRuns()
		case <-tick:
			if running == 1 {
				cr.opts.Tick(current, time.Since(currentStart))
			}
		}
	}
}

// killRuns kills every run going and any started later.
func (cr *campaign) killRuns() {
	if !cr.killed {
		cr.killed = true
		close(cr.killAll)
	}
}

// commit adds a run that ended to its cell and the record, and says so.
// A run of a cell that an earlier run refused is left out: it was started
// beside the refused one, which a campaign running one run at a time
// would not have done, and the record must not depend on that.
func (cr *campaign) commit(e *ended) {
	j := cr.jobs[e.i]
	c := cr.rec.Cells[j.Cell]
	if c.Refused != "" {
		return
	}
	c.Runs = append(c.Runs, e.rr)
	Summarize(c)
	if e.refused {
		c.Refused = e.rr.Error
	}
	if err := cr.save(); err != nil && cr.writeErr == nil {
		cr.writeErr = err
	}
	if cr.opts.RunEnded != nil {
		p := e.p
		p.Left = cr.left()
		cr.opts.RunEnded(p, e.rr)
	}
}

// save rewrites the record and its index page: a campaign in progress can
// be watched (chaos serve) and one killed outright still shows what
// finished.
func (cr *campaign) save() error {
	cr.rec.Detection = Detection(cr.rec.Cells)
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

// progress is where the run j stands as it starts.
func (cr *campaign) progress(j PlannedRun) Progress {
	c := cr.rec.Cells[j.Cell]
	return Progress{N: cr.started, Total: len(cr.jobs), Cell: c, Run: j.Run, Seed: RunSeed(cr.rec.Seed, c.Name, j.Run),
		TimeLimit: time.Duration(cr.plan.Spec.TimeLimit)}
}

// left estimates how long the runs not yet started take, at the
// parallelism.
func (cr *campaign) left() time.Duration {
	if cr.interrupted {
		return 0
	}
	n := 0
	for _, j := range cr.jobs[cr.next:] {
		if !cr.refused[j.Cell] {
			n++
		}
	}
	per := cr.plan.perRun()
	if cr.judged > 0 {
		per = cr.spent / time.Duration(cr.judged)
	}
	return per * time.Duration(n) / time.Duration(cr.opts.Parallel)
}

// execute runs one job with the executor and waits for it, on a goroutine
// of its own. An interrupt (stopAll) stops the run in order; killAll, or
// a run that takes far longer than its time limit, kills it.
func (cr *campaign) execute(i int, j PlannedRun, p Progress) ended {
	cell := &cr.plan.Cells[j.Cell]
	spec := cell.RunSpec(cr.opts.Seed, j.Run, cr.opts.Program)
	rr := results.CampaignRun{Run: j.Run, Seed: spec.Seed, Start: time.Now().UTC()}
	rr.Log = filepath.Join("logs", fmt.Sprintf("%03d_%s_run%d.log", j.Pos, cell.Name, j.Run))
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
	start := time.Now()
	go func() {
		o, code, err := cr.opts.Executor.Exec(ctx, spec, cr.dir.Path(rr.Log), kill)
		done <- result{o, code, err}
	}()
	// A run takes its time limit, the final phase (converge timeout, 60 s
	// by default) and the checkers; far beyond that it is stuck, and a
	// stuck run must not hold a CI job until its own timeout.
	limit := 2*spec.TimeLimit + 10*time.Minute
	watchdog := time.NewTimer(limit)
	defer watchdog.Stop()
	stop, killAll := cr.stopAll, cr.killAll
	var stuck error
	var killAfter <-chan time.Time
	for {
		select {
		case r := <-done:
			rr.Seconds = time.Since(start).Round(time.Millisecond).Seconds()
			e := ended{i: i, p: p, o: r.o, code: r.code, err: r.err, elapsed: time.Since(start), rr: rr}
			if stuck != nil {
				e.code, e.err = -1, stuck
			}
			return e
		case <-stop:
			stop = nil
			cancel()
		case <-killAll:
			killAll = nil
			killNow()
		case <-killAfter:
			killNow()
		case <-watchdog.C:
			stuck = fmt.Errorf("the run was still running after %s; stopped", limit)
			cancel()
			killAfter = time.After(killGrace)
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
	stored, err := results.ReadStoredResults(filepath.Join(cr.plan.Store, rr.Dir, results.ResultsFile))
	if err != nil {
		return err
	}
	res := stored.Results
	rr.Expected, rr.Unexpected = res.Expected, res.Unexpected
	for _, r := range res.Results {
		switch {
		case r.Unsupported:
			rr.NotChecked = append(rr.NotChecked, r.Name)
		case r.Valid == checker.Unknown && !r.Expected:
			rr.Unknown = append(rr.Unknown, r.Name)
		}
	}
	if s, ok := res.Ops[history.Send]; ok {
		rr.Sends = &s
	}
	// A results.json from before the recovery was recorded has none,
	// which Observe reads as "the windows that started bit".
	observeRun(rr, res, stored.Recovery)
	rr.Detection = runDetection(o.Detection)
	return nil
}
