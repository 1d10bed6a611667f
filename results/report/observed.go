package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/results"
)

// What a campaign cell observed, in words: the matrix's first line and
// chaos campaign's OBSERVED column say the same, so both take it from
// here.

// CellObserved is a cell's observed class (results.ObservedOrder; for a
// record written before cells had one, as far as its counts tell) and
// what to say of it: "PERMITTED lost-write 1040 +2 more (3/3 runs)",
// "NO ACKS: 4160 read, then lost (2/2 runs)", "KEPT (faults bit in 2/3
// runs)", "FAULTS NEVER BIT", "NO FAULTS", "BROKEN lost-write 12 (1/3
// runs)"; "-" when nothing was observed. It is at most some 55
// characters for the seed preset's cells, which the terminal's table
// holds.
func CellObserved(c *results.CampaignCell) (class, text string) {
	s := c.Summary
	class = c.Observed
	if class == "" {
		class = oldCellObserved(c)
	}
	n := s.Observed[class]
	of := func() string {
		if len(s.Observed) == 0 {
			return ""
		}
		return fmt.Sprintf(" (%d/%d runs)", n, s.Runs)
	}
	switch class {
	case results.ObservedBroken:
		// An old record names the anomalies, without their instances.
		return class, "BROKEN" + firstAnomaly(s.UnexpectedInstances, s.Unexpected) + of()
	case results.ObservedPermitted:
		// One anomaly with its count, lost writes first: a lost write
		// usually brings unseen and ordering anomalies along, and the
		// cell's other lines list them all.
		return class, "PERMITTED" + firstAnomaly(s.ExpectedInstances, s.ExpectedSeen) + of()
	case results.ObservedUnacked:
		// Nothing was acknowledged: what happened to the records is the
		// news, the records consumers read and then lost, and the
		// duplicates.
		var parts []string
		if n := s.ExpectedInstances[checker.LostWriteName]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d read, then lost", n))
		}
		if n := s.ExpectedInstances[checker.DuplicateName]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d duplicated", n))
		}
		if len(parts) == 0 {
			return class, "NO ACKS: no record read was lost" + of()
		}
		return class, "NO ACKS: " + strings.Join(parts, ", ") + of()
	case results.ObservedKept:
		bit := 0
		for _, r := range c.Runs {
			if r.WindowsBit > 0 {
				bit++
			}
		}
		if bit == 0 {
			return class, "KEPT (faults ran)"
		}
		return class, fmt.Sprintf("KEPT (faults bit in %d/%d runs)", bit, s.Runs)
	case results.ObservedToothless:
		return class, "FAULTS NEVER BIT"
	case results.ObservedNoFaults:
		return class, "NO FAULTS"
	}
	return results.ObservedNone, "-"
}

// firstAnomaly is " NAME COUNT" for the first anomaly of counts in the
// checkers' order, with " +N more" for the others; from the runs that
// showed each (an old record's, without instances) when counts is empty.
func firstAnomaly(counts, runs map[string]int) string {
	var parts []string
	for _, k := range anomalyOrder(counts) {
		parts = append(parts, fmt.Sprintf("%s %d", k, counts[k]))
	}
	if len(parts) == 0 {
		for _, k := range anomalyOrder(runs) {
			if runs[k] > 0 {
				parts = append(parts, k)
			}
		}
	}
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return " " + parts[0]
	}
	return fmt.Sprintf(" %s +%d more", parts[0], len(parts)-1)
}

// oldCellObserved is a cell's class from its counts alone, for a
// campaign.json written before cells had one: faults scheduled count as
// faults that bit, which is all such a record can tell.
func oldCellObserved(c *results.CampaignCell) string {
	s := c.Summary
	if s.Runs-s.Errors <= 0 {
		return results.ObservedNone
	}
	seen := false
	for _, n := range s.ExpectedSeen {
		seen = seen || n > 0
	}
	windows := 0
	for _, r := range c.Runs {
		windows += r.FaultWindows
	}
	return results.ForAcks(c.Acks, results.ObserveCounts(s.Invalid > 0, seen, windows, 0, false))
}

// RecoveryText sums up a cell's recovery: "first ack 1.2s/3.4s, full
// ISR 2s/5s" (median/max over its windows), with how many windows had
// each observed when some did not; "-" without windows.
func RecoveryText(r *results.CampaignRecovery) string {
	if r == nil || r.Windows == 0 {
		return "-"
	}
	one := func(name string, s results.CampaignDurStats) string {
		if s.Median == nil || s.Max == nil {
			return fmt.Sprintf("%s not observed (0/%d)", name, r.Windows)
		}
		out := fmt.Sprintf("%s %s/%s", name, time.Duration(*s.Median), time.Duration(*s.Max))
		if s.Observed < r.Windows {
			out += fmt.Sprintf(" (%d/%d)", s.Observed, r.Windows)
		}
		return out
	}
	return one("first ack", r.FirstAck) + ", " + one("full ISR", r.FullISR)
}

