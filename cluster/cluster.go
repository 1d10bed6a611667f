package cluster

import (
	"context"
	"fmt"
	"io"
	"time"
)

// Runtime controls the cluster's processes: what process faults need. Node
// 0 is the controller, brokers are 1..n.
type Runtime interface {
	Kill(id int) error
	Stop(id int, timeout time.Duration) error
	Restart(ctx context.Context, id int) error
	Pause(id int) error
	Resume(id int) error
}

// Clocks is a Runtime that can set a node's clock: from now on node id
// reads the true time stepped by offset and running rate times as fast;
// 0 and 1 set it right. Only the clock the node reads changes: its
// timers keep real time, as a process's do when its host's wall clock is
// stepped or slewed.
type Clocks interface {
	SetClock(id int, offset time.Duration, rate float64) error
}

// Disks is a Runtime that can damage a down node's data directory, as the
// disk faults do: DamageDisk corrupts or cuts one of its files
// (storage.DamageCorrupt, storage.DamageTruncate) at a place drawn from
// seed and says which; SnapshotDisk copies it aside and RestoreDisk puts
// the copy back in its place.
type Disks interface {
	DamageDisk(id int, what string, seed uint64) (string, error)
	SnapshotDisk(id int) error
	RestoreDisk(id int) error
}

// Crash is a node that died without the runtime killing or stopping it
// (a panic, a fatal error, an exit of any kind): what the runtime knows of
// how it died.
type Crash struct {
	// ID is the node: 0 the controller, brokers 1..n.
	ID int
	// Exit is how its process ended ("exit status 2", "signal: killed"),
	// where a process ended.
	Exit string
	// Panic is the panic message, where it is known; Stack the panic's
	// stack, where the runtime recovered it (a simulation).
	Panic, Stack string
	// Log is the last lines of its log from the incarnation that died,
	// where it has one.
	Log string
}

// CrashWatcher is a Runtime that notices its nodes dying on their own.
// The tester records each crash in the history (a finding) and the
// nemesis's next heal restarts the node.
type CrashWatcher interface {
	// WatchCrashes calls fn once for each node that dies without the
	// runtime having killed or stopped it, as soon as the runtime notices
	// (from a goroutine of its own, or the simulation's loop), those that
	// died before the call first.
	WatchCrashes(fn func(Crash))
	// Crashed lists the nodes that died so and are down still, in id
	// order.
	Crashed() []int
}

// Network controls the links between nodes, named as NodeName names them.
// Clients are never cut off: the faults are between nodes. The local
// runtime's is a proxy on every link (package proxy), the docker
// runtime's the kernel of each container (cluster/docker).
//
// Each method returns what kept it from taking effect (a rule a container
// refused, a command that failed, a node no link names): the nemesis
// records it with the fault, so a window whose fault did not happen
// judges nothing. Every method does as much as it can before it returns.
type Network interface {
	// Partition cuts every link between the two groups, both ways.
	Partition(a, b []string) error
	// Slow delays both directions of the links from one node to another.
	Slow(from, to string, d time.Duration) error
	// OneWay drops every packet from a node of from to a node of to.
	OneWay(from, to []string) error
	// DelayAll adds latency to every link; DropAll resets connections
	// with probability p per chunk of bytes.
	DelayAll(d time.Duration) error
	DropAll(p float64, seed uint64) error
	// HealAll removes every network fault.
	HealAll() error
}

// NodeName is how runtimes, network faults and the nemesis name node id:
// "controller" for node 0, "broker-N" for the brokers.
func NodeName(id int) string {
	if id == 0 {
		return "controller"
	}
	return fmt.Sprintf("broker-%d", id)
}

// Cluster is a running cluster as the tester drives it, whichever runtime
// runs it (child processes here, containers in cluster/docker): the
// process faults, the addresses clients use, what to show of each node,
// and Close. Node 0 is the controller, brokers are 1..n.
type Cluster interface {
	Runtime
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
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []NodeInfo
	for _, n := range l.nodes {
		pid := n.PID()
		out = append(out, NodeInfo{ID: n.ID, Name: NodeName(n.ID), Role: n.Role, Addr: n.Addr,
			Where: fmt.Sprintf("pid %d", pid), Running: pid != 0, Log: n.LogPath})
	}
	return out
}

// WatchExits reports nodes that die while the cluster is up (killed by hand,
// crashed), and that run again (chaos cluster start), until ctx ends.
func WatchExits(ctx context.Context, lc Cluster, out io.Writer) {
	alive := map[int]NodeInfo{}
	for _, n := range lc.Info() {
		alive[n.ID] = n
	}
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for _, n := range lc.Info() {
				// A node restarted between two looks (chaos cluster
				// start) runs with another pid: it exited all the same.
				was := alive[n.ID]
				again := n.Running && n.Where != was.Where
				if was.Running && (!n.Running || again) {
					fmt.Fprintf(out, "%s %d (%s) exited; see %s\n", n.Role, n.ID, was.Where, n.Log)
				}
				if n.Running && (!was.Running || again) {
					fmt.Fprintf(out, "%s %d runs again (%s)\n", n.Role, n.ID, n.Where)
				}
				alive[n.ID] = n
			}
		}
	}
}
