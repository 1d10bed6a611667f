package runner

import (
	"github.com/chaos-isr/chaos/nemesis"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/workload"
)

// test.json's schema belongs to the store (package results), not to the
// packages that ran the test: these turn the workload's and the nemesis's
// types into the store's, field by field, so that what is stored changes
// only with a change here, never as a side effect of either package.

func storedWorkload(c workload.Config) results.Workload {
	return results.Workload{
		Bootstrap: c.Bootstrap, Topic: c.Topic, Partitions: c.Partitions, Acks: c.Acks,
		Concurrency: c.Concurrency, Consumers: c.Consumers, Rate: c.Rate, TimeLimit: c.TimeLimit,
		Seed: c.Seed, RequestTimeout: c.RequestTimeout, EndOffsetEvery: c.EndOffsetEvery,
	}
}

// storedSchedule keeps a nil schedule nil: test.json says "schedule": null
// for a run without faults.
func storedSchedule(s nemesis.Schedule) results.Schedule {
	if s == nil {
		return nil
	}
	out := make(results.Schedule, len(s))
	for i, ev := range s {
		out[i] = results.PlannedFault{Fault: ev.Fault, Start: ev.Start, End: ev.End}
	}
	return out
}

func storedConvergence(c workload.Convergence) *results.Convergence {
	return &results.Convergence{Converged: c.Converged, Waited: c.Waited, Why: c.Why}
}
