package report

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/results"
)

// RunData is what a run's report is made from: a run directory's files,
// read. Every field may be missing; the report says what is.
type RunData struct {
	// Dir is the run's directory, shown in the heading (may be empty).
	Dir string
	// Config is test.json; nil if it could not be read.
	Config *results.TestConfig
	// Results is results.json; nil if the checkers never ran (an
	// interrupted run) or it could not be read.
	Results *checker.Results
	// Ops is the history, when the caller holds it in memory (a run just
	// judged, a test). LoadRun leaves it nil and reads History instead.
	Ops []history.Op
	// History is the history file, read as a stream when Ops is nil:
	// the report keeps what it draws, never the history whole.
	History string
	// Linearizability is a link, relative to the report, to porcupine's
	// visualization; empty if there is none.
	Linearizability string
	// Notes tell the reader what is missing or damaged.
	Notes []string
	// Progress, if set, is told how far reading History has come, a line
	// to show in place of the last: a day's history is read for minutes.
	Progress func(step string)

	// tl is the history as LoadRun read it.
	tl *timeline
}

// LoadRun reads a run directory for its report. It never fails: what
// cannot be read is left out and explained in Notes, so an interrupted or
// damaged run still gets a report that says what it lacks.
func LoadRun(runDir string) RunData { return loadRun(runDir, nil) }

// loadRun is LoadRun telling show (RunData.Progress) how far it has read.
func loadRun(runDir string, show func(string)) RunData {
	d := RunData{Dir: runDir, Progress: show}
	if tc, err := results.ReadTestConfig(filepath.Join(runDir, results.TestFile)); err == nil {
		d.Config = &tc
	} else {
		d.Notes = append(d.Notes, fmt.Sprintf("%s could not be read (%v): the configuration is unknown.", results.TestFile, shortErr(err)))
	}
	var resNote string
	var pe *fs.PathError
	if res, err := results.ReadResults(filepath.Join(runDir, results.ResultsFile)); err == nil {
		d.Results = res
	} else if errors.As(err, &pe) {
		resNote = fmt.Sprintf("%s could not be read (%v): the checkers have not judged this run (was it interrupted?). %s.", results.ResultsFile, shortErr(err), judgeAgain(runDir))
	} else {
		resNote = fmt.Sprintf("%s is damaged (%v): there is no verdict. %s.", results.ResultsFile, errors.Unwrap(err), judgeAgain(runDir))
	}
	d.History = filepath.Join(runDir, results.HistoryFile)
	d.tl = d.load()
	if resNote != "" {
		d.Notes = append(d.Notes, resNote)
	}
	d.Linearizability = linearizabilityLink(runDir)
	return d
}

// linearizabilityLink is the report's link to porcupine's visualization,
// or empty when the run has none.
func linearizabilityLink(runDir string) string {
	if _, err := os.Stat(filepath.Join(runDir, results.LinearizabilityFile)); err != nil {
		return ""
	}
	return results.LinearizabilityFile
}

// judgeAgain says how to give a run its verdict and this page after the
// fact: chaos check alone prints the verdict but stores nothing.
func judgeAgain(runDir string) string {
	return fmt.Sprintf("`%s` judges it, and `%s` then renders this page again",
		ShellJoin([]string{"chaos", "check", runDir, "--out", filepath.Join(runDir, results.ResultsFile)}), ShellJoin([]string{"chaos", "report", runDir}))
}

// shortErr drops the path from file errors: the report names the file.
func shortErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// WriteRun renders the run directory's report into report.html,
// atomically, telling show, if not nil, how far it has read the history.
func WriteRun(runDir string, show func(string)) error {
	return writeRunReport(loadRun(runDir, show))
}

// WriteJudgedRun writes the report of a run that was just judged, with
// the results the judging holds and, when the caller holds them (ops not
// nil), the history's operations; else the history is read from the run
// directory as a stream.
func WriteJudgedRun(runDir string, tc results.TestConfig, res *checker.Results, ops []history.Op, show func(string)) error {
	d := RunData{Dir: runDir, Config: &tc, Results: res, Ops: ops, Linearizability: linearizabilityLink(runDir), Progress: show}
	if ops == nil {
		d.History = filepath.Join(runDir, results.HistoryFile)
	}
	return writeRunReport(d)
}

// load reads the history into the report's timeline (see RunData.History),
// noting what could not be read.
func (d *RunData) load() *timeline {
	r := newTimelineReader()
	if d.needsIndex() {
		r.check = checker.NewBuilder(d.checkerConfig())
	}
	var sched results.Schedule
	if d.Config != nil {
		sched = d.Config.Schedule
	}
	if d.Ops != nil || d.History == "" {
		return r.read(d.Ops, sched)
	}
	// A history on disk may be of hours: the timeline's table of
	// operations, and the checkers' index where the report needs one,
	// are held in a file beside it (package offheap), not the heap.
	r.inFile(filepath.Dir(d.History))
	err := r.scan(d.History, d.Progress)
	if d.Progress != nil {
		d.Progress("drawing the page")
	}
	n := r.tl.len()
	switch {
	case errors.Is(err, history.ErrTornTail):
		d.Notes = append(d.Notes, fmt.Sprintf("%s ends in a torn line (the tester stopped while writing it); the report shows the %d operations before it.", results.HistoryFile, n))
	case err != nil && n > 0:
		d.Notes = append(d.Notes, fmt.Sprintf("%s is damaged (%v); the report shows the %d operations before the damage.", results.HistoryFile, shortErr(err), n))
	case err != nil:
		d.Notes = append(d.Notes, fmt.Sprintf("%s could not be read (%v): there are no operations to show.", results.HistoryFile, shortErr(err)))
	}
	return r.finish(sched)
}

