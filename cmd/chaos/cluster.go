package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/broker/wire"
	"github.com/chaos-isr/chaos/cluster"
	"github.com/chaos-isr/chaos/cluster/docker"
)

func newClusterCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Run a cluster of brokers and a controller; clean up what docker runs left",
	}
	cmd.AddCommand(newClusterUpCmd(), newClusterCleanCmd())
	return cmd
}

func newClusterUpCmd() *cobra.Command {
	var (
		nodes    int
		basePort int
		ctrlPort int
		data     string
		rt       string
		rf       replicationFlags
		tf       topicFlags
	)
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start a cluster (child processes or containers) and stay in the foreground",
		Long: `Start the controller and --nodes brokers as child processes on 127.0.0.1 (--runtime
local) or as containers on a private Docker network (--runtime docker). Broker i is
reached at 127.0.0.1:--base-port+i-1, the controller at --controller-port. Prints one line
per node (id, role, address, pid or container) and the bootstrap address, then runs until
Ctrl-C or SIGTERM, when it stops every node. Local children also die if this process is
killed; containers left by a killed process are removed by the next docker run or by
"chaos cluster clean".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkNodes(nodes, tf.rf); err != nil {
				return err
			}
			if err := checkRuntime(rt); err != nil {
				return err
			}
			if err := checkBasePort(basePort, nodes, false); err != nil {
				return err
			}
			if ctrlPort < 0 || ctrlPort > 65535 {
				return flagError("controller-port", ctrlPort, "out of range", "a port from 1 to 65535, or 0 for base-port-1")
			}
			if rt == runtimeDocker && ctrlPort != 0 && ctrlPort != basePort-1 {
				return flagError("controller-port", ctrlPort, "not --base-port-1 with --runtime docker",
					fmt.Sprintf("leave it out: the docker runtime puts the controller at base-port-1 (%d)", basePort-1))
			}
			if err := tf.validate(); err != nil {
				return err
			}
			if err := tf.config().Validate(); err != nil {
				return err
			}
			ccfg := coreDefaults()
			var st storageOpts
			if err := rf.apply(&ccfg, &st); err != nil {
				return err
			}
			if err := ccfg.Validate(); err != nil {
				return err
			}
			if err := stopIfValidating(cmd); err != nil {
				return err
			}
			keep := data != ""
			if !keep {
				dir, err := os.MkdirTemp("", "chaos-cluster-")
				if err != nil {
					return err
				}
				data = dir
				defer os.RemoveAll(dir)
			}
			ctx, stop := signalContext()
			defer stop()
			lc, err := startCluster(ctx, rt, cluster.Spec{
				Nodes: nodes, BasePort: basePort, ControllerPort: ctrlPort, DataDir: data,
				ControllerArgs: tf.args(), BrokerArgs: rf.args(),
			}, false)
			if err != nil {
				return err
			}
			defer lc.Close()
			if err := waitRegistered(ctx, lc.Info()[1].Addr, nodes); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			for _, n := range lc.Info() {
				id := fmt.Sprint(n.ID)
				if n.Role == "controller" {
					id = "-"
				}
				fmt.Fprintf(out, "%-3s %-10s %-21s %s\n", id, n.Role, n.Addr, n.Where)
			}
			fmt.Fprintf(out, "bootstrap: %s\n", lc.Bootstrap())
			if keep {
				fmt.Fprintf(out, "data and node logs: %s\n", data)
			} else {
				fmt.Fprintf(out, "data and node logs: %s (removed on exit; pass --data to keep them)\n", data)
			}
			if rt == runtimeDocker {
				fmt.Fprintln(out, "node logs: docker logs CONTAINER while up; copied into the data directory on exit")
			}
			fmt.Fprintln(out, "ready; Ctrl-C stops the cluster")
			watchExits(ctx, lc, out)
			fmt.Fprintln(out, "stopping")
			return nil
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&nodes, "nodes", 3, "number of brokers")
	fl.IntVar(&basePort, "base-port", 9092, "broker i listens on base-port+i-1")
	fl.IntVar(&ctrlPort, "controller-port", 0, "the controller's port (default: base-port-1)")
	fl.StringVar(&data, "data", "", "data directory (default: a temporary directory removed on exit)")
	fl.StringVar(&rt, "runtime", runtimeLocal, runtimeUsage)
	rf.register(cmd)
	tf.register(cmd)
	return cmd
}

// watchExits reports nodes that die while the cluster is up (killed by hand,
// crashed) until ctx ends.
func watchExits(ctx context.Context, lc cluster.Cluster, out interface{ Write([]byte) (int, error) }) {
	alive := map[int]cluster.NodeInfo{}
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
				if was := alive[n.ID]; was.Running && !n.Running {
					fmt.Fprintf(out, "%s %d (%s) exited; see %s\n", n.Role, n.ID, was.Where, n.Log)
				}
				alive[n.ID] = n
			}
		}
	}
}

// waitRegistered asks a broker for metadata until it lists n brokers.
func waitRegistered(ctx context.Context, addr string, n int) error {
	deadline := time.Now().Add(20 * time.Second)
	var last int
	for time.Now().Before(deadline) {
		got, err := brokerCount(addr)
		if err == nil && got >= n {
			return nil
		}
		last = got
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("only %d of %d brokers registered after 20s", last, n)
}

func brokerCount(addr string) (int, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 9
	if _, err := c.Write(wire.AppendRequest(nil, 1, "chaos-cli", req)); err != nil {
		return 0, err
	}
	frame, err := wire.ReadFrame(c, 0, nil)
	if err != nil {
		return 0, err
	}
	_, resp, err := wire.ParseResponse(frame, req)
	if err != nil {
		return 0, err
	}
	return len(resp.(*kmsg.MetadataResponse).Brokers), nil
}

func newClusterCleanCmd() *cobra.Command {
	var all, image bool
	cmd := &cobra.Command{
		Use:   "clean",
		Short: "Remove containers and networks that docker runs left behind",
		Long: `Remove the containers and networks of docker-runtime runs whose tester process is gone
(killed with SIGKILL, say): every object the runtime creates is labelled with its run and
its owner's pid. Every docker run does this at its start too. --all also removes those of
runs still going; --image also removes the runtime's image (` + docker.Image + `).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := stopIfValidating(cmd); err != nil {
				return err
			}
			ctx, stop := signalContext()
			defer stop()
			removed, err := docker.Sweep(ctx, all)
			out := cmd.OutOrStdout()
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
			if len(removed) == 0 && !image {
				fmt.Fprintln(out, "nothing to remove")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "also remove the containers and networks of runs still going")
	cmd.Flags().BoolVar(&image, "image", false, "also remove the runtime's image")
	return cmd
}