// observedView is a run's observation for its report's header: the
// class (results.Observe) and a sentence that says it before the verdict.
type observedView struct {
	Class, Label, Sentence string
}

// recoveryRow is one fault window's recovery in the run's report.
type recoveryRow struct {
	N                       int
	Fault, Start, Stop, Bit string
	FirstAck, FullISR       string
	// AckNone and ISRNone mark a time that was not observed: the cell
	// then says why.
	AckNone, ISRNone bool
}

// livenessView is what the liveness checks saw of the recovery after the
// last heal: the bound, the heal, and each partition's time to converge.
type livenessView struct {
	Bound, Heal string
	Parts       []livenessRow
}

type livenessRow struct {
	Partition, After string
	// Late: it took longer than the bound, or was never seen converged.
	Late bool
}

func liveness(l *checker.Liveness) *livenessView {
	if l == nil {
		return nil
	}
	ms := func(v int64) string { return (time.Duration(v) * time.Millisecond).String() }
	v := &livenessView{Bound: ms(l.BoundMs), Heal: fmt.Sprintf("%.3f s", float64(l.HealMs)/1000)}
	for _, p := range l.Partitions {
		row := livenessRow{Partition: p.Partition, After: ms(p.AfterMs), Late: p.AfterMs > l.BoundMs}
		if p.AfterMs < 0 {
			row.After, row.Late = "never seen converged", true
		}
		v.Parts = append(v.Parts, row)
	}
	return v
}

// observed sets the header's observation and the recovery table from
// the results and the history's windows.
func (v *reportView) observed(d RunData, tl *timeline) {
	v.Stall = results.StallAfter.String()
	rec := tl.recovery
	for i, w := range rec {
		row := recoveryRow{N: i + 1, Fault: w.Fault, Start: fmt.Sprintf("%.3f s", time.Duration(w.Start).Seconds()), Stop: "never healed", Bit: "nothing seen"}
		if w.Stop != nil {
			row.Stop = fmt.Sprintf("%.3f s", time.Duration(*w.Stop).Seconds())
		}
		if len(w.Bit) > 0 {
			row.Bit = strings.Join(w.Bit, ", ")
		}
		row.FirstAck, row.AckNone = recoveryCell(w.FirstAck, w.FirstAckUnobserved)
		row.FullISR, row.ISRNone = recoveryCell(w.FullISR, w.FullISRUnobserved)
		v.Recovery = append(v.Recovery, row)
	}
	if d.Results == nil {
		return
	}
	v.Liveness = liveness(d.Results.Liveness)
	class := results.Observe(d.Results, rec)
	o := observedView{Class: class, Label: results.ObservedText[class]}
	bit := 0
	for _, w := range rec {
		if len(w.Bit) > 0 {
			bit++
		}
	}
	switch class {
	case results.ObservedBroken:
		o.Sentence = "Anomalies the configuration forbids were seen: " + strings.Join(d.Results.Unexpected, ", ") + "."
	case results.ObservedPermitted:
		// The verdict's own lines count them; this says what they mean.
		o.Sentence = "The faults had teeth: anomalies this configuration permits appeared (counted below); none it forbids."
	case results.ObservedUnacked:
		o.Sentence = unackedSentence(d.Results)
	case results.ObservedKept:
		o.Sentence = fmt.Sprintf("No anomaly, under faults that bit: %d of %d fault windows killed brokers, moved a leader, shrank an ISR, failed sends or stalled writing (the recovery table says which).", bit, len(rec))
		if len(rec) == 0 {
			o.Sentence = "No anomaly, under faults that started (the history records no window to tell whether they bit)."
		}
	case results.ObservedToothless:
		o.Sentence = fmt.Sprintf("No anomaly, but none of the %d fault windows was seen to bite: no kill, leader change, ISR shrink, send error or stall of %s or more. A valid verdict here says little.", len(rec), results.StallAfter)
	case results.ObservedNoFaults:
		o.Sentence = "No anomaly, and no fault window started: the run tested a healthy cluster."
	}
	v.Observed = &o
}

// recoveryCell is a recovery time, or why it was not observed.
func recoveryCell(d *results.Duration, why string) (string, bool) {
	if d == nil {
		return "not observed: " + why, true
	}
	return fmt.Sprintf("%.3f s", time.Duration(*d).Seconds()), false
}

// unackedSentence says what a run under acks=0 observed: nothing was
// acknowledged, so what happened to the records written is the news.
func unackedSentence(r *checker.Results) string {
	lost, _ := r.Get(checker.LostWriteName)
	dup, _ := r.Get(checker.DuplicateName)
	what := "no record a consumer read was lost afterwards"
	if lost.Count > 0 {
		what = fmt.Sprintf("%d records consumers read were lost afterwards (lost-write)", lost.Count)
	}
	if dup.Count > 0 {
		what += fmt.Sprintf(", and %d values were written more than once (duplicate)", dup.Count)
	}
	return "Nothing was acknowledged (acks=0), so no promise of durability was made: " + what + ". None of it is forbidden here."
}