// needsIndex says whether the report needs the checkers' index of the
// history: for what results.json would hold (the lost writes, the fault
// class) when there is none, or one written before it held the lost
// writes.
func (d *RunData) needsIndex() bool {
	if d.Results == nil {
		return true
	}
	if d.Results.LostWrites != nil {
		return false
	}
	for _, r := range d.Results.Results {
		if r.Name == checker.LostWriteName && r.Count > 0 {
			return true
		}
	}
	return false
}

// lostWrites are the history's lost writes, every one.
func (d *RunData) lostWrites(tl *timeline) []checker.LostAck {
	if tl.checked != nil {
		return checker.LostWrites(tl.checked)
	}
	return d.Results.LostWrites
}

func writeRunReport(d RunData) error {
	var buf bytes.Buffer
	if err := RenderRun(&buf, d); err != nil {
		return err
	}
	return results.WriteFileAtomic(filepath.Join(d.Dir, results.ReportFile), buf.Bytes())
}

// RenderRun writes d's report, one self-contained HTML page.
func RenderRun(w io.Writer, d RunData) error {
	if d.tl == nil {
		d.tl = d.load()
	}
	// The timeline's file is given back once the timeline is collected:
	// it must outlive the page drawn from it.
	defer runtime.KeepAlive(d.tl)
	return execute(w, "report", buildReport(d))
}

// Caps that keep a report of a long run small; each is said in the page.
const (
	maxHistoryRows = 3000
	maxLostRows    = 2000
	maxFaultRows   = 1000
)

type reportView struct {
	Title      string
	Dir        string
	Verdict    verdictView
	Notes      []string
	Problems   []string
	Guarantees []guaranteeRow
	ModelNote  string
	Config     []kvSection
	Replay     string
	OpCounts   []opCountRow
	Faults     []faultRow
	FaultsNote string
	// StrayCmds are fault commands no window owns (a final heal).
	StrayCmds []commandRow
	// Observed says what the run observed, before the verdict; Recovery
	// is each fault window's recovery.
	Observed  *observedView
	Recovery  []recoveryRow
	Liveness  *livenessView
	Stall     string
	Plots     []*plotView
	Anomalies []anomalyView
	Lost      []lostRow
	LostCount int
	LostNote  string
	Lin       string
	History   []historyRow
	HistNote  string
}

type verdictView struct {
	Class, Headline, Sentence string
	Expected                  string
	// Checks says which checks ran and which did not, and why: a check
	// the configuration gives nothing to judge, one the cluster cannot
	// support and one that lacked evidence are three things, and none of
	// them is a check that passed.
	Checks []checkLine
}

// checkLine is a line of the checks: a pill (Label, in Class) and what
// it says of which checks.
type checkLine struct {
	Class, Label, Text string
}

type guaranteeRow struct {
	Name, Anchor, Meaning  string
	Permitted, PermitClass string
	Status, StatusClass    string
	// Count is the instances found, empty for a check that did not judge
	// (not applicable, not checked).
	Count string
	// NA: the configuration gives the check nothing to judge.
	NA  bool
	Why reasons
}

// reasons is a row's "why": the model's lead (how the anomaly is judged)
// and what it permits and forbids, each reason once on the page: where a
// row's list holds reasons an earlier row gave, it names that row.
type reasons struct {
	Lead             string
	Permits, Forbids reasonList
}

type reasonList struct {
	// Kind is permitted or forbidden.
	Kind  string
	Parts []reasonPart
}

// reasonPart is reasons given here (Text), or given by the earlier row
// Ref: all of that row's list, or (Head set) a part of it, named by its
// first words.
type reasonPart struct {
	Text, Ref, Head string
}

type kvSection struct {
	Title string
	Rows  []kv
}

type kv struct{ K, V string }

type opCountRow struct {
	F                            string
	Invoke, OK, Info, Fail, Open int
	OKPct                        string
	IsClient                     bool
}

type faultRow struct {
	N                    int
	Fault, Targets       string
	Start, End, Duration string
	Sends, Acked, Note   string
	StartOp, EndOp       int64
	StartLink, EndLink   bool
	Commands             []commandRow
	CmdsFailed           int
}

// commandRow is one fault command the external runtime ran.
type commandRow struct {
	Op                   int64
	OpLink               bool
	F, Node, Action, Cmd string
	Log                  string // the node's log, with the whole output
	Exit, Took, Error    string
	Output               string
	OutputLines          int
	LongOutput, Failed   bool
}

type anomalyView struct {
	ID, Name      string
	Status, Class string
	// Long says what Status means at length, beside the pill, where it can
	// wrap: a pill does not, and a reason the cluster gave runs long.
	Long     string
	Count    int
	Why      string
	Details  [][]seg
	Examples []historyRow
	Lin      string
	Stats    []kv
	// Crashes are the crash anomaly's nodes as the history records them:
	// the panic's stack (simulation) or the end of the node's log.
	Crashes []crashView
}

// crashView is one crash operation of the history (history.Crash).
type crashView struct {
	Node, At, What string
	Stack, Log     string
}

// seg is a piece of text, or a link to an op in the history view.
type seg struct {
	Text string
	Op   int64
	Link bool
}

type lostRow struct {
	Value, Part       string
	Offset            int64
	AckTime           string
	Op, FinalRead     int64
	OpLink, FinalLink bool
}

type historyRow struct {
	Gap                 int // > 0: a row saying this many ops are not shown
	ID                  string
	Index               int64
	Time                string
	Process, Type, F    string
	Part, Detail, Error string
	Pair                int64
	PairLink            bool
	InView              bool // the history view shows this op
	Mark                bool // an op an anomaly or a lost write points at
}

