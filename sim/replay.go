package sim

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/chaos-isr/chaos/results/report"
	"github.com/chaos-isr/chaos/runner"
)

// The commands that replay a simulated run: what its test.json records
// and what chaos sim prints, so that a failure found once comes back with
// one pasted line.

// Args are chaos sim's flags for spec, those that differ from their
// defaults: the command that replays a run of it exactly (a given
// schedule as --schedule, else the faults and their interval).
func Args(s runner.Spec) []string {
	d := runner.DefaultSpec()
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
	add(s.ConvergeTimeout != d.ConvergeTimeout, "converge-timeout", s.ConvergeTimeout.String())
	add(s.MonitorInterval != d.MonitorInterval, "monitor-interval", s.MonitorInterval.String())
	add(s.LivenessBound != 0 && s.LivenessBound != runner.DefaultLivenessBound(st), "liveness-bound", s.LivenessBound.String())
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

// ReplayCommand is what a run's test.json records as the command that
// replays it: this program's path, sim, and spec's flags (Args). It is
// the Command of ShrinkOptions and ReproduceOptions for chaos sim.
func ReplayCommand(s runner.Spec) []string {
	return append([]string{os.Args[0], "sim"}, Args(s)...)
}

// ShellCommand is a command to paste into a shell, the program by its
// base name.
func ShellCommand(args []string) string {
	args = slices.Clone(args)
	args[0] = filepath.Base(args[0])
	return report.ShellJoin(args)
}

// sweepFlags are the flags of a sweep that a replay of one of its runs
// leaves out: the flags that take a value, then the others.
var (
	sweepValueFlags = []string{"seeds", "runs", "parallel", "seed", "shard"}
	sweepBoolFlags  = []string{"keep-valid"}
)

// SweepReplay is the command that replays one run of a sweep: the
// sweep's own command line args, without its sweep flags, with the run's
// seed.
func SweepReplay(args []string, seed uint64) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		name, _, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		switch {
		case !strings.HasPrefix(args[i], "--"):
			out = append(out, args[i])
		case slices.Contains(sweepValueFlags, name):
			if !hasValue {
				i++
			}
		case slices.Contains(sweepBoolFlags, name):
		default:
			out = append(out, args[i])
		}
	}
	return append(out, "--seed", strconv.FormatUint(seed, 10))
}
