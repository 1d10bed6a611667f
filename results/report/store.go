package report

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/results"
)

// StoreView is the store browser's page: every run, campaign and hunt in
// a store, newest first. Links are relative to the store's root, so the page
// is meant to be served at the root.
type StoreView struct {
	Root      string
	Runs      []StoreRun
	Campaigns []StoreCampaign
	Hunts     []StoreHunt
	// Problems are what could not be read; the rest is still listed.
	Problems []string
}

// StoreRun is one run directory.
type StoreRun struct {
	Test string
	// Dir is the run's directory relative to the store, with slashes:
	// <test>/<timestamp>.
	Dir   string
	Start time.Time
	// Verdict is valid, invalid or unknown from results.json, or empty
	// when the run has none (interrupted, or still running).
	Verdict string
	// Observed is what the run observed (results.Observe), empty
	// without a verdict.
	Observed string
	// Summary is the configuration in a line, from test.json.
	Summary    string
	Seed       uint64
	Expected   []string
	Unexpected []string
	LostWrites int
	// Report says report.html exists.
	Report bool
	// Note says what is missing.
	Note string
}

// StoreCampaign is one campaign directory.
type StoreCampaign struct {
	Dir     string
	Start   time.Time
	Status  string
	Seed    uint64
	Cells   int
	Runs    int
	Verdict string // the worst run's
	Counts  string // runs by verdict
	Index   bool   // index.html exists
	Note    string
}

// StoreHunt is one hunt directory.
type StoreHunt struct {
	Dir    string
	Start  time.Time
	Status string
	Seed   uint64
	// Runs counts the runs taken, Findings the invalid ones, Unjudged
	// those that ended unknown or in an error.
	Runs, Findings, Unjudged int
	Bugs                     []string
	Page                     bool // hunt.html exists
	Note                     string
}

// ScanStore reads a store for its page: every run, campaign and hunt that
// results.ListStore finds, with what its files say. A file that cannot be
// read is a Note of its run or campaign, a directory that cannot be read a
// Problem of the view; only an unreadable root is an error.
func ScanStore(store string) (StoreView, error) {
	v := StoreView{Root: store}
	l, err := results.ListStore(store)
	if err != nil {
		return v, err
	}
	v.Problems = l.Problems
	for _, d := range l.Runs {
		v.Runs = append(v.Runs, scanRun(d))
	}
	for _, d := range l.Campaigns {
		v.Campaigns = append(v.Campaigns, scanCampaign(d))
	}
	for _, d := range l.Hunts {
		v.Hunts = append(v.Hunts, scanHunt(d))
	}
	return v, nil
}

func scanRun(d results.StoredDir) StoreRun {
	r := StoreRun{Test: d.Test, Dir: d.Dir, Start: d.Start}
	dir := d.Path
	var notes []string
	if tc, err := results.ReadTestConfig(filepath.Join(dir, results.TestFile)); err == nil {
		r.Summary, r.Seed = configSummary(tc), tc.Seed
	} else if errors.Is(err, fs.ErrNotExist) {
		notes = append(notes, "no test.json")
	} else {
		notes = append(notes, "test.json is damaged")
	}
	var pe *fs.PathError
	if stored, err := results.ReadStoredResults(filepath.Join(dir, results.ResultsFile)); err == nil {
		res := stored.Results
		r.Verdict = verdictWord(res.Valid)
		r.Observed = results.Observe(res, stored.Recovery)
		r.Expected, r.Unexpected = res.Expected, res.Unexpected
		if lw, ok := res.Get(checker.LostWriteName); ok {
			r.LostWrites = lw.Count
		}
	} else if errors.As(err, &pe) {
		notes = append(notes, "no verdict (interrupted or still running)")
	} else {
		notes = append(notes, "results.json is damaged")
	}
	if _, err := os.Stat(filepath.Join(dir, results.ReportFile)); err == nil {
		r.Report = true
	}
	r.Note = strings.Join(notes, "; ")
	return r
}

func verdictWord(v checker.Validity) string {
	switch v {
	case checker.Valid:
		return "valid"
	case checker.Invalid:
		return "invalid"
	}
	return "unknown"
}

// configSummary is a run's configuration in one line.
func configSummary(tc results.TestConfig) string {
	faults := "no faults"
	if len(tc.Nemesis) > 0 {
		faults = strings.Join(tc.Nemesis, ",")
	}
	return fmt.Sprintf("acks=%d min.insync=%d %s, %s, %d brokers, %s", tc.Workload.Acks, tc.Cluster.MinInsyncReplicas,
		cmp.Or(tc.Cluster.Election, "clean"), faults, tc.Cluster.Nodes, tc.Workload.TimeLimit)
}

func scanCampaign(d results.StoredDir) StoreCampaign {
	c := StoreCampaign{Dir: d.Dir, Start: d.Start}
	dir := d.Path
	v, err := results.ReadCampaign(filepath.Join(dir, results.CampaignFile))
	if err != nil {
		c.Note = "campaign.json could not be read"
		return c
	}
	c.Status, c.Seed, c.Cells = v.Status, v.Seed, len(v.Cells)
	var counts [4]int
	rank := map[string]int{"valid": 1, "unknown": 2, "error": 3, "invalid": 4}
	for _, cell := range v.Cells {
		s := cell.Summary
		c.Runs += s.Runs
		counts[0] += s.Valid
		counts[1] += s.Invalid
		counts[2] += s.Unknown
		counts[3] += s.Errors
		if rank[cell.Verdict] > rank[c.Verdict] {
			c.Verdict = cell.Verdict
		}
	}
	c.Counts = fmt.Sprintf("%d valid, %d invalid, %d unknown, %d errors", counts[0], counts[1], counts[2], counts[3])
	if _, err := os.Stat(filepath.Join(dir, results.CampaignIndexFile)); err == nil {
		c.Index = true
	}
	return c
}

