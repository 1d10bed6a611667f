package campaign

import (
	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/runner"
)

// verdictRank orders verdicts for the exit code: an invalid run is the
// finding a campaign exists for and is never hidden behind a flaky one; an
// error means a run tested nothing, a bigger hole than a checker that could
// not decide, so it outranks unknown.
var verdictRank = map[string]int{VerdictValid: 0, VerdictUnknown: 1, VerdictError: 2, VerdictInvalid: 3}

// WorstVerdict is the worst verdict of the runs by that rank (interrupted
// runs do not count), or not-run if none has one.
func WorstVerdict(runs []results.CampaignRun) string {
	worst := VerdictNotRun
	for _, r := range runs {
		rank, ok := verdictRank[r.Verdict]
		if !ok {
			continue
		}
		if w, ok := verdictRank[worst]; !ok || rank > w {
			worst = r.Verdict
		}
	}
	return worst
}

// WorstOfCells is the worst verdict of every cell's runs.
func WorstOfCells(cells []*results.CampaignCell) string {
	var all []results.CampaignRun
	for _, c := range cells {
		all = append(all, c.Runs...)
	}
	return WorstVerdict(all)
}

// VerdictExitCode is a verdict's exit code, as chaos run's: 0 valid (and
// not-run), 1 invalid, 2 unknown, 3 error.
func VerdictExitCode(v string) int {
	switch v {
	case VerdictInvalid:
		return checker.ExitCode(checker.Invalid)
	case VerdictError:
		return runner.ExitError
	case VerdictUnknown:
		return checker.ExitCode(checker.Unknown)
	}
	return checker.ExitCode(checker.Valid)
}

// ExitCode is a finished campaign's exit code, from its worst run: 1 if
// any run was invalid, else 3 if any ended in an error, else 2 if any was
// unknown, else 0. A detection campaign (one whose cells plant bugs) asks
// the opposite of its bug cells: there a run fails when it does not catch
// its bugs, so the code is 1 if a bug run was not caught or a control
// run (no bug) was invalid, else 3 if any run ended in an error, else 2
// if a control run was unknown, else 0: every planted bug caught in every
// run, and no false alarm.
func ExitCode(cells []*results.CampaignCell) int {
	if !plantsBugs(cells) {
		return VerdictExitCode(WorstOfCells(cells))
	}
	var all []results.CampaignRun
	for _, c := range cells {
		for _, r := range c.Runs {
			if len(c.Bugs) > 0 {
				r.Verdict = bugRunVerdict(r.Verdict)
			}
			all = append(all, r)
		}
	}
	return VerdictExitCode(WorstVerdict(all))
}

// bugRunVerdict is what a run of a cell that plants bugs means for the
// tester: invalid is the bugs caught (valid), anything else with a
// verdict is a miss (invalid); errors and interruptions stay.
func bugRunVerdict(v string) string {
	switch v {
	case VerdictInvalid:
		return VerdictValid
	case VerdictValid, VerdictUnknown:
		return VerdictInvalid
	}
	return v
}

// Summarize counts a cell's runs by verdict and by what they observed,
// the anomalies they showed (and the permitted instances), the share of
// sends acknowledged and the recovery of their windows, and sets the
// cell's verdict to the worst of its runs' and what it observed to the
// first of theirs in results.ObservedOrder.
func Summarize(c *results.CampaignCell) {
	s := results.CampaignSummary{Planned: c.Summary.Planned}
	var ok, sent int64
	for _, r := range c.Runs {
		switch r.Verdict {
		case VerdictValid:
			s.Valid++
		case VerdictInvalid:
			s.Invalid++
		case VerdictUnknown:
			s.Unknown++
		case VerdictError:
			s.Errors++
		case VerdictInterrupted:
			s.Interrupted++
			continue
		}
		s.Runs++
		s.Observed = count(s.Observed, []string{runObserved(r, c.Acks)})
		s.ExpectedInstances = sum(s.ExpectedInstances, r.ExpectedInstances)
		s.UnexpectedInstances = sum(s.UnexpectedInstances, r.UnexpectedInstances)
		s.ExpectedSeen = count(s.ExpectedSeen, r.Expected)
		s.Unexpected = count(s.Unexpected, r.Unexpected)
		if r.Sends != nil {
			ok += r.Sends.OK
			sent += r.Sends.Invoke
		}
	}
	// A permitted loss never seen says the faults had no teeth: it is
	// listed with 0 runs. Under acks=0 nothing is acknowledged, so no loss
	// can be observed: "lost-write 0/n" there would blame the faults for
	// the workload.
	if c.Permitted[checker.LostWriteName].Permitted && c.Acks != 0 && s.Runs > s.Errors {
		if s.ExpectedSeen == nil {
			s.ExpectedSeen = map[string]int{}
		}
		s.ExpectedSeen[checker.LostWriteName] += 0
	}
	if c.Acks != 0 && sent > 0 {
		a := float64(ok) / float64(sent)
		s.Availability = &a
	}
	s.Recovery = recoveryOf(c.Runs)
	c.Summary = s
	c.Verdict = WorstVerdict(c.Runs)
	c.Observed = ""
	if s.Runs > 0 {
		c.Observed = cellObserved(s.Observed)
	}
}

func count(m map[string]int, names []string) map[string]int {
	for _, n := range names {
		if m == nil {
			m = map[string]int{}
		}
		m[n]++
	}
	return m
}

// sum adds the counts of add to m.
func sum(m, add map[string]int) map[string]int {
	for k, n := range add {
		if m == nil {
			m = map[string]int{}
		}
		m[k] += n
	}
	return m
}
