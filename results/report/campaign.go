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
	"strconv"
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
// A campaign whose cells plant bugs shows its detection matrix first
// (results.Campaign.Detection: per cell, its bugs, whether and how soon
// the runs caught them, and the control cells' false alarms); the matrix
// then holds the cells that plant none.
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
	// Detection is the detection matrix, when cells plant bugs; Matrix
	// says whether the configuration matrix is shown: not when every cell
	// plants bugs.
	Detection []detectionRow
	Matrix    bool
	Columns   []string
	Rows      []matrixRow
	Runs      []campaignRunRow
	Totals    string
	// Stall is results.StallAfter, which the legend names.
	Stall string
}

// detectionRow is one row of the detection matrix: a cell's bugs (none:
// a control cell) and what its runs caught.
type detectionRow struct {
	ID, Href, Bugs, Node, Scenario, Runs string
	Control                              bool
	// Class styles the caught column: caught (every run), partly, missed
	// (no run: "not caught"), clean (a control without false alarm),
	// false-alarm, or none (no run ended yet).
	Class, Caught, Anomalies, Time, Ops string
}

type matrixRow struct {
	Label string
	Cells [][]cellView // per column, the cells there (normally one)
	// Heat is the row of the heatmap: per column, what its cells
	// observed of lost writes (heatCell).
	Heat [][]heatCell
	// Group: the row's acks differ from the row above's.
	Group bool
}

// heatCell is a cell of the heatmap, which answers the seed's question
// at a glance: were writes lost, and was it permitted? Class colours it:
// broken (a forbidden anomaly: acknowledged writes lost where the
// configuration promises none, or another), lost (acknowledged writes
// lost, as the configuration permits), unacked-lost (acks=0: records
// consumers read, then lost), unacked (acks=0, none of them lost), kept
// (no write lost, under faults that bit), toothless (the faults never
// bit, or none started), none (no run judged).
type heatCell struct {
	ID, Class string
	// Count is the headline number (the writes lost; empty when there is
	// none to give), What says of what, Note what the model says of it,
	// Runs in how many runs.
	Count, What, Note, Runs string
	// Flag is the cell's verdict when it is not valid: a valid loss and
	// an unknown run must not look alike.
	Flag, Title string
}

type cellView struct {
	ID, Label, Verdict, Counts, Prediction string
	// Observed is the class of what the runs observed (results.Observed*),
	// which colours the cell, and ObservedText says it (CellObserved);
	// Recovery sums up the windows' recovery (RecoveryText).
	Observed, ObservedText, Recovery   string
	Permitted, Seen, Unexpected, Avail string
	// PermittedN says how many anomalies Permitted lists, which the page
	// shows on demand.
	PermittedN string
	Refused    string
	Runs       []runLink
}

type runLink struct {
	Text, Href, Verdict, Title string
}

