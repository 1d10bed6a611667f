package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/chaos-isr/chaos/broker/bug"
	"github.com/chaos-isr/chaos/broker/control"
	"github.com/chaos-isr/chaos/broker/controller"
	"github.com/chaos-isr/chaos/broker/core"
	"github.com/chaos-isr/chaos/broker/server"
	"github.com/chaos-isr/chaos/broker/storage"
	"github.com/chaos-isr/chaos/cluster"
)

// signalContext ends on SIGINT or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// replicationFlags are the broker settings shared by "broker" and "cluster up".
type replicationFlags struct {
	lagTimeMs    int64
	lagMessages  int64
	fetchWaitMs  int32
	heartbeatMs  int64
	fsync        string
	loseUnsynced bool
	noAutoCreate bool
}

func (f *replicationFlags) register(cmd *cobra.Command) {
	d := cluster.DefaultSettings()
	fl := cmd.Flags()
	fl.Int64Var(&f.lagTimeMs, "replica-lag-time-max-ms", d.ReplicaLagTimeMaxMs, "a follower not caught up with the leader for this long leaves the ISR")
	fl.Int64Var(&f.lagMessages, "replica-lag-max-messages", d.ReplicaLagMaxMessages, "a follower this many messages behind the leader leaves the ISR (0 disables the rule)")
	fl.Int32Var(&f.fetchWaitMs, "replica-fetch-wait-max-ms", d.ReplicaFetchWaitMaxMs, "how long a follower's fetch waits at the leader for new data")
	fl.Int64Var(&f.heartbeatMs, "heartbeat-interval-ms", d.HeartbeatIntervalMs, "how often a broker heartbeats to the controller")
	fl.StringVar(&f.fsync, "fsync", d.Fsync, "fsync policy: never (rely on replication, Kafka's default), always, or interval:DURATION (e.g. interval:100ms)")
	fl.BoolVar(&f.loseUnsynced, "lose-unsynced", false, "keep unsynced writes in process memory so that a kill -9 loses them (simulates power loss)")
	fl.BoolVar(&f.noAutoCreate, "no-auto-create-topics", false, "do not create unknown topics named in Metadata requests")
}

// settings puts the broker flags into s.
func (f *replicationFlags) settings(s *cluster.Settings) {
	s.ReplicaLagTimeMaxMs, s.ReplicaLagMaxMessages = f.lagTimeMs, f.lagMessages
	s.ReplicaFetchWaitMaxMs, s.HeartbeatIntervalMs = f.fetchWaitMs, f.heartbeatMs
	s.Fsync, s.LoseUnsynced, s.NoAutoCreateTopics = f.fsync, f.loseUnsynced, f.noAutoCreate
}

func (f *replicationFlags) apply(cfg *core.Config, st *storage.Options) error {
	cfg.ReplicaLagTimeMaxMs, cfg.ReplicaLagMaxMessages = f.lagTimeMs, f.lagMessages
	cfg.ReplicaFetchWaitMaxMs, cfg.HeartbeatIntervalMs = f.fetchWaitMs, f.heartbeatMs
	cfg.AutoCreateTopics = !f.noAutoCreate
	if err := f.validate(); err != nil {
		return err
	}
	policy, interval, err := parseFsyncFlag(f.fsync)
	if err != nil {
		return err
	}
	st.Fsync, st.FsyncIntervalMs, st.LoseUnsynced = policy, interval, f.loseUnsynced
	return nil
}

// bugFlags is --bug on chaos broker and chaos controller: bugs planted on
// purpose (package bug). A node takes the bugs that live in it (a broker
// those of the broker and of its storage, the controller its own) and
// ignores the others, saying so, so that one list can be given to every
// node of a cluster as the other settings are; an unknown name is refused
// with the list of known ones.
type bugFlags struct{ names []string }

func (f *bugFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringSliceVar(&f.names, "bug", nil,
		"plant bug NAME on purpose (repeatable, or NAME,NAME; chaos bugs lists them); a node takes the bugs that live in it and ignores the others")
}

