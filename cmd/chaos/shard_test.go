package main

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/sim"
)

// TestSweepShard: a sweep's shards hold every seed exactly once, and a
// seed keeps its shard when the sweep grows; a shard needs a sweep whose
// seeds every shard plans alike.
func TestSweepShard(t *testing.T) {
	seedsOf := func(seeds, shard string) []uint64 {
		s, err := sweepSeeds(sim.Flags{Seeds: seeds, Shard: shard, Parallel: 1}, false)
		if err != nil || s == nil {
			t.Fatalf("--seeds %s --shard %s: %v, %v", seeds, shard, s, err)
		}
		return s
	}
	in := map[uint64]string{}
	for _, k := range []string{"1/3", "2/3", "3/3"} {
		for _, s := range seedsOf("1-300", k) {
			if prev, ok := in[s]; ok {
				t.Fatalf("seed %d in shards %s and %s", s, prev, k)
			}
			in[s] = k
		}
		for _, s := range seedsOf("1-450", k) {
			if was, ok := in[s]; ok && was != k {
				t.Errorf("seed %d moved from shard %s to %s when the sweep grew", s, was, k)
			}
		}
	}
	if len(in) != 300 {
		t.Fatalf("the shards hold %d of 300 seeds", len(in))
	}
	for _, tc := range []struct {
		f    sim.Flags
		seed bool
		want string
	}{
		{sim.Flags{Shard: "1/2", Parallel: 1}, true, "--shard: given without a sweep"},
		{sim.Flags{Shard: "1/2", Runs: 10, Parallel: 1}, false, "--shard: given with --runs but without --seed"},
		{sim.Flags{Shard: "2", Seeds: "1-4", Parallel: 1}, false, `--shard: not K/N, got "2"`},
	} {
		if _, err := sweepSeeds(tc.f, tc.seed); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.f, err, tc.want)
		}
	}
	if s, err := sweepSeeds(sim.Flags{Shard: "2/2", Runs: 10, Parallel: 1, Seed: 5}, true); err != nil || len(s) == 0 || len(s) == 10 {
		t.Errorf("--runs 10 --seed --shard 2/2: %v %v", s, err)
	}
}

// TestCampaignShardsPlan: in the local runtime too, the shards of a
// campaign plan every run of the whole, each once, with the same seed
// and command.
func TestCampaignShardsPlan(t *testing.T) {
	requireCampaign(t)
	line := regexp.MustCompile(`(?m)^\[\d+/\d+\] (.* run \d+/\d+ seed \d+: chaos .*)$`)
	runsOf := func(extra ...string) []string {
		out, code := runChaos(t, append([]string{"campaign", "--preset", "seed", "--seed", "17", "--runs", "2", "--dry-run"}, extra...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d:\n%s", extra, code, out)
		}
		var runs []string
		for _, m := range line.FindAllStringSubmatch(out, -1) {
			runs = append(runs, m[1])
		}
		return runs
	}
	whole := runsOf()
	var union []string
	for _, k := range []string{"1/3", "2/3", "3/3"} {
		part := runsOf("--shard", k)
		if len(part) == 0 || len(part) == len(whole) {
			t.Errorf("shard %s plans %d of %d runs", k, len(part), len(whole))
		}
		union = append(union, part...)
	}
	slices.Sort(union)
	sorted := slices.Sorted(slices.Values(whole))
	if !slices.Equal(union, sorted) {
		t.Fatalf("the shards plan %d runs, the whole %d; they differ", len(union), len(whole))
	}
}

// TestCampaignMergeShards: a campaign in simulation run as two shards and
// merged with chaos campaign merge is the campaign run whole but for
// times and directories, and exits as it does; the shards of another
// campaign are refused with the reason.
func TestCampaignMergeShards(t *testing.T) {
	requireCampaign(t)
	whole := t.TempDir()
	if out, code := runChaos(t, simCampaign(whole, "5")...); code != exitValid {
		t.Fatalf("whole: exit %d:\n%s", code, out)
	}
	var shards []string
	for _, k := range []string{"1/2", "2/2"} {
		store := t.TempDir()
		out, code := runChaos(t, simCampaign(store, "5", "--shard", k)...)
		if code != exitValid || !strings.Contains(out, "shard "+k+": ") || !strings.Contains(out, "campaign seed 5, shard "+k+", complete") {
			t.Fatalf("shard %s: exit %d:\n%s", k, code, out)
		}
		shards = append(shards, store)
	}
	merged := t.TempDir()
	junit := filepath.Join(merged, "junit.xml")
	out, code := runChaos(t, "campaign", "merge", "--store", merged, "--junit", junit, shards[1], shards[0])
	t.Logf("merge:\n%s", out)
	if code != exitValid || !strings.Contains(out, "merged from 2 shards") || !strings.Contains(out, "verdict: VALID") {
		t.Fatalf("merge: exit %d", code)
	}
	rec := readCampaign(t, merged)
	if len(rec.Merged) != 2 || rec.Shard != nil {
		t.Errorf("merged record: merged %v, shard %v", rec.Merged, rec.Shard)
	}
	if a, b := campaignNormalized(t, filepath.Join(whole, "campaigns", "latest", results.CampaignFile)),
		campaignNormalized(t, filepath.Join(merged, "campaigns", "latest", results.CampaignFile)); a != b {
		t.Fatalf("run whole:\n%s\nmerged:\n%s", a, b)
	}
	for _, c := range rec.Cells {
		for _, r := range c.Runs {
			if _, err := os.Stat(filepath.Join(merged, r.Dir, results.ResultsFile)); err != nil {
				t.Errorf("the merged store lacks %s: %v", r.Dir, err)
			}
		}
	}
	var ju junitFile
	if data, err := os.ReadFile(junit); err != nil || xml.Unmarshal(data, &ju) != nil || ju.Tests != 4 {
		t.Errorf("JUnit of the merge: %v %+v", err, ju)
	}
	// A shard of another campaign seed, and a shard missing.
	other := t.TempDir()
	if out, code := runChaos(t, simCampaign(other, "6", "--shard", "2/2")...); code != exitValid {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, tc := range []struct {
		dirs []string
		want string
	}{
		{[]string{shards[0], other}, "has campaign seed 5, " + other + " (shard 2/2) seed 6"},
		{[]string{shards[0]}, "shard(s) 2/2 missing"},
		{[]string{whole, shards[1]}, whole + " is not a shard"},
	} {
		out, code := runChaos(t, append([]string{"campaign", "merge", "--store", t.TempDir()}, tc.dirs...)...)
		if code != exitErrorCode || !strings.Contains(out, "refusing to merge: ") || !strings.Contains(out, tc.want) {
			t.Errorf("merge %v: exit %d, want 3 saying %q:\n%s", tc.dirs, code, tc.want, out)
		}
	}
}
