package main

import (
	"github.com/spf13/cobra"

	"github.com/chaos-isr/chaos/broker/bug"
	"github.com/chaos-isr/chaos/broker/control"
	"github.com/chaos-isr/chaos/broker/node"
	"github.com/chaos-isr/chaos/broker/server"
	"github.com/chaos-isr/chaos/cluster"
)

// replicationFlags are the broker settings shared by "broker", "cluster up"
// and "run".
type replicationFlags node.Replication

func (f *replicationFlags) register(cmd *cobra.Command) {
	d := cluster.DefaultSettings()
	fl := cmd.Flags()
	fl.Int64Var(&f.ReplicaLagTimeMaxMs, "replica-lag-time-max-ms", d.ReplicaLagTimeMaxMs, "a follower not caught up with the leader for this long leaves the ISR")
	fl.Int64Var(&f.ReplicaLagMaxMessages, "replica-lag-max-messages", d.ReplicaLagMaxMessages, "a follower this many messages behind the leader leaves the ISR (0 disables the rule)")
	fl.Int32Var(&f.ReplicaFetchWaitMaxMs, "replica-fetch-wait-max-ms", d.ReplicaFetchWaitMaxMs, "how long a follower's fetch waits at the leader for new data")
	fl.Int64Var(&f.HeartbeatIntervalMs, "heartbeat-interval-ms", d.HeartbeatIntervalMs, "how often a broker heartbeats to the controller")
	fl.StringVar(&f.Fsync, "fsync", d.Fsync, "fsync policy: never (rely on replication, Kafka's default), always, or interval:DURATION (e.g. interval:100ms)")
	fl.BoolVar(&f.LoseUnsynced, "lose-unsynced", false, "keep unsynced writes in process memory so that a kill -9 loses them (simulates power loss)")
	fl.BoolVar(&f.NoAutoCreateTopics, "no-auto-create-topics", false, "do not create unknown topics named in Metadata requests")
}

// topicFlags are the controller's topic defaults, shared by "controller",
// "cluster up" and "run".
type topicFlags node.Topics

func (f *topicFlags) register(cmd *cobra.Command) {
	d := cluster.DefaultSettings()
	fl := cmd.Flags()
	fl.Int64Var(&f.SessionTimeoutMs, "session-timeout-ms", d.SessionTimeoutMs, "a broker without a heartbeat for this long is fenced and loses its leaderships")
	fl.Int32Var(&f.Partitions, "partitions", d.Partitions, "partitions of auto-created topics and of CreateTopics without a count")
	fl.Int16Var(&f.ReplicationFactor, "replication-factor", d.ReplicationFactor, "replication factor of auto-created topics")
	fl.Int32Var(&f.MinInsyncReplicas, "min-insync-replicas", d.MinInsyncReplicas, "min.insync.replicas of new topics (acks=-1 writes need this many in-sync replicas)")
	fl.StringVar(&f.Election, "election", d.Election, "leader election policy of new topics: clean (only an in-sync replica) or unclean (the first live replica)")
}

// bugFlags is --bug: bugs planted on purpose (package bug), one list that
// every node of a cluster is given and takes its own bugs from.
type bugFlags []string

func (f *bugFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringSliceVar((*[]string)(f), "bug", nil,
		"plant bug NAME on purpose (repeatable, or NAME,NAME; chaos bugs lists them); a node takes the bugs that live in it and ignores the others")
}

// parse returns the bugs asked for, refusing an unknown name.
func (f bugFlags) parse() (bug.Set, error) { return node.ParseBugs(f) }

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
	(*replicationFlags)(&b.Replication).register(cmd)
	(*bugFlags)(&b.Bugs).register(cmd)
	return cmd
}

func newControllerCmd() *cobra.Command {
	var c node.Controller
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the controller (broker registry, leader election, ISR changes)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return server.RunController(cmd.Context(), c, cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&c.Listen, "listen", "127.0.0.1:9091", "address brokers reach the controller at")
	cmd.Flags().StringVar(&c.Data, "data", "", "data directory for the cluster metadata (required)")
	cmd.Flags().StringVar(&c.ClusterID, "cluster-id", control.DefaultClusterID, clusterIDUsage)
	(*topicFlags)(&c.Topics).register(cmd)
	(*bugFlags)(&c.Bugs).register(cmd)
	return cmd
}
