package campaign

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/internal/cli"
	"github.com/chaos-isr/chaos/internal/statusline"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/results/report"
	"github.com/chaos-isr/chaos/runner"
)

// A campaign for people, as chaos campaign prints it: the dry run's
// listing, a line per run as it goes and the summary at the end. It lives
// here rather than in results/report, beside the run's text, because it
// speaks of plans and runs as they go, which only this package knows.

// WriteDryRun writes what chaos campaign --dry-run prints: the seed, the
// size of the plan, its shard, the spec in the spec file format, and each
// planned run with its seed and the chaos command that runs it.
func WriteDryRun(out io.Writer, spec Spec, plan *Plan, seed uint64) {
	planned := plan.PlannedRuns()
	data, _ := json.MarshalIndent(spec, "", "  ")
	fmt.Fprintf(out, "seed %d\n%d cells x %d runs, each %s\n%sspec:\n%s\n", seed, len(plan.Cells), spec.Runs, time.Duration(spec.TimeLimit), plan.shardLine(), data)
	for i, r := range planned {
		c := plan.Cells[r.Cell]
		s := RunSeed(seed, c.Name, r.Run)
		fmt.Fprintf(out, "[%d/%d] %s run %d/%d seed %d: chaos %s --seed %d\n", i+1, len(planned), c.Label, r.Run, spec.Runs, s, report.ShellJoin(c.Args), s)
	}
}

// shardLine says which of the runs a shard runs; nothing for a whole
// campaign.
func (p *Plan) shardLine() string {
	if p.Shard.Whole() {
		return ""
	}
	return fmt.Sprintf("shard %s: %d of the %d runs\n", p.Shard, p.Runs(), len(p.Cells)*p.Spec.Runs)
}

// Show sets the hooks of o that show the plan's campaign on out as it
// goes: where it is kept and how long it takes, a line per run that says
// how it ended (on a terminal, rewritten once a second while the run
// goes, when one goes at a time), and the interrupt. A page that could
// not be written is said on errOut. Set Parallel first.
func (o *Options) Show(plan *Plan, out, errOut io.Writer) {
	line := statusline.New(out)
	parallel := max(o.Parallel, 1)
	o.Started = func(dir string, rec *results.Campaign) {
		fmt.Fprintf(out, "campaign %s\nseed %d\n%d cells x %d runs, each %s (about %s in all)\n%s",
			dir, rec.Seed, len(plan.Cells), plan.Spec.Runs, time.Duration(plan.Spec.TimeLimit), (plan.Estimate() / time.Duration(parallel)).Round(time.Second), plan.shardLine())
	}
	o.RunEnded = func(p Progress, rr results.CampaignRun) {
		took := time.Duration(rr.Seconds * float64(time.Second))
		// A simulated run takes a second or less: whole seconds would
		// say nothing.
		if plan.Spec.Runtime == runner.RuntimeSim {
			took = took.Round(10 * time.Millisecond)
		} else {
			took = took.Round(time.Second)
		}
		s := runPrefix(p) + " " + describeRun(rr) + " " + took.String()
		if p.Left > 0 {
			s += fmt.Sprintf(", ~%s left", p.Left.Round(time.Second))
		}
		line.Finish(s)
	}
	o.Interrupted = func() {
		what := "the current run"
		if parallel > 1 {
			what = "the runs going"
		}
		fmt.Fprintf(out, "\ninterrupted: stopping %s (interrupt again to kill it)\n", what)
	}
	o.IndexError = func(err error) { fmt.Fprintf(errOut, "chaos: campaign index not written: %v\n", err) }
	// Several runs at once have no one line to show: each says only how
	// it ended.
	if parallel == 1 {
		o.RunStarted = func(p Progress) { line.Begin(runPrefix(p)) }
	}
	if line.TTY {
		o.Tick = func(p Progress, elapsed time.Duration) {
			el := elapsed.Round(time.Second)
			if el <= p.TimeLimit {
				line.Show(fmt.Sprintf("%s %s/%s", runPrefix(p), el, p.TimeLimit))
			} else {
				line.Show(fmt.Sprintf("%s final reads and checks %s", runPrefix(p), el))
			}
		}
	}
}

// runPrefix begins a run's progress line: "[14/36] acks=1 isr=1 clean
// partition-leader run 1/1 ...".
func runPrefix(p Progress) string {
	return fmt.Sprintf("[%d/%d] %s run %d/%d ...", p.N, p.Total, p.Cell.Label, p.Run, p.Cell.Summary.Planned)
}