// checkerConfig is the configuration the history was judged under: the
// results' own, else what test.json says, else the strictest promise.
func (d RunData) checkerConfig() checker.Config {
	switch {
	case d.Results != nil:
		return d.Results.Config
	case d.Config != nil:
		return d.Config.CheckerConfig()
	}
	return checker.Strictest()
}

func buildReport(d RunData) *reportView {
	tl := d.tl
	if tl == nil {
		tl = d.load()
	}
	v := &reportView{Dir: d.Dir, Notes: d.Notes, Lin: d.Linearizability}
	v.Title = "chaos run"
	if d.Config != nil && d.Config.Name != "" {
		v.Title = d.Config.Name
	}
	if d.Config != nil {
		tl.families = d.Config.FaultFamilies
	}
	lost := d.lostWrites(tl)
	v.verdict(d)
	v.observed(d, tl)
	v.guarantees(d, tl)
	v.config(d)
	v.opCounts(tl)
	xs := newXScale(tl.end)
	rf, minISR := 0, 0
	if d.Config != nil {
		rf, minISR = int(d.Config.Cluster.ReplicationFactor), int(d.Config.Cluster.MinInsyncReplicas)
	}
	// The page shows a few thousand operations in full (the excerpt, the
	// latency plot's points): read again, the rest never held.
	ex := newExcerpt(tl, d.Results, lost)
	lat := newLatency(tl, xs)
	if err := tl.fetch(d.History, ex.positions(), lat.positions()); err != nil {
		v.Notes = append(v.Notes, fmt.Sprintf("%s could not be read again for the operations shown in full (%v): they are shown without their values.", results.HistoryFile, shortErr(err)))
	}
	v.Plots = []*plotView{
		latencyPlot(tl, lat, lost, xs),
		throughputPlot(tl, xs),
		isrPlot(tl, xs, rf, minISR),
		hwPlot(tl, xs),
		unavailabilityPlot(tl, lost, xs),
	}
	v.anomalies(d, tl, ex)
	v.lost(lost, ex)
	v.History, v.HistNote = ex.rows()
	v.faults(tl, ex, d.Dir)
	if d.Results != nil {
		v.Problems = d.Results.Problems
	}
	return v
}

func (v *reportView) verdict(d RunData) {
	r := d.Results
	if r == nil {
		v.Verdict = verdictView{Class: "none", Headline: "NO VERDICT", Sentence: "The checkers have not judged this run: results.json is missing or damaged (see the notes below)."}
		return
	}
	switch r.Valid {
	case checker.Valid:
		v.Verdict = verdictView{Class: "valid", Headline: "VALID", Sentence: "No anomaly that this configuration promises to prevent was found."}
		if len(unsupported(r)) > 0 {
			v.Verdict.Sentence = "No anomaly that this configuration promises to prevent was found by the checks that ran."
		}
	case checker.Invalid:
		var parts []string
		for _, name := range r.Unexpected {
			res, _ := r.Get(name)
			parts = append(parts, fmt.Sprintf("%s (%d)", name, res.Forbidden))
		}
		v.Verdict = verdictView{Class: "invalid", Headline: "INVALID", Sentence: "Found anomalies this configuration promises not to have: " + strings.Join(parts, ", ") + "."}
	default:
		var parts []string
		for _, res := range r.Results {
			if res.Valid != checker.Valid && !res.Expected && res.Forbidden == 0 && !res.Unsupported && !res.NotApplicable {
				parts = append(parts, res.Name)
			}
		}
		sentence := "No forbidden anomaly was found, but some checkers could not judge: " + strings.Join(parts, ", ") + "."
		notes := verdictNotes(r)
		switch {
		case r.Config.Stopped != "":
			sentence = "The run " + r.Config.Stopped + ". The history is cut short there and had no final reads; what it holds was judged."
		case len(r.Faults) == 0 && len(r.FaultsNotStarted) > 0:
			sentence = "No fault started, though " + strings.Join(r.FaultsNotStarted, ", ") + " was asked for: the run tested a healthy cluster only."
		case len(parts) == 0 && len(notes) > 0:
			sentence = "No forbidden anomaly was found, but " + notes[0] + "."
		}
		v.Verdict = verdictView{Class: "unknown", Headline: "UNKNOWN", Sentence: sentence}
	}
	v.Verdict.Checks = checksRan(r)
	if w := weakened(r); len(w) > 0 {
		// Next to the verdict: a fault applied in part is not the test
		// its name promises.
		v.Verdict.Checks = append(v.Verdict.Checks, checkLine{"unknown", "weakened",
			"Faults that ran weaker than documented (asked for with --allow-weakened-faults; the verdict speaks of them as they ran): " + strings.Join(w, "; ") + "."})
	}
	// What limits the verdict: faults that never ran, an empty history.
	// The checks the cluster cannot support are in Checks already.
	v.Notes = append(verdictNotes(r), v.Notes...)
	if len(r.Expected) > 0 {
		var parts []string
		for _, name := range r.Expected {
			res, _ := r.Get(name)
			parts = append(parts, fmt.Sprintf("%s (%d)", name, res.Count))
		}
		v.Verdict.Expected = "Anomalies seen that this configuration permits (they do not make the run invalid): " + strings.Join(parts, ", ") + "."
	}
}

