package sim

import (
	"context"
	"slices"
	"sync"

	"github.com/chaos-isr/chaos/runner"
)

// ReproduceOptions configure Reproduce.
type ReproduceOptions struct {
	// Parallel is how many runs go at once; 0: one. The seed found does
	// not depend on it.
	Parallel int
	// Version is recorded in each run's test.json.
	Version string
	// Command is what each run's test.json records as the command that
	// replays it (nil: none).
	Command func(runner.Spec) []string
	// Unexpected names the anomalies a run showed that its configuration
	// forbids; nil: its results' Unexpected (see ShrinkOptions).
	Unexpected func(runner.Outcome) []string
	// Done is called as each run ends, with whether it showed the
	// target, from the goroutine that ran it, one call at a time.
	Done func(r SweepRun, reproduced bool)
}

// Reproduction is what Reproduce found.
type Reproduction struct {
	// Found says whether a seed showed the target; Run is then the first
	// such seed's run, in the order of the seeds given, kept in the
	// store (every other run of the search is removed from it).
	Found bool
	Run   SweepRun
	// Spec is the spec given with the seed found: the run found's.
	Spec runner.Spec
	// Runs are the runs up to the one found (or every run, if none
	// was), in seed order.
	Runs []SweepRun
	// Unexpected are each run's unexpected anomalies, by index in Runs.
	Unexpected [][]string
	// Interrupted says that ctx ended the search.
	Interrupted bool
}

// Reproduce runs spec with each seed in turn, Parallel at a time, until a
// run shows every anomaly of target among those its configuration
// forbids: the way from a failure seen once on a real cluster (its
// configuration and planned schedule, as Windows) to a seed that replays
// it in simulation. The seed found is the first in seeds' order that
// shows it, however many runs go at once: a seed is started only while
// no earlier one has reproduced, and every earlier one is run to its end.
// A ctx that ends stops the search.
func Reproduce(ctx context.Context, spec runner.Spec, seeds []uint64, target []string, o ReproduceOptions) Reproduction {
	restore := saveLatest(spec.Store, spec.Normalized().Name)
	var (
		mu    sync.Mutex
		first = len(seeds) // the lowest index that reproduced so far
		done  = make([]bool, len(seeds))
		runs  = make([]SweepRun, len(seeds))
		unexp = make([][]string, len(seeds))
		wg    sync.WaitGroup
		next  = make(chan int)
	)
	for range max(o.Parallel, 1) {
		wg.Go(func() {
			for i := range next {
				mu.Lock()
				skip := i > first
				mu.Unlock()
				if skip {
					continue
				}
				s := spec
				s.Seed, s.Command = seeds[i], nil
				if o.Command != nil {
					s.Command = o.Command(s)
				}
				r := SweepRun{Seed: seeds[i]}
				r.Outcome, r.Err = Run(ctx, s, runner.Options{Version: o.Version})
				r.Kept = r.Outcome.Dir != ""
				var u []string
				if r.Err == nil && !r.Outcome.Interrupted && r.Outcome.Results != nil {
					u = slices.Clone(r.Outcome.Results.Unexpected)
					if o.Unexpected != nil {
						u = o.Unexpected(r.Outcome)
					}
				}
				hit := len(u) > 0 && covers(u, target)
				mu.Lock()
				runs[i], unexp[i], done[i] = r, u, true
				if hit && i < first {
					first = i
				}
				if o.Done != nil {
					o.Done(r, hit)
				}
				mu.Unlock()
			}
		})
	}
	for i := range seeds {
		mu.Lock()
		stop := i > first || ctx.Err() != nil
		mu.Unlock()
		if stop {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()

	var out Reproduction
	for i := range seeds {
		if !done[i] {
			continue
		}
		r := runs[i]
		if i == first {
			out.Found, out.Run, out.Spec = true, r, spec
			out.Spec.Seed = r.Seed
		} else {
			removeRun(r.Outcome)
			r.Kept = false
		}
		if i > first {
			// Started alongside the one that reproduced, after it in
			// order: left out, so that what is reported does not
			// depend on how many runs went at once.
			continue
		}
		out.Runs = append(out.Runs, r)
		out.Unexpected = append(out.Unexpected, unexp[i])
	}
	out.Interrupted = ctx.Err() != nil
	if out.Found {
		relinkLatest(spec.Store, spec.Normalized().Name, []SweepRun{out.Run})
	} else {
		restore()
	}
	return out
}
