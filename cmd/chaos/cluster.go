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
)

func newClusterCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Run a local cluster of brokers and a controller",
	}
	cmd.AddCommand(newClusterUpCmd())
	return cmd
}

func newClusterUpCmd() *cobra.Command {
	var (
		nodes    int
		basePort int
		ctrlPort int
		data     string
		rf       replicationFlags
		tf       topicFlags
	)
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start a local cluster as child processes on 127.0.0.1 and stay in the foreground",
		Long: `Start the controller and --nodes brokers as child processes on 127.0.0.1. Broker i
listens on --base-port+i-1, the controller on --controller-port. Prints one line per node
(id, role, address, pid) and the bootstrap address, then runs until Ctrl-C or SIGTERM,
when it stops every child. Children also die if this process is killed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if nodes < 1 {
				return fmt.Errorf("--nodes must be at least 1, got %d", nodes)
			}
			if int(tf.rf) > nodes {
				return fmt.Errorf("--replication-factor %d needs at least %d nodes, --nodes is %d", tf.rf, tf.rf, nodes)
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
			lc, err := cluster.Start(ctx, cluster.Spec{
				Nodes: nodes, BasePort: basePort, ControllerPort: ctrlPort, DataDir: data,
				ControllerArgs: tf.args(), BrokerArgs: rf.args(),
			})
			if err != nil {
				return err
			}
			defer lc.Close()
			if err := waitRegistered(ctx, lc.Nodes()[1].Addr, nodes); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			for _, n := range lc.Nodes() {
				id := fmt.Sprint(n.ID)
				if n.Role == "controller" {
					id = "-"
				}
				fmt.Fprintf(out, "%-3s %-10s %-21s pid %d\n", id, n.Role, n.Addr, n.PID())
			}
			fmt.Fprintf(out, "bootstrap: %s\n", lc.Bootstrap())
			if keep {
				fmt.Fprintf(out, "data and node logs: %s\n", data)
			} else {
				fmt.Fprintf(out, "data and node logs: %s (removed on exit; pass --data to keep them)\n", data)
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
	rf.register(cmd)
	tf.register(cmd)
	return cmd
}

// watchExits reports nodes that die while the cluster is up (killed by hand,
// crashed) until ctx ends.
func watchExits(ctx context.Context, lc *cluster.Local, out interface{ Write([]byte) (int, error) }) {
	alive := map[int]int{}
	for _, n := range lc.Nodes() {
		alive[n.ID] = n.PID()
	}
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for _, n := range lc.Nodes() {
				pid := n.PID()
				if alive[n.ID] != 0 && pid == 0 {
					fmt.Fprintf(out, "%s %d (pid %d) exited; see %s\n", n.Role, n.ID, alive[n.ID], n.LogPath)
				}
				alive[n.ID] = pid
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
