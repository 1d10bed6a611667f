package runner

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/chaos-isr/chaos/broker/node"
	"github.com/chaos-isr/chaos/cluster"
	"github.com/chaos-isr/chaos/cluster/control"
	"github.com/chaos-isr/chaos/cluster/docker"
	"github.com/chaos-isr/chaos/internal/cli"
)

// Up is chaos cluster up: a cluster started in the foreground for people
// and their clients (kcat, say) until it is interrupted.
type Up struct {
	Runtime         string
	Nodes, BasePort int
	// ControllerPort is the controller's; 0 puts it at BasePort-1.
	ControllerPort int
	// DataDir holds the nodes' data and logs and is kept; empty: a
	// temporary directory removed when the cluster stops.
	DataDir string
	// NetworkFaults starts the cluster able to take network faults (a
	// proxy on every link, or the containers' rules), so that the control
	// socket can partition it.
	NetworkFaults bool
	// The settings every node is given (NodeSettings).
	Replication node.Replication
	Topics      node.Topics
	Bugs        []string
}

// CheckFlags checks the cluster's size, runtime and ports, then what its
// nodes will check of their settings, naming the flag of a bad value.
func (u Up) CheckFlags() error {
	if err := CheckNodes(u.Nodes, u.Topics.ReplicationFactor); err != nil {
		return err
	}
	if err := CheckRuntime(u.Runtime); err != nil {
		return err
	}
	if err := CheckBasePort(u.BasePort, u.Nodes, false); err != nil {
		return err
	}
	if u.ControllerPort < 0 || u.ControllerPort > 65535 {
		return cli.Error("controller-port", u.ControllerPort, "out of range", "a port from 1 to 65535, or 0 for base-port-1")
	}
	if err := cluster.CheckPorts(u.BasePort, u.Nodes, u.ControllerPort); err != nil {
		return cli.Error("controller-port", u.ControllerPort, err.Error(),
			fmt.Sprintf("a port outside the brokers' %d..%d, or 0 for base-port-1", u.BasePort, u.BasePort+u.Nodes-1))
	}
	if u.Runtime == RuntimeDocker && u.ControllerPort != 0 && u.ControllerPort != u.BasePort-1 {
		return cli.Error("controller-port", u.ControllerPort, "not --base-port-1 with --runtime docker",
			fmt.Sprintf("leave it out: the docker runtime puts the controller at base-port-1 (%d)", u.BasePort-1))
	}
	return node.CheckCluster(u.Replication, u.Topics, u.Bugs)
}

