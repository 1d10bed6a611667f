package runner

import (
	"runtime"
	"slices"
	"time"

	"github.com/chaos-isr/chaos/nemesis"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/workload"
)

// test.json's schema belongs to the store (package results), not to the
// packages that ran the test: these turn the workload's and the nemesis's
// types into the store's, field by field, so that what is stored changes
// only with a change here, never as a side effect of either package.

// WorkloadConfig is the workload a run of s drives, with clients that
// reach the cluster at bootstrap.
func (s Spec) WorkloadConfig(bootstrap []string) workload.Config {
	return workload.Config{
		Workload: results.Workload{
			Topic: "chaos", Partitions: s.Settings.Partitions, Acks: s.Acks, Concurrency: s.Concurrency, Consumers: s.Consumers,
			Rate: s.Rate, TimeLimit: s.TimeLimit, Seed: s.Seed, RequestTimeout: s.RequestTimeout, EndOffsetEvery: 5,
			Retries: s.Retries, Idempotent: s.Idempotent, MaxInFlight: s.MaxInFlight, SubVia: s.subVia(), Name: s.workloadName(),
			Bootstrap: bootstrap,
		},
		LivenessBound: s.LivenessBound,
	}
}

// TestConfig is test.json for a run of s (normalized) that started at
// start with chaos version, gave its cluster the id clusterID, delays
// links by the mechanism delays and drives w. Convergence is added once
// the final phase has found it.
func (s Spec) TestConfig(start time.Time, version, clusterID, delays string, w workload.Config) results.TestConfig {
	tc := s.judged(w)
	tc.Name, tc.Seed, tc.Start, tc.Command = s.Name, s.Seed, start, s.Command
	tc.Versions = map[string]string{"chaos": version, "go": runtime.Version()}
	tc.Cluster.Runtime, tc.Cluster.ClusterID, tc.Cluster.DelayMechanism = s.Runtime, clusterID, delays
	tc.Schedule, tc.ScheduleGiven = storedSchedule(s.Schedule()), len(s.Windows) > 0
	tc.FaultFamilies = nemesis.Families(results.FaultKinds(s.Faults))
	tc.NemesisOverlap, tc.Converge, tc.MonitorInterval = s.NemesisOverlap, s.ConvergeTimeout, s.MonitorInterval
	if len(s.Faults) > 0 && len(s.Windows) == 0 {
		tc.NemesisInterval, tc.NemesisIntervalChosen = s.NemesisInterval, s.NemesisIntervalChosen
	}
	return tc
}

// judged is the part of test.json for a run of s driving w that the
// guarantee model reads (results.TestConfig.CheckerConfig): the cluster's
// settings, the workload, the faults asked for, the liveness bound. The
// one place both test.json and the checks before a run take them from.
func (s Spec) judged(w workload.Config) results.TestConfig {
	return results.TestConfig{
		Cluster: results.ClusterConfig{
			Nodes:             s.Nodes,
			ReplicationFactor: s.Settings.ReplicationFactor, MinInsyncReplicas: s.Settings.MinInsyncReplicas,
			Election: s.Settings.Election, SessionTimeoutMs: s.Settings.SessionTimeoutMs,
			ReplicaLagTimeMaxMs: s.Settings.ReplicaLagTimeMaxMs, ReplicaLagMaxMessage: s.Settings.ReplicaLagMaxMessages,
			ReplicaFetchWaitMaxMs: s.Settings.ReplicaFetchWaitMaxMs, HeartbeatIntervalMs: s.Settings.HeartbeatIntervalMs,
			Fsync: s.Settings.Fsync, LoseUnsynced: s.Settings.LoseUnsynced, Bugs: s.Settings.Bugs,
		},
		Workload: storedWorkload(w), Nemesis: s.Faults, LivenessBound: s.LivenessBound,
	}
}

func storedWorkload(c workload.Config) results.Workload {
	w := c.Workload
	if w.MaxInFlight <= 1 {
		// Absent, as in the runs before producers could pipeline: one.
		w.MaxInFlight = 0
	}
	return w
}

// storedSchedule keeps a nil schedule nil: test.json says "schedule": null
// for a run without faults.
func storedSchedule(s nemesis.Schedule) results.Schedule {
	if s == nil {
		return nil
	}
	return results.Schedule(slices.Clone(s))
}

// StoredConvergence is how test.json records the final phase's
// convergence.
func StoredConvergence(c workload.Convergence) *results.Convergence {
	return &results.Convergence{Converged: c.Converged, Waited: c.Waited, Why: c.Why}
}
