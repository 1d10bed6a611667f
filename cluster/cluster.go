package cluster

import (
	"fmt"

	"github.com/chaos-isr/chaos/nemesis"
)

// Cluster is a running cluster as the tester drives it, whichever runtime
// runs it (child processes here, containers in cluster/docker): the
// nemesis's process faults, the addresses clients use, what to show of
// each node, and Close. Node 0 is the controller, brokers are 1..n.
type Cluster interface {
	nemesis.Runtime
	// Bootstrap is the comma-separated broker addresses clients dial.
	Bootstrap() string
	ControllerAddr() string
	// Info describes every node, the controller first.
	Info() []NodeInfo
	// Close stops every node and releases what the runtime created; safe
	// to call more than once.
	Close()
	// Abort kills every node at once and releases what the runtime
	// created, without saving anything on the way (a second Ctrl-C asks
	// for it); safe to call while Close runs.
	Abort()
}

// NodeInfo describes one node for people: "cluster up" prints it.
type NodeInfo struct {
	ID      int
	Name    string // "controller" or "broker-N", as the nemesis names nodes
	Role    string // "controller" or "broker"
	Addr    string // the address clients (and the tester) use
	Where   string // "pid 1234", "container chaos-ab12-broker-1"
	Running bool
	Log     string // where the node's log is (or will be, for containers)
}

var _ Cluster = (*Local)(nil)

// Info describes the nodes of the local cluster.
func (l *Local) Info() []NodeInfo {
	var out []NodeInfo
	for _, n := range l.nodes {
		pid := n.PID()
		out = append(out, NodeInfo{ID: n.ID, Name: nemesis.NodeName(n.ID), Role: n.Role, Addr: n.Addr,
			Where: fmt.Sprintf("pid %d", pid), Running: pid != 0, Log: n.LogPath})
	}
	return out
}
