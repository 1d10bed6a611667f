package node

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/chaos-isr/chaos/broker/bug"
	"github.com/chaos-isr/chaos/broker/control"
	"github.com/chaos-isr/chaos/broker/controller"
	"github.com/chaos-isr/chaos/broker/core"
	"github.com/chaos-isr/chaos/broker/storage"
	"github.com/chaos-isr/chaos/internal/cli"
)

// Replication are a broker's settings as chaos broker takes them.
type Replication struct {
	ReplicaLagTimeMaxMs   int64
	ReplicaLagMaxMessages int64
	ReplicaFetchWaitMaxMs int32
	HeartbeatIntervalMs   int64
	Fsync                 string
	LoseUnsynced          bool
	NoAutoCreateTopics    bool
}

// Validate checks the settings, naming the flag of a bad one.
func (r Replication) Validate() error {
	switch {
	case r.ReplicaLagTimeMaxMs <= 0:
		return cli.Error("replica-lag-time-max-ms", r.ReplicaLagTimeMaxMs, "not positive", "a number of milliseconds, e.g. 10000")
	case r.ReplicaLagMaxMessages < 0:
		return cli.Error("replica-lag-max-messages", r.ReplicaLagMaxMessages, "negative", "a number of messages, or 0 to turn the rule off")
	case r.ReplicaFetchWaitMaxMs < 0:
		return cli.Error("replica-fetch-wait-max-ms", r.ReplicaFetchWaitMaxMs, "negative", "a number of milliseconds below --replica-lag-time-max-ms")
	case int64(r.ReplicaFetchWaitMaxMs) >= r.ReplicaLagTimeMaxMs:
		return cli.Error("replica-fetch-wait-max-ms", r.ReplicaFetchWaitMaxMs, fmt.Sprintf("not below --replica-lag-time-max-ms %d", r.ReplicaLagTimeMaxMs),
			"a shorter wait, or idle followers would drop out of the ISR")
	case r.HeartbeatIntervalMs <= 0:
		return cli.Error("heartbeat-interval-ms", r.HeartbeatIntervalMs, "not positive", "a number of milliseconds, e.g. 250")
	}
	_, _, err := ParseFsync(r.Fsync)
	return err
}

// Apply checks the settings and puts them into a broker's configuration
// and its storage's options.
func (r Replication) Apply(cfg *core.Config, st *storage.Options) error {
	cfg.ReplicaLagTimeMaxMs, cfg.ReplicaLagMaxMessages = r.ReplicaLagTimeMaxMs, r.ReplicaLagMaxMessages
	cfg.ReplicaFetchWaitMaxMs, cfg.HeartbeatIntervalMs = r.ReplicaFetchWaitMaxMs, r.HeartbeatIntervalMs
	cfg.AutoCreateTopics = !r.NoAutoCreateTopics
	if err := r.Validate(); err != nil {
		return err
	}
	policy, interval, err := ParseFsync(r.Fsync)
	if err != nil {
		return err
	}
	st.Fsync, st.FsyncIntervalMs, st.LoseUnsynced = policy, interval, r.LoseUnsynced
	return nil
}

const fsyncAccepted = "use never, always, interval (every 1s) or interval:DURATION in whole milliseconds, e.g. interval:100ms"

// ParseFsync reads --fsync. A bare duration ("100ms") is refused: the
// policy is always named, as the help and the README spell it.
func ParseFsync(s string) (storage.Fsync, int64, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	d, isInterval := strings.CutPrefix(v, "interval:")
	if v != "never" && v != "always" && v != "interval" && !isInterval {
		return 0, 0, cli.Error("fsync", s, "not an fsync policy", fsyncAccepted)
	}
	p, ms, err := storage.ParseFsync(v)
	if err != nil {
		what := "not a duration after interval:"
		if _, derr := time.ParseDuration(d); derr == nil {
			what = "not a whole number of milliseconds above 0 after interval:"
		}
		return 0, 0, cli.Error("fsync", s, what, fsyncAccepted)
	}
	return p, ms, nil
}

// Topics are the controller's defaults for the topics it creates, as
// chaos controller takes them.
type Topics struct {
	SessionTimeoutMs  int64
	Partitions        int32
	ReplicationFactor int16
	MinInsyncReplicas int32
	Election          string
}

// Validate checks the settings, naming the flag of a bad one.
func (t Topics) Validate() error {
	switch {
	case t.SessionTimeoutMs <= 0:
		return cli.Error("session-timeout-ms", t.SessionTimeoutMs, "not positive", "a number of milliseconds, e.g. 3000")
	case t.Partitions < 1:
		return cli.Error("partitions", t.Partitions, "fewer than 1", "1 or more")
	case t.ReplicationFactor < 1:
		return cli.Error("replication-factor", t.ReplicationFactor, "fewer than 1", "1 or more, at most the number of brokers")
	case t.MinInsyncReplicas < 1:
		return cli.Error("min-insync-replicas", t.MinInsyncReplicas, "fewer than 1", "1 or more, at most --replication-factor")
	case t.MinInsyncReplicas > int32(t.ReplicationFactor):
		return cli.Error("min-insync-replicas", t.MinInsyncReplicas, fmt.Sprintf("above --replication-factor %d", t.ReplicationFactor),
			"at most the replication factor, or acks=-1 writes could never succeed")
	}
	return CheckElection(t.Election)
}

// Config is the controller's configuration for the settings.
func (t Topics) Config() controller.Config {
	return controller.Config{
		SessionTimeoutMs: t.SessionTimeoutMs, DefaultPartitions: t.Partitions, DefaultReplicationFactor: t.ReplicationFactor,
		DefaultMinInsyncReplicas: t.MinInsyncReplicas, DefaultElection: t.Election,
	}
}

// CheckElection checks --election.
func CheckElection(s string) error {
	if !slices.Contains(control.Elections(), s) {
		return cli.Error("election", s, "not an election policy", "use clean, unclean or elr")
	}
	return nil
}

// ParseBugs reads --bug: one list for every node of a cluster, of which
// each node takes the bugs that live in it (see ignored). An unknown name
// is refused with the known ones.
func ParseBugs(names []string) (bug.Set, error) {
	var s bug.Set
	for _, n := range names {
		b, err := bug.Parse(strings.TrimSpace(n))
		if err != nil {
			return 0, cli.Error("bug", n, "not a known bug", "one of "+strings.Join(bug.Names(), ", ")+" (chaos bugs describes them)"+cli.DidYouMean(n, bug.Names()))
		}
		s |= bug.Of(b)
	}
	return s, nil
}

// ignored says on w which bugs of s process p ignores because they live in
// another node, so that a list given to every node is not mistaken for one
// each takes whole.
func ignored(w io.Writer, p bug.Node, s bug.Set) {
	for _, b := range s.Bugs() {
		if b.Node().Process() != p {
			fmt.Fprintf(w, "chaos %s: ignoring --bug %s: it lives in the %s\n", p, b, b.Node())
		}
	}
}

// CheckCluster checks what every node of a cluster started with these
// settings will check of them, so that a cluster the nodes would refuse
// one by one is refused before it starts.
func CheckCluster(r Replication, t Topics, bugs []string) error {
	if err := t.Validate(); err != nil {
		return err
	}
	if _, err := ParseBugs(bugs); err != nil {
		return err
	}
	if err := t.Config().Validate(); err != nil {
		return err
	}
	cfg := core.DefaultConfig()
	var st storage.Options
	if err := r.Apply(&cfg, &st); err != nil {
		return err
	}
	return cfg.Validate()
}