func (v *reportView) guarantees(d RunData, tl *timeline) {
	var perm map[string]checker.Permission
	switch {
	case d.Results != nil:
		c := d.Results.Config
		ran := "no fault ran"
		if len(d.Results.Faults) > 0 {
			ran = "faults that ran: " + strings.Join(d.Results.Faults, ", ")
		}
		v.ModelNote = fmt.Sprintf("Judged for acks=%d, min.insync.replicas=%d, %s election, fault class %s (%s).", c.Acks, c.MinInsyncReplicas, cmp.Or(c.Election, "clean"), d.Results.FaultClass, ran)
	case d.Config != nil:
		cfg := d.Config.CheckerConfig()
		class := tl.checked.FaultClass()
		perm = checker.PermittedUnder(cfg, class)
		v.ModelNote = fmt.Sprintf("What the guarantee model permits for acks=%d, min.insync.replicas=%d, %s election, fault class %s (the faults the history shows started). Nothing was checked: there are no results.",
			cfg.Acks, cfg.MinInsyncReplicas, cmp.Or(cfg.Election, "clean"), class)
	default:
		v.ModelNote = "Neither results nor the configuration could be read: nothing is known of the guarantees."
		return
	}
	given := &givenReasons{}
	for _, name := range checker.Names() {
		row := guaranteeRow{Name: name, Meaning: checker.Meaning(name)}
		stance, why := "no", ""
		if d.Results != nil {
			res, ok := d.Results.Get(name)
			if !ok {
				continue
			}
			stance, why, row.Count = res.Stance(), res.Why, strconv.Itoa(res.Count)
			row.Status, _, row.StatusClass = status(res)
			if res.Forbidden > 0 && res.Forbidden < res.Count {
				row.Status = fmt.Sprintf("%s (%d forbidden)", row.Status, res.Forbidden)
			}
			if res.Valid != checker.Valid || len(res.Details) > 0 {
				row.Anchor = "anomaly-" + name
			}
			if !res.Judged() {
				row.Count = ""
			}
			row.NA = res.NotApplicable
		} else {
			p := perm[name]
			stance, why = map[bool]string{true: "yes", false: "no"}[p.Permitted], p.Why
			if p.Permitted && !p.All {
				stance = "partly"
			}
			row.Status, row.StatusClass = "not checked", "none"
		}
		switch {
		case row.NA:
			// What the model would permit does not matter where there is
			// nothing to judge.
			row.Permitted, row.PermitClass = "not applicable", "na"
		case stance == "yes":
			row.Permitted, row.PermitClass = "permitted", "permitted"
		case stance == "partly":
			row.Permitted, row.PermitClass = "permitted for some causes", "permitted"
		default:
			row.Permitted, row.PermitClass = "not permitted", "forbidden"
		}
		row.Why = given.reasons(name, why)
		v.Guarantees = append(v.Guarantees, row)
	}
}

// givenReasons are the lists of reasons the rows above gave, by row.
type givenReasons struct {
	names, lists []string
}

// reasons splits a permission's why (checker.Permission.Why: "LEAD.
// permitted: REASONS. forbidden: REASONS", the reasons joined by "; ")
// into its parts; a list, or a run of its reasons, that an earlier row
// gave is named by that row, and so is a part of an earlier list. It
// remembers the reasons this row gives.
func (g *givenReasons) reasons(name, why string) reasons {
	r := reasons{Permits: reasonList{Kind: "permitted"}, Forbids: reasonList{Kind: "forbidden"}}
	rest := why
	var permits, forbids string
	if i := strings.Index(rest, "forbidden: "); i >= 0 && (i == 0 || strings.HasSuffix(rest[:i], ". ")) {
		forbids, rest = rest[i+len("forbidden: "):], strings.TrimSuffix(rest[:i], ". ")
	}
	if i := strings.Index(rest, "permitted: "); i >= 0 && (i == 0 || strings.HasSuffix(rest[:i], ". ")) {
		permits, rest = rest[i+len("permitted: "):], strings.TrimSuffix(rest[:i], ". ")
	}
	r.Lead = rest
	r.Permits.Parts, r.Forbids.Parts = g.parts(permits), g.parts(forbids)
	for _, l := range []reasonList{r.Permits, r.Forbids} {
		for _, p := range l.Parts {
			if p.Text != "" {
				g.names, g.lists = append(g.names, name), append(g.lists, p.Text)
			}
		}
	}
	return r
}

// parts is a list of reasons as the rows above leave it: what they gave,
// by their names.
func (g *givenReasons) parts(list string) []reasonPart {
	if list == "" {
		return nil
	}
	parts := []reasonPart{{Text: list}}
	for i, given := range g.lists {
		var out []reasonPart
		for _, p := range parts {
			switch {
			case p.Text == "":
				out = append(out, p)
			case p.Text == given:
				out = append(out, reasonPart{Ref: g.names[i]})
			case strings.Contains(given, p.Text):
				out = append(out, reasonPart{Ref: g.names[i], Head: firstWords(p.Text)})
			default:
				out = append(out, splitAt(p.Text, given, g.names[i])...)
			}
		}
		parts = out
	}
	return parts
}

// splitAt names the reasons given (a run of whole reasons of text, "; "
// apart) by the row that gave them, and keeps the rest as text.
func splitAt(text, given, ref string) []reasonPart {
	for _, at := range []struct{ pre, post string }{{"", "; "}, {"; ", "; "}, {"; ", ""}} {
		needle := at.pre + given + at.post
		i := strings.Index(text, needle)
		if i < 0 || at.pre == "" && i != 0 || at.post == "" && i+len(needle) != len(text) {
			continue
		}
		var out []reasonPart
		if before := text[:i]; before != "" {
			out = append(out, reasonPart{Text: before})
		}
		out = append(out, reasonPart{Ref: ref})
		if after := text[i+len(needle):]; after != "" {
			out = append(out, reasonPart{Text: after})
		}
		return out
	}
	return []reasonPart{{Text: text}}
}

// firstWords is a reason's head: up to its first colon, or its first
// words.
func firstWords(s string) string {
	if i := strings.Index(s, ": "); i > 0 && i <= 60 {
		return s[:i]
	}
	return clip(s, 60)
}

