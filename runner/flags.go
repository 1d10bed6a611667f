package runner

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/chaos-isr/chaos/broker/node"
	"github.com/chaos-isr/chaos/cluster"
	"github.com/chaos-isr/chaos/internal/cli"
	"github.com/chaos-isr/chaos/nemesis"
	"github.com/chaos-isr/chaos/results"
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
		return cli.Error("replication-factor", rf, fmt.Sprintf("above nodes %d", nodes), "at most the number of brokers: a partition's replicas sit on distinct brokers")
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

// NodeFlags are the flags every node of a cluster with settings st is
// started with (package broker/node): NodeSettings the other way.
func NodeFlags(st cluster.Settings) (node.Replication, node.Topics) {
	return node.Replication{
			ReplicaLagTimeMaxMs: st.ReplicaLagTimeMaxMs, ReplicaLagMaxMessages: st.ReplicaLagMaxMessages,
			ReplicaFetchWaitMaxMs: st.ReplicaFetchWaitMaxMs, HeartbeatIntervalMs: st.HeartbeatIntervalMs,
			Fsync: st.Fsync, LoseUnsynced: st.LoseUnsynced, NoAutoCreateTopics: st.NoAutoCreateTopics,
		}, node.Topics{
			SessionTimeoutMs: st.SessionTimeoutMs, Partitions: st.Partitions, ReplicationFactor: st.ReplicationFactor,
			MinInsyncReplicas: st.MinInsyncReplicas, Election: st.Election,
		}
}

// CheckFlags checks what chaos run's flags set, naming the flag of the
// first refused: what only flags can get wrong (a flag an external
// cluster has no use for, a runtime chaos run does not take, the bugs as
// given, of which the spec keeps only the known), then every rule of
// Validate that judges one setting, said in the flags' words. Rules of
// several settings together (a time limit too short for the nemesis
// interval) wait for Validate once the schedule is fitted.
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
	}
	if s.MaxInFlight < 1 {
		// A stored spec's 0 is 1 (the field is left out); a flag given 0
		// asks for no request at all.
		return cli.Error("max-in-flight", s.MaxInFlight, "fewer than 1", "the produce requests a producer may have outstanding, 1 or more")
	}
	if _, err := node.ParseBugs(bugs); err != nil {
		return err
	}
	if fe := firstFieldError(s.Validate()); fe != nil {
		return fe.FlagError()
	}
	return nil
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
