package campaign

import (
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
	var b strings.Builder
	b.WriteString(strings.ToUpper(rr.Verdict))
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
	if len(notes) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(notes, "; "))
	}
	return b.String()
}

// WriteSummary writes the end of a campaign kept in dir, as chaos
// campaign and chaos campaign merge print it: a detection campaign's
// matrix, the table of the other cells (what the runs observed first,
// then the verdicts, the model's prediction, anomalies seen as permitted
// and unexpectedly, availability, the windows' recovery), where each
// run is kept, the verdict line with the exit code, and the index page.
func WriteSummary(out io.Writer, rec *results.Campaign, dir string) {
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
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	if matrix {
		fmt.Fprintln(tw, "CELL\tOBSERVED\tRUNS\tVALID\tINVALID\tUNKNOWN\tERROR\tMODEL\tEXPECTED SEEN\tUNEXPECTED\tAVAILABILITY\tRECOVERY (MEDIAN/MAX)")
	}
	for _, c := range rec.Cells {
		s := c.Summary
		if rec.Shard != nil && s.Planned == 0 || len(c.Bugs) > 0 {
			continue // another shard's, or the detection matrix's
		}
		avail := "-"
		if s.Availability != nil {
			avail = fmt.Sprintf("%.1f%%", 100**s.Availability)
		} else if c.Acks == 0 {
			avail = "n/a (acks=0)"
		}
		runs := fmt.Sprintf("%d/%d", s.Runs, s.Planned)
		_, observed := report.CellObserved(c)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", c.Label, observed, runs, s.Valid, s.Invalid, s.Unknown, s.Errors,
			c.Prediction, countsOf(s.ExpectedSeen, s.Runs), countsOf(s.Unexpected, s.Runs), avail, report.RecoveryText(s.Recovery))
	}
	tw.Flush()
	if matrix {
		fmt.Fprintf(out, observedLegend, results.StallAfter)
	}
	fmt.Fprintln(out, "\nruns:")
	for _, c := range rec.Cells {
		for _, r := range c.Runs {
			where := r.Dir
			if where != "" {
				where = filepath.Join(rec.Store, where)
			} else {
				where = "(no run directory; see " + filepath.Join(dir, r.Log) + ")"
			}
			fmt.Fprintf(out, "  %s run %d (seed %d): %s %s\n", c.Label, r.Run, r.Seed, r.Verdict, where)
		}
		if c.Refused != "" {
			skipped := ""
			if n := c.Summary.Planned - len(c.Runs); n > 0 {
				skipped = fmt.Sprintf(" (%d more runs skipped)", n)
			}
			fmt.Fprintf(out, "  %s: refused by chaos run%s: %s\n", c.Label, skipped, c.Refused)
		}
	}
	fmt.Fprintf(out, "campaign: %s\n", path)
	var bad []string
	for _, c := range rec.Cells {
		if c.Verdict != VerdictValid && c.Verdict != VerdictNotRun {
			bad = append(bad, c.Label+": "+c.Verdict)
		}
	}
	code := 0
	if rec.ExitCode != nil {
		code = *rec.ExitCode
	}
	switch {
	case rec.Status == StatusInterrupted:
		fmt.Fprintf(out, "verdict: INTERRUPTED (exit %d)\n", code)
	case len(rec.Detection) > 0:
		sayDetection(out, rec, code)
	case len(bad) == 0:
		fmt.Fprintf(out, "verdict: VALID (exit %d)\n", code)
	default:
		fmt.Fprintf(out, "verdict: %s (exit %d): %s\n", strings.ToUpper(WorstOfCells(rec.Cells)), code, strings.Join(bad, "; "))
	}
	fmt.Fprintf(out, "index: %s\n", filepath.Join(dir, results.CampaignIndexFile))
}

// observedLegend says what the OBSERVED and RECOVERY columns mean, under
// the table: a valid verdict alone does not say whether anything
// happened.
const observedLegend = `OBSERVED (what the runs saw, before the verdict): BROKEN a forbidden anomaly; PERMITTED the permitted anomalies that appeared, with their instances (of lost-write, the acknowledged writes lost); KEPT no anomaly under faults that bit (a kill, a leader change, an ISR shrink, send errors or a write stall of %s or more); FAULTS NEVER BIT windows ran but none showed any of these; NO FAULTS none started.
RECOVERY over every fault window of the cell's runs: first ack from the fault's start to the first acknowledged write, full ISR from its heal to every partition's full ISR in the monitor's samples; (n/m) when only n of m windows showed it.
`

// sayDetection is a detection campaign's last line: how many bug cells
// caught their bugs in every run, and what failed it (misses, false
// alarms, errors), as the exit code counts them.
func sayDetection(out io.Writer, rec *results.Campaign, code int) {
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
	fmt.Fprintf(out, "detection: %s (exit %d): %d of %d bug cells caught in every run", word, code, all, cells)
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
