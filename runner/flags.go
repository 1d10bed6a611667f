package runner

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/chaos-isr/chaos/broker/node"
	"github.com/chaos-isr/chaos/cluster"
	"github.com/chaos-isr/chaos/internal/cli"
	"github.com/chaos-isr/chaos/nemesis"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/workload"
)

// The commands that make a Spec from flags (chaos run, sim, campaign,
// cluster up) check each value first with these, so that a refusal names
// the flag (package cli's style); Validate then names the Spec's fields.

// ParseAcks reads --acks.
func ParseAcks(s string) (int16, error) {
	if a, ok := results.ParseAcks(s); ok {
		return a, nil
	}
	return 0, cli.Error("acks", s, "not an acks setting", "use 0, 1, -1 or all")
}

// ParseFaults reads --nemesis: none, or a comma list of faults.
func ParseFaults(s string) ([]string, error) {
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if err := nemesis.CheckTrigger(f); err != nil {
			return nil, cli.Error("nemesis", f, err.Error(), "arm a leader-aimed kind on an event: "+nemesis.TriggerSyntax)
		}
		if err := nemesis.Composite(f); err != nil {
			return nil, cli.Error("nemesis", f, err.Error(), "join two or three kinds with + to overlap them, e.g. slow-follower+kill-leader")
		}
		if _, ok := nemesis.Lookup(f); !ok && f != "none" && f != "" {
			return nil, cli.Error("nemesis", f, "not a fault", "use none or a comma list of: "+strings.Join(nemesis.Names(), ", ")+cli.DidYouMean(f, nemesis.Names()))
		}
	}
	faults, err := nemesis.Parse(s)
	if err != nil {
		return nil, cli.Error("nemesis", s, err.Error(), "")
	}
	return faults, nil
}

// CheckRuntime checks --runtime of a command that starts a real cluster.
func CheckRuntime(rt string) error {
	if slices.Contains(Runtimes(), rt) {
		return nil
	}
	return notARuntime(rt)
}

// notARuntime refuses rt, naming the runtimes a command takes: the real
// ones, then the others it also takes (a name and what it is), and the
// nearest of them all.
func notARuntime(rt string, others ...[2]string) error {
	names, accepted := Runtimes(), "use "+strings.Join(Runtimes(), " or ")
	for _, o := range others {
		names = append(names, o[0])
		accepted += " (or " + o[0] + ": " + o[1] + ")"
	}
	return cli.Error("runtime", rt, "not a runtime", accepted+cli.DidYouMean(rt, names))
}

// CheckCampaignRuntime checks a campaign's runtime: a real one, or the
// simulation (a campaign runs chaos sim's runs in its own process).
func CheckCampaignRuntime(rt string) error {
	if rt == RuntimeSim || slices.Contains(Runtimes(), rt) {
		return nil
	}
	return notARuntime(rt, [2]string{RuntimeSim, "every run in simulation"})
}

// CheckHuntRuntime checks chaos hunt's runtime: the simulation (its
// default), a real one, or an external cluster.
func CheckHuntRuntime(rt string) error {
	if rt == RuntimeSim || rt == RuntimeExternal || slices.Contains(Runtimes(), rt) {
		return nil
	}
	return notARuntime(rt, [2]string{RuntimeSim, "the simulation, the default"}, [2]string{RuntimeExternal, "a cluster you run, at --bootstrap"})
}

// CheckNodes checks --nodes against the replication factor the topic asks
// for.
func CheckNodes(nodes int, rf int16) error {
	if nodes < 1 {
		return cli.Error("nodes", nodes, "fewer than 1", "the number of brokers, 1 or more")
	}
	if int(rf) > nodes {
		return cli.Error("replication-factor", rf, fmt.Sprintf("above --nodes %d", nodes), "at most the number of brokers: a partition's replicas sit on distinct brokers")
	}
	return nil
}

// CheckBasePort checks --base-port: the controller takes base-port-1 and
// the brokers base-port..base-port+nodes-1. free says 0 means "free ports".
func CheckBasePort(base, nodes int, free bool) error {
	if free && base == 0 {
		return nil
	}
	if cluster.CheckPorts(base, nodes, 0) != nil {
		accepted := fmt.Sprintf("a port from 2 to %d, so that the controller (base-port-1) and %d broker(s) fit below 65536", 65536-nodes, nodes)
		if free {
			accepted += ", or 0 for free ports"
		}
		return cli.Error("base-port", base, "out of range", accepted)
	}
	return nil
}

// NodeSettings are the settings of a cluster whose every node is given r,
// t and bugs as its flags (package broker/node), as chaos run and chaos
// cluster up give them; bugs are by name in chaos bugs' order, an unknown
// one left out (node.ParseBugs refuses it).
func NodeSettings(r node.Replication, t node.Topics, bugs []string) cluster.Settings {
	s := cluster.DefaultSettings()
	s.ReplicaLagTimeMaxMs, s.ReplicaLagMaxMessages = r.ReplicaLagTimeMaxMs, r.ReplicaLagMaxMessages
	s.ReplicaFetchWaitMaxMs, s.HeartbeatIntervalMs = r.ReplicaFetchWaitMaxMs, r.HeartbeatIntervalMs
	s.Fsync, s.LoseUnsynced, s.NoAutoCreateTopics = r.Fsync, r.LoseUnsynced, r.NoAutoCreateTopics
	s.SessionTimeoutMs, s.Partitions, s.ReplicationFactor = t.SessionTimeoutMs, t.Partitions, t.ReplicationFactor
	s.MinInsyncReplicas, s.Election = t.MinInsyncReplicas, t.Election
	if set, err := node.ParseBugs(bugs); err == nil {
		s.Bugs = set.Names()
	}
	return s
}

