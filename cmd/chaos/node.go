package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"

	"github.com/spf13/cobra"

	"github.com/chaos-isr/chaos/broker/control"
	"github.com/chaos-isr/chaos/broker/node"
	"github.com/chaos-isr/chaos/broker/server"
	"github.com/chaos-isr/chaos/internal/gcpace"
	"github.com/chaos-isr/chaos/runner"
)

// clusterIDUsage is the --cluster-id flag of the broker and the controller.
const clusterIDUsage = "the cluster's id: a broker registers only with a controller of the same id, and reports it to clients in Metadata"

func newBrokerCmd() *cobra.Command {
	var b node.Broker
	cmd := &cobra.Command{
		Use:   "broker",
		Short: "Run one broker (Kafka protocol on --listen)",
		Long: `Run one broker. It registers with the controller, serves Kafka clients on --listen,
and replicates the partitions it is assigned. Restarted on the same --data directory
it recovers its logs and rejoins the cluster.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			defer cpuProfile(cmd, fmt.Sprintf("broker-%d", b.ID))()
			// Nearly all a broker allocates is the batches it passes
			// on: collecting at 5x the live heap rather than Go's 2x
			// took its time collecting from 14% of its CPU to 1-2% in
			// the produce benchmark, for a few MB. But its live heap
			// grows with its logs (an index entry for each batch): at
			// 5x a broker stood at 340 MB an hour into the default
			// test, of an index of about 100 MB. Past 32 MB live (where
			// 4x is brokerGarbage), the garbage is held near that.
			defer gcpace.Hold(400, 10, brokerGarbage)()
			return server.RunBroker(cmd.Context(), b, cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	fl.Int32Var(&b.ID, "id", 1, "broker id (>= 0, unique in the cluster)")
	fl.StringVar(&b.ClusterID, "cluster-id", control.DefaultClusterID, clusterIDUsage)
	fl.StringVar(&b.Listen, "listen", "127.0.0.1:9092", "address for Kafka clients and peer brokers")
	fl.StringVar(&b.Advertise, "advertise", "", "address given to clients and peers (default: --listen)")
	fl.StringVar(&b.Controller, "controller", "127.0.0.1:9091", "the controller's address")
	fl.StringVar(&b.Data, "data", "", "data directory (required)")
	fl.StringToStringVar(&b.Peers, "peer-addr", nil, "ID=HOST:PORT: dial broker ID at this address instead of the one it advertises (e.g. through a proxy); repeatable")
	runner.ReplicationFlags(fl, &b.Replication)
	dg := node.DefaultGroups()
	fl.Int64Var(&b.Groups.InitialRebalanceDelayMs, "group-initial-rebalance-delay-ms", dg.InitialRebalanceDelayMs,
		"how long the group coordinator holds the first rebalance of an empty group, so that members joining at once join one generation")
	fl.Int32Var(&b.Groups.MinSessionTimeoutMs, "group-min-session-timeout-ms", dg.MinSessionTimeoutMs,
		"the shortest session timeout a group member may ask for (a member silent that long is removed and its group rebalances)")
	fl.Int32Var(&b.Groups.OffsetsTopicPartitions, "offsets-topic-partitions", dg.OffsetsTopicPartitions,
		"partitions of the internal topic __consumer_offsets, which holds the groups and their committed offsets, when this broker creates it")
	fl.Int32Var(&b.Groups.TransactionTopicPartitions, "transaction-topic-partitions", dg.TransactionTopicPartitions,
		"partitions of the internal topic __transaction_state, which holds the transactional ids and their transactions, when this broker creates it")
	fl.Int64Var(&b.Groups.TransactionMaxTimeoutMs, "transaction-max-timeout-ms", dg.TransactionMaxTimeoutMs,
		"the longest transaction timeout a producer may ask for (InitProducerId asking for more is refused: INVALID_TRANSACTION_TIMEOUT)")
	runner.BugFlag(fl, &b.Bugs)
	groupFlags(cmd, brokerGroups())
	return cmd
}

func newControllerCmd() *cobra.Command {
	var c node.Controller
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the controller (broker registry, leader election, ISR changes)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			defer cpuProfile(cmd, "controller")()
			return server.RunController(cmd.Context(), c, cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&c.Listen, "listen", "127.0.0.1:9091", "address brokers reach the controller at")
	fl.StringVar(&c.Data, "data", "", "data directory for the cluster metadata (required)")
	fl.StringVar(&c.ClusterID, "cluster-id", control.DefaultClusterID, clusterIDUsage)
	runner.TopicFlags(fl, &c.Topics)
	runner.BugFlag(fl, &c.Bugs)
	return cmd
}

// brokerGarbage is about how much garbage a broker with a large live heap
// lets gather before it collects (gcpace).
const brokerGarbage = 128 << 20

// cpuProfileEnv names a directory where each node writes a CPU profile of
// its whole life (NAME.cpu.prof, NAME broker-ID or controller), for finding
// where a broker spends its time under a real load: the nodes of chaos
// cluster up, chaos run and the produce benchmarks inherit it.
const cpuProfileEnv = "CHAOS_CPUPROFILE"

// cpuProfile starts the node's CPU profile when cpuProfileEnv asks for
// one, and returns what stops it.
func cpuProfile(cmd *cobra.Command, name string) (stop func()) {
	dir := os.Getenv(cpuProfileEnv)
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, name+".cpu.prof"))
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "%s: no CPU profile: %v\n", cpuProfileEnv, err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
