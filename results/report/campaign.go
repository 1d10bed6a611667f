package report

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/results"
)

// CampaignView is a campaign's index page: its record, and where the page
// sits.
type CampaignView struct {
	results.Campaign
	// Title heads the page; empty: "campaign" and the start time.
	Title string `json:"-"`
	// StoreRoot is the store's root as a URL relative to the page: a
	// run's report is linked as StoreRoot/<run dir>/report.html. Empty
	// means "../..", right for store/campaigns/<timestamp>/index.html.
	StoreRoot string `json:"-"`
}

// RenderCampaign writes a campaign's index page: the matrix of
// configurations (rows) by nemeses (columns), each cell the model's
// prediction against what the runs showed, linking to each run's report.
func RenderCampaign(w io.Writer, v CampaignView) error {
	return execute(w, "campaign", buildCampaign(v))
}

// WriteCampaign renders a campaign directory's index.html from its
// campaign.json, atomically.
func WriteCampaign(dir string) error {
	c, err := results.ReadCampaign(filepath.Join(dir, results.CampaignFile))
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := RenderCampaign(&buf, CampaignView{Campaign: c}); err != nil {
		return err
	}
	return results.WriteFileAtomic(filepath.Join(dir, results.CampaignIndexFile), buf.Bytes())
}

type campaignPage struct {
	Title, Status, Seed, Started, Ended, Command, Exit string
	Columns                                            []string
	Rows                                               []matrixRow
	Runs                                               []campaignRunRow
	Totals                                             string
}

type matrixRow struct {
	Label string
	Cells [][]cellView // per column, the cells there (normally one)
}

type cellView struct {
	ID, Label, Verdict, Counts, Prediction string
	Permitted, Seen, Unexpected, Avail     string
	Refused                                string
	Runs                                   []runLink
}

type runLink struct {
	Text, Href, Verdict, Title string
}

type campaignRunRow struct {
	Cell, CellID                  string
	Run                           int
	Seed                          uint64
	Verdict, Time, Seconds        string
	Expected, Unexpected, Unknown string
	Error, Report, Log            string
}

// acksRank orders rows from the weakest promise to the strongest.
func acksRank(a int) int {
	switch a {
	case 0:
		return 0
	case 1:
		return 1
	}
	return 2
}

func buildCampaign(v CampaignView) *campaignPage {
	root := cmp.Or(v.StoreRoot, "../..")
	p := &campaignPage{Title: v.Title, Status: cmp.Or(v.Status, "unknown"), Seed: fmt.Sprint(v.Seed), Started: v.Start.UTC().Format("2006-01-02 15:04:05 UTC")}
	if p.Title == "" {
		p.Title = "campaign of " + p.Started
	}
	if v.End != nil {
		p.Ended = v.End.UTC().Format("2006-01-02 15:04:05 UTC") + fmt.Sprintf(" (%s)", v.End.Sub(v.Start).Round(time.Second))
	}
	p.Command = commandLine(v.Command)
	if v.ExitCode != nil {
		p.Exit = fmt.Sprint(*v.ExitCode)
	}
	type rowKey struct {
		acks, isr int
		election  string
	}
	var rows []rowKey
	rowIdx := map[rowKey]int{}
	colIdx := map[string]int{}
	for _, c := range v.Cells {
		k := rowKey{c.Acks, c.MinInsyncReplicas, cmp.Or(c.Election, "clean")}
		if _, ok := rowIdx[k]; !ok {
			rowIdx[k] = len(rows)
			rows = append(rows, k)
		}
		nem := cmp.Or(c.Nemesis, "none")
		if _, ok := colIdx[nem]; !ok {
			colIdx[nem] = len(p.Columns)
			p.Columns = append(p.Columns, nem)
		}
	}
	order := slices.Clone(rows)
	sort.SliceStable(order, func(i, j int) bool {
		a, b := order[i], order[j]
		return cmp.Or(cmp.Compare(acksRank(a.acks), acksRank(b.acks)), cmp.Compare(a.isr, b.isr), cmp.Compare(a.election, b.election)) < 0
	})
	for i, k := range order {
		rowIdx[k] = i
		p.Rows = append(p.Rows, matrixRow{Label: fmt.Sprintf("acks=%d, min.insync=%d, %s", k.acks, k.isr, k.election), Cells: make([][]cellView, len(p.Columns))})
	}
	var totals [5]int
	for ci, c := range v.Cells {
		k := rowKey{c.Acks, c.MinInsyncReplicas, cmp.Or(c.Election, "clean")}
		r, col := rowIdx[k], colIdx[cmp.Or(c.Nemesis, "none")]
		cv := buildCell(*c, ci, root)
		p.Rows[r].Cells[col] = append(p.Rows[r].Cells[col], cv)
		s := c.Summary
		totals[0] += s.Valid
		totals[1] += s.Invalid
		totals[2] += s.Unknown
		totals[3] += s.Errors
		totals[4] += s.Planned
		for _, run := range c.Runs {
			row := campaignRunRow{Cell: cmp.Or(c.Label, c.Name), CellID: cv.ID, Run: run.Run, Seed: run.Seed, Verdict: run.Verdict,
				Seconds: fmt.Sprintf("%.0f s", run.Seconds), Expected: strings.Join(run.Expected, ", "), Unexpected: strings.Join(run.Unexpected, ", "),
				Unknown: strings.Join(run.Unknown, ", "), Error: clip(run.Error, 300)}
			if !run.Start.IsZero() {
				row.Time = run.Start.UTC().Format("15:04:05")
			}
			if run.Dir != "" {
				row.Report = runReport(root, run.Dir)
			}
			if run.Log != "" {
				row.Log = run.Log
			}
			p.Runs = append(p.Runs, row)
		}
	}
	p.Totals = fmt.Sprintf("%d cells, %d runs planned: %d valid, %d invalid, %d unknown, %d errors", len(v.Cells), totals[4], totals[0], totals[1], totals[2], totals[3])
	return p
}

