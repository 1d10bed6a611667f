package main

import (
	"context"
	"fmt"

	"github.com/chaos-isr/chaos/cluster"
	"github.com/chaos-isr/chaos/cluster/docker"
	"github.com/chaos-isr/chaos/nemesis"
)

// The runtimes a cluster can run in (DESIGN.md, "Running a cluster").
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

// startedCluster is a running cluster with the network faults of its
// runtime (nil when none were asked for).
type startedCluster struct {
	cluster.Cluster
	net nemesis.Network
	// delays says how the network delays links: "proxy" for the local
	// runtime, "netem" or "htb-rate" in containers; empty without faults.
	delays string
	stop   func()
}

// Close stops the cluster and its network faults.
func (s *startedCluster) Close() { s.stop() }

// startCluster starts spec's cluster in the runtime; withNet asks for
// network faults. The caller must Close it, on every path.
func startCluster(ctx context.Context, rt string, spec cluster.Spec, withNet bool) (*startedCluster, error) {
	switch rt {
	case runtimeLocal:
		var fabric nemesis.Network
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
			Nodes: spec.Nodes, BasePort: spec.BasePort, DataDir: spec.DataDir, Binary: spec.Binary,
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
