package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/chaos-isr/chaos/cluster"
	"github.com/chaos-isr/chaos/cluster/docker"
	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/proxy"
	"github.com/chaos-isr/chaos/workload"
)

// The runtimes a cluster can run in.
const (
	RuntimeLocal  = "local"
	RuntimeDocker = "docker"
	// RuntimeSim is the deterministic simulation: the same test on a
	// cluster simulated in memory, run by package sim (chaos sim) rather
	// than by Run. A Spec may name it; Run refuses it.
	RuntimeSim = "sim"
)

// Runtimes lists them.
func Runtimes() []string { return []string{RuntimeLocal, RuntimeDocker} }

// RuntimeReady reports why the runtime cannot start a cluster from here,
// before a caller creates anything a refusal would leave behind.
func RuntimeReady(ctx context.Context, rt string) error {
	switch rt {
	case RuntimeLocal:
		return nil
	case RuntimeDocker:
		if err := docker.Check(ctx, ""); err != nil {
			return fmt.Errorf("docker runtime: %w", err)
		}
		return nil
	case RuntimeSim:
		return fmt.Errorf("the %s runtime is simulated: package sim (chaos sim) runs it", rt)
	case RuntimeExternal:
		return nil
	}
	return fmt.Errorf("unknown runtime %q", rt)
}

// NewClusterID names a cluster the tester starts. It is an identity, not a
// choice of the test, so it is random whatever the seed: two runs with one
// seed on the same ports must still tell each other apart.
func NewClusterID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "chaos-" + hex.EncodeToString(b[:])
}

// Cluster is a running cluster with the network faults of its runtime
// (Net is nil when none were asked for).
type Cluster struct {
	cluster.Cluster
	Net cluster.Network
	// Delays says how the network delays links: "proxy" for the local
	// runtime, "netem" or, on kernels without it, "userspace" (the same
	// delay line as the local runtime's, in a relay beside each broker) in
	// containers; empty without a network.
	Delays string
	stop   func()
}

// SetClock is the runtime's cluster.Clocks (the local and docker runtimes
// offer it).
func (c *Cluster) SetClock(id int, offset time.Duration, rate float64) error {
	k, ok := c.Cluster.(cluster.Clocks)
	if !ok {
		return fmt.Errorf("this runtime cannot set a node's clock")
	}
	return k.SetClock(id, offset, rate)
}

// DamageDisk, SnapshotDisk and RestoreDisk are the runtime's
// cluster.Disks (the local and docker runtimes offer them).
func (c *Cluster) DamageDisk(id int, what string, seed uint64) (string, error) {
	k, ok := c.Cluster.(cluster.Disks)
	if !ok {
		return "", fmt.Errorf("this runtime cannot damage a node's disk")
	}
	return k.DamageDisk(id, what, seed)
}

// SnapshotDisk: see DamageDisk.
func (c *Cluster) SnapshotDisk(id int) error {
	k, ok := c.Cluster.(cluster.Disks)
	if !ok {
		return fmt.Errorf("this runtime cannot copy a node's disk")
	}
	return k.SnapshotDisk(id)
}

// RestoreDisk: see DamageDisk.
func (c *Cluster) RestoreDisk(id int) error {
	k, ok := c.Cluster.(cluster.Disks)
	if !ok {
		return fmt.Errorf("this runtime cannot restore a node's disk")
	}
	return k.RestoreDisk(id)
}

// Close stops the cluster and its network faults.
func (c *Cluster) Close() { c.stop() }

