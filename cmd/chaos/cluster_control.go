package main

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/chaos-isr/chaos/cluster/control"
	"github.com/chaos-isr/chaos/internal/cli"
)

// controlHelp ends the Long help of every fault command.
const controlHelp = `

NODE is "controller" or "broker-N". --data is the data directory of a running "chaos
cluster up" (the one it printed): the command asks that process, through its control
socket DATA/control.sock, to apply the fault, prints one line saying what was done and
exits 0; it exits 3 with the reason when the fault cannot be applied, when NODE is not a
node of the cluster (the error lists them), or when no cluster up runs with that --data.`

// newClusterControlCmds are the fault commands that act on a running
// chaos cluster up.
func newClusterControlCmds() []*cobra.Command {
	peersOf := func(args []string) []string {
		var peers []string
		for _, a := range args {
			peers = append(peers, strings.FieldsFunc(a, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })...)
		}
		return peers
	}
	var delay time.Duration
	slow := controlCmd("slow NODE PEER... --delay D", "Delay every link between a node and each peer, both ways",
		`Delay every link between NODE and each PEER of the cluster a "chaos cluster up
--network-faults --data DATA" runs by --delay, both ways (a follower slowed from its leader
this way falls behind and leaves the ISR once the delay passes replica.lag.time.max.ms).
Peers are given as for "partition". "chaos cluster heal" removes the delay. A cluster up
started without --network-faults refuses it.`,
		cobra.MinimumNArgs(2), func(args []string) control.Request {
			return control.Request{Op: control.OpSlow, Node: args[0], Peers: peersOf(args[1:]), Delay: delay}
		})
	slow.Flags().DurationVar(&delay, "delay", time.Second, "how long each link between the node and its peers holds every byte, each way")
	node := func(op, short, long string) *cobra.Command {
		return controlCmd(op+" NODE", short, long, cobra.ExactArgs(1), func(args []string) control.Request {
			return control.Request{Op: op, Node: args[0]}
		})
	}
	return []*cobra.Command{
		node(control.OpKill, "Kill a node of a running cluster up (SIGKILL)",
			`Kill NODE of the cluster a "chaos cluster up --data DATA" runs, at once: SIGKILL for a
child process, docker kill for a container. Its data stay: "chaos cluster start" starts it
again on them. cluster up says that it exited. A node that is not running is left alone
(exit 0).`),
		node(control.OpStop, "Stop a node of a running cluster up (SIGTERM, then SIGKILL after 10s)",
			fmt.Sprintf(`Stop NODE of the cluster a "chaos cluster up --data DATA" runs, gracefully: SIGTERM
(a paused node is resumed first so that it can handle it), then SIGKILL if it still runs
after %s. "chaos cluster start" starts it again. A node that is not running is left
alone (exit 0).`, control.StopTimeout)),
		node(control.OpStart, "Start a killed or stopped node again; returns once it listens",
			`Start NODE of the cluster a "chaos cluster up --data DATA" runs again, after "chaos
cluster kill" or "stop" (or a crash), on its data directory, and return once it listens
again. Starting a node that runs is refused.`),
		node(control.OpPause, "Pause a node of a running cluster up (SIGSTOP)",
			`Pause NODE of the cluster a "chaos cluster up --data DATA" runs: SIGSTOP for a child
process, docker pause for a container. Its connections stay open and it answers nothing
until "chaos cluster resume".`),
		node(control.OpResume, "Resume a paused node (SIGCONT)",
			`Resume NODE of the cluster a "chaos cluster up --data DATA" runs after "chaos cluster
pause": SIGCONT, or docker unpause.`),
		controlCmd("partition NODE PEER...", "Cut every link between a node and each peer, both ways",
			`Cut every link between NODE and each PEER of the cluster a "chaos cluster up
--network-faults --data DATA" runs, both ways (clients still reach every node: the faults
are between nodes). The peers may be several arguments or one with a comma- or
space-separated list: "partition broker-1 broker-2 controller" and "partition broker-1
broker-2,controller" are the same. Partitions add up until "chaos cluster heal". A cluster
up started without --network-faults refuses it.`,
			cobra.MinimumNArgs(2), func(args []string) control.Request {
				return control.Request{Op: control.OpPartition, Node: args[0], Peers: peersOf(args[1:])}
			}),
		slow,
		controlCmd("heal", "Remove every network fault of a running cluster up",
			`Remove every network fault (every partition and delay) of the cluster a "chaos cluster up --data
DATA" runs. Without --network-faults there is nothing to heal, which is no error.`,
			cobra.NoArgs, func([]string) control.Request { return control.Request{Op: control.OpHeal} }),
	}
}

func controlCmd(use, short, long string, args cobra.PositionalArgs, req func([]string) control.Request) *cobra.Command {
	var data string
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long + controlHelp,
		Args:  args,
		RunE: func(cmd *cobra.Command, args []string) error {
			if data == "" {
				return cli.Error("data", nil, "missing", "the data directory of the running chaos cluster up, e.g. --data /tmp/demo")
			}
			if err := cli.StopIfValidating(cmd.Context()); err != nil {
				return err
			}
			ctx, stop := cli.SignalContext()
			defer stop()
			path := control.SocketPath(data)
			did, err := control.Do(ctx, path, req(args))
			if errors.Is(err, control.ErrNoCluster) {
				err = fmt.Errorf("no chaos cluster up is running with --data %s (no control socket at %s)", data, path)
			}
			if err != nil {
				return exitWith(0, err)
			}
			fmt.Fprintln(cmd.OutOrStdout(), did)
			return nil
		},
	}
	cmd.Flags().StringVar(&data, "data", "", "the data directory of the running chaos cluster up (required)")
	return cmd
}
