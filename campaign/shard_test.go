package campaign

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/shard"
)

// TestCampaignShardAssignment: the shards of a plan hold every run
// exactly once, at its place in the whole plan; a run keeps its shard when
// a cell is added before it or removed, whatever the campaign seed.
func TestCampaignShardAssignment(t *testing.T) {
	spec := results.CampaignSpec{Acks: []results.Acks{0, 1, -1}, MinInsyncReplicas: []int{1, 2}, Election: []string{"clean", "unclean"},
		Nemesis: []string{"kill-leader", "partition-leader", "slow-follower"}, Runs: 10,
		TimeLimit: results.Duration(30 * time.Second), NemesisInterval: results.Duration(5 * time.Second)}
	shardsOf := func(spec results.CampaignSpec) map[string]int {
		whole, err := NewPlan(spec, FixedBase(testBase()))
		if err != nil {
			t.Fatal(err)
		}
		all := whole.PlannedRuns()
		if len(all) != len(whole.Cells)*spec.Runs {
			t.Fatalf("the whole plan has %d runs", len(all))
		}
		const n = 4
		in := map[string]int{}
		for k := 1; k <= n; k++ {
			p := *whole
			p.Shard = shard.Shard{K: k, N: n}
			runs := p.PlannedRuns()
			// About a quarter each: a stable hash balances only roughly.
			if p.Runs() != len(runs) || len(runs) < len(all)/n/2 || len(runs) > len(all)/n*3/2 {
				t.Errorf("shard %d/%d has %d of %d runs", k, n, len(runs), len(all))
			}
			for _, r := range runs {
				key := RunKey(p.Cells[r.Cell].Name, r.Run)
				if prev, ok := in[key]; ok {
					t.Fatalf("%s is in shards %d and %d", key, prev, k)
				}
				in[key] = k
				if w := all[r.Pos-1]; w != r {
					t.Fatalf("%s: shard %d has it as %+v, the whole plan as %+v", key, k, r, w)
				}
			}
		}
		if len(in) != len(all) {
			t.Fatalf("the shards hold %d of the %d runs", len(in), len(all))
		}
		return in
	}
	before := shardsOf(spec)
	grown := spec
	grown.Nemesis = append([]string{"pause"}, spec.Nemesis...)
	shrunk := spec
	shrunk.Acks = []results.Acks{1, -1}
	for _, changed := range []results.CampaignSpec{grown, shrunk} {
		after := shardsOf(changed)
		moved := 0
		for key, k := range after {
			if was, ok := before[key]; ok && was != k {
				moved++
			}
		}
		if moved > 0 {
			t.Errorf("%d runs changed shard when cells were added or removed", moved)
		}
	}
}

// shardRun runs simPlan in a new store, as shard sh (the zero Shard: the
// whole plan), with campaign seed 9; it returns the campaign directory.
func shardRun(t *testing.T, sh shard.Shard) string {
	t.Helper()
	plan := simPlan(t, t.TempDir())
	plan.Shard = sh
	cmd := []string{"chaos", "campaign", "--runtime", "sim", "--seed", "9"}
	if !sh.Whole() {
		cmd = append(cmd, "--shard", sh.String())
	}
	rec, dir, err := Run(context.Background(), plan, Options{Seed: 9, Executor: simExecutor, Parallel: 2, Command: cmd,
		Versions: map[string]string{"chaos": "test"}})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != StatusComplete {
		t.Fatalf("shard %s: %s", sh, rec.Status)
	}
	return dir
}

