package report

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"math"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/chaos-isr/chaos/results"
)

// HuntView is a hunt's page: its record, and where the page sits.
type HuntView struct {
	results.Hunt
	// StoreRoot is the store's root as a URL relative to the page; empty
	// means "../..", right for store/hunts/<timestamp>/hunt.html.
	StoreRoot string `json:"-"`
}

// RenderHunt writes a hunt's page: whether it found a run its
// configuration forbids and how soon, each finding with its scenario,
// replay command and report (and the shrunk run's), the coverage over the
// runs, so that a plateau shows, and the runs it could not judge.
func RenderHunt(w io.Writer, v HuntView) error {
	return execute(w, "hunt", buildHunt(v))
}

// WriteHunt renders a hunt directory's hunt.html from its hunt.json,
// atomically.
func WriteHunt(dir string) error {
	h, err := results.ReadHunt(filepath.Join(dir, results.HuntFile))
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := RenderHunt(&buf, HuntView{Hunt: h}); err != nil {
		return err
	}
	return results.WriteFileAtomic(filepath.Join(dir, results.HuntPageFile), buf.Bytes())
}

type huntPage struct {
	Title, Status, Started, Ended, Exit string
	// Class and Badge head the outcome: invalid FOUND, valid NOT FOUND,
	// unknown (no finding, some run unjudged), none (no run yet).
	Class, Badge, Headline string
	Counts, Search, Judged string
	Bugs, Running, Command string
	// Again labels a finding's command: replay (a simulated run, byte
	// for byte) or run again (a real one, another interleaving).
	Again    string
	Findings []huntFindingView
	Growth   *plotView
	Plateau  string
	Unjudged []huntRunView
	Settings [][2]string
}

type huntFindingView struct {
	ID, Title, Anomalies, Scenario, Replay string
	Report, Files                          string
	Shrunk                                 *huntShrunkView
}

type huntShrunkView struct {
	How, Anomalies, Schedule, Replay, Report, Files, Error string
	Sizes                                                  [][3]string
}

type huntRunView struct {
	Run                   int
	Seed, Verdict, Reason string
	Scenario, Replay      string
	Report, Files         string
}

