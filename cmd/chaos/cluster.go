package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chaos-isr/chaos/cluster"
	"github.com/chaos-isr/chaos/cluster/docker"
	"github.com/chaos-isr/chaos/runner"
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
		bugs     bugFlags
	)
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start a cluster (child processes or containers) and stay in the foreground",
		Long: `Start the controller and --nodes brokers as child processes on 127.0.0.1 (--runtime
local) or as containers on a private Docker network (--runtime docker). Broker i is
reached at 127.0.0.1:--base-port+i-1, the controller at --controller-port. Prints where
the data and node logs are, then, once every broker answers with the cluster id chosen
for this cluster and lists every broker, one line per node (id, role, address, pid or
container), the cluster id and the bootstrap address, and "ready". It runs until Ctrl-C
or SIGTERM, when it stops every node (a second Ctrl-C stops them at once). A node that
cannot start (a port held by another process, say) fails the command at once with the
reason; the data directory is then kept, temporary or not. Local children also die if
this process is killed; containers and the temporary data directory left by a killed
process are removed by "chaos cluster clean" (containers also by the next docker run).`,
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
			if _, err := bugs.parse(); err != nil {
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
			ctx, intr, stop := interruptContext(cmd.ErrOrStderr(), "stopping the cluster")
			defer stop()
			if err := runner.RuntimeReady(ctx, rt); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			keep := data != ""
			if keep {
				fmt.Fprintf(out, "data and node logs: %s\n", data)
			} else {
				dir, err := cluster.NewTempDataDir()
				if err != nil {
					return err
				}
				data = dir
				fmt.Fprintf(out, "data and node logs: %s (removed on exit; pass --data to keep them; \"chaos cluster clean\" removes it if this process is killed)\n", data)
			}
			clusterID := runner.NewClusterID()
			settings := cluster.DefaultSettings()
			rf.settings(&settings)
			tf.settings(&settings)
			_ = bugs.settings(&settings) // refused above if unknown
			if len(settings.Bugs) > 0 {
				fmt.Fprintf(out, "planted bugs: %s (every node takes the ones that live in it)\n", strings.Join(settings.Bugs, ", "))
			}
			lc, err := runner.StartCluster(ctx, rt, cluster.Spec{
				Nodes: nodes, BasePort: basePort, ControllerPort: ctrlPort, DataDir: data, ClusterID: clusterID,
				ControllerArgs: settings.ControllerArgs(), BrokerArgs: settings.BrokerArgs(),
			}, false)
			if err != nil && ctx.Err() != nil {
				if !keep {
					os.RemoveAll(data)
				}
				return &exitError{code: exitInterrupted, err: errSilent}
			}
			if err != nil {
				// The node logs are the only account of why: kept.
				return fmt.Errorf("%w\nnode logs kept in %s", err, data)
			}
			intr.onSecond(lc.Abort)
			defer func() {
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
			if rt == runtimeDocker {
				fmt.Fprintln(out, "node logs: docker logs CONTAINER while up; copied into the data directory on exit")
			}
			fmt.Fprintln(out, "ready; Ctrl-C stops the cluster")
			cluster.WatchExits(ctx, lc, out)
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
	bugs.register(cmd)
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
			if err := stopIfValidating(cmd); err != nil {
				return err
			}
			ctx, stop := signalContext()
			defer stop()
			out := cmd.OutOrStdout()
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
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "also remove the containers and networks of runs still going (never a live cluster's data directory)")
	cmd.Flags().BoolVar(&image, "image", false, "also remove the runtime's image")
	return cmd
}
