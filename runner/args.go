package runner

import (
	"os"
	"strconv"
	"strings"
)

// Args are the flags of chaos sim, or of chaos run for a spec of a real
// runtime, that give spec: those that differ from their defaults (a given
// schedule as --schedule, else the faults and their interval). A
// simulated run replays from them exactly; a real one is run again with
// the same scenario. An external cluster's settings are its own, so its
// spec's broker settings are left out (chaos run refuses them), and its
// bootstrap and fault commands are the caller's to add.
func Args(s Spec) []string {
	d := DefaultSpec()
	var a []string
	add := func(differs bool, name, value string) {
		if differs {
			a = append(a, "--"+name, value)
		}
	}
	flag := func(set bool, name string) {
		if set {
			a = append(a, "--"+name)
		}
	}
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	st, ds := s.Settings, d.Settings
	add(s.Name != "", "name", s.Name)
	add(s.Store != d.Store, "store", s.Store)
	add(s.Runtime != "" && s.Runtime != RuntimeSim && s.Runtime != RuntimeLocal, "runtime", s.Runtime)
	add(s.BasePort != 0, "base-port", strconv.Itoa(s.BasePort))
	if s.Runtime == RuntimeExternal {
		// The brokers' own settings, as the cluster has them (chaos run's
		// brokerOnlyFlags); the topic's are the test's.
		st.SessionTimeoutMs, st.HeartbeatIntervalMs, st.Fsync = ds.SessionTimeoutMs, ds.HeartbeatIntervalMs, ds.Fsync
		st.ReplicaLagTimeMaxMs, st.ReplicaLagMaxMessages, st.ReplicaFetchWaitMaxMs = ds.ReplicaLagTimeMaxMs, ds.ReplicaLagMaxMessages, ds.ReplicaFetchWaitMaxMs
		st.NoAutoCreateTopics, s.Nodes = ds.NoAutoCreateTopics, d.Nodes
	}
	add(s.Nodes != d.Nodes, "nodes", strconv.Itoa(s.Nodes))
	add(s.Acks != d.Acks, "acks", i64(int64(s.Acks)))
	add(st.MinInsyncReplicas != ds.MinInsyncReplicas, "min-insync-replicas", i64(int64(st.MinInsyncReplicas)))
	add(st.ReplicationFactor != ds.ReplicationFactor, "replication-factor", i64(int64(st.ReplicationFactor)))
	add(st.Election != ds.Election, "election", st.Election)
	add(st.Partitions != ds.Partitions, "partitions", i64(int64(st.Partitions)))
	add(st.SessionTimeoutMs != ds.SessionTimeoutMs, "session-timeout-ms", i64(st.SessionTimeoutMs))
	add(st.ReplicaLagTimeMaxMs != ds.ReplicaLagTimeMaxMs, "replica-lag-time-max-ms", i64(st.ReplicaLagTimeMaxMs))
	add(st.ReplicaLagMaxMessages != ds.ReplicaLagMaxMessages, "replica-lag-max-messages", i64(st.ReplicaLagMaxMessages))
	add(st.ReplicaFetchWaitMaxMs != ds.ReplicaFetchWaitMaxMs, "replica-fetch-wait-max-ms", i64(int64(st.ReplicaFetchWaitMaxMs)))
	add(st.HeartbeatIntervalMs != ds.HeartbeatIntervalMs, "heartbeat-interval-ms", i64(st.HeartbeatIntervalMs))
	add(st.Fsync != ds.Fsync, "fsync", st.Fsync)
	flag(st.LoseUnsynced, "lose-unsynced")
	flag(st.NoAutoCreateTopics, "no-auto-create-topics")
	for _, b := range st.Bugs {
		add(true, "bug", b)
	}
	add(s.Concurrency != d.Concurrency, "concurrency", strconv.Itoa(s.Concurrency))
	add(s.Consumers != d.Consumers, "consumers", strconv.Itoa(s.Consumers))
	add(s.Rate != d.Rate, "rate", strconv.FormatFloat(s.Rate, 'f', -1, 64))
	add(s.TimeLimit != d.TimeLimit, "time-limit", s.TimeLimit.String())
	add(s.RequestTimeout != d.RequestTimeout, "request-timeout", s.RequestTimeout.String())
	add(s.Retries != d.Retries, "retries", strconv.Itoa(s.Retries))
	flag(s.Idempotent, "idempotent")
	add(s.InFlight() != d.InFlight(), "max-in-flight", strconv.Itoa(s.InFlight()))
	add(s.workloadName() != "", "workload", s.workloadName())
	add(s.subVia() != "", "sub-via", s.subVia())
	add(s.ConvergeTimeout != d.ConvergeTimeout, "converge-timeout", s.ConvergeTimeout.String())
	add(s.MonitorInterval != d.MonitorInterval, "monitor-interval", s.MonitorInterval.String())
	add(s.LivenessBound != 0 && s.LivenessBound != DefaultLivenessBound(st), "liveness-bound", s.LivenessBound.String())
	switch {
	case len(s.Windows) > 0:
		add(true, "schedule", s.Windows.String())
	case len(s.Faults) > 0:
		add(true, "nemesis", strings.Join(s.Faults, ","))
		// The default said as such where it has no room for every kind:
		// left out, the replay would choose a shorter interval.
		_, short := s.ScheduleShort()
		add(s.NemesisInterval != d.NemesisInterval || short, "nemesis-interval", s.NemesisInterval.String())
		add(s.NemesisOverlap > 1, "nemesis-overlap", strconv.Itoa(s.NemesisOverlap))
		flag(s.AllowPartialSchedule, "allow-partial-schedule")
	}
	add(true, "seed", strconv.FormatUint(s.Seed, 10))
	return a
}

// RunCommand is chaos run with spec's flags (Args): what chaos hunt
// prints for a finding of a real runtime, which runs its scenario again
// (in real time, so not the same interleaving).
func RunCommand(s Spec) []string {
	return append([]string{os.Args[0], "run"}, Args(s)...)
}