// unsupported are the results of the checks the cluster cannot support.
func unsupported(r *checker.Results) []checker.Result {
	var out []checker.Result
	for _, x := range r.Results {
		if x.Unsupported {
			out = append(out, x)
		}
	}
	return out
}

// verdictNotes are the results' notes but those that only repeat that a
// check the cluster cannot support was not checked.
func verdictNotes(r *checker.Results) []string {
	var out []string
	for _, n := range r.Notes {
		if !slices.ContainsFunc(unsupported(r), func(x checker.Result) bool { return strings.HasPrefix(n, x.Name+" not checked: ") }) &&
			!slices.ContainsFunc(slices.Collect(maps.Keys(r.Weakened)), func(k string) bool { return strings.HasPrefix(n, k+" ran weakened (") }) {
			out = append(out, n)
		}
	}
	return out
}

// checksRan says how many checks ran, and names those that did not: the
// ones the cluster cannot support, left out of the verdict, apart from
// the ones that lacked evidence, which leave it unknown.
func checksRan(r *checker.Results) []checkLine {
	var cannot, noEvidence, na []string
	for _, x := range r.Results {
		switch {
		case x.NotApplicable:
			na = append(na, fmt.Sprintf("%s (%s)", x.Name, x.NotChecked))
		case x.Unsupported:
			cannot = append(cannot, fmt.Sprintf("%s (%s)", x.Name, x.NotChecked))
		case x.Valid == checker.Unknown && x.NotChecked != "":
			noEvidence = append(noEvidence, fmt.Sprintf("%s (%s)", x.Name, x.NotChecked))
		}
	}
	if len(cannot)+len(noEvidence)+len(na) == 0 {
		return nil
	}
	ran := len(r.Results) - len(cannot) - len(noEvidence) - len(na)
	out := []checkLine{{Text: fmt.Sprintf("Checked: %d of %d checks.", ran, len(r.Results))}}
	if len(na) > 0 {
		out = append(out, checkLine{"na", "n/a", "Not applicable to this configuration, which gives them nothing to judge (left out of the verdict): " + strings.Join(na, "; ") + "."})
	}
	if len(cannot) > 0 {
		out = append(out, checkLine{"none", "not supported", "Not checked, because the cluster cannot support it (left out of the verdict): " + strings.Join(cannot, "; ") + "."})
	}
	if len(noEvidence) > 0 {
		out = append(out, checkLine{"unknown", "not checked", "Not checked, for want of evidence (the verdict cannot speak of them): " + strings.Join(noEvidence, "; ") + "."})
	}
	return out
}

// status says what a checker's result means for the run, briefly and at
// length, with the class that colours it.
func status(r checker.Result) (short, long, class string) {
	switch {
	case r.Forbidden > 0:
		return "FOUND: violation", "violation: the configuration promises this never happens", "invalid"
	case r.Valid == checker.Invalid && !r.Expected:
		return "found, cause undecided", "seen; whether its cause is one the configuration permits could not be told", "unknown"
	case r.Valid == checker.Invalid:
		return "found (permitted)", "seen, and permitted by the configuration", "expected"
	case r.NotApplicable:
		return "n/a", "not applicable to this configuration: " + r.NotChecked, "na"
	case r.Unsupported:
		return "not checked", "not checked: the cluster cannot support it: " + r.NotChecked, "none"
	case r.Valid == checker.Unknown && r.NotChecked != "":
		return "not checked", "not checked: " + r.NotChecked, "unknown"
	case r.Valid == checker.Unknown:
		return "could not judge", "could not judge", "unknown"
	}
	return "not found", "not found", "valid"
}

