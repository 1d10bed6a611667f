package campaign

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/results/report"
	"github.com/chaos-isr/chaos/runner"
	"github.com/chaos-isr/chaos/shard"
)

// shardRecord is one shard as Merge reads it: where its campaign and its
// store are on this machine (the record's own store is where it ran, on
// a machine that may be gone), and its record.
type shardRecord struct {
	path, dir, store string
	rec              results.Campaign
}

// CampaignDir is the campaign directory path names: path itself if it
// holds a campaign.json, else the newest campaign of the store path
// (path/campaigns/latest), resolved.
func CampaignDir(path string) (string, error) {
	if _, err := os.Stat(filepath.Join(path, results.CampaignFile)); err == nil {
		return path, nil
	}
	latest := filepath.Join(path, "campaigns", "latest")
	if _, err := os.Stat(filepath.Join(latest, results.CampaignFile)); err == nil {
		return filepath.EvalSymlinks(latest)
	}
	return "", fmt.Errorf("%s: neither a campaign directory (no %s) nor a store with a campaign (no campaigns/latest)", path, results.CampaignFile)
}

// Merge combines the shards of one campaign ("chaos campaign --shard K/N"
// for every K of N, with the same spec and seed) into one campaign in
// store: STORE/campaigns/<UTC timestamp>/ with the merged campaign.json,
// its index page and the shards' logs, STORE/campaigns/latest pointing at
// it, and every shard's run directories copied into STORE (at the same
// paths), so that the merged store is one a user can browse, serve and
// check like any other. paths are the shards' campaign directories or
// their stores (CampaignDir); all of them must be on this machine.
//
// The merged record is what the whole campaign run in one place would
// have recorded but for times and directories: every cell's runs in the
// plan's order, summarized again, and the exit code of them all (130 if a
// shard was interrupted). It refuses, naming the shards, what is not the
// shards of one campaign: a record that is not a shard, a shard that did
// not finish, different specs, seeds, shard counts, cells or chaos
// versions, a shard given twice or missing, and a run in the wrong shard.
func Merge(store string, paths []string) (*results.Campaign, string, error) {
	shards, err := readShards(paths)
	if err != nil {
		return nil, "", err
	}
	if err := checkShards(shards); err != nil {
		return nil, "", err
	}
	rec, err := mergeRecords(store, shards)
	if err != nil {
		return nil, "", err
	}
	dir, err := results.NewRun(store, "campaigns", time.Now())
	if err != nil {
		return nil, "", err
	}
	for _, s := range shards {
		if err := copyShard(s, store, dir.Dir); err != nil {
			return nil, "", err
		}
	}
	if err := dir.WriteJSON(results.CampaignFile, rec); err != nil {
		return nil, "", err
	}
	if err := results.Relink(filepath.Join(store, "campaigns", "latest"), filepath.Base(dir.Dir)); err != nil {
		return nil, "", err
	}
	// The record is written: a page that cannot be rendered is the
	// caller's to report, and "chaos report" renders it later.
	return rec, dir.Dir, report.WriteCampaign(dir.Dir)
}

func readShards(paths []string) ([]shardRecord, error) {
	if len(paths) == 0 {
		return nil, errors.New("no shards to merge")
	}
	var out []shardRecord
	for _, p := range paths {
		dir, err := CampaignDir(p)
		if err != nil {
			return nil, err
		}
		rec, err := results.ReadCampaign(filepath.Join(dir, results.CampaignFile))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		// A campaign directory is STORE/campaigns/<timestamp>.
		out = append(out, shardRecord{path: p, dir: dir, store: filepath.Dir(filepath.Dir(dir)), rec: rec})
	}
	return out, nil
}