// CheckFlags checks what chaos run's flags set: the spec's runtime, size,
// ports, workload and nemesis, then the nodes' settings as the flags gave
// them (r, t and bugs, which the spec's Settings are made of).
func (s Spec) CheckFlags(r node.Replication, t node.Topics, bugs []string) error {
	if s.Runtime == RuntimeExternal {
		if len(bugs) > 0 {
			return cli.Error("bug", strings.Join(bugs, ","), "not with --runtime external", "bugs are planted in chaos's own brokers; an external cluster has its own")
		}
		if r.LoseUnsynced {
			return cli.Error("lose-unsynced", true, "not with --runtime external", "only chaos's own brokers keep unsynced writes in memory to lose them")
		}
		if s.BasePort != 0 {
			return cli.Error("base-port", s.BasePort, "not with --runtime external", "leave it out: the cluster is at --bootstrap")
		}
	} else if !slices.Contains(Runtimes(), s.Runtime) {
		// chaos run also tests a cluster it did not start.
		return notARuntime(s.Runtime, [2]string{RuntimeExternal, "a cluster you run, at --bootstrap, faulted by the fault commands"})
	} else if err := CheckNodes(s.Nodes, s.Settings.ReplicationFactor); err != nil {
		return err
	}
	if err := CheckBasePort(s.BasePort, s.Nodes, true); err != nil {
		return err
	}
	switch {
	case s.Concurrency < 1:
		return cli.Error("concurrency", s.Concurrency, "fewer than 1", "the number of producers, 1 or more")
	case s.Consumers < -1:
		return cli.Error("consumers", s.Consumers, "negative", "0 or more (default: one per partition)")
	case s.Rate < 0:
		return cli.Error("rate", s.Rate, "negative", "sends per second, or 0 for as fast as the producers go")
	case math.IsNaN(s.Rate) || math.IsInf(s.Rate, 0):
		return cli.Error("rate", s.Rate, "not a finite number", "sends per second, or 0 for as fast as the producers go")
	case s.NemesisOverlap < 0 || s.NemesisOverlap > 3:
		return cli.Error("nemesis-overlap", s.NemesisOverlap, "out of range", "1 to 3 fault kinds at once (1: one at a time)")
	case s.TimeLimit <= 0:
		return cli.Error("time-limit", s.TimeLimit, "not positive", "a duration such as 30s or 5m")
	case len(s.Faults) > 0 && s.NemesisInterval <= 0:
		return cli.Error("nemesis-interval", s.NemesisInterval, "not positive", "a duration such as 10s: the faults need windows")
	case s.RequestTimeout <= 0:
		return cli.Error("request-timeout", s.RequestTimeout, "not positive", "a duration such as 5s")
	case s.ConvergeTimeout <= 0:
		return cli.Error("converge-timeout", s.ConvergeTimeout, "not positive", "a duration such as 60s")
	case s.LivenessBound < 0:
		return cli.Error("liveness-bound", s.LivenessBound, "negative", "a duration such as 30s, or 0 for the default")
	case s.MonitorInterval < 0:
		return cli.Error("monitor-interval", s.MonitorInterval, "negative", "a duration such as 250ms, or 0 for no monitor")
	case s.MaxInFlight < 1:
		return cli.Error("max-in-flight", s.MaxInFlight, "fewer than 1", "the produce requests a producer may have outstanding, 1 or more")
	case s.Idempotent && s.Acks != -1:
		return cli.Error("idempotent", true, fmt.Sprintf("not with --acks %d", s.Acks),
			"give --acks -1 (all): a batch acknowledged by the leader alone may be lost with the producer state that would recognise its retry, and Kafka's producers refuse enable.idempotence without acks=all too")
	case s.Idempotent && s.MaxInFlight > workload.MaxIdempotentInFlight:
		return cli.Error("max-in-flight", s.MaxInFlight, fmt.Sprintf("above %d with --idempotent", workload.MaxIdempotentInFlight),
			fmt.Sprintf("at most %d: a broker remembers an idempotent producer's last %d batches, and knows an older one's retry as out of order (Kafka refuses more too)",
				workload.MaxIdempotentInFlight, workload.MaxIdempotentInFlight))
	}
	if err := t.Validate(); err != nil {
		return err
	}
	if err := r.Validate(); err != nil {
		return err
	}
	_, err := node.ParseBugs(bugs)
	return err
}

// FlagCombination says which flags a refused spec is about, when the flags
// passed CheckFlags one by one but not together: --time-limit and
// --nemesis-interval that leave no fault window (a NoWindowError, which
// carries both).
func FlagCombination(err error) error {
	var nw *NoWindowError
	if !errors.As(err, &nw) {
		return err
	}
	// The other reasons stand, said as they were.
	lines := []string{fmt.Sprintf("--time-limit %s is too short for --nemesis-interval %s: no fault window fits (a run needs at least twice the interval: --time-limit %s, or a shorter --nemesis-interval)",
		nw.TimeLimit, nw.Interval, nemesis.MinTimeLimit(nw.Interval))}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		if !errors.As(e, &nw) {
			lines = append(lines, e.Error())
		}
	}
	return errors.New(strings.Join(lines, "\n"))
}
