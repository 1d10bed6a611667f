package hunt

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/runner"
	"github.com/chaos-isr/chaos/sim"
)

func base(t testing.TB, bugs ...string) runner.Spec {
	s := runner.DefaultSpec()
	s.Runtime, s.Store = runner.RuntimeSim, t.TempDir()
	s.Settings.Bugs = bugs
	return s
}

// TestHuntExplore is a measuring tool, not a test: CHAOS_HUNT_RUNS=N
// (CHAOS_HUNT_BUG=NAME, CHAOS_HUNT_FEEDBACK=1) hunts and logs what it saw.
func TestHuntExplore(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("CHAOS_HUNT_RUNS"))
	if n == 0 {
		t.Skip("CHAOS_HUNT_RUNS not set")
	}
	var bugs []string
	if b := os.Getenv("CHAOS_HUNT_BUG"); b != "" {
		bugs = []string{b}
	}
	seed, _ := strconv.ParseUint(os.Getenv("CHAOS_HUNT_SEED"), 10, 64)
	b := base(t, bugs...)
	if st := os.Getenv("CHAOS_HUNT_STORE"); st != "" {
		b.Store = st
	}
	res, err := Run(context.Background(), Options{Base: b, Seed: seed + 1, Runs: n, Parallel: 2,
		Feedback: os.Getenv("CHAOS_HUNT_FEEDBACK") != "", KeepGoing: os.Getenv("CHAOS_HUNT_KEEPGOING") != "", Command: sim.ReplayCommand,
		Progress: func(p Progress) {
			if p.Run%50 == 0 || p.Last.Outcome.ExitCode() != 0 {
				t.Logf("run %d %s: %s valid %d invalid %d unknown %d errors %d coverage %d corpus %d (%s %v)", p.Run, p.Elapsed.Round(time.Second),
					p.Last.Outcome.Verdict, p.Valid, p.Invalid, p.Unknown, p.Errors, p.Coverage, p.Corpus, p.Last.Outcome.Dir, p.Last.Err)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d runs in %s: valid %d invalid %d unknown %d errors %d, coverage %d, corpus %d", res.Runs, res.Elapsed, res.Valid, res.Invalid, res.Unknown, res.Errors, res.Coverage, res.Corpus)
	for _, u := range res.Unknowns {
		var open []string
		for _, r := range u.Outcome.Results.Results {
			if r.Valid == "unknown" && !r.Expected && !r.Unsupported && !r.NotApplicable {
				open = append(open, r.Name+": "+strings.Join(r.Details[:min(2, len(r.Details))], " | "))
			}
		}
		t.Logf("unknown run %d: %v notes %v", u.Index, open, u.Outcome.Results.Notes)
	}
	for _, f := range res.Findings {
		t.Logf("finding run %d: %v %s", f.Index, f.Outcome.Results.Unexpected, f.Outcome.Dir)
	}
}

// TestHuntStoreKeepsOnlyFindings: a hunt on a correct broker leaves no
// valid run in the store, and with them no empty test directory and no
// latest link to a run that is gone.
func TestHuntStoreKeepsOnlyFindings(t *testing.T) {
	b := base(t)
	// A run from before the hunt, which the store's latest link names.
	before, err := sim.Run(context.Background(), Draw(99, b, DrawOptions{}), runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Options{Base: b, Seed: 5, Runs: 6, Parallel: 2, KeepGoing: true, Feedback: true, Command: sim.ReplayCommand})
	if err != nil {
		t.Fatal(err)
	}
	if res.Runs != 6 || res.Invalid != 0 {
		t.Fatalf("%d runs, %d invalid; want 6 and none on a correct broker", res.Runs, res.Invalid)
	}
	kept := res.Unknown + res.Errors + 1 // and the run from before
	latest, err := filepath.EvalSymlinks(filepath.Join(b.Store, "latest"))
	if want, _ := filepath.EvalSymlinks(before.Dir); kept == 1 && (err != nil || latest != want) {
		t.Errorf("store/latest is %q (%v) after the hunt; want the run from before it, %s", latest, err, want)
	}
	runs := 0
	err = filepath.WalkDir(b.Store, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s: a link to a run that is gone", p)
			}
			return nil
		}
		if d.IsDir() && p != b.Store {
			entries, _ := os.ReadDir(p)
			if len(entries) == 0 {
				t.Errorf("%s: an empty directory", p)
			}
			if _, err := os.Stat(filepath.Join(p, results.HistoryFile)); err == nil {
				runs++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if runs != kept {
		t.Errorf("the store holds %d runs; want the %d that were not valid", runs, kept)
	}
}