// checkShards says every way in which shards are not the complete set of
// shards of one campaign.
func checkShards(shards []shardRecord) error {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	var valid []shardRecord
	for _, s := range shards {
		switch {
		case s.rec.Shard == nil:
			bad("%s is not a shard (it ran the whole campaign; only campaigns run with --shard K/N are merged)", s.path)
		case s.rec.Status == StatusRunning:
			bad("%s (shard %d/%d) did not finish: its campaign.json says running (still going, or killed); run that shard again", s.path, s.rec.Shard.Index, s.rec.Shard.Count)
		default:
			valid = append(valid, s)
		}
	}
	if len(valid) == 0 {
		return refusal(problems)
	}
	first := valid[0]
	name := func(s shardRecord) string {
		return fmt.Sprintf("%s (shard %d/%d)", s.path, s.rec.Shard.Index, s.rec.Shard.Count)
	}
	specOf := func(s shardRecord) string { b, _ := json.Marshal(s.rec.Spec); return string(b) }
	for _, s := range valid[1:] {
		switch {
		case s.rec.Shard.Count != first.rec.Shard.Count:
			bad("%s and %s split the campaign into different numbers of shards", name(first), name(s))
		case s.rec.Seed != first.rec.Seed:
			bad("%s has campaign seed %d, %s seed %d: not the same campaign (give every shard the same --seed)", name(first), first.rec.Seed, name(s), s.rec.Seed)
		case specOf(s) != specOf(first):
			bad("%s and %s have different specs: not the same campaign:\n    %s\n    %s", name(first), name(s), specOf(first), specOf(s))
		case s.rec.Versions["chaos"] != first.rec.Versions["chaos"]:
			bad("%s ran chaos %s, %s chaos %s: one campaign is run by one version", name(first), first.rec.Versions["chaos"], name(s), s.rec.Versions["chaos"])
		case !sameCells(first.rec.Cells, s.rec.Cells):
			bad("%s and %s planned different cells (different flags after --?)", name(first), name(s))
		}
	}
	if len(problems) > 0 {
		return refusal(problems)
	}
	n := first.rec.Shard.Count
	byIndex := map[int][]string{}
	for _, s := range valid {
		byIndex[s.rec.Shard.Index] = append(byIndex[s.rec.Shard.Index], s.path)
	}
	var missing []string
	for k := 1; k <= n; k++ {
		switch paths := byIndex[k]; {
		case len(paths) == 0:
			missing = append(missing, fmt.Sprintf("%d/%d", k, n))
		case len(paths) > 1:
			bad("shard %d/%d is given %d times: %s", k, n, len(paths), strings.Join(paths, ", "))
		}
	}
	if len(missing) > 0 {
		bad("shard(s) %s missing: the merge needs every shard's store", strings.Join(missing, ", "))
	}
	for _, s := range valid {
		sh := shard.Shard{K: s.rec.Shard.Index, N: s.rec.Shard.Count}
		for _, c := range s.rec.Cells {
			for _, r := range c.Runs {
				if r.Run < 1 || r.Run > s.rec.Spec.Runs {
					bad("%s holds run %d of %s, which the plan does not have (%d runs per cell)", name(s), r.Run, c.Name, s.rec.Spec.Runs)
				} else if !sh.Has(RunKey(c.Name, r.Run)) {
					bad("%s holds run %d of %s, which belongs to shard %d/%d", name(s), r.Run, c.Name, shard.Of(RunKey(c.Name, r.Run), n), n)
				}
			}
		}
	}
	return refusal(problems)
}

func refusal(problems []string) error {
	if len(problems) == 0 {
		return nil
	}
	return fmt.Errorf("refusing to merge: %s", strings.Join(problems, "; "))
}

// sameCells: the same cells, planned the same way; the store each shard
// wrote to may differ (each machine its own).
func sameCells(a, b []*results.CampaignCell) bool {
	plan := func(cs []*results.CampaignCell) string {
		var ps []results.CampaignCellPlan
		for _, c := range cs {
			p := c.CampaignCellPlan
			p.Args = withStore(p.Args, "")
			ps = append(ps, p)
		}
		data, _ := json.Marshal(ps)
		return string(data)
	}
	return plan(a) == plan(b)
}

// withStore is a cell's args with the value of --store replaced.
func withStore(args []string, store string) []string {
	args = slices.Clone(args)
	for i := range args {
		if i > 0 && args[i-1] == "--store" {
			args[i] = store
		}
	}
	return args
}