type campaignRunRow struct {
	Cell, CellID                  string
	Observed                      string
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
	p.Command = commandLine(RepeatCommand(v.Command, v.Seed))
	p.Stall = results.StallAfter.String()
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
	p.Matrix = !slices.ContainsFunc(v.Cells, func(c *results.CampaignCell) bool { return len(c.Bugs) > 0 })
	for _, c := range v.Cells {
		if len(c.Bugs) > 0 {
			continue // the detection matrix's
		}
		p.Matrix = true
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
		p.Rows = append(p.Rows, matrixRow{Label: fmt.Sprintf("acks=%d, min.insync=%d, %s", k.acks, k.isr, k.election),
			Cells: make([][]cellView, len(p.Columns)), Heat: make([][]heatCell, len(p.Columns)), Group: i > 0 && order[i-1].acks != k.acks})
	}
	var totals [5]int
	ids := map[string]string{}
	for ci, c := range v.Cells {
		cv := buildCell(*c, ci, root)
		ids[c.Name] = cv.ID
		if len(c.Bugs) == 0 {
			k := rowKey{c.Acks, c.MinInsyncReplicas, cmp.Or(c.Election, "clean")}
			r, col := rowIdx[k], colIdx[cmp.Or(c.Nemesis, "none")]
			p.Rows[r].Cells[col] = append(p.Rows[r].Cells[col], cv)
			p.Rows[r].Heat[col] = append(p.Rows[r].Heat[col], heat(c, cv))
		}
		s := c.Summary
		totals[0] += s.Valid
		totals[1] += s.Invalid
		totals[2] += s.Unknown
		totals[3] += s.Errors
		totals[4] += s.Planned
		for _, run := range c.Runs {
			row := campaignRunRow{Cell: cmp.Or(c.Label, c.Name), CellID: cv.ID, Observed: run.Observed, Run: run.Run, Seed: run.Seed, Verdict: run.Verdict,
				Seconds: fmt.Sprintf("%.0f s", run.Seconds), Expected: strings.Join(run.Expected, ", "), Unexpected: strings.Join(run.Unexpected, ", "),
				Unknown: strings.Join(run.Unknown, ", "), Error: clip(run.Error, 300)}
			if len(run.NotChecked) > 0 {
				// Beside what could not be judged, since a valid run's
				// verdict does not speak of these either.
				row.Unknown = strings.TrimPrefix(row.Unknown+"; not checked (the cluster cannot support it): "+strings.Join(run.NotChecked, ", "), "; ")
			}
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
	for _, d := range v.Detection {
		p.Detection = append(p.Detection, buildDetection(d, ids[d.Cell]))
	}
	return p
}

// buildDetection is a row of the detection matrix. A bug cell's row
// carries the cell's ID (the run list links to it; the configuration
// matrix holds no bug cell), a control cell's links to its place in the
// matrix.
func buildDetection(d results.CampaignDetection, id string) detectionRow {
	r := detectionRow{Scenario: d.Scenario, Control: len(d.Bugs) == 0, Anomalies: "-", Time: "-", Ops: "-"}
	if r.Control {
		r.Bugs, r.Node, r.Href = "control (no bug)", "-", "#"+id
	} else {
		r.ID = id
		var names, nodes []string
		for _, b := range d.Bugs {
			names = append(names, b.Name)
			if !slices.Contains(nodes, b.Node) {
				nodes = append(nodes, b.Node)
			}
		}
		r.Bugs, r.Node = strings.Join(names, ", "), strings.Join(nodes, ", ")
	}
	r.Runs = fmt.Sprintf("%d of %d", d.Runs, d.Planned)
	if d.Errors > 0 {
		r.Runs += fmt.Sprintf(" (%d errors)", d.Errors)
	}
	pct := ""
	if d.Runs > 0 {
		pct = fmt.Sprintf(" (%.0f%%)", 100*float64(d.Caught)/float64(d.Runs))
	}
	switch {
	case d.Runs == 0:
		r.Class, r.Caught = "none", "no run yet"
	case r.Control && d.Caught == 0:
		r.Class, r.Caught = "clean", fmt.Sprintf("no false alarm (0/%d)", d.Runs)
	case r.Control:
		r.Class, r.Caught = "false-alarm", fmt.Sprintf("false alarms %d/%d%s", d.Caught, d.Runs, pct)
	case d.Caught == 0:
		r.Class, r.Caught = "missed", fmt.Sprintf("not caught (0/%d)", d.Runs)
	case d.Caught < d.Runs:
		r.Class, r.Caught = "partly", fmt.Sprintf("%d/%d%s", d.Caught, d.Runs, pct)
	default:
		r.Class, r.Caught = "caught", fmt.Sprintf("%d/%d%s", d.Caught, d.Runs, pct)
	}
	if len(d.Anomalies) > 0 {
		r.Anomalies = anomalyCounts(d.Anomalies, d.Runs)
	}
	if d.MedianTime != nil && d.MedianOps != nil {
		r.Time = fmt.Sprintf("%.3f s", time.Duration(*d.MedianTime).Seconds())
		r.Ops = fmt.Sprint(*d.MedianOps)
		if d.Timed < d.Caught {
			r.Time += fmt.Sprintf(" (%d of %d runs timed)", d.Timed, d.Caught)
		}
	}
	return r
}

// anomalyCounts writes "lost-write 3/3, unseen 2/3" in the checkers'
// order (others after them, sorted): in how many of the runs each
// anomaly was found forbidden.
func anomalyCounts(m map[string]int, runs int) string {
	var parts []string
	for _, k := range anomalyOrder(m) {
		parts = append(parts, fmt.Sprintf("%s %d/%d", k, m[k], runs))
	}
	return strings.Join(parts, ", ")
}

// anomalyOrder is m's keys in the checkers' order, any other after them,
// sorted.
func anomalyOrder[V any](m map[string]V) []string {
	var out []string
	for _, n := range checker.Names() {
		if _, ok := m[n]; ok {
			out = append(out, n)
		}
	}
	for _, k := range sortedKeys(m) {
		if !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

// runReport is the link to a run's report, from a page at root.
func runReport(root, dir string) string {
	return path.Join(root, strings.ReplaceAll(dir, `\`, "/"), results.ReportFile)
}

func buildCell(c results.CampaignCell, i int, root string) cellView {
	s := c.Summary
	cv := cellView{ID: fmt.Sprintf("cell-%d", i+1), Label: cmp.Or(c.Label, c.Name), Verdict: cmp.Or(c.Verdict, "not-run"), Prediction: c.Prediction, Refused: c.Refused}
	cv.Observed, cv.ObservedText = CellObserved(&c)
	if s.Recovery != nil {
		cv.Recovery = "recovery (median/max): " + RecoveryText(s.Recovery)
	}
	cv.Counts = fmt.Sprintf("%d of %d runs", s.Runs, s.Planned)
	if parts := RunCounts(s); len(parts) > 0 {
		cv.Counts += ": " + strings.Join(parts, ", ")
	}
	var permitted []string
	for _, name := range checker.Names() {
		if c.Permitted[name].Permitted {
			permitted = append(permitted, name)
		}
	}
	if len(c.Permitted) > 0 {
		cv.Permitted, cv.PermittedN = "none", "none"
		if len(permitted) > 0 {
			cv.Permitted = strings.Join(permitted, ", ")
			cv.PermittedN = fmt.Sprintf("%d anomalies", len(permitted))
		}
		if len(permitted) == 1 {
			cv.PermittedN = permitted[0]
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
		if r.Observed != "" {
			l.Title += "; observed: " + results.ObservedText[r.Observed]
		}
		if r.WindowsRan > 0 && r.Recovery != nil {
			l.Title += fmt.Sprintf("; %d of %d fault windows bit", r.WindowsBit, r.WindowsRan)
		}
		for k, n := range r.ExpectedInstances {
			l.Title += fmt.Sprintf("; %s: %d instances (permitted)", k, n)
		}
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

// heat is what a cell's runs observed of lost writes, for the heatmap.
func heat(c *results.CampaignCell, cv cellView) heatCell {
	s := c.Summary
	h := heatCell{ID: cv.ID, Title: cv.Label + ": " + cv.ObservedText}
	if v := cmp.Or(c.Verdict, "not-run"); v != "valid" {
		h.Flag = v
	}
	judged := s.Runs - s.Errors
	runs := func(n int) string { return fmt.Sprintf("%d/%d runs", n, judged) }
	lw := checker.LostWriteName
	loss := c.Permitted[lw]
	switch {
	case judged <= 0:
		h.Class, h.What = "none", "no run judged"
		if s.Errors > 0 {
			h.What = "no verdict: error"
		}
	case s.Unexpected[lw] > 0:
		h.Class, h.What, h.Note, h.Runs = "broken", "acked writes lost", "forbidden here", runs(s.Unexpected[lw])
		if n := s.UnexpectedInstances[lw]; n > 0 {
			h.Count = fmt.Sprint(n)
		}
	case len(s.Unexpected) > 0:
		names := anomalyOrder(s.Unexpected)
		h.Class, h.What, h.Note, h.Runs = "broken", names[0], "forbidden here", runs(s.Unexpected[names[0]])
		if n := s.UnexpectedInstances[names[0]]; n > 0 {
			h.Count = fmt.Sprint(n)
		}
	case s.ExpectedSeen[lw] > 0 && c.Acks == 0:
		h.Class, h.What, h.Note, h.Runs = "unacked-lost", "read, then lost", "acks=0: none acked", runs(s.ExpectedSeen[lw])
		if n := s.ExpectedInstances[lw]; n > 0 {
			h.Count = fmt.Sprint(n)
		}
	case s.ExpectedSeen[lw] > 0:
		h.Class, h.What, h.Note, h.Runs = "lost", "acked writes lost", "permitted here", runs(s.ExpectedSeen[lw])
		if n := s.ExpectedInstances[lw]; n > 0 {
			h.Count = fmt.Sprint(n)
		}
	case cv.Observed == results.ObservedToothless || cv.Observed == results.ObservedNoFaults:
		h.Class, h.What, h.Runs = "toothless", strings.ToLower(cv.ObservedText), runs(s.Observed[cv.Observed])
		h.Note = "a loss could not show"
	case c.Acks == 0:
		h.Class, h.Count, h.What, h.Note, h.Runs = "unacked", "0", "read, then lost", "acks=0: none acked", runs(judged)
	default:
		h.Class, h.Count, h.What, h.Runs = "kept", "0", "lost, faults bit", runs(judged)
		h.Note = "loss forbidden"
		if loss.Permitted {
			h.Note = "loss permitted, not seen"
		}
	}
	if d := s.ExpectedInstances[checker.DuplicateName] + s.UnexpectedInstances[checker.DuplicateName]; d > 0 {
		h.Note += fmt.Sprintf("; %d duplicated", d)
	}
	return h
}

// RepeatCommand is the command that repeats a campaign: the one recorded,
// with the campaign's seed, which a campaign given none drew at random
// (and a --seed 0 too). The seed goes before "--": after it, it would be
// a flag of chaos run, which the campaign refuses.
func RepeatCommand(command []string, seed uint64) []string {
	if len(command) == 0 {
		return nil
	}
	own, passed := command, []string(nil)
	if i := slices.Index(command, "--"); i >= 0 {
		own, passed = command[:i], command[i:]
	}
	var out []string
	for i := 0; i < len(own); i++ {
		switch a := own[i]; {
		case a == "--seed":
			i++ // and its value
		case strings.HasPrefix(a, "--seed="):
		default:
			out = append(out, a)
		}
	}
	out = append(out, "--seed", strconv.FormatUint(seed, 10))
	return append(out, passed...)
}

// RunCounts counts a summary's runs by how they ended, those with none
// left out: "2 valid", "1 invalid", "1 unknown", "1 error", "1
// interrupted".
func RunCounts(s results.CampaignSummary) []string {
	var parts []string
	for _, x := range []struct {
		n    int
		what string
	}{{s.Valid, "valid"}, {s.Invalid, "invalid"}, {s.Unknown, "unknown"}, {s.Errors, "error"}, {s.Interrupted, "interrupted"}} {
		if x.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", x.n, x.what))
		}
	}
	return parts
}
