package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/chaos-isr/chaos/cluster"
	"github.com/chaos-isr/chaos/cluster/docker"
	"github.com/chaos-isr/chaos/workload"
)

// The runtimes a cluster can run in (README, "The docker runtime").
const (
	runtimeLocal  = "local"
	runtimeDocker = "docker"
)

const runtimeUsage = "where the cluster runs: local (child processes on 127.0.0.1) or docker (a container per node; needs a Docker engine)"

func checkRuntime(rt string) error {
	switch rt {
	case runtimeLocal, runtimeDocker:
		return nil
	}
	return flagError("runtime", rt, "not a runtime", "use "+runtimeLocal+" or "+runtimeDocker)
}

// runtimeReady reports why the runtime cannot start a cluster from here,
// before a command creates anything that a refusal would leave behind.
func runtimeReady(ctx context.Context, rt string) error {
	if rt == runtimeDocker {
		if err := docker.Check(ctx, ""); err != nil {
			return fmt.Errorf("docker runtime: %w", err)
		}
	}
	return nil
}

// newClusterID names a cluster the tester starts. It is an identity, not a
// choice of the test, so it is random whatever the seed: two runs with one
// seed on the same ports must still tell each other apart.
func newClusterID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "chaos-" + hex.EncodeToString(b[:])
}

// startedCluster is a running cluster with the network faults of its
// runtime (nil when none were asked for).
type startedCluster struct {
	cluster.Cluster
	net cluster.Network
	// delays says how the network delays links: "proxy" for the local
	// runtime, "netem" or "htb-rate" in containers; empty without faults.
	delays string
	stop   func()
}

// Close stops the cluster and its network faults.
func (s *startedCluster) Close() { s.stop() }

// startCluster starts spec's cluster in the runtime (withNet asks for
// network faults) and returns it once every broker answers, through the
// protocol, with spec.ClusterID and the cluster's brokers: never a cluster
// that merely answers on its ports. The caller must Close it, on every
// path.
func startCluster(ctx context.Context, rt string, spec cluster.Spec, withNet bool) (*startedCluster, error) {
	s, err := startRuntime(ctx, rt, spec, withNet)
	if err != nil {
		return nil, err
	}
	if err := verifyIdentity(ctx, s, spec.ClusterID); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
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

func startRuntime(ctx context.Context, rt string, spec cluster.Spec, withNet bool) (*startedCluster, error) {
	switch rt {
	case runtimeLocal:
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
		s := &startedCluster{Cluster: lc, net: fabric, stop: func() { lc.Close(); closeFabric() }}
		if withNet {
			s.delays = "proxy"
		}
		return s, nil
	case runtimeDocker:
		dc, err := docker.Start(ctx, docker.Spec{
			Nodes: spec.Nodes, BasePort: spec.BasePort, DataDir: spec.DataDir, Binary: spec.Binary, ClusterID: spec.ClusterID,
			ControllerArgs: spec.ControllerArgs, BrokerArgs: spec.BrokerArgs,
		})
		if err != nil {
			return nil, fmt.Errorf("docker runtime: %w", err)
		}
		s := &startedCluster{Cluster: dc, stop: dc.Close}
		if withNet {
			w, err := dc.Network(ctx)
			if err != nil {
				dc.Close()
				return nil, err
			}
			s.net, s.delays = w, w.Mechanism()
		}
		return s, nil
	}
	return nil, checkRuntime(rt)
}