// withoutShard is a command without its --shard flag.
func withoutShard(cmd []string) []string {
	var out []string
	for i := 0; i < len(cmd); i++ {
		switch {
		case cmd[i] == "--shard":
			i++
		case strings.HasPrefix(cmd[i], "--shard="):
		default:
			out = append(out, cmd[i])
		}
	}
	return out
}

// mergeRecords is the record of the whole campaign, from checked shards.
func mergeRecords(store string, shards []shardRecord) (*results.Campaign, error) {
	slices.SortFunc(shards, func(a, b shardRecord) int { return a.rec.Shard.Index - b.rec.Shard.Index })
	first := shards[0].rec
	rec := &results.Campaign{
		Format: results.CampaignFormat, Seed: first.Seed, Preset: first.Preset, SpecFile: first.SpecFile, Spec: first.Spec,
		Store: store, Command: withoutShard(first.Command), Versions: first.Versions, Start: first.Start, Status: StatusComplete,
	}
	interrupted := false
	var end *time.Time
	for _, s := range shards {
		rec.Merged = append(rec.Merged, s.path)
		if s.rec.Start.Before(rec.Start) {
			rec.Start = s.rec.Start
		}
		if s.rec.End != nil && (end == nil || s.rec.End.After(*end)) {
			end = s.rec.End
		}
		interrupted = interrupted || s.rec.Status == StatusInterrupted
	}
	rec.End = end
	for i, c := range first.Cells {
		m := &results.CampaignCell{CampaignCellPlan: c.CampaignCellPlan, Verdict: VerdictNotRun,
			Summary: results.CampaignSummary{Planned: first.Spec.Runs}, Runs: []results.CampaignRun{}}
		m.Args = withStore(m.Args, store)
		for _, s := range shards {
			m.Runs = append(m.Runs, s.rec.Cells[i].Runs...)
		}
		slices.SortFunc(m.Runs, func(a, b results.CampaignRun) int { return a.Run - b.Run })
		// Each shard that ran the cell found it refused by itself; run in
		// one place, the campaign would have stopped at the first
		// refusal: the later ones are left out.
		runs := []results.CampaignRun{}
		for _, r := range m.Runs {
			refused := r.Verdict == VerdictError && r.Dir == "" && r.ExitCode == runner.ExitError
			if refused && m.Refused != "" {
				continue
			}
			if refused {
				m.Refused = r.Error
			}
			runs = append(runs, r)
		}
		m.Runs = runs
		Summarize(m)
		rec.Cells = append(rec.Cells, m)
	}
	rec.Detection = Detection(rec.Cells)
	code := ExitCode(rec.Cells)
	if interrupted {
		rec.Status, code = StatusInterrupted, runner.ExitInterrupted
	}
	rec.ExitCode = &code
	return rec, nil
}

// copyShard copies a shard's run directories into store and its logs
// into the merged campaign's directory. A run directory already there is
// left alone if it is the same run (the shard's store is store, or the
// merge is done again), and refused otherwise.
func copyShard(s shardRecord, store, campaignDir string) error {
	for _, c := range s.rec.Cells {
		for _, r := range c.Runs {
			if r.Dir == "" {
				continue
			}
			src, dst := filepath.Join(s.store, filepath.FromSlash(r.Dir)), filepath.Join(store, filepath.FromSlash(r.Dir))
			if _, err := os.Stat(dst); err == nil {
				a, aerr := os.ReadFile(filepath.Join(src, results.TestFile))
				b, berr := os.ReadFile(filepath.Join(dst, results.TestFile))
				if aerr != nil || berr != nil || !bytes.Equal(a, b) {
					return fmt.Errorf("%s: run %s is already in %s, and is another run", s.path, r.Dir, store)
				}
				continue
			}
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
				return fmt.Errorf("%s: copying run %s: %w", s.path, r.Dir, err)
			}
		}
	}
	logs := filepath.Join(s.dir, "logs")
	if _, err := os.Stat(logs); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	// Logs are named by their run's place in the whole plan, so the
	// shards' never collide.
	if err := os.CopyFS(filepath.Join(campaignDir, "logs"), os.DirFS(logs)); err != nil {
		return fmt.Errorf("%s: copying its logs: %w", s.path, err)
	}
	return nil
}