func scanHunt(d results.StoredDir) StoreHunt {
	s := StoreHunt{Dir: d.Dir, Start: d.Start}
	h, err := results.ReadHunt(filepath.Join(d.Path, results.HuntFile))
	if err != nil {
		s.Note = "hunt.json could not be read"
		return s
	}
	s.Status, s.Seed, s.Runs, s.Findings, s.Unjudged, s.Bugs = h.Status, h.Seed, h.Runs, len(h.Findings), len(h.Unjudged), h.Options.Bugs
	if _, err := os.Stat(filepath.Join(d.Path, results.HuntPageFile)); err == nil {
		s.Page = true
	}
	return s
}

// RenderStore writes the store browser's page.
func RenderStore(w io.Writer, v StoreView) error {
	return execute(w, "store", buildStore(v))
}

type storePage struct {
	Root      string
	Tests     []testRow
	Runs      []storeRunRow
	Campaigns []storeCampaignRow
	Hunts     []storeHuntRow
	Problems  []string
}

type testRow struct {
	Name, Anchor, Latest, LatestVerdict, Counts string
	Runs                                        int
}

type storeRunRow struct {
	Test, Anchor, Time, Verdict, Summary, Seed string
	Observed                                   string
	Expected, Unexpected, Note                 string
	LostWrites                                 int
	Report, Dir                                string
}

type storeCampaignRow struct {
	Time, Status, Seed, Verdict, Counts, Note string
	Cells, Runs                               int
	Index, Dir                                string
}

type storeHuntRow struct {
	Time, Status, Seed, Outcome, Class, Bugs, Note string
	Runs, Unjudged                                 int
	Page, Dir                                      string
}

func buildStore(v StoreView) *storePage {
	p := &storePage{Root: v.Root, Problems: v.Problems}
	byTest := map[string]*testRow{}
	var order []string
	verdicts := map[string]map[string]int{}
	for _, r := range v.Runs {
		t := byTest[r.Test]
		if t == nil {
			// Runs are newest first, so the first seen is the latest.
			t = &testRow{Name: r.Test, Anchor: "test-" + results.TestName(r.Test), Latest: stamp(r.Start), LatestVerdict: cmp.Or(r.Verdict, "none")}
			byTest[r.Test] = t
			order = append(order, r.Test)
			verdicts[r.Test] = map[string]int{}
		}
		t.Runs++
		verdicts[r.Test][cmp.Or(r.Verdict, "none")]++
		row := storeRunRow{Test: r.Test, Time: stamp(r.Start), Verdict: cmp.Or(r.Verdict, "none"), Observed: r.Observed, Summary: r.Summary,
			Expected: strings.Join(r.Expected, ", "), Unexpected: strings.Join(r.Unexpected, ", "), Note: r.Note,
			LostWrites: r.LostWrites, Dir: storeLink(r.Dir, "")}
		if r.Seed != 0 {
			row.Seed = fmt.Sprint(r.Seed)
		}
		if r.Report {
			row.Report = storeLink(r.Dir, results.ReportFile)
		}
		if t.Runs == 1 {
			row.Anchor = t.Anchor
		}
		p.Runs = append(p.Runs, row)
	}
	slices.Sort(order)
	for _, name := range order {
		t := byTest[name]
		var parts []string
		for _, k := range []string{"valid", "invalid", "unknown", "none"} {
			word := k
			if k == "none" {
				word = "without verdict"
			}
			if n := verdicts[name][k]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, word))
			}
		}
		t.Counts = strings.Join(parts, ", ")
		p.Tests = append(p.Tests, *t)
	}
	for _, c := range v.Campaigns {
		row := storeCampaignRow{Time: stamp(c.Start), Status: c.Status, Seed: fmt.Sprint(c.Seed), Verdict: cmp.Or(c.Verdict, "not-run"), Counts: c.Counts,
			Note: c.Note, Cells: c.Cells, Runs: c.Runs, Dir: storeLink(c.Dir, "")}
		if c.Index {
			row.Index = storeLink(c.Dir, results.CampaignIndexFile)
		}
		p.Campaigns = append(p.Campaigns, row)
	}
	for _, h := range v.Hunts {
		row := storeHuntRow{Time: stamp(h.Start), Status: h.Status, Seed: fmt.Sprint(h.Seed), Bugs: strings.Join(h.Bugs, ", "), Note: h.Note,
			Runs: h.Runs, Unjudged: h.Unjudged, Dir: storeLink(h.Dir, ""), Class: "valid", Outcome: "not found"}
		if h.Findings > 0 {
			row.Class, row.Outcome = "invalid", plural(h.Findings, "finding")
		}
		if h.Note != "" {
			row.Class, row.Outcome = "none", "none"
		}
		if h.Page {
			row.Page = storeLink(h.Dir, results.HuntPageFile)
		}
		p.Hunts = append(p.Hunts, row)
	}
	return p
}

// storeLink is the relative link to file in a directory of the store
// (the directory itself when file is empty). Directory names come from
// whatever is in the store, so they are escaped: "a#b" would link to an
// anchor, and "x:y/" to the scheme x.
func storeLink(dir, file string) string {
	u := url.URL{Path: "./" + dir + "/" + file}
	return u.EscapedPath()
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}
