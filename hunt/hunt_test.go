package hunt

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/runner"
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
		Feedback: os.Getenv("CHAOS_HUNT_FEEDBACK") != "", KeepGoing: os.Getenv("CHAOS_HUNT_KEEPGOING") != "",
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