func describeRun(rr results.CampaignRun) string {
	s := strings.ToUpper(rr.Verdict)
	if notes := runNotes(rr); len(notes) > 0 {
		s += " (" + strings.Join(notes, "; ") + ")"
	}
	return s
}

// runNotes say what a run found beside its verdict: the anomalies
// unexpected, unknown (when they made it unknown), not checked and
// permitted (with their instances), faults that never bit, its error.
func runNotes(rr results.CampaignRun) []string {
	var notes []string
	if len(rr.Unexpected) > 0 {
		notes = append(notes, "unexpected: "+strings.Join(rr.Unexpected, ", "))
	}
	if len(rr.Unknown) > 0 && rr.Verdict == VerdictUnknown {
		notes = append(notes, "unknown: "+strings.Join(rr.Unknown, ", "))
	}
	if len(rr.NotChecked) > 0 {
		notes = append(notes, "not checked: "+strings.Join(rr.NotChecked, ", "))
	}
	if len(rr.Expected) > 0 {
		// With the instances where known: a permitted loss of a thousand
		// writes and one of a single write are not the same news.
		parts := make([]string, len(rr.Expected))
		for i, a := range rr.Expected {
			parts[i] = a
			if n := rr.ExpectedInstances[a]; n > 0 {
				parts[i] += fmt.Sprintf(" %d", n)
			}
		}
		notes = append(notes, "expected: "+strings.Join(parts, ", "))
	}
	switch rr.Observed {
	case results.ObservedToothless:
		notes = append(notes, fmt.Sprintf("none of the %d fault windows bit", rr.WindowsRan))
	case results.ObservedNoFaults:
		notes = append(notes, "no fault started")
	}
	if rr.Error != "" {
		notes = append(notes, rr.Error)
	}
	return notes
}

// fitObserved is a cell's observation in observedWidth columns: its
// words of least weight dropped first ("+3 more (10/10 runs)" as "+3
// (10/10)"), then clipped.
func fitObserved(s string) string {
	for _, short := range []struct{ long, short string }{{" more (", " ("}, {" runs)", ")"}} {
		if len([]rune(s)) > observedWidth {
			s = strings.Replace(s, short.long, short.short, 1)
		}
	}
	return clipText(s, observedWidth)
}