// runReport is the link to a run's report, from a page at root.
func runReport(root, dir string) string {
	return path.Join(root, strings.ReplaceAll(dir, `\`, "/"), results.ReportFile)
}

func buildCell(c results.CampaignCell, i int, root string) cellView {
	s := c.Summary
	cv := cellView{ID: fmt.Sprintf("cell-%d", i+1), Label: cmp.Or(c.Label, c.Name), Verdict: cmp.Or(c.Verdict, "not-run"), Prediction: c.Prediction, Refused: c.Refused}
	cv.Counts = fmt.Sprintf("%d of %d runs", s.Runs, s.Planned)
	var parts []string
	for _, x := range []struct {
		n    int
		what string
	}{{s.Valid, "valid"}, {s.Invalid, "invalid"}, {s.Unknown, "unknown"}, {s.Errors, "error"}, {s.Interrupted, "interrupted"}} {
		if x.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", x.n, x.what))
		}
	}
	if len(parts) > 0 {
		cv.Counts += ": " + strings.Join(parts, ", ")
	}
	var permitted []string
	for _, name := range checker.Names() {
		if c.Permitted[name].Permitted {
			permitted = append(permitted, name)
		}
	}
	if len(c.Permitted) > 0 {
		cv.Permitted = "none"
		if len(permitted) > 0 {
			cv.Permitted = strings.Join(permitted, ", ")
		}
	}
	cv.Seen = seenList(s.ExpectedSeen, s.Runs-s.Errors)
	cv.Unexpected = seenList(s.Unexpected, s.Runs-s.Errors)
	if s.Availability != nil {
		cv.Avail = fmt.Sprintf("%.1f%% of sends acknowledged", 100**s.Availability)
	}
	for _, r := range c.Runs {
		l := runLink{Text: fmt.Sprintf("run %d: %s", r.Run, r.Verdict), Verdict: r.Verdict,
			Title: fmt.Sprintf("seed %d, %.0f s", r.Seed, r.Seconds)}
		if len(r.Unexpected) > 0 {
			l.Title += "; unexpected: " + strings.Join(r.Unexpected, ", ")
		}
		if len(r.Expected) > 0 {
			l.Title += "; permitted anomalies seen: " + strings.Join(r.Expected, ", ")
		}
		if r.Error != "" {
			l.Title += "; error: " + clip(r.Error, 200)
		}
		if r.Dir != "" {
			l.Href = runReport(root, r.Dir)
		}
		cv.Runs = append(cv.Runs, l)
	}
	return cv
}

// seenList writes "lost-write 2/3, unseen 1/3": how many of the judged
// runs showed each anomaly.
func seenList(m map[string]int, runs int) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s %d/%d", k, m[k], max(runs, 0)))
	}
	return strings.Join(parts, ", ")
}
