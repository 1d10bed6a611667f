package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/chaos-isr/chaos/cluster/docker"
	"github.com/chaos-isr/chaos/internal/cli"
	"github.com/chaos-isr/chaos/runner"
)

func newClusterCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Run a cluster of brokers and a controller, inject faults into it; clean up what docker runs left",
	}
	cmd.AddCommand(newClusterUpCmd(), newClusterCleanCmd())
	cmd.AddCommand(newClusterControlCmds()...)
	return cmd
}

func newClusterUpCmd() *cobra.Command {
	var up runner.Up
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start a cluster (child processes or containers) and stay in the foreground",
		Long: `Start the controller and --nodes brokers as child processes on 127.0.0.1 (--runtime
local) or as containers on a private Docker network (--runtime docker). Broker i is
reached at 127.0.0.1:--base-port+i-1, the controller at --controller-port. Prints where
the data and node logs are, then, once every broker answers with the cluster id chosen
for this cluster and lists every broker, one line per node (id, role, address, pid or
container), the cluster id and the bootstrap address, and "ready". It runs until Ctrl-C
or SIGTERM, when it stops every node (a second Ctrl-C stops them at once). While it runs,
"chaos cluster kill|stop|start|pause|resume|partition|heal ... --data DATA" from another
shell inject faults into it through its control socket, DATA/control.sock (printed after
"ready"); partition needs --network-faults. A node that
cannot start (a port held by another process, say) fails the command at once with the
reason; the data directory is then kept, temporary or not. Local children also die if
this process is killed; containers and the temporary data directory left by a killed
process are removed by "chaos cluster clean" (containers also by the next docker run).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := up.CheckFlags(); err != nil {
				return err
			}
			if err := cli.StopIfValidating(cmd.Context()); err != nil {
				return err
			}
			ctx, intr, stop := cli.InterruptContext(cmd.ErrOrStderr(), "stopping the cluster")
			defer stop()
			return exitWith(up.Run(ctx, cmd.OutOrStdout(), intr.OnSecond))
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&up.Nodes, "nodes", 3, "number of brokers")
	fl.IntVar(&up.BasePort, "base-port", 9092, "broker i listens on base-port+i-1")
	fl.IntVar(&up.ControllerPort, "controller-port", 0, "the controller's port (default: base-port-1)")
	fl.StringVar(&up.DataDir, "data", "", "data directory (default: a temporary directory removed on exit)")
	fl.StringVar(&up.Runtime, "runtime", runner.RuntimeLocal, runner.RuntimeUsage)
	fl.BoolVar(&up.NetworkFaults, "network-faults", false, "make network faults possible (chaos cluster partition): a proxy on every inter-node link, or rules in the containers")
	runner.ReplicationFlags(fl, &up.Replication)
	runner.TopicFlags(fl, &up.Topics)
	runner.BugFlag(fl, &up.Bugs)
	groupFlags(cmd, clusterUpGroups())
	return cmd
}

func newClusterCleanCmd() *cobra.Command {
	var all, image bool
	cmd := &cobra.Command{
		Use:   "clean",
		Short: "Remove what killed clusters left behind: temporary data directories, containers, networks",
		Long: `Remove what "chaos cluster up" and docker-runtime runs left behind when their process was
killed (with SIGKILL, say, when no cleanup runs):

- the temporary data directories of "cluster up" (` + os.TempDir() + `/chaos-cluster-*) whose owner
  is gone: each records its owner's pid and start time, so a live cluster's directory is
  never removed, not even with --all;
- the containers and networks of the docker runtime whose owner is gone: every object the
  runtime creates is labelled with its run and its owner's pid. Every docker run does this
  at its start too. --all also removes those of runs still going; --image also removes the
  runtime's image (` + docker.Image + `). Without a Docker engine this part is skipped,
  unless --all or --image asks for it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cli.StopIfValidating(cmd.Context()); err != nil {
				return err
			}
			ctx, stop := cli.SignalContext()
			defer stop()
			return runner.Clean(ctx, cmd.OutOrStdout(), all, image)
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "also remove the containers and networks of runs still going (never a live cluster's data directory)")
	cmd.Flags().BoolVar(&image, "image", false, "also remove the runtime's image")
	return cmd
}
