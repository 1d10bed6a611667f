package sim

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/runner"
)

// SweepOptions configure a sweep.
type SweepOptions struct {
	// Parallel is how many runs go at once (each is a world of its own on
	// one goroutine, so runs do not disturb each other's determinism);
	// 0: one.
	Parallel int
	// KeepValid keeps the run directories of valid runs in the store; by
	// default only the runs worth a look (invalid, unknown, failed) stay,
	// so that a thousand seeds do not fill the disk with healthy
	// histories.
	KeepValid bool
	// Version is recorded in each run's test.json.
	Version string
	// Command is what each run's test.json records as the command that
	// replays it (nil: none).
	Command func(seed uint64) []string
	// Done is called as each run ends, from the goroutine that ran it,
	// one call at a time.
	Done func(SweepRun)
}

// SweepRun is one run of a sweep: its seed, its outcome, and the error
// that left it without a verdict. Kept says whether its directory stayed.
type SweepRun struct {
	Seed    uint64
	Outcome runner.Outcome
	Err     error
	Kept    bool
}

// Sweep runs spec once for each seed, in simulation, Parallel at a time,
// and returns the runs in seed order. The replay command of each is
// o.Command's. A ctx that ends stops the sweep: runs not
// started are left out, the one going is interrupted.
func Sweep(ctx context.Context, spec runner.Spec, seeds []uint64, o SweepOptions) []SweepRun {
	out := make([]SweepRun, len(seeds))
	next := make(chan int)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range max(o.Parallel, 1) {
		wg.Go(func() {
			for i := range next {
				s := spec
				s.Seed, s.Command = seeds[i], nil
				if o.Command != nil {
					s.Command = o.Command(seeds[i])
				}
				r := SweepRun{Seed: seeds[i]}
				r.Outcome, r.Err = Run(ctx, s, runner.Options{Version: o.Version})
				r.Kept = r.Outcome.Dir != ""
				if r.Err == nil && !r.Outcome.Interrupted && r.Outcome.ExitCode() == 0 && !o.KeepValid {
					r.Kept = os.RemoveAll(r.Outcome.Dir) != nil
				}
				mu.Lock()
				out[i] = r
				if o.Done != nil {
					o.Done(r)
				}
				mu.Unlock()
			}
		})
	}
	for i := range seeds {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	var done []SweepRun
	for _, r := range out {
		if r.Outcome.Dir != "" || r.Err != nil {
			done = append(done, r)
		}
	}
	relinkLatest(spec.Store, spec.Normalized().Name, done)
	return done
}

// relinkLatest points the store's latest links at the last run of the
// sweep that was kept, or removes them if they point at a run the sweep
// removed.
func relinkLatest(store, test string, runs []SweepRun) {
	for i := len(runs) - 1; i >= 0; i-- {
		if runs[i].Kept && runs[i].Outcome.Dir != "" {
			dir := runs[i].Outcome.Dir
			r := &results.Run{Store: store, Test: filepath.Base(filepath.Dir(dir)), Dir: dir}
			_ = markLatest(r)
			return
		}
	}
	testDir := filepath.Join(store, results.TestName(test))
	for _, link := range []string{filepath.Join(store, "latest"), filepath.Join(testDir, "latest")} {
		if _, err := os.Stat(link); errors.Is(err, fs.ErrNotExist) {
			_ = os.Remove(link)
		}
	}
	_ = os.Remove(testDir) // only if the sweep left it empty
}

// latestMu serializes the latest links' updates: runs of a sweep finish
// at once, and results.Relink replaces a link through a temporary one of
// a fixed name.
var latestMu sync.Mutex

func markLatest(r *results.Run) error {
	latestMu.Lock()
	defer latestMu.Unlock()
	return r.MarkLatest()
}

// runDirs hands out run directories: a sweep starts runs of one test in
// the same millisecond, and each needs a directory of its own.
var runDirs struct {
	sync.Mutex
	last map[string]time.Time
}

// newRunDir is results.NewRun at now, or just after the last directory
// this process made for the same test.
func newRunDir(store, test string) (*results.Run, error) {
	runDirs.Lock()
	defer runDirs.Unlock()
	if runDirs.last == nil {
		runDirs.last = map[string]time.Time{}
	}
	key := filepath.Join(store, results.TestName(test))
	t := time.Now().UTC().Truncate(time.Millisecond)
	if last, ok := runDirs.last[key]; ok && !t.After(last) {
		t = last.Add(time.Millisecond)
	}
	runDirs.last[key] = t
	return results.NewRun(store, test, t)
}