func (v *reportView) config(d RunData) {
	tc := d.Config
	if tc == nil {
		return
	}
	run := kvSection{Title: "Run", Rows: []kv{
		{"test", tc.Name},
		{"seed", strconv.FormatUint(tc.Seed, 10)},
		{"started", cmp.Or(stamp(tc.Start), "unknown")},
	}}
	for _, k := range sortedKeys(tc.Versions) {
		run.Rows = append(run.Rows, kv{"version of " + k, tc.Versions[k]})
	}
	c := tc.Cluster
	cl := kvSection{Title: "Cluster", Rows: []kv{
		{"runtime", c.Runtime},
		// A delay fault means something else with each mechanism.
		{"network delays", delaysBy(c.DelayMechanism)},
		{"brokers", strconv.Itoa(c.Nodes)},
		{"replication factor", strconv.Itoa(int(c.ReplicationFactor))},
		{"min.insync.replicas", strconv.Itoa(int(c.MinInsyncReplicas))},
		{"election", cmp.Or(c.Election, "clean")},
		{"session timeout", fmt.Sprintf("%d ms", c.SessionTimeoutMs)},
		{"replica.lag.time.max", fmt.Sprintf("%d ms", c.ReplicaLagTimeMaxMs)},
		{"replica.lag.max.messages", strconv.FormatInt(c.ReplicaLagMaxMessage, 10)},
		{"fsync", c.Fsync},
		{"lose unsynced writes on kill", strconv.FormatBool(c.LoseUnsynced)},
		// A run with planted bugs tests the tester, not the broker.
		{"planted bugs", cmp.Or(strings.Join(c.Bugs, ", "), "none")},
	}}
	if c.Runtime == "external" || c.External != nil {
		cl = externalCluster(c)
	}
	w := tc.Workload
	rate := "unthrottled"
	if w.Rate > 0 {
		rate = strconv.FormatFloat(w.Rate, 'f', -1, 64) + " sends/s"
	}
	wl := kvSection{Title: "Workload", Rows: []kv{
		{"topic", w.Topic},
		{"partitions", strconv.Itoa(int(w.Partitions))},
		{"acks", strconv.Itoa(int(w.Acks))},
		{"producers", strconv.Itoa(w.Concurrency)},
		{"consumers", strconv.Itoa(w.Consumers)},
		{"rate", rate},
		{"time limit", w.TimeLimit.String()},
		{"request timeout", w.RequestTimeout.String()},
		// What a producer does after an error decides whether duplicates
		// are permitted (docs/guarantees.md).
		{"retries", strconv.Itoa(w.Retries)},
		{"idempotent producer", strconv.FormatBool(w.Idempotent)},
		// Several requests in flight permit reordering unless the
		// producer is idempotent.
		{"max in flight", strconv.Itoa(w.InFlight())},
	}}
	faults := "none"
	if len(tc.Nemesis) > 0 {
		faults = strings.Join(tc.Nemesis, ", ")
	}
	nem := kvSection{Title: "Faults", Rows: []kv{
		{"fault kinds asked for", faults},
		{"planned windows", strconv.Itoa(len(tc.Schedule))},
		{"kinds overlapping in a window, at most", strconv.Itoa(max(tc.NemesisOverlap, 1))},
	}}
	if tc.NemesisInterval > 0 {
		iv := tc.NemesisInterval.String()
		if tc.NemesisIntervalChosen {
			iv += " (not given: chosen for the kinds asked for and the time limit)"
		}
		nem.Rows = append(nem.Rows, kv{"nemesis interval", iv})
	}
	if len(tc.Schedule) > 0 {
		// The windows themselves, in the form chaos sim --schedule takes:
		// what a shrunk run kept is what its replay runs.
		how := "drawn from the seed"
		if tc.ScheduleGiven {
			how = "given (--schedule)"
		}
		nem.Rows = append(nem.Rows, kv{"schedule", tc.Schedule.String() + " (" + how + ")"})
	}
	if r := d.Results; r != nil {
		ran := "none"
		if len(r.Faults) > 0 {
			ran = strings.Join(r.Faults, ", ")
		}
		if len(r.FaultWindows) > 0 {
			var counts []string
			for _, k := range r.Faults {
				n := r.FaultWindows[k]
				counts = append(counts, fmt.Sprintf("%s (%d window%s)", k, n, map[bool]string{true: "s"}[n != 1]))
			}
			ran = strings.Join(counts, ", ")
		}
		nem.Rows = append(nem.Rows, kv{"fault kinds that ran", ran}, kv{"fault class judged", r.FaultClass})
		if len(r.FaultsNotStarted) > 0 {
			nem.Rows = append(nem.Rows, kv{"never started", strings.Join(r.FaultsNotStarted, ", ")})
		}
	}
	nem.Rows = append(nem.Rows, kv{"convergence timeout", tc.Converge.String()})
	if cv := tc.Convergence; cv != nil {
		s := fmt.Sprintf("converged after %s", cv.Waited)
		if !cv.Converged {
			s = fmt.Sprintf("did not converge within %s: %s", cv.Waited, cv.Why)
		}
		nem.Rows = append(nem.Rows, kv{"final phase", s})
	}
	v.Config = []kvSection{run, cl, wl, nem}
	v.Replay = replayCommand(tc)
}

// externalActions are the fault actions an external run takes commands
// for, in the order chaos run documents its --ACTION-cmd flags.
var externalActions = history.Strings(history.CommandActions())

// externalCluster is the Cluster section of a run against a cluster the
// tester did not start: what was reached and how it was faulted. The
// broker settings the tester gives its own brokers are the cluster's own
// there, unknown to the run, so they are not shown as if they were set.
func externalCluster(c results.ClusterConfig) kvSection {
	cl := kvSection{Title: "Cluster (not started by chaos)", Rows: []kv{{"runtime", c.Runtime}}}
	x := c.External
	if x == nil {
		x = &results.External{}
		cl.Rows = append(cl.Rows, kv{"cluster", "test.json does not describe it"})
	}
	cl.Rows = append(cl.Rows, kv{"bootstrap", cmp.Or(strings.Join(x.Bootstrap, ", "), "unknown")})
	if len(x.Nodes) == 0 {
		cl.Rows = append(cl.Rows, kv{"nodes", "none named (no fault could be aimed at a node)"})
	}
	for _, n := range x.Nodes {
		role := fmt.Sprintf("broker %d", n.ID)
		if n.ID < 0 {
			role = "controller"
		}
		cl.Rows = append(cl.Rows, kv{"node " + n.Name, fmt.Sprintf("%s (%s)", n.Addr, role)})
	}
	cl.Rows = append(cl.Rows,
		kv{"brokers", strconv.Itoa(c.Nodes)},
		kv{"replication factor", strconv.Itoa(int(c.ReplicationFactor))},
		kv{"min.insync.replicas", strconv.Itoa(int(c.MinInsyncReplicas))},
		kv{"election", cmp.Or(c.Election, "clean")})
	topic := "created by the run"
	if x.TopicExisted {
		topic = "the user's existing topic, judged by its settings as found"
	}
	cl.Rows = append(cl.Rows, kv{"topic", topic})
	if c.DelayMechanism != "" {
		cl.Rows = append(cl.Rows, kv{"network delays", delaysBy(c.DelayMechanism)})
	}
	actions := slices.Clone(externalActions)
	for _, a := range sortedKeys(x.Commands) {
		if !slices.Contains(actions, a) {
			actions = append(actions, a)
		}
	}
	for _, a := range actions {
		cl.Rows = append(cl.Rows, kv{a + " command", cmp.Or(x.Commands[a], "not given")})
	}
	if c.ReplicaLagTimeMaxMs > 0 {
		// Asked of a broker: slow faults delay links beyond it.
		cl.Rows = append(cl.Rows, kv{"replica.lag.time.max", fmt.Sprintf("%d ms (as a broker described it)", c.ReplicaLagTimeMaxMs)})
		cl.Rows = append(cl.Rows, kv{"session timeout, replica.lag.max.messages, fsync", "the cluster's own (not known to the run)"})
	} else {
		cl.Rows = append(cl.Rows, kv{"session timeout, replica.lag.*, fsync", "the cluster's own (not known to the run)"})
	}
	for _, n := range x.Notes {
		cl.Rows = append(cl.Rows, kv{"assumed", n})
	}
	for _, name := range sortedKeys(c.Unsupported) {
		cl.Rows = append(cl.Rows, kv{"cannot support " + name, c.Unsupported[name]})
	}
	return cl
}

