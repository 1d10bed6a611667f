package campaign

import (
	"cmp"
	"slices"
	"time"

	"github.com/chaos-isr/chaos/broker/bug"
	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/results"
)

// Detection is the detection matrix of a campaign whose cells plant bugs:
// one row per cell, control cells (which plant none) included, in the
// cells' order; nil when no cell plants a bug. Each row counts the cell's
// runs that ended, those that caught its bugs (an invalid verdict: the
// guarantee model knows nothing of bugs, so a bug is caught exactly when
// a run shows an anomaly the configuration forbids), the anomalies that
// caught them, and the medians of the caught runs' first detections
// (results.CampaignRun.Detection). A bug no run caught has its row, with
// 0 caught. It is computed from the runs alone, so a merge recomputes it
// from the merged runs.
func Detection(cells []*results.CampaignCell) []results.CampaignDetection {
	if !plantsBugs(cells) {
		return nil
	}
	var out []results.CampaignDetection
	for _, c := range cells {
		d := results.CampaignDetection{Cell: c.Name, Scenario: Scenario(c.CampaignCellPlan), Planned: c.Summary.Planned}
		for _, name := range c.Bugs {
			b := results.CampaignBug{Name: name}
			if x, err := bug.Parse(name); err == nil {
				b.Node = string(x.Node())
			}
			d.Bugs = append(d.Bugs, b)
		}
		var times []time.Duration
		var ops []int64
		for _, r := range c.Runs {
			switch r.Verdict {
			case VerdictInterrupted:
				continue
			case VerdictError:
				d.Errors++
			case VerdictInvalid:
				d.Caught++
				for _, a := range r.Unexpected {
					if d.Anomalies == nil {
						d.Anomalies = map[string]int{}
					}
					d.Anomalies[a]++
				}
				if r.Detection != nil {
					times = append(times, time.Duration(r.Detection.Time))
					ops = append(ops, r.Detection.Ops)
				}
			}
			d.Runs++
		}
		if len(times) > 0 {
			d.Timed = len(times)
			t, n := results.Duration(lowerMedian(times)), lowerMedian(ops)
			d.MedianTime, d.MedianOps = &t, &n
		}
		out = append(out, d)
	}
	return out
}

// lowerMedian is the middle value, of an even count the lower of the two
// middle ones: always one of the values.
func lowerMedian[T cmp.Ordered](xs []T) T {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return xs[(len(xs)-1)/2]
}

// runDetection is a run's first detection as campaign.json keeps it:
// the runner found it (runner.Outcome.Detection) while the run's ops were
// at hand; nil if the run showed no forbidden anomaly whose operations
// its results name (the run is caught all the same, and only the medians
// leave it out).
func runDetection(d *checker.Detection) *results.CampaignRunDetection {
	if d == nil {
		return nil
	}
	return &results.CampaignRunDetection{Anomaly: d.Anomaly, Op: d.Op,
		Time: results.Duration(time.Duration(d.Time).Round(time.Millisecond)), Ops: d.Ops}
}

// plantsBugs says whether some cell plants a bug: a detection campaign.
func plantsBugs(cells []*results.CampaignCell) bool {
	return slices.ContainsFunc(cells, func(c *results.CampaignCell) bool { return len(c.Bugs) > 0 })
}
