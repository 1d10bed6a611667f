package hunt

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/runner"
	"github.com/chaos-isr/chaos/shard"
	"github.com/chaos-isr/chaos/sim"
)

// Options configure a hunt.
type Options struct {
	// Base is the spec every drawn scenario starts from: its store, the
	// bugs planted, and (unless Draw.Config) the configuration under
	// judgement.
	Base runner.Spec
	Draw DrawOptions
	// Seed is the hunt's: run i's scenario follows from it and i, and
	// so does every choice of the search, so a hunt replays.
	Seed uint64
	// Runs and Time bound the hunt (0: no bound; one of them is needed).
	Runs int
	Time time.Duration
	// Parallel runs go at once. Their results are taken in run order,
	// so the search (what enters the corpus, what is mutated next) is
	// the same whatever the timing.
	Parallel int
	// Feedback mutates the corpus of scenarios that reached new
	// coverage, instead of drawing every scenario afresh.
	Feedback bool
	// KeepGoing goes on after the first finding; else the hunt stops
	// there.
	KeepGoing bool
	// ShrinkRuns, above 0, is the budget Console shrinks the first
	// finding in (sim.Shrink); Run does not shrink.
	ShrinkRuns int
	// Shard runs only its slice of the runs (a stable hash of the run's
	// index): shards of one hunt, given the same seed, share no run.
	Shard shard.Shard
	// Version and Command go into each run's test.json; Command is the
	// command that replays a spec (sim.ReplayCommand), or for a real
	// runtime runs its scenario again (runner.RunCommand).
	Version string
	Command func(runner.Spec) []string
	// Execute runs one scenario: sim.Run when nil. A hunt of a real
	// runtime gives runner.Run: the same draws, run in real time against
	// real processes or the user's cluster, judged as chaos run judges.
	Execute func(context.Context, runner.Spec, runner.Options) (runner.Outcome, error)
	// ClusterUp is runner.Options.ClusterUp for a real runtime's runs:
	// what a second Ctrl-C calls to kill the running cluster at once.
	ClusterUp func(abort func())
	// Progress is called after each run, in run order.
	Progress func(Progress)
}

// again is the shell command that gives spec's scenario again: Command
// (chaos sim's replay, or chaos run's for a real runtime), chaos sim's
// replay when none was given.
func (o Options) again(spec runner.Spec) string {
	command := o.Command
	if command == nil {
		command = sim.ReplayCommand
	}
	return sim.ShellCommand(command(spec))
}

// Progress is the hunt so far, after run Run.
type Progress struct {
	Run, Runs        int
	Elapsed          time.Duration
	Valid, Invalid   int
	Unknown, Errors  int
	Coverage, Corpus int
	// Last is the run just taken, Fresh whether it reached new
	// coverage.
	Last  Attempt
	Fresh bool
}

// Attempt is one run of the hunt.
type Attempt struct {
	Index int
	// Parent is the corpus entry it mutates (-1: a fresh draw).
	Parent  int
	Spec    runner.Spec
	Outcome runner.Outcome
	Err     error
	// New is how many coverage sequences it added.
	New int
}

// Finding is a run whose configuration forbids what it showed.
type Finding struct{ Attempt }

// Result is the whole hunt.
type Result struct {
	Runs                            int
	Valid, Invalid, Unknown, Errors int
	Elapsed                         time.Duration
	// Coverage is how many sequences the hunt saw; Growth the coverage
	// after each run, in run order, so that a plateau shows.
	Coverage int
	Growth   []int
	Corpus   int
	Findings []Finding
	// Unknowns are the runs that ended unknown (counted, and kept in the
	// store to look at).
	Unknowns    []Attempt
	Interrupted bool
	// Stopped is why a real runtime's hunt stopped after its first run:
	// that run ended in an error.
	Stopped error
}

// entry is a scenario in the corpus: what it reached, to weigh it.
type entry struct {
	spec  runner.Spec
	fresh int // sequences it added when it ran
	picks int // times it was mutated
}

