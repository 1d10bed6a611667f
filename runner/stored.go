package runner

import (
	"github.com/chaos-isr/chaos/nemesis"
	"github.com/chaos-isr/chaos/results"
)

// StoredSpec is the spec that repeats a stored run as far as its
// test.json records it: the name (if it was chosen), the seed, the cluster's settings (planted
// bugs included), the
// workload, the convergence timeout, and the planned fault windows as
// Windows (a real run drew them from its seed and a nemesis interval
// that test.json does not keep; the windows are what ran). Its faults are
// the windows' kinds: a kind asked for that no window planned never ran.
// What test.json does not record takes chaos run's defaults: topic
// auto-creation, and in runs recorded before they were kept, the
// followers' fetch wait, the heartbeat interval and the monitor's
// interval (a run without a monitor is replayed with one). Store, Runtime and Command are left for the
// caller to set.
func StoredSpec(tc results.TestConfig) Spec {
	s := DefaultSpec()
	s.Store, s.Runtime = "", ""
	s.Name, s.Seed, s.Nodes = tc.Name, tc.Seed, tc.Cluster.Nodes
	c, w := tc.Cluster, tc.Workload
	st := &s.Settings
	st.ReplicationFactor, st.MinInsyncReplicas, st.Election = c.ReplicationFactor, c.MinInsyncReplicas, c.Election
	st.SessionTimeoutMs, st.ReplicaLagTimeMaxMs, st.ReplicaLagMaxMessages = c.SessionTimeoutMs, c.ReplicaLagTimeMaxMs, c.ReplicaLagMaxMessage
	st.Fsync, st.LoseUnsynced, st.Partitions = c.Fsync, c.LoseUnsynced, w.Partitions
	st.Bugs = c.Bugs
	if c.ReplicaFetchWaitMaxMs > 0 {
		st.ReplicaFetchWaitMaxMs = c.ReplicaFetchWaitMaxMs
	}
	if c.HeartbeatIntervalMs > 0 {
		st.HeartbeatIntervalMs = c.HeartbeatIntervalMs
	}
	if tc.MonitorInterval > 0 {
		s.MonitorInterval = tc.MonitorInterval
	}
	s.Acks, s.Concurrency, s.Consumers, s.Rate = w.Acks, w.Concurrency, w.Consumers, w.Rate
	s.TimeLimit, s.RequestTimeout, s.ConvergeTimeout = w.TimeLimit, w.RequestTimeout, tc.Converge
	s.LivenessBound = tc.LivenessBound
	s.Retries, s.Idempotent, s.MaxInFlight, s.SubVia, s.Workload = w.Retries, w.Idempotent, w.InFlight(), w.SubVia, w.Name
	s.Faults, s.NemesisInterval = tc.Nemesis, 0
	if s.DefaultName() == tc.Name {
		// A name derived from the configuration, not chosen: a run of
		// fewer kinds of faults (a shrunk one) derives its own.
		s.Name = ""
	}
	s.Faults = nil
	s.Windows = append(nemesis.Schedule(nil), tc.Schedule...)
	return s
}