// clipText shortens s to at most n runes, ending in "…" when it did.
func clipText(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// writeWrapped writes text in lines of at most SummaryWidth columns, each
// after indent, breaking between words (a word longer than a line, a
// path, stays whole).
func writeWrapped(out io.Writer, indent, text string) {
	line := indent
	for _, w := range strings.Fields(text) {
		if line != indent && len(line)+1+len(w) > SummaryWidth {
			fmt.Fprintln(out, line)
			line = indent
		}
		if line != indent {
			line += " "
		}
		line += w
	}
	if line != indent {
		fmt.Fprintln(out, line)
	}
}

// SummaryWidth is the width the summary of a matrix campaign such as the
// seed preset keeps to, in columns: a terminal's, and a CI log's. What
// does not fit (every anomaly seen, the windows' recovery, every run's
// directory) is on the index page and in campaign.json.
const SummaryWidth = 120

// observedWidth is the most of a cell's OBSERVED text the table shows.
const observedWidth = 55

// WriteSummary writes the end of a campaign kept in dir, as chaos
// campaign and chaos campaign merge print it: a detection campaign's
// matrix, the table of the other cells grouped by configuration (what the
// runs observed first, then the worst verdict and how many runs had it,
// the model's word on lost writes, and the share of sends acknowledged),
// the runs that were not valid (each with what it found and where it is
// kept), the verdict line with the counts of runs by verdict and the exit
// code (as --fail-on failOn makes it: cli.FailOnExit; empty is the
// default), and where the record and the index page are.
func WriteSummary(out io.Writer, rec *results.Campaign, dir string, failOn string) {
	path := filepath.Join(dir, results.CampaignFile)
	sharded := ""
	if rec.Shard != nil {
		sharded = fmt.Sprintf(", shard %d/%d", rec.Shard.Index, rec.Shard.Count)
	}
	fmt.Fprintf(out, "\ncampaign seed %d%s, %s\n", rec.Seed, sharded, rec.Status)
	// A detection campaign's bug cells are its detection matrix's rows;
	// the matrix of cells holds the others.
	matrix := slices.ContainsFunc(rec.Cells, func(c *results.CampaignCell) bool { return len(c.Bugs) == 0 }) || len(rec.Detection) == 0
	if len(rec.Detection) > 0 {
		writeDetection(out, rec)
		if matrix {
			fmt.Fprintln(out, "\ncells without bugs:")
		}
	}
	if matrix {
		writeCells(out, rec)
		fmt.Fprintf(out, observedLegend, results.StallAfter)
	}
	writeAttention(out, rec, dir)
	fmt.Fprintf(out, "campaign: %s\n", path)
	code := 0
	if rec.ExitCode != nil {
		code = *rec.ExitCode
	}
	// The verdict stays what the runs showed; only the exit code is
	// --fail-on's.
	exit := strconv.Itoa(code)
	if e := cli.FailOnExit(failOn, code); e != code {
		exit = fmt.Sprintf("%d, --fail-on %s", e, failOn)
	}
	switch {
	case rec.Status == StatusInterrupted:
		fmt.Fprintf(out, "verdict: INTERRUPTED (exit %s): %s\n", exit, runCounts(rec.Cells))
	case len(rec.Detection) > 0:
		sayDetection(out, rec, code, exit)
	default:
		fmt.Fprintf(out, "verdict: %s (exit %s): %s\n", strings.ToUpper(WorstOfCells(rec.Cells)), exit, runCounts(rec.Cells))
	}
	fmt.Fprintf(out, "index: %s\n", filepath.Join(dir, results.CampaignIndexFile))
}

// writeCells writes the table of the cells without bugs, a row per
// cell under a line per configuration (acks, min.insync.replicas,
// election), so that the fault, the cell's varying part, has the room.
func writeCells(out io.Writer, rec *results.Campaign) {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CONFIGURATION / NEMESIS\tOBSERVED\tVERDICT\tLOST-WRITE\tACKED")
	last := ""
	for _, c := range rec.Cells {
		s := c.Summary
		if rec.Shard != nil && s.Planned == 0 || len(c.Bugs) > 0 {
			continue // another shard's, or the detection matrix's
		}
		// Cells are in the matrix's order, a configuration's faults side
		// by side; an explicit cells list may repeat a configuration
		// apart, and then repeats its line.
		if conf := configLabel(c); conf != last {
			fmt.Fprintf(tw, "%s\t\t\t\t\n", conf)
			last = conf
		}
		acked := "-"
		if s.Availability != nil {
			acked = fmt.Sprintf("%.1f%%", 100**s.Availability)
		} else if c.Acks == 0 {
			acked = "n/a"
		}
		loss := "-"
		if p, ok := c.Permitted[checker.LostWriteName]; ok {
			loss = map[bool]string{true: "permitted", false: "forbidden"}[p.Permitted]
		}
		_, observed := report.CellObserved(c)
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", cellFault(c), fitObserved(observed), cellVerdict(c), loss, acked)
	}
	tw.Flush()
	// A configuration's line is one cell wide, padded to the others.
	for _, l := range strings.SplitAfter(buf.String(), "\n") {
		if l != "" {
			fmt.Fprintln(out, strings.TrimRight(l, " \n"))
		}
	}
}

// configLabel is the configuration part of a cell's label: "acks=-1
// isr=2 clean".
func configLabel(c *results.CampaignCell) string {
	return fmt.Sprintf("acks=%d isr=%d %s", c.Acks, c.MinInsyncReplicas, cmp.Or(c.Election, "clean"))
}

// cellFault is the rest of its label: the nemesis and the cell's own run
// args.
func cellFault(c *results.CampaignCell) string {
	return cmp.Or(c.Nemesis, "none") + argsLabel(c.RunArgs)
}

// cellVerdict is the worst verdict of a cell's runs and how many of the
// runs that ended had it: "VALID 2/2", "INVALID 1/3"; "NOT RUN" when none
// ended.
func cellVerdict(c *results.CampaignCell) string {
	s := c.Summary
	n := map[string]int{VerdictValid: s.Valid, VerdictInvalid: s.Invalid, VerdictUnknown: s.Unknown, VerdictError: s.Errors}
	v := cmp.Or(c.Verdict, VerdictNotRun)
	if _, ok := n[v]; !ok || s.Runs == 0 {
		return strings.ToUpper(strings.ReplaceAll(v, "-", " "))
	}
	return fmt.Sprintf("%s %d/%d", strings.ToUpper(v), n[v], s.Runs)
}

// writeAttention lists the runs that were not valid, each with what it
// found and where it is kept, and the refused cells: the runs to look
// at. The valid ones are on the index page.
func writeAttention(out io.Writer, rec *results.Campaign, dir string) {
	valid, other := 0, 0
	for _, c := range rec.Cells {
		for _, r := range c.Runs {
			if r.Verdict == VerdictValid {
				valid++
			} else {
				other++
			}
		}
	}
	switch {
	case other == 0 && valid > 0:
		fmt.Fprintf(out, "\nruns: all %d valid; each run's directory is on the index page and in campaign.json\n", valid)
	case other > 0:
		fmt.Fprintf(out, "\nruns not valid (%d of %d; the others are on the index page):\n", other, other+valid)
	default:
		fmt.Fprintln(out, "\nruns: none ended")
	}
	for _, c := range rec.Cells {
		for _, r := range c.Runs {
			if r.Verdict == VerdictValid {
				continue
			}
			fmt.Fprintf(out, "  %s run %d (seed %d): %s\n", c.Label, r.Run, r.Seed, strings.ToUpper(r.Verdict))
			if notes := runNotes(r); len(notes) > 0 {
				writeWrapped(out, "    ", strings.Join(notes, "; "))
			}
			// A path on a line of its own: it cannot be broken.
			if r.Dir != "" {
				fmt.Fprintln(out, "    "+filepath.Join(rec.Store, r.Dir))
			} else {
				fmt.Fprintf(out, "    no run directory; its log:\n    %s\n", filepath.Join(dir, r.Log))
			}
		}
		if c.Refused != "" {
			skipped := ""
			if n := c.Summary.Planned - len(c.Runs); n > 0 {
				skipped = fmt.Sprintf(" (%d more runs skipped)", n)
			}
			fmt.Fprintf(out, "  %s: refused by chaos run%s:\n", c.Label, skipped)
			writeWrapped(out, "    ", c.Refused)
		}
	}
}

// runCounts counts the runs by verdict for the verdict line: "60 runs:
// 58 VALID, 1 INVALID, 1 ERROR", with the runs interrupted or not run and
// the cells refused.
func runCounts(cells []*results.CampaignCell) string {
	var s results.CampaignSummary
	refused := 0
	for _, c := range cells {
		s.Planned += c.Summary.Planned
		s.Valid += c.Summary.Valid
		s.Invalid += c.Summary.Invalid
		s.Unknown += c.Summary.Unknown
		s.Errors += c.Summary.Errors
		s.Interrupted += c.Summary.Interrupted
		if c.Refused != "" {
			refused++
		}
	}
	var parts []string
	for _, p := range report.RunCounts(s) {
		parts = append(parts, strings.ToUpper(p))
	}
	ended := s.Valid + s.Invalid + s.Unknown + s.Errors + s.Interrupted
	if n := s.Planned - ended; n > 0 {
		parts = append(parts, fmt.Sprintf("%d not run", n))
	}
	text := fmt.Sprintf("%d runs", s.Planned)
	if len(parts) > 0 {
		text += ": " + strings.Join(parts, ", ")
	}
	switch {
	case refused == 1:
		text += " (1 cell refused)"
	case refused > 1:
		text += fmt.Sprintf(" (%d cells refused)", refused)
	}
	return text
}

// observedLegend says what the table's columns mean, under it: a valid
// verdict alone does not say whether anything happened.
const observedLegend = `OBSERVED, what the runs saw, before the verdict: BROKEN a forbidden anomaly; PERMITTED the permitted
  anomalies that appeared, with their instances (of lost-write, the acknowledged writes lost); NO ACKS under
  acks=0, where nothing is acknowledged: the records consumers read and then lost, and the duplicates; KEPT no
  anomaly, under faults that bit (a kill, a leader change, an ISR shrink, send errors or a write stall of %s
  or more); FAULTS NEVER BIT windows ran but none showed any of these; NO FAULTS none started.
VERDICT the worst verdict of the cell's runs, in how many of them; LOST-WRITE what the guarantee model says of
  losing acknowledged writes there; ACKED the share of sends acknowledged. The index page has every anomaly
  seen and the fault windows' recovery.
`

// sayDetection is a detection campaign's last line: how many bug cells
// caught their bugs in every run, and what failed it (misses, false
// alarms, errors), as the exit code counts them.
func sayDetection(out io.Writer, rec *results.Campaign, code int, exit string) {
	var cells, all int
	var problems []string
	for _, d := range rec.Detection {
		name := "control " + d.Scenario
		if len(d.Bugs) > 0 {
			cells++
			names := make([]string, len(d.Bugs))
			for i, b := range d.Bugs {
				names[i] = b.Name
			}
			name = strings.Join(names, "+")
		}
		switch {
		case len(d.Bugs) > 0 && d.Runs > 0 && d.Caught == d.Runs:
			all++
		case len(d.Bugs) > 0 && d.Caught == 0:
			problems = append(problems, fmt.Sprintf("%s not caught (0/%d)", name, d.Runs))
		case len(d.Bugs) > 0:
			problems = append(problems, fmt.Sprintf("%s caught in %d/%d", name, d.Caught, d.Runs))
		case d.Caught > 0:
			problems = append(problems, fmt.Sprintf("%s: %d false alarm(s)", name, d.Caught))
		}
		if d.Errors > 0 {
			problems = append(problems, fmt.Sprintf("%s: %d error(s)", name, d.Errors))
		}
	}
	word := "DETECTED"
	if code != 0 {
		word = "NOT ALL DETECTED"
	}
	fmt.Fprintf(out, "detection: %s (exit %s): %d of %d bug cells caught in every run", word, exit, all, cells)
	if len(problems) > 0 {
		fmt.Fprintf(out, "; %s", strings.Join(problems, "; "))
	}
	fmt.Fprintln(out)
}

// writeDetection writes a detection campaign's matrix: per cell its bugs
// and where they live, its scenario, the runs that ended of those planned,
// the runs that caught the bugs (NOT CAUGHT when none did), the
// anomalies that caught them in how many runs, and the medians of the
// caught runs' first detections; a control cell's false alarms.
func writeDetection(out io.Writer, rec *results.Campaign) {
	fmt.Fprintln(out, "detection (a run catches its cell's bugs when it finds an anomaly the configuration forbids):")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BUG\tNODE\tSCENARIO\tRUNS\tCAUGHT\tCAUGHT BY\tMEDIAN TIME\tMEDIAN OPS")
	for _, d := range rec.Detection {
		if rec.Shard != nil && d.Planned == 0 {
			continue // another shard's
		}
		var names, nodes []string
		for _, b := range d.Bugs {
			names = append(names, b.Name)
			if !slices.Contains(nodes, b.Node) {
				nodes = append(nodes, b.Node)
			}
		}
		name, node := strings.Join(names, ","), strings.Join(nodes, ",")
		control := len(d.Bugs) == 0
		if control {
			name, node = "control (no bug)", "-"
		}
		pct := ""
		if d.Runs > 0 {
			pct = fmt.Sprintf(" (%.0f%%)", 100*float64(d.Caught)/float64(d.Runs))
		}
		caught := fmt.Sprintf("%d/%d%s", d.Caught, d.Runs, pct)
		switch {
		case d.Runs == 0:
			caught = "no run yet"
		case control && d.Caught == 0:
			caught = fmt.Sprintf("no false alarm (0/%d)", d.Runs)
		case control:
			caught = fmt.Sprintf("FALSE ALARMS %d/%d", d.Caught, d.Runs)
		case d.Caught == 0:
			caught = fmt.Sprintf("NOT CAUGHT (0/%d)", d.Runs)
		}
		runs := fmt.Sprintf("%d/%d", d.Runs, d.Planned)
		if d.Errors > 0 {
			runs += fmt.Sprintf(" (%d errors)", d.Errors)
		}
		median, ops := "-", "-"
		if d.MedianTime != nil && d.MedianOps != nil {
			median, ops = time.Duration(*d.MedianTime).String(), strconv.FormatInt(*d.MedianOps, 10)
			if d.Timed < d.Caught {
				median += fmt.Sprintf(" (%d timed)", d.Timed)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, node, d.Scenario, runs, caught, countsOf(d.Anomalies, d.Runs), median, ops)
	}
	tw.Flush()
}

// countsOf formats "lost-write 2/3, stale-read 3/3", in the checkers'
// order.
func countsOf(m map[string]int, runs int) string {
	if len(m) == 0 {
		return "-"
	}
	var parts []string
	for _, n := range checker.Names() {
		if c, ok := m[n]; ok {
			parts = append(parts, fmt.Sprintf("%s %d/%d", n, c, runs))
		}
	}
	return strings.Join(parts, ", ")
}
