package node

import (
	"fmt"
	"io"
	"net"
	"strconv"

	"github.com/chaos-isr/chaos/broker/bug"
	"github.com/chaos-isr/chaos/broker/control"
	"github.com/chaos-isr/chaos/broker/controller"
	"github.com/chaos-isr/chaos/broker/core"
	"github.com/chaos-isr/chaos/broker/storage"
	"github.com/chaos-isr/chaos/internal/cli"
)

// Broker is chaos broker's flags.
type Broker struct {
	ID                                       int32
	ClusterID, Listen, Advertise, Controller string
	Data                                     string
	// Peers maps a broker id, as the flag gives it, to the address to dial
	// it at.
	Peers       map[string]string
	Replication Replication
	Groups      Groups
	Bugs        []string
}

// Groups are a broker's settings of its group and transaction
// coordinators, as chaos broker takes them (Kafka's names, without the
// dots).
type Groups struct {
	InitialRebalanceDelayMs    int64
	MinSessionTimeoutMs        int32
	OffsetsTopicPartitions     int32
	TransactionTopicPartitions int32
	TransactionMaxTimeoutMs    int64
}

// DefaultGroups are Kafka's defaults, but for the internal topic's
// partitions (Kafka's 50; a few spread the groups over a test's brokers as
// well).
func DefaultGroups() Groups {
	d := core.DefaultConfig()
	return Groups{InitialRebalanceDelayMs: d.GroupInitialRebalanceDelayMs, MinSessionTimeoutMs: d.GroupMinSessionTimeoutMs,
		OffsetsTopicPartitions: d.OffsetsTopicPartitions, TransactionTopicPartitions: d.TransactionTopicPartitions,
		TransactionMaxTimeoutMs: d.TransactionMaxTimeoutMs}
}

// Apply checks the settings, naming the flag of a bad one, and puts them
// into a broker's configuration.
func (g Groups) Apply(cfg *core.Config) error {
	switch {
	case g.InitialRebalanceDelayMs < 0:
		return cli.Error("group-initial-rebalance-delay-ms", g.InitialRebalanceDelayMs, "negative", "a number of milliseconds, 0 for none")
	case g.MinSessionTimeoutMs < 1:
		return cli.Error("group-min-session-timeout-ms", g.MinSessionTimeoutMs, "not positive", "a number of milliseconds, e.g. 6000")
	case g.OffsetsTopicPartitions < 1:
		return cli.Error("offsets-topic-partitions", g.OffsetsTopicPartitions, "fewer than 1", "1 or more")
	case g.TransactionTopicPartitions < 1:
		return cli.Error("transaction-topic-partitions", g.TransactionTopicPartitions, "fewer than 1", "1 or more")
	case g.TransactionMaxTimeoutMs < 1:
		return cli.Error("transaction-max-timeout-ms", g.TransactionMaxTimeoutMs, "not positive", "a number of milliseconds, e.g. 900000")
	}
	cfg.GroupInitialRebalanceDelayMs, cfg.GroupMinSessionTimeoutMs = g.InitialRebalanceDelayMs, g.MinSessionTimeoutMs
	cfg.OffsetsTopicPartitions = g.OffsetsTopicPartitions
	cfg.TransactionTopicPartitions, cfg.TransactionMaxTimeoutMs = g.TransactionTopicPartitions, g.TransactionMaxTimeoutMs
	return nil
}

// BrokerConfig is what a broker runs with, made from its flags.
type BrokerConfig struct {
	Core      core.Config
	Storage   storage.Options
	PeerAddrs map[int32]string
}

// Config checks the flags, naming a bad one, builds the broker's
// configuration from them, and says on w which of the bugs asked for the
// broker ignores.
func (b Broker) Config(w io.Writer) (BrokerConfig, error) {
	cfg := BrokerConfig{Core: core.DefaultConfig(), PeerAddrs: map[int32]string{}}
	if b.Data == "" {
		return cfg, cli.Error("data", nil, "missing", "the broker's data directory, e.g. --data /tmp/c/broker-1")
	}
	if b.ID < 0 {
		return cfg, cli.Error("id", b.ID, "negative", "a broker id, 0 or more, unique in the cluster")
	}
	if err := cli.HostPort("listen", b.Listen, "127.0.0.1:9092"); err != nil {
		return cfg, err
	}
	if b.Advertise != "" {
		if err := cli.HostPort("advertise", b.Advertise, "127.0.0.1:9092"); err != nil {
			return cfg, err
		}
	}
	if err := cli.HostPort("controller", b.Controller, "127.0.0.1:9091"); err != nil {
		return cfg, err
	}
	if err := control.ValidClusterID(b.ClusterID); err != nil {
		return cfg, fmt.Errorf("--cluster-id: %w", err)
	}
	cfg.Core.BrokerID, cfg.Core.ClusterID = b.ID, b.ClusterID
	if err := b.Replication.Apply(&cfg.Core, &cfg.Storage); err != nil {
		return cfg, err
	}
	if err := b.Groups.Apply(&cfg.Core); err != nil {
		return cfg, err
	}
	planted, err := ParseBugs(b.Bugs)
	if err != nil {
		return cfg, err
	}
	cfg.Core.Bugs, cfg.Storage.Bugs = planted.On(bug.Broker), planted.On(bug.Storage)
	for k, v := range b.Peers {
		pid, err := strconv.ParseInt(k, 10, 32)
		if err != nil || pid < 0 {
			return cfg, cli.Error("peer-addr", k+"="+v, "not a broker id before the =", "ID=HOST:PORT, e.g. --peer-addr 2=127.0.0.1:9093")
		}
		if _, _, err := net.SplitHostPort(v); err != nil {
			return cfg, cli.Error("peer-addr", k+"="+v, "not HOST:PORT after the =", "ID=HOST:PORT, e.g. --peer-addr 2=127.0.0.1:9093")
		}
		cfg.PeerAddrs[int32(pid)] = v
	}
	ignored(w, bug.Broker, planted)
	return cfg, nil
}

// Controller is chaos controller's flags.
type Controller struct {
	Listen, Data, ClusterID string
	Topics                  Topics
	Bugs                    []string
}

// Config checks the flags, naming a bad one, builds the controller's
// configuration from them, and says on w which of the bugs asked for the
// controller ignores.
func (c Controller) Config(w io.Writer) (controller.Config, error) {
	if c.Data == "" {
		return controller.Config{}, cli.Error("data", nil, "missing", "the controller's data directory, e.g. --data /tmp/c/controller")
	}
	if err := cli.HostPort("listen", c.Listen, "127.0.0.1:9091"); err != nil {
		return controller.Config{}, err
	}
	if err := c.Topics.Validate(); err != nil {
		return controller.Config{}, err
	}
	if err := control.ValidClusterID(c.ClusterID); err != nil {
		return controller.Config{}, fmt.Errorf("--cluster-id: %w", err)
	}
	cfg := c.Topics.Config()
	cfg.ClusterID = c.ClusterID
	planted, err := ParseBugs(c.Bugs)
	if err != nil {
		return cfg, err
	}
	cfg.Bugs = planted.On(bug.Controller)
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	ignored(w, bug.Controller, planted)
	return cfg, nil
}
