package campaign

import (
	"slices"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/results"
)

// observeRun records what a judged run observed, from its results and
// its windows' recovery: the class the matrix shows first, the permitted
// instances (how many acknowledged writes were lost), the windows that
// ran and bit.
func observeRun(rr *results.CampaignRun, res *checker.Results, rec []results.WindowRecovery) {
	rr.Observed = results.Observe(res, rec)
	rr.ExpectedInstances = results.ExpectedInstances(res)
	rr.UnexpectedInstances = results.UnexpectedInstances(res)
	rr.WindowsRan, rr.WindowsBit = 0, 0
	for _, n := range res.FaultWindows {
		rr.WindowsRan += n
	}
	for _, w := range rec {
		if len(w.Bit) > 0 {
			rr.WindowsBit++
		}
	}
	rr.Recovery = rec
}

// runObserved is the class of a run of a cell with these acks: as
// recorded, or for a record written before runs had one (a merge of old
// shards), as far as its verdict and anomalies tell, counting the windows
// scheduled as windows that bit.
func runObserved(r results.CampaignRun, acks int) string {
	switch {
	case r.Observed != "":
		return r.Observed
	case r.Verdict == VerdictError || r.Verdict == VerdictInterrupted || r.Verdict == "":
		return results.ObservedNone
	}
	return results.ForAcks(acks, results.ObserveCounts(len(r.Unexpected) > 0, len(r.Expected) > 0, r.FaultWindows, 0, false))
}

// cellObserved is the first of the runs' classes in ObservedOrder.
func cellObserved(counts map[string]int) string {
	for _, o := range results.ObservedOrder {
		if counts[o] > 0 {
			return o
		}
	}
	return results.ObservedNone
}

// recoveryOf sums up the recovery of the runs' windows: per time, how
// many windows had it observed, their median and maximum.
func recoveryOf(runs []results.CampaignRun) *results.CampaignRecovery {
	var out results.CampaignRecovery
	var acks, isrs []time.Duration
	for _, r := range runs {
		if r.Verdict == VerdictInterrupted {
			continue
		}
		for _, w := range r.Recovery {
			out.Windows++
			if w.FirstAck != nil {
				acks = append(acks, time.Duration(*w.FirstAck))
			}
			if w.FullISR != nil {
				isrs = append(isrs, time.Duration(*w.FullISR))
			}
		}
	}
	if out.Windows == 0 {
		return nil
	}
	out.FirstAck, out.FullISR = durStats(acks), durStats(isrs)
	return &out
}

func durStats(ds []time.Duration) results.CampaignDurStats {
	s := results.CampaignDurStats{Observed: len(ds)}
	if len(ds) > 0 {
		med, top := results.Duration(lowerMedian(ds)), results.Duration(slices.Max(ds))
		s.Median, s.Max = &med, &top
	}
	return s
}