// StartCluster is the one constructor of a runtime with its fabric: it
// starts spec's cluster in runtime rt (withNet asks for network faults) and
// returns it once every broker answers, through the protocol, with
// spec.ClusterID and the cluster's brokers: never a cluster that merely
// answers on its ports. The caller must Close it, on every path.
func StartCluster(ctx context.Context, rt string, spec cluster.Spec, withNet bool) (*Cluster, error) {
	c, err := startRuntime(ctx, rt, spec, withNet)
	if err != nil {
		return nil, err
	}
	if err := verifyIdentity(ctx, c, spec.ClusterID); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// verifyIdentity checks that every broker clients will dial answers as
// cluster id and lists exactly the cluster's brokers.
func verifyIdentity(ctx context.Context, c cluster.Cluster, id string) error {
	want := workload.Identity{ClusterID: id, Brokers: map[int32]string{}}
	for _, n := range c.Info() {
		if n.Role == "broker" {
			want.Brokers[int32(n.ID)] = n.Addr
		}
	}
	err := workload.VerifyCluster(ctx, want, 20*time.Second)
	if err == nil || ctx.Err() != nil {
		return err
	}
	for _, n := range c.Info() {
		if !n.Running {
			err = fmt.Errorf("%w; %s exited, see %s", err, n.Name, n.Log)
		}
	}
	return err
}

func startRuntime(ctx context.Context, rt string, spec cluster.Spec, withNet bool) (*Cluster, error) {
	switch rt {
	case RuntimeLocal:
		var fabric cluster.Network
		closeFabric := func() {}
		if withNet {
			// Network faults need every inter-node link to pass through
			// a proxy of this process; without them brokers dial each
			// other directly.
			f, err := linkFabric(&spec)
			if err != nil {
				return nil, err
			}
			fabric, closeFabric = f, func() { _ = f.Close() }
		}
		lc, err := cluster.Start(ctx, spec)
		if err != nil {
			closeFabric()
			return nil, err
		}
		c := &Cluster{Cluster: lc, Net: fabric, stop: func() { lc.Close(); closeFabric() }}
		if withNet {
			c.Delays = "proxy"
		}
		return c, nil
	case RuntimeDocker:
		dc, err := docker.Start(ctx, docker.Spec{
			Nodes: spec.Nodes, BasePort: spec.BasePort, DataDir: spec.DataDir, Binary: spec.Binary, ClusterID: spec.ClusterID,
			ControllerArgs: spec.ControllerArgs, BrokerArgs: spec.BrokerArgs, NetworkFaults: withNet,
		})
		if err != nil {
			return nil, fmt.Errorf("docker runtime: %w", err)
		}
		c := &Cluster{Cluster: dc, stop: dc.Close}
		if withNet {
			w, err := dc.Network(ctx)
			if err != nil {
				dc.Close()
				return nil, err
			}
			c.Net, c.Delays = w, w.Mechanism()
		}
		return c, nil
	}
	return nil, fmt.Errorf("unknown runtime %q", rt)
}

// linkFabric puts a proxy on every link a broker dials (to each peer and to
// the controller) and points the brokers at them.
func linkFabric(spec *cluster.Spec) (*proxy.Fabric, error) {
	fabric := proxy.NewFabric()
	addr := func(port int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) }
	ctrlPort := spec.ControllerPort
	if ctrlPort == 0 {
		ctrlPort = spec.BasePort - 1
	}
	for i := 1; i <= spec.Nodes; i++ {
		if _, err := fabric.Add(cluster.NodeName(i), "controller", addr(ctrlPort)); err != nil {
			fabric.Close()
			return nil, err
		}
		for j := 1; j <= spec.Nodes; j++ {
			if j == i {
				continue
			}
			if _, err := fabric.Add(cluster.NodeName(i), cluster.NodeName(j), addr(spec.BasePort+j-1)); err != nil {
				fabric.Close()
				return nil, err
			}
		}
	}
	spec.BrokerArgsFor = func(i int) []string {
		args := []string{"--controller", fabric.Link(cluster.NodeName(i), "controller").Addr()}
		for j := 1; j <= spec.Nodes; j++ {
			if j != i {
				args = append(args, "--peer-addr", fmt.Sprintf("%d=%s", j, fabric.Link(cluster.NodeName(i), cluster.NodeName(j)).Addr()))
			}
		}
		return args
	}
	return fabric, nil
}

// TakeCommands hands the nemesis the commands the runtime ran to fault
// the cluster since it last asked (the external runtime's; none in the
// runtimes chaos starts), for the history.
func (c *Cluster) TakeCommands() []history.Command {
	if l, ok := c.Cluster.(interface{ TakeCommands() []history.Command }); ok {
		return l.TakeCommands()
	}
	return nil
}

var _ cluster.CrashWatcher = (*Cluster)(nil)

// WatchCrashes watches the nodes for deaths of their own where the
// runtime can (cluster.CrashWatcher: the local and docker runtimes); the
// external runtime does not, and fn is never called.
func (c *Cluster) WatchCrashes(fn func(cluster.Crash)) {
	if w, ok := c.Cluster.(cluster.CrashWatcher); ok {
		w.WatchCrashes(fn)
	}
}

// Crashed lists the nodes down since they died on their own, where the
// runtime watches for it.
func (c *Cluster) Crashed() []int {
	if w, ok := c.Cluster.(cluster.CrashWatcher); ok {
		return w.Crashed()
	}
	return nil
}