// Run starts the cluster and says on out where its data and node logs are;
// once every broker answers with the cluster id chosen for it, each node,
// the cluster id and the bootstrap address, and "ready"; then it serves
// the control socket (package control) in the data directory and says
// every node that exits, until ctx ends, when it stops them. onAbort is handed what stops every
// node at once (a second interrupt calls it). A node that cannot start
// fails it at once, and its data directory is kept for the node logs.
// It returns ExitInterrupted when ctx ended before the cluster was up.
func (u Up) Run(ctx context.Context, out io.Writer, onAbort func(abort func())) (int, error) {
	if err := RuntimeReady(ctx, u.Runtime); err != nil {
		return 0, err
	}
	data, keep := u.DataDir, u.DataDir != ""
	if keep {
		fmt.Fprintf(out, "data and node logs: %s\n", data)
	} else {
		dir, err := cluster.NewTempDataDir()
		if err != nil {
			return 0, err
		}
		data = dir
		fmt.Fprintf(out, "data and node logs: %s (removed on exit; pass --data to keep them; \"chaos cluster clean\" removes it if this process is killed)\n", data)
	}
	clusterID := NewClusterID()
	settings := NodeSettings(u.Replication, u.Topics, u.Bugs)
	if len(settings.Bugs) > 0 {
		fmt.Fprintf(out, "planted bugs: %s (every node takes the ones that live in it)\n", strings.Join(settings.Bugs, ", "))
	}
	lc, err := StartCluster(ctx, u.Runtime, cluster.Spec{
		Nodes: u.Nodes, BasePort: u.BasePort, ControllerPort: u.ControllerPort, DataDir: data, ClusterID: clusterID,
		ControllerArgs: settings.ControllerArgs(), BrokerArgs: settings.BrokerArgs(),
	}, u.NetworkFaults)
	if err != nil && ctx.Err() != nil {
		if !keep {
			os.RemoveAll(data)
		}
		return ExitInterrupted, nil
	}
	if err != nil {
		// The node logs are the only account of why: kept.
		return 0, fmt.Errorf("%w\nnode logs kept in %s", err, data)
	}
	onAbort(lc.Abort)
	// The control socket stops first: a fault in progress must not act on
	// nodes Close is stopping.
	stopControl, controlErr := control.Serve(ctx, control.SocketPath(data), lc.Cluster, lc.Net)
	defer func() {
		if stopControl != nil {
			stopControl()
		}
		lc.Close()
		if !keep {
			os.RemoveAll(data)
		}
	}()
	for _, n := range lc.Info() {
		id := fmt.Sprint(n.ID)
		if n.Role == "controller" {
			id = "-"
		}
		fmt.Fprintf(out, "%-3s %-10s %-21s %s\n", id, n.Role, n.Addr, n.Where)
	}
	fmt.Fprintf(out, "cluster id: %s\nbootstrap: %s\n", clusterID, lc.Bootstrap())
	if u.Runtime == RuntimeDocker {
		fmt.Fprintln(out, "node logs: docker logs CONTAINER while up; copied into the data directory on exit")
	}
	fmt.Fprintln(out, "ready; Ctrl-C stops the cluster")
	switch {
	case controlErr != nil:
		fmt.Fprintf(out, "control: unavailable (%v)\n", controlErr)
	case lc.Net == nil:
		fmt.Fprintf(out, "control: chaos cluster kill|stop|start|pause|resume NODE --data %s; heal (partition needs --network-faults)\n", data)
	default:
		fmt.Fprintf(out, "control: chaos cluster kill|stop|start|pause|resume NODE --data %s; partition NODE PEER...; heal\n", data)
	}
	cluster.WatchExits(ctx, lc, out)
	return 0, nil
}

// Clean is chaos cluster clean: it removes, saying each on out, the
// temporary data directories of clusters whose owner is gone, then the
// docker runtime's containers and networks whose owner is gone (all: also
// those of runs still going) and, with image, the runtime's image. Without
// a Docker engine the second part is skipped, unless all or image asks for
// it.
func Clean(ctx context.Context, out io.Writer, all, image bool) error {
	dirs, err := cluster.SweepTempDirs()
	for _, d := range dirs {
		fmt.Fprintf(out, "removed data directory %s (owner gone)\n", d)
	}
	if err != nil {
		return err
	}
	if err := docker.Available(ctx); err != nil && !all && !image {
		fmt.Fprintf(out, "no containers looked for: %v\n", err)
		if len(dirs) == 0 {
			fmt.Fprintln(out, "nothing to remove")
		}
		return nil
	}
	removed, err := docker.Sweep(ctx, all)
	for _, l := range removed {
		if l.Kind == "image" {
			fmt.Fprintf(out, "removed untagged image %s (an older build)\n", l.Name)
			continue
		}
		state := "owner gone"
		if l.Alive {
			state = "owner still running"
		}
		fmt.Fprintf(out, "removed %s %s (run %s, %s)\n", l.Kind, l.Name, l.Run, state)
	}
	if err != nil {
		return err
	}
	if image {
		if err := docker.RemoveImage(ctx); err != nil {
			return err
		}
		fmt.Fprintf(out, "removed image %s\n", docker.Image)
	}
	if len(dirs) == 0 && len(removed) == 0 && !image {
		fmt.Fprintln(out, "nothing to remove")
	}
	return nil
}