// Run hunts: it runs scenarios in simulation, Parallel at a time, until
// the budget is spent, ctx ends, or (unless KeepGoing) a run is INVALID.
func Run(ctx context.Context, o Options) (Result, error) {
	if o.Runs <= 0 && o.Time <= 0 {
		return Result{}, errors.New("hunt: give a budget: runs or time")
	}
	start := time.Now()
	rng := rand.New(rand.NewPCG(o.Seed, 0x73656172))
	var res Result
	restore := keepLatest(o.Base.Store)
	defer func() { restore(res.lastKept()) }()
	cov := Coverage{}
	var corpus []*entry
	par := max(o.Parallel, 1)
	over := func() bool {
		return ctx.Err() != nil || (o.Runs > 0 && res.Runs >= o.Runs) || (o.Time > 0 && time.Since(start) >= o.Time) ||
			(!o.KeepGoing && len(res.Findings) > 0) || res.Stopped != nil
	}
	next := 0 // the next run index
	for !over() {
		// A batch: each run's scenario is chosen, in order, from the
		// corpus as it stands; the runs go at once; their results are
		// taken in order.
		var batch []Attempt
		for len(batch) < par && (o.Runs <= 0 || res.Runs+len(batch) < o.Runs) {
			i := next
			next++
			if !o.Shard.Has(strconv.Itoa(i)) {
				continue
			}
			batch = append(batch, choose(i, o, rng, corpus))
		}
		if len(batch) == 0 {
			break
		}
		var wg sync.WaitGroup
		covs := make([]Coverage, len(batch))
		for j := range batch {
			wg.Go(func() { covs[j] = attempt(ctx, o, &batch[j]) })
		}
		wg.Wait()
		for j := range batch {
			a := &batch[j]
			if ctx.Err() != nil && (a.Outcome.Interrupted || a.Err != nil) {
				res.Interrupted = true
				break
			}
			res.Runs++
			a.New = cov.Add(covs[j])
			fresh := a.New > 0 && a.Err == nil
			if fresh {
				corpus = append(corpus, &entry{spec: a.Spec, fresh: a.New})
			}
			switch {
			case a.Err != nil:
				res.Errors++
			case a.Outcome.Verdict == checker.Invalid:
				res.Invalid++
				res.Findings = append(res.Findings, Finding{Attempt: *a})
			case a.Outcome.Verdict == checker.Unknown:
				res.Unknown++
				res.Unknowns = append(res.Unknowns, *a)
			default:
				res.Valid++
			}
			res.Growth = append(res.Growth, len(cov))
			if o.Progress != nil {
				o.Progress(Progress{Run: res.Runs, Runs: o.Runs, Elapsed: time.Since(start), Valid: res.Valid, Invalid: res.Invalid,
					Unknown: res.Unknown, Errors: res.Errors, Coverage: len(cov), Corpus: len(corpus), Last: *a, Fresh: fresh})
			}
			if !o.KeepGoing && len(res.Findings) > 0 {
				break
			}
			if res.Runs == 1 && a.Err != nil && o.Base.Runtime != runner.RuntimeSim {
				// A real runtime's first run that could not run at all
				// (no docker, a cluster not there) says every run would
				// fail the same way, each costing its start-up.
				res.Stopped = a.Err
				break
			}
		}
	}
	if ctx.Err() != nil && (o.Runs <= 0 || res.Runs < o.Runs) && (o.KeepGoing || len(res.Findings) == 0) {
		// Ended between runs: the hunt stopped short of its budget all
		// the same.
		res.Interrupted = true
	}
	res.Coverage, res.Corpus = len(cov), len(corpus)
	res.Elapsed = time.Since(start)
	return res, nil
}

// runSeed is run i's seed: spread over the whole range, so that
// neighbouring runs share nothing.
func runSeed(hunt uint64, i int) uint64 {
	z := hunt + uint64(i+1)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	if z == 0 {
		z = 1 // 0 means "draw one" to a spec
	}
	return z
}

// choose is run i's scenario: a fresh draw, or (with feedback, three
// times in four once the corpus has entries) a mutation of an entry,
// entries that added more coverage and were picked less chosen more
// often.
func choose(i int, o Options, rng *rand.Rand, corpus []*entry) Attempt {
	seed := runSeed(o.Seed, i)
	if !o.Feedback || len(corpus) == 0 || rng.IntN(4) == 0 {
		return Attempt{Index: i, Parent: -1, Spec: Draw(seed, o.Base, o.Draw)}
	}
	total := 0.0
	weight := func(e *entry) float64 { return float64(e.fresh) / float64(1+e.picks) }
	for _, e := range corpus {
		total += weight(e)
	}
	x := rng.Float64() * total
	pick := len(corpus) - 1
	for j, e := range corpus {
		if x -= weight(e); x < 0 {
			pick = j
			break
		}
	}
	corpus[pick].picks++
	return Attempt{Index: i, Parent: pick, Spec: Mutate(corpus[pick].spec, seed, o.Base, o.Draw)}
}

// attempt runs a's scenario and returns what it covered; a run that is
// valid leaves no directory in the store.
func attempt(ctx context.Context, o Options, a *Attempt) Coverage {
	s := a.Spec
	if o.Command != nil {
		s.Command = o.Command(s)
	}
	lines := newNodeLines()
	execute := o.Execute
	if execute == nil {
		execute = sim.Run
	}
	a.Outcome, a.Err = execute(ctx, s, runner.Options{Version: o.Version, NodeLog: lines.add, ClusterUp: o.ClusterUp})
	if a.Err != nil || a.Outcome.Dir == "" {
		return nil
	}
	ops, err := history.ReadFile(filepath.Join(a.Outcome.Dir, results.HistoryFile))
	if err != nil && !errors.Is(err, history.ErrTornTail) {
		a.Err = err
		return nil
	}
	c := CoverageOf(ops)
	c.Add(lines.cov)
	if a.Outcome.ExitCode() == 0 {
		sim.RemoveRun(a.Outcome.Dir) // and the latest link it took
		a.Outcome.Dir = ""
	}
	return c
}

// keepLatest notes where the store's latest link points before a hunt,
// and returns what sets it after: the hunt's runs each take the link, and
// the valid ones are removed, which would leave it dangling though the
// runs it pointed at before are still there. The last run the hunt kept
// (kept, a run directory) takes it, else what it pointed at before.
func keepLatest(store string) func(kept string) {
	link := filepath.Join(store, "latest")
	was, _ := os.Readlink(link)
	return func(kept string) {
		target := was
		if rel, err := filepath.Rel(store, kept); kept != "" && err == nil {
			target = rel
		}
		if target == "" {
			if _, err := os.Stat(link); err != nil {
				_ = os.Remove(link)
			}
			return
		}
		if _, err := os.Stat(filepath.Join(store, target)); err == nil {
			_ = results.Relink(link, target)
		}
	}
}

// lastKept is the directory of the latest run the hunt kept in the store
// (a finding, or a run that could not be judged), "" if none.
func (r *Result) lastKept() string {
	last, dir := -1, ""
	for _, f := range r.Findings {
		if f.Outcome.Dir != "" && f.Index > last {
			last, dir = f.Index, f.Outcome.Dir
		}
	}
	for _, u := range r.Unknowns {
		if u.Outcome.Dir != "" && u.Index > last {
			last, dir = u.Index, u.Outcome.Dir
		}
	}
	return dir
}