// replayCommand is the command that repeats the run: the one recorded,
// with the seed added if it was drawn at random.
func replayCommand(tc *results.TestConfig) string {
	args := slices.Clone(tc.Command)
	if len(args) == 0 {
		return ""
	}
	hasSeed := false
	for _, a := range args {
		if a == "--seed" || strings.HasPrefix(a, "--seed=") {
			hasSeed = true
		}
	}
	if !hasSeed {
		args = append(args, "--seed", strconv.FormatUint(tc.Seed, 10))
	}
	return commandLine(args)
}

// commandLine is a recorded command (os.Args) to paste into a shell: the
// program by its base name, since the recorded path may be a build
// directory or another machine's (with either separator).
func commandLine(args []string) string {
	if len(args) == 0 {
		return ""
	}
	args = slices.Clone(args)
	args[0] = path.Base(strings.ReplaceAll(args[0], `\`, "/"))
	return ShellJoin(args)
}

// ShellJoin quotes each argument that a POSIX shell would split or expand,
// and joins them into one command line.
func ShellJoin(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = a
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$;&|<>*?()[]{}!#~`") {
			quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(quoted, " ")
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// opCounts counts what the history holds per function, client functions
// first.
func (v *reportView) opCounts(tl *timeline) {
	rows := map[string]*opCountRow{}
	get := func(f string) *opCountRow {
		r := rows[f]
		if r == nil {
			r = &opCountRow{F: f}
			rows[f] = r
		}
		return r
	}
	for i := range tl.all() {
		o := tl.op(i)
		r := get(tl.f(o))
		r.IsClient = r.IsClient || o.process != history.NemesisProcess
		switch o.Type() {
		case history.Invoke:
			r.Invoke++
			if tl.pair(i) < 0 {
				r.Open++
			}
		case history.OK:
			r.OK++
		case history.Fail:
			r.Fail++
		default:
			r.Info++
		}
	}
	order := []string{history.Send, history.Poll, history.EndOffset, history.FinalRead, history.ReplicaRead, history.Monitor}
	rank := func(f string) int {
		if i := slices.Index(order, f); i >= 0 {
			return i
		}
		return len(order)
	}
	keys := sortedKeys(rows)
	slices.SortStableFunc(keys, func(a, b string) int { return rank(a) - rank(b) })
	for _, k := range keys {
		r := rows[k]
		if r.Invoke > 0 && r.IsClient {
			r.OKPct = fmt.Sprintf("%.1f%%", 100*float64(r.OK)/float64(r.Invoke))
		}
		v.OpCounts = append(v.OpCounts, *r)
	}
}

func (v *reportView) faults(tl *timeline, ex *excerpt, dir string) {
	logs := nodeLogs{dir: dir, known: map[string]string{}}
	for i, f := range tl.faults {
		if i == maxFaultRows {
			v.FaultsNote = fmt.Sprintf("Only the first %d of %d fault windows are listed.", maxFaultRows, len(tl.faults))
			break
		}
		sent := f.sends[kOK] + f.sends[kInfo] + f.sends[kFail]
		row := faultRow{N: i + 1, Fault: f.Fault, Targets: joinTargets(f.Targets), Start: secs(f.Start), End: secs(f.End), Duration: dur(f.End - f.Start),
			Sends:   fmt.Sprintf("%d ok, %d info, %d fail", f.sends[kOK], f.sends[kInfo], f.sends[kFail]),
			StartOp: f.StartOp, EndOp: f.EndOp}
		row.Acked = "no sends"
		if sent > 0 {
			row.Acked = fmt.Sprintf("%.1f%%", 100*float64(f.sends[kOK])/float64(sent))
		}
		row.StartLink, row.EndLink = ex.has(f.StartOp), ex.has(f.EndOp)
		switch {
		case f.Planned:
			row.Note = "planned (the history records no nemesis operations)"
		case f.Open:
			row.Note = "never stopped; ends at the next heal or the end of the history"
		}
		if f.Error != "" {
			row.Note = strings.TrimSpace(row.Note + " error: " + f.Error)
		}
		for _, c := range f.Cmds {
			cr := commandView(c, ex, logs.of(c.Node))
			row.Commands = append(row.Commands, cr)
			if cr.Failed {
				row.CmdsFailed++
			}
		}
		v.Faults = append(v.Faults, row)
	}
	for _, c := range tl.strayCmds {
		v.StrayCmds = append(v.StrayCmds, commandView(c, ex, logs.of(c.Node)))
	}
}

// nodeLogs finds the node logs of an external run, RUN/cluster/NAME.log,
// which keep each command's whole output where the history keeps a tail.
type nodeLogs struct {
	dir   string
	known map[string]string
}

// of is the link, relative to the report, to node's log, or "".
func (l nodeLogs) of(node string) string {
	if l.dir == "" || node == "" || strings.ContainsAny(node, `/\`) {
		return ""
	}
	link, ok := l.known[node]
	if !ok {
		if _, err := os.Stat(filepath.Join(l.dir, "cluster", node+".log")); err == nil {
			link = "cluster/" + node + ".log"
		}
		l.known[node] = link
	}
	return link
}

// Output longer than this many lines or bytes is folded away: the full
// output is in the node's log.
const (
	shortOutputLines = 3
	shortOutputBytes = 300
)

func commandView(c faultCmd, ex *excerpt, log string) commandRow {
	out := strings.TrimRight(c.Output, "\n")
	r := commandRow{Op: c.Op, OpLink: ex.has(c.Op), F: c.F, Node: c.Node, Log: log, Action: c.Action, Cmd: c.Cmd,
		Exit: strconv.Itoa(c.Exit), Took: "< 1 ms", Error: c.Error, Output: out,
		Failed: c.Exit != 0 || c.Error != ""}
	if c.Exit < 0 {
		r.Exit = "no exit"
	}
	if r.Failed {
		if c.Exit >= 0 {
			r.Exit = "exit " + r.Exit
		}
		r.Exit = "FAILED: " + r.Exit
	}
	if c.Millis > 0 {
		r.Took = dur(c.Millis * 1e6)
	}
	if out != "" {
		r.OutputLines = strings.Count(out, "\n") + 1
	}
	r.LongOutput = r.OutputLines > shortOutputLines || len(out) > shortOutputBytes
	return r
}

// joinTargets lists a fault's targets; a "|" the nemesis puts between
// the two sides of a partition stays a separator of its own.
func joinTargets(ts []string) string {
	var sb strings.Builder
	for i, t := range ts {
		switch {
		case t == "|" || (i > 0 && ts[i-1] == "|"):
			sb.WriteString(" ")
		case i > 0:
			sb.WriteString(", ")
		}
		sb.WriteString(t)
	}
	return sb.String()
}

var opRef = regexp.MustCompile(`\bops? (\d+)\b`)

// segments splits a checker's detail into text and links to the ops it
// names ("op 123"), where the history view has them.
func segments(s string, ex *excerpt) []seg {
	var out []seg
	last := 0
	for _, m := range opRef.FindAllStringSubmatchIndex(s, -1) {
		idx, err := strconv.ParseInt(s[m[2]:m[3]], 10, 64)
		if err != nil || !ex.has(idx) {
			continue
		}
		out = append(out, seg{Text: s[last:m[2]]}, seg{Text: s[m[2]:m[3]], Op: idx, Link: true})
		last = m[3]
	}
	return append(out, seg{Text: s[last:]})
}

func (v *reportView) anomalies(d RunData, tl *timeline, ex *excerpt) {
	if d.Results == nil {
		return
	}
	for _, r := range d.Results.Results {
		if r.Valid == checker.Valid && len(r.Details) == 0 {
			continue
		}
		a := anomalyView{ID: "anomaly-" + r.Name, Name: r.Name, Count: r.Count, Why: r.Why}
		a.Status, a.Long, a.Class = status(r)
		for _, det := range r.Details {
			a.Details = append(a.Details, segments(det, ex))
		}
		for _, e := range r.Examples {
			p := tl.pos(e)
			if p < 0 {
				continue
			}
			if q := tl.pair(p); q >= 0 && int(q) < p {
				a.Examples = append(a.Examples, ex.row(int(q), false))
			}
			a.Examples = append(a.Examples, ex.row(p, true))
			if q := tl.pair(p); q >= 0 && int(q) > p {
				a.Examples = append(a.Examples, ex.row(int(q), false))
			}
		}
		for _, k := range sortedKeys(r.Stats) {
			a.Stats = append(a.Stats, kv{k, strconv.FormatInt(r.Stats[k], 10)})
		}
		if (r.Name == checker.NonlinearizableSendName || r.Name == checker.StaleReadName) && r.Valid == checker.Invalid {
			a.Lin = d.Linearizability
		}
		if r.Name == checker.CrashName && r.Count > 0 {
			a.Crashes = crashes(tl)
		}
		v.Anomalies = append(v.Anomalies, a)
	}
}

// crashes are the crash operations of the history (each completion), the
// first MaxExamples of them, as the crash anomaly's details are.
func crashes(tl *timeline) []crashView {
	var out []crashView
	for _, pos := range tl.crashes[:min(len(tl.crashes), checker.MaxExamples)] {
		op := tl.kept[pos]
		c := op.Value.Crashed()
		var how []string
		if c.Exit != "" {
			how = append(how, c.Exit)
		}
		if c.Panic != "" {
			how = append(how, "panic: "+c.Panic)
		}
		out = append(out, crashView{Node: c.Node, At: secs(op.Time), What: strings.Join(how, ": "), Stack: c.Stack, Log: c.Log})
	}
	return out
}

func (v *reportView) lost(lost []checker.LostAck, ex *excerpt) {
	v.LostCount = len(lost)
	for i, l := range lost {
		if i == maxLostRows {
			v.LostNote = fmt.Sprintf("The first %d of %d lost writes are listed.", maxLostRows, len(lost))
			break
		}
		v.Lost = append(v.Lost, lostRow{Value: l.Value, Part: fmt.Sprintf("%s-%d", l.Topic, l.Partition), Offset: l.Offset, AckTime: secs(l.Time),
			Op: l.Op, FinalRead: l.FinalRead, OpLink: ex.has(l.Op), FinalLink: ex.has(l.FinalRead)})
	}
}

// clip shortens s to at most n runes.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// delaysBy describes test.json's delay_mechanism: whether a delay fault was
// latency (a delay line or netem) or a starved link (an HTB rate).
func delaysBy(m string) string {
	switch m {
	case "":
		return "none (no network faults)"
	case "proxy":
		return "proxy (the tester's userspace delay line)"
	case "userspace":
		return "userspace delay line (a relay beside each broker; the kernel has no netem)"
	case "htb-rate":
		return "htb-rate (a rate limit: a delayed link is starved, not only late)"
	}
	return m
}