// TestCampaignMerge: two shards of a campaign, merged, are the campaign
// run whole but for times and directories (in simulation, where a run
// is its seed's alone, down to what each run measured); the merged store
// holds every run and log. Shards of different campaigns, or not all
// of them, are refused with the reason.
func TestCampaignMerge(t *testing.T) {
	whole := shardRun(t, shard.Shard{})
	one, two := shardRun(t, shard.Shard{K: 1, N: 2}), shardRun(t, shard.Shard{K: 2, N: 2})
	for _, d := range []string{one, two} {
		if rec := readCampaign(t, filepath.Join(d, results.CampaignFile)); rec.Shard == nil || rec.Shard.Count != 2 {
			t.Fatalf("%s: shard %+v", d, rec.Shard)
		} else if n := countRuns(rec); n == 0 || n == 6 {
			t.Fatalf("shard %d/2 ran %d of the 6 runs: choose a plan that splits", rec.Shard.Index, n)
		}
	}
	store := t.TempDir()
	rec, dir, err := Merge(store, []string{two, filepath.Dir(filepath.Dir(one))}) // a campaign directory, and a store
	if err != nil {
		t.Fatal(err)
	}
	if rec.Shard != nil || !slices.Equal(rec.Merged, []string{filepath.Dir(filepath.Dir(one)), two}) || *rec.ExitCode != 0 {
		t.Errorf("merged record: shard %+v, merged %v, exit %d", rec.Shard, rec.Merged, *rec.ExitCode)
	}
	if a, b := timeless(t, filepath.Join(whole, results.CampaignFile)), timeless(t, filepath.Join(dir, results.CampaignFile)); a != b {
		t.Fatalf("run whole:\n%s\nmerged:\n%s", a, b)
	}
	wholeRec := readCampaign(t, filepath.Join(whole, results.CampaignFile))
	for i, c := range rec.Cells {
		for k, r := range c.Runs {
			got := readFile(t, filepath.Join(store, r.Dir, results.ResultsFile))
			if want := readFile(t, filepath.Join(filepath.Dir(filepath.Dir(whole)), wholeRec.Cells[i].Runs[k].Dir, results.ResultsFile)); got != want {
				t.Errorf("%s run %d: the merged store's results.json is not the whole campaign's", c.Name, r.Run)
			}
			if _, err := os.Stat(filepath.Join(dir, r.Log)); err != nil {
				t.Errorf("%s run %d: %v", c.Name, r.Run, err)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(store, "campaigns", "latest", results.CampaignIndexFile)); err != nil {
		t.Errorf("no index page: %v", err)
	}
	// Again into the same store: the runs are there already, and are the
	// same.
	if _, _, err := Merge(store, []string{one, two}); err != nil {
		t.Errorf("merged again: %v", err)
	}

	// What is not the shards of one campaign.
	variant := func(from string, change func(*results.Campaign)) string {
		rec := readCampaign(t, filepath.Join(from, results.CampaignFile))
		change(&rec)
		d := filepath.Join(t.TempDir(), "campaigns", "x")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(rec)
		if err := os.WriteFile(filepath.Join(d, results.CampaignFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
		return d
	}
	otherSeed := variant(two, func(r *results.Campaign) { r.Seed = 10 })
	otherSpec := variant(two, func(r *results.Campaign) { r.Spec.Runs = 4 })
	ofThree := variant(two, func(r *results.Campaign) { r.Shard.Count = 3 })
	running := variant(two, func(r *results.Campaign) { r.Status = StatusRunning })
	otherVersion := variant(two, func(r *results.Campaign) { r.Versions = map[string]string{"chaos": "v9"} })
	oneRec := readCampaign(t, filepath.Join(one, results.CampaignFile))
	i := slices.IndexFunc(oneRec.Cells, func(c *results.CampaignCell) bool { return len(c.Runs) > 0 })
	stray := variant(two, func(r *results.Campaign) { r.Cells[i].Runs = append(r.Cells[i].Runs, oneRec.Cells[i].Runs[0]) })
	beyond := variant(two, func(r *results.Campaign) { r.Cells[0].Runs = append(r.Cells[0].Runs, results.CampaignRun{Run: 7}) })
	for _, tc := range []struct {
		dirs []string
		want string
	}{
		{[]string{one}, "refusing to merge: shard(s) 2/2 missing"},
		{[]string{one, one, two}, "shard 1/2 is given 2 times: " + one + ", " + one},
		{[]string{whole, one, two}, whole + " is not a shard"},
		{[]string{one, otherSeed}, "has campaign seed 9, " + otherSeed + " (shard 2/2) seed 10"},
		{[]string{one, otherSpec}, "have different specs"},
		{[]string{one, ofThree}, "split the campaign into different numbers of shards"},
		{[]string{one, running}, running + " (shard 2/2) did not finish"},
		{[]string{one, otherVersion}, "ran chaos test, " + otherVersion + " (shard 2/2) chaos v9"},
		{[]string{one, stray}, stray + " (shard 2/2) holds run " + strconv.Itoa(oneRec.Cells[i].Runs[0].Run) + " of " + oneRec.Cells[i].Name + ", which belongs to shard 1/2"},
		{[]string{one, beyond}, "holds run 7 of acks1_isr1_clean_none, which the plan does not have (3 runs per cell)"},
		{[]string{one, t.TempDir()}, "neither a campaign directory"},
	} {
		out := t.TempDir()
		_, _, err := Merge(out, tc.dirs)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v; want %q", tc.dirs, err, tc.want)
		}
		if _, serr := os.Stat(filepath.Join(out, "campaigns")); serr == nil {
			t.Errorf("%v: refused, but wrote %s", tc.dirs, filepath.Join(out, "campaigns"))
		}
	}
}

func countRuns(rec results.Campaign) int {
	n := 0
	for _, c := range rec.Cells {
		n += len(c.Runs)
	}
	return n
}