func buildHunt(v HuntView) *huntPage {
	root := cmp.Or(v.StoreRoot, "../..")
	h := v.Hunt
	p := &huntPage{Title: fmt.Sprintf("seed %d", h.Seed), Status: cmp.Or(h.Status, "unknown"), Started: h.Start.UTC().Format("2006-01-02 15:04:05 UTC")}
	took := time.Duration(h.Seconds * float64(time.Second)).Round(time.Second)
	if h.End != nil {
		p.Ended = h.End.UTC().Format("2006-01-02 15:04:05 UTC") + fmt.Sprintf(" (%s)", h.End.Sub(h.Start).Round(time.Second))
	}
	if h.ExitCode != nil {
		p.Exit = fmt.Sprint(*h.ExitCode)
	}
	p.Command = commandLine(h.Command)
	runs := plural(h.Runs, "run")
	switch {
	case len(h.Findings) > 0:
		f := h.Findings[0]
		p.Class, p.Badge = "invalid", "FOUND"
		p.Headline = fmt.Sprintf("A run the configuration forbids, found at run %d, %s into the hunt: %s.", f.Run,
			time.Duration(f.Elapsed).Round(100*time.Millisecond), strings.Join(f.Anomalies, ", "))
		if n := len(h.Findings); n > 1 {
			p.Headline += fmt.Sprintf(" %d findings in %s, %s.", n, runs, took)
		}
	case h.Runs == 0:
		p.Class, p.Badge, p.Headline = "none", "NO RUN YET", "No run of the hunt has ended yet."
	case len(h.Unjudged) > 0:
		p.Class, p.Badge = "unknown", "NOT FOUND"
		p.Headline = fmt.Sprintf("No run the configuration forbids in %s (%s); %d could not be judged (below).", runs, took, len(h.Unjudged))
	default:
		p.Class, p.Badge = "valid", "NOT FOUND"
		p.Headline = fmt.Sprintf("No run the configuration forbids in %s (%s): every run was valid.", runs, took)
	}
	if h.Status == "running" {
		p.Running = "The hunt is going on, or was killed before it ended: this is the record as it was last written."
	} else if h.Status == "interrupted" {
		p.Running = "The hunt was interrupted: this is what it had reached."
	}
	p.Counts = fmt.Sprintf("%s: %d invalid, %d unknown, %d valid, %d errors; coverage %d sequences, corpus %s.",
		runs, h.Invalid, h.Unknown, h.Valid, h.Errors, h.Coverage, plural(h.Corpus, "scenario"))
	o := h.Options
	p.Search = huntSearch(o)
	p.Again = "replay"
	if o.Runtime != "" {
		p.Again = "run again"
		p.Search = strings.TrimSuffix(p.Search, ".") + ", in real time on the " + o.Runtime + " runtime."
	}
	p.Judged = "Every scenario judged as " + fmt.Sprintf("acks=%d, min.insync.replicas=%d, %s election", o.Config.Acks, o.Config.MinInsyncReplicas, cmp.Or(o.Config.Election, "clean")) + "."
	if o.DrawConfig {
		p.Judged = "Each scenario drew its configuration under judgement (--draw-config)."
	}
	if len(o.Bugs) > 0 {
		p.Bugs = strings.Join(o.Bugs, ", ")
	}
	for i, f := range h.Findings {
		p.Findings = append(p.Findings, huntFinding(f, i, root))
	}
	for _, u := range h.Unjudged {
		p.Unjudged = append(p.Unjudged, huntRun(u, root))
	}
	p.Growth, p.Plateau = growthPlot(h)
	p.Settings = huntSettings(h)
	return p
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func huntSearch(o results.HuntOptions) string {
	var budget []string
	if o.Runs > 0 {
		budget = append(budget, plural(o.Runs, "run"))
	}
	if o.Time > 0 {
		budget = append(budget, time.Duration(o.Time).String())
	}
	search := "with feedback (mutating the scenarios that reached new coverage)"
	if !o.Feedback {
		search = "without feedback (every scenario drawn afresh)"
	}
	s := fmt.Sprintf("At most %s, %d at a time, %s", strings.Join(budget, " or "), max(o.Parallel, 1), search)
	if o.KeepGoing {
		s += ", going on after a finding"
	} else {
		s += ", stopping at the first finding"
	}
	if o.Shard != nil {
		s += fmt.Sprintf("; shard %d/%d of the runs", o.Shard.Index, o.Shard.Count)
	}
	return s + "."
}

// dirLinks are the links to a run's report and directory from the page.
func dirLinks(root, dir string) (report, files string) {
	if dir == "" {
		return "", ""
	}
	return runReport(root, dir), path.Join(root, strings.ReplaceAll(dir, `\`, "/")) + "/"
}

func huntFinding(f results.HuntFinding, i int, root string) huntFindingView {
	v := huntFindingView{ID: fmt.Sprintf("finding-%d", i+1), Title: fmt.Sprintf("Run %d, seed %d, %s into the hunt", f.Run, f.Seed, time.Duration(f.Elapsed).Round(100*time.Millisecond)),
		Anomalies: strings.Join(f.Anomalies, ", "), Scenario: f.Scenario, Replay: f.Replay}
	v.Report, v.Files = dirLinks(root, f.Dir)
	if s := f.Shrunk; s != nil {
		sv := &huntShrunkView{Error: s.Error, Anomalies: strings.Join(s.Anomalies, ", "), Schedule: s.Schedule, Replay: s.Replay}
		sv.Report, sv.Files = dirLinks(root, s.Dir)
		switch {
		case s.Error != "":
			sv.How = "no smaller run"
		case s.Interrupted:
			sv.How = fmt.Sprintf("interrupted after %s: the smallest run so far", plural(s.Runs, "run"))
		case s.Exhausted:
			sv.How = fmt.Sprintf("stopped at the budget of %s (--shrink-runs): a larger one may shrink further", plural(s.Runs, "run"))
		default:
			sv.How = fmt.Sprintf("done in %s", plural(s.Runs, "run"))
		}
		if s.Error == "" {
			b, a := s.Before, s.After
			d := func(x results.Duration) string { return time.Duration(x).String() }
			for _, row := range [][3]string{
				{"fault windows", fmt.Sprint(b.Windows), fmt.Sprint(a.Windows)},
				{"time in fault windows", d(b.WindowTime), d(a.WindowTime)},
				{"client operations", fmt.Sprint(b.Ops), fmt.Sprint(a.Ops)},
				{"time limit", d(b.TimeLimit), d(a.TimeLimit)},
				{"producers", fmt.Sprint(b.Producers), fmt.Sprint(a.Producers)},
				{"consumers", fmt.Sprint(b.Consumers), fmt.Sprint(a.Consumers)},
				{"partitions", fmt.Sprint(b.Partitions), fmt.Sprint(a.Partitions)},
				{"rate (sends/s)", fmt.Sprint(b.RatePerSec), fmt.Sprint(a.RatePerSec)},
			} {
				sv.Sizes = append(sv.Sizes, row)
			}
		}
		v.Shrunk = sv
	}
	return v
}

func huntRun(u results.HuntRun, root string) huntRunView {
	v := huntRunView{Run: u.Run, Seed: fmt.Sprint(u.Seed), Verdict: u.Verdict, Reason: clip(u.Reason, 400), Scenario: u.Scenario, Replay: u.Replay}
	v.Report, v.Files = dirLinks(root, u.Dir)
	return v
}

// growthPlot is the coverage after each run, a step line, with a marker
// at each finding; and a sentence on how much the last quarter of the
// runs added, which says whether the search has reached a plateau.
func growthPlot(h results.Hunt) (*plotView, string) {
	const height = 250.0
	p := &plotView{ID: "coverage-plot", Title: "Coverage over the hunt", W: plotW, H: height, X0: plotLeft, X1: plotW - plotRight,
		Y0: plotTop, Y1: height - plotBottom, YLabel: "coverage (sequences)", XLabel: "runs"}
	p.Caption = "How many distinct short sequences of observed events (leader changes, ISR sizes, errors answered, faults in effect; " +
		"in simulation also the kinds of lines the brokers log) the hunt had reached after each run. " +
		"A line that goes flat is a plateau: the runs no longer take the cluster anywhere new, and more of them are unlikely to find what these did not."
	if h.Options.Shard != nil {
		p.Caption += fmt.Sprintf(" The runs are numbered as in the whole hunt, of which this shard ran 1 in %d.", h.Options.Shard.Count)
	}
	g := h.Growth
	if len(g) == 0 {
		p.Empty = "No run has ended yet."
		return p, ""
	}
	last := g[len(g)-1]
	xs := func(run int) float64 {
		return r1(p.X0 + float64(run)/float64(max(last.Run, 1))*(p.X1-p.X0))
	}
	step := max(niceStep(float64(last.Run)/10), 1)
	// No tick under the axis's label, at the right end.
	for _, r := range tickValues(0, float64(last.Run)*0.9, step) {
		p.XTicks = append(p.XTicks, tick{Pos: xs(int(r)), Label: strconv.Itoa(int(r))})
	}
	top := niceStep(float64(max(last.Coverage, 1)) / 5)
	ys := linScale{lo: 0, hi: math.Ceil(float64(max(last.Coverage, 1))/top) * top, y0: p.Y0, y1: p.Y1}
	p.YTicks = ys.ticks(5, func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) })
	xy := [][2]float64{{xs(0), ys.y(0)}}
	prev := 0
	for _, pt := range g {
		// A step: the coverage rises at the run that reached it and
		// stays until the next point.
		xy = append(xy, [2]float64{xs(pt.Run), ys.y(float64(prev))}, [2]float64{xs(pt.Run), ys.y(float64(pt.Coverage))})
		prev = pt.Coverage
	}
	p.Lines = append(p.Lines, line{D: pathD(xy), Class: "tp ok", Title: fmt.Sprintf("coverage %d after run %d", last.Coverage, last.Run)})
	for _, f := range h.Findings {
		p.Markers = append(p.Markers, marker{X: xs(f.Run), Class: "finding", Title: fmt.Sprintf("finding at run %d: %s", f.Run, strings.Join(f.Anomalies, ", "))})
	}
	p.Legend = []legendItem{{Class: "tp ok", Shape: "line", Text: "coverage after each run"}}
	if len(h.Findings) > 0 {
		p.Legend = append(p.Legend, legendItem{Class: "finding", Shape: "tick", Text: "a finding (an invalid run)"})
	}
	if len(h.Growth) >= results.MaxHuntGrowth {
		p.Note = fmt.Sprintf("hunt.json keeps at most %d points of the growth: each rise is drawn at most %d runs late.", results.MaxHuntGrowth, last.Run/(results.MaxHuntGrowth-1)+1)
	}
	return p, plateau(g)
}

// plateau says how much coverage the last quarter of the runs added.
func plateau(g []results.HuntGrowth) string {
	last := g[len(g)-1]
	if last.Run < 8 || last.Coverage == 0 {
		return ""
	}
	from := last.Run - last.Run/4
	before := 0
	for _, pt := range g {
		if pt.Run > from {
			break
		}
		before = pt.Coverage
	}
	added := last.Coverage - before
	s := fmt.Sprintf("The last quarter of the runs (%d to %d) added %d sequences, %.1f%% of the coverage", from+1, last.Run, added, 100*float64(added)/float64(last.Coverage))
	if added == 0 {
		return s + ": a plateau."
	}
	return s + "."
}

func huntSettings(h results.Hunt) [][2]string {
	o := h.Options
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	budget := "none"
	switch {
	case o.Runs > 0 && o.Time > 0:
		budget = fmt.Sprintf("%d runs or %s", o.Runs, time.Duration(o.Time))
	case o.Runs > 0:
		budget = fmt.Sprintf("%d runs", o.Runs)
	case o.Time > 0:
		budget = time.Duration(o.Time).String()
	}
	shard := "all the runs"
	if o.Shard != nil {
		shard = fmt.Sprintf("%d/%d", o.Shard.Index, o.Shard.Count)
	}
	config := fmt.Sprintf("acks=%d, min.insync.replicas=%d, %s election", o.Config.Acks, o.Config.MinInsyncReplicas, cmp.Or(o.Config.Election, "clean"))
	if o.DrawConfig {
		config = "drawn per scenario"
	}
	bugs := "none"
	if len(o.Bugs) > 0 {
		bugs = strings.Join(o.Bugs, ", ")
	}
	rows := [][2]string{
		{"seed", fmt.Sprint(h.Seed)}, {"budget", budget}, {"parallel", fmt.Sprint(o.Parallel)}, {"feedback", yes(o.Feedback)},
		{"keep going after a finding", yes(o.KeepGoing)}, {"shrink budget (runs)", fmt.Sprint(o.ShrinkRuns)}, {"shard", shard},
		{"configuration under judgement", config}, {"bugs planted", bugs}, {"fault kinds drawn from", strings.Join(o.Kinds, ", ")},
		{"store", h.Store},
	}
	for _, k := range sortedKeys(h.Versions) {
		rows = append(rows, [2]string{k + " version", h.Versions[k]})
	}
	return rows
}
