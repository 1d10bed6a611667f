package hunt

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/runner"
	"github.com/chaos-isr/chaos/sim"
)

// TestGrowthPoints: hunt.json's growth keeps the first run, each run
// where the coverage grew and the last; a long hunt's is thinned to at
// most results.MaxHuntGrowth points, each a true value, and a plateau
// stays flat (no point inside it but its end).
func TestGrowthPoints(t *testing.T) {
	var short []results.HuntGrowth
	for i, c := range []int{5, 5, 7, 7, 7} {
		short = append(short, results.HuntGrowth{Run: i + 1, Coverage: c})
	}
	if got, want := growthPoints(short), []results.HuntGrowth{{Run: 1, Coverage: 5}, {Run: 3, Coverage: 7}, {Run: 5, Coverage: 7}}; !slices.Equal(got, want) {
		t.Errorf("growth points %v; want %v", got, want)
	}
	if got := growthPoints(nil); got == nil || len(got) != 0 {
		t.Errorf("no run: %v; want an empty list (hunt.json says [])", got)
	}

	// 10,000 runs, every one up to 3,000 adding coverage, then none.
	var g []results.HuntGrowth
	truth := map[int]int{}
	for r := 1; r <= 10_000; r++ {
		c := min(r, 3000) * 2
		g = append(g, results.HuntGrowth{Run: r, Coverage: c})
		truth[r] = c
	}
	got := growthPoints(g)
	if len(got) > results.MaxHuntGrowth || len(got) < results.MaxHuntGrowth/4 {
		t.Fatalf("%d points; want at most %d, and not far fewer", len(got), results.MaxHuntGrowth)
	}
	if got[0] != g[0] || got[len(got)-1] != g[len(g)-1] {
		t.Errorf("first %v and last %v; want %v and %v", got[0], got[len(got)-1], g[0], g[len(g)-1])
	}
	for i, p := range got {
		if truth[p.Run] != p.Coverage {
			t.Errorf("point %v: the coverage after run %d was %d", p, p.Run, truth[p.Run])
		}
		if i > 0 && p.Run <= got[i-1].Run {
			t.Errorf("points out of order: %v then %v", got[i-1], p)
		}
		if p.Run > 3000 && i != len(got)-1 {
			t.Errorf("point %v inside the plateau", p)
		}
	}
}

// TestInterruptedHuntRecord: a hunt interrupted between runs says so in
// its record, which holds the runs taken: its status, exit code 130, and
// the growth up to the last run.
func TestInterruptedHuntRecord(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := base(t)
	o := Options{Base: b, Seed: 5, Runs: 50, Parallel: 1, Feedback: true, Command: sim.ReplayCommand,
		Progress: func(p Progress) {
			if p.Run == 3 {
				cancel()
			}
		}}
	var out bytes.Buffer
	res, err := Console{Out: &out, Err: io.Discard, Quiet: true, Command: []string{"chaos", "hunt", "--runs", "50"}}.Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted || res.ExitCode() != runner.ExitInterrupted || res.Runs != 3 {
		t.Fatalf("interrupted %v, exit %d, %d runs; want interrupted after 3 runs, exit %d", res.Interrupted, res.ExitCode(), res.Runs, runner.ExitInterrupted)
	}
	h, err := results.ReadHunt(filepath.Join(b.Store, results.HuntsDir, "latest", results.HuntFile))
	if err != nil {
		t.Fatal(err)
	}
	if h.Status != "interrupted" || h.ExitCode == nil || *h.ExitCode != runner.ExitInterrupted || h.Runs != 3 || len(h.Growth) == 0 || h.Growth[len(h.Growth)-1].Run != 3 {
		t.Errorf("the record: status %q, exit %v, %d runs, growth %v; want interrupted, 130, 3 runs, growth to run 3", h.Status, h.ExitCode, h.Runs, h.Growth)
	}
	if want := "--seed 5"; !strings.Contains(strings.Join(h.Command, " "), want) {
		t.Errorf("the command %q does not repeat the hunt's seed", h.Command)
	}
	if !strings.Contains(out.String(), "hunt page: "+filepath.Join(b.Store, results.HuntsDir)) {
		t.Errorf("the console did not print the hunt page:\n%s", out.String())
	}
}