// parse returns the bugs asked for, refusing an unknown name.
func (f *bugFlags) parse() (bug.Set, error) {
	var s bug.Set
	for _, n := range f.names {
		b, err := bug.Parse(strings.TrimSpace(n))
		if err != nil {
			return 0, flagError("bug", n, "not a known bug", "one of "+strings.Join(bug.Names(), ", ")+" (chaos bugs describes them)")
		}
		s |= bug.Of(b)
	}
	return s, nil
}

// settings puts the bugs asked for into s by name, in chaos bugs' order,
// refusing an unknown one: a test's cluster gets them as every node's --bug.
func (f *bugFlags) settings(s *cluster.Settings) error {
	set, err := f.parse()
	if err != nil {
		return err
	}
	s.Bugs = set.Names()
	return nil
}

// ignore says on stderr which bugs process p ignores because they live in
// another node.
func (f *bugFlags) ignore(cmd *cobra.Command, p bug.Node, s bug.Set) {
	for _, b := range s.Bugs() {
		if b.Node().Process() != p {
			fmt.Fprintf(cmd.ErrOrStderr(), "chaos %s: ignoring --bug %s: it lives in the %s\n", p, b, b.Node())
		}
	}
}

func newBrokerCmd() *cobra.Command {
	var (
		id         int32
		clusterID  string
		listen     string
		advertise  string
		controller string
		data       string
		rf         replicationFlags
		peers      map[string]string
		bugs       bugFlags
	)
	cmd := &cobra.Command{
		Use:   "broker",
		Short: "Run one broker (Kafka protocol on --listen)",
		Long: `Run one broker. It registers with the controller, serves Kafka clients on --listen,
and replicates the partitions it is assigned. Restarted on the same --data directory
it recovers its logs and rejoins the cluster.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if data == "" {
				return flagError("data", nil, "missing", "the broker's data directory, e.g. --data /tmp/c/broker-1")
			}
			if id < 0 {
				return flagError("id", id, "negative", "a broker id, 0 or more, unique in the cluster")
			}
			if err := checkHostPort("listen", listen, "127.0.0.1:9092"); err != nil {
				return err
			}
			if advertise != "" {
				if err := checkHostPort("advertise", advertise, "127.0.0.1:9092"); err != nil {
					return err
				}
			}
			if err := checkHostPort("controller", controller, "127.0.0.1:9091"); err != nil {
				return err
			}
			if err := control.ValidClusterID(clusterID); err != nil {
				return fmt.Errorf("--cluster-id: %w", err)
			}
			cfg := core.DefaultConfig()
			cfg.BrokerID, cfg.ClusterID = id, clusterID
			var st storage.Options
			if err := rf.apply(&cfg, &st); err != nil {
				return err
			}
			planted, err := bugs.parse()
			if err != nil {
				return err
			}
			cfg.Bugs, st.Bugs = planted.On(bug.Broker), planted.On(bug.Storage)
			peerAddrs := map[int32]string{}
			for k, v := range peers {
				pid, err := strconv.ParseInt(k, 10, 32)
				if err != nil || pid < 0 {
					return flagError("peer-addr", k+"="+v, "not a broker id before the =", "ID=HOST:PORT, e.g. --peer-addr 2=127.0.0.1:9093")
				}
				if _, _, err := net.SplitHostPort(v); err != nil {
					return flagError("peer-addr", k+"="+v, "not HOST:PORT after the =", "ID=HOST:PORT, e.g. --peer-addr 2=127.0.0.1:9093")
				}
				peerAddrs[int32(pid)] = v
			}
			bugs.ignore(cmd, bug.Broker, planted)
			if err := stopIfValidating(cmd); err != nil {
				return err
			}
			ctx, stop := signalContext()
			defer stop()
			b, err := server.StartBroker(ctx, server.BrokerOptions{
				Core: cfg, Listen: listen, Advertise: advertise, Controller: controller, DataDir: data, Storage: st,
				PeerAddrs: peerAddrs,
			})
			if err != nil {
				return err
			}
			b.Wait()
			return nil
		},
	}
	fl := cmd.Flags()
	fl.Int32Var(&id, "id", 1, "broker id (>= 0, unique in the cluster)")
	fl.StringVar(&clusterID, "cluster-id", control.DefaultClusterID, clusterIDUsage)
	fl.StringVar(&listen, "listen", "127.0.0.1:9092", "address for Kafka clients and peer brokers")
	fl.StringVar(&advertise, "advertise", "", "address given to clients and peers (default: --listen)")
	fl.StringVar(&controller, "controller", "127.0.0.1:9091", "the controller's address")
	fl.StringVar(&data, "data", "", "data directory (required)")
	fl.StringToStringVar(&peers, "peer-addr", nil, "ID=HOST:PORT: dial broker ID at this address instead of the one it advertises (e.g. through a proxy); repeatable")
	rf.register(cmd)
	bugs.register(cmd)
	return cmd
}

// topicFlags are the controller's topic defaults, shared with "cluster up".
type topicFlags struct {
	sessionMs  int64
	partitions int32
	rf         int16
	minISR     int32
	election   string
}

func (f *topicFlags) register(cmd *cobra.Command) {
	d := cluster.DefaultSettings()
	fl := cmd.Flags()
	fl.Int64Var(&f.sessionMs, "session-timeout-ms", d.SessionTimeoutMs, "a broker without a heartbeat for this long is fenced and loses its leaderships")
	fl.Int32Var(&f.partitions, "partitions", d.Partitions, "partitions of auto-created topics and of CreateTopics without a count")
	fl.Int16Var(&f.rf, "replication-factor", d.ReplicationFactor, "replication factor of auto-created topics")
	fl.Int32Var(&f.minISR, "min-insync-replicas", d.MinInsyncReplicas, "min.insync.replicas of new topics (acks=-1 writes need this many in-sync replicas)")
	fl.StringVar(&f.election, "election", d.Election, "leader election policy of new topics: clean (only an in-sync replica) or unclean (the first live replica)")
}

// settings puts the topic flags into s.
func (f *topicFlags) settings(s *cluster.Settings) {
	s.SessionTimeoutMs, s.Partitions, s.ReplicationFactor = f.sessionMs, f.partitions, f.rf
	s.MinInsyncReplicas, s.Election = f.minISR, f.election
}

func (f *topicFlags) config() controller.Config {
	return controller.Config{
		SessionTimeoutMs: f.sessionMs, DefaultPartitions: f.partitions, DefaultReplicationFactor: f.rf,
		DefaultMinInsyncReplicas: f.minISR, DefaultElection: f.election,
	}
}

// clusterIDUsage is the --cluster-id flag of the broker and the controller.
const clusterIDUsage = "the cluster's id: a broker registers only with a controller of the same id, and reports it to clients in Metadata"

func newControllerCmd() *cobra.Command {
	var (
		listen    string
		data      string
		clusterID string
		tf        topicFlags
		bugs      bugFlags
	)
	cmd := &cobra.Command{
		Use:   "controller",
		Short: "Run the controller (broker registry, leader election, ISR changes)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if data == "" {
				return flagError("data", nil, "missing", "the controller's data directory, e.g. --data /tmp/c/controller")
			}
			if err := checkHostPort("listen", listen, "127.0.0.1:9091"); err != nil {
				return err
			}
			if err := tf.validate(); err != nil {
				return err
			}
			if err := control.ValidClusterID(clusterID); err != nil {
				return fmt.Errorf("--cluster-id: %w", err)
			}
			cfg := tf.config()
			cfg.ClusterID = clusterID
			planted, err := bugs.parse()
			if err != nil {
				return err
			}
			cfg.Bugs = planted.On(bug.Controller)
			if err := cfg.Validate(); err != nil {
				return err
			}
			bugs.ignore(cmd, bug.Controller, planted)
			if err := stopIfValidating(cmd); err != nil {
				return err
			}
			ctx, stop := signalContext()
			defer stop()
			c, err := server.StartController(ctx, server.ControllerOptions{Config: cfg, Listen: listen, DataDir: data})
			if err != nil {
				return err
			}
			c.Wait()
			return nil
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:9091", "address brokers reach the controller at")
	cmd.Flags().StringVar(&data, "data", "", "data directory for the cluster metadata (required)")
	cmd.Flags().StringVar(&clusterID, "cluster-id", control.DefaultClusterID, clusterIDUsage)
	tf.register(cmd)
	bugs.register(cmd)
	return cmd
}

type storageOpts = storage.Options

func coreDefaults() core.Config { return core.DefaultConfig() }
