package workload

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/chaos-isr/chaos/history"
	waitfor "github.com/chaos-isr/chaos/internal/wait"
)

// TopicSpec is the topic a test writes to.
type TopicSpec struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16
	MinInsyncReplicas int32
	Unclean           bool
	// Foreign: the cluster is not chaos's own (the external runtime). It
	// is asked only for the settings that differ from Kafka's defaults,
	// and a setting it does not describe is taken as Kafka's default
	// (unclean.leader.election.enable false), which Assumed then says.
	Foreign bool
}

// Assumed says what a foreign cluster's description of its topic left
// to Kafka's defaults, given the configs it described; nil when nothing.
func Assumed(configs map[string]string) []string {
	if _, ok := configs["unclean.leader.election.enable"]; !ok {
		return []string{"the cluster does not describe unclean.leader.election.enable: judged as false (clean election), Kafka's default"}
	}
	return nil
}

// CreateTopic creates the test's topic with CreateTopics, waits until
// every partition has a leader and a full ISR, and checks that the topic
// has exactly spec's settings (VerifyTopic). The topic must not exist: a
// test that reused another's data would judge a history it did not write.
// Only when an earlier attempt's outcome is unknown (its answer was lost)
// may the topic exist, and then it must be exactly spec.
func CreateTopic(ctx context.Context, bootstrap []string, spec TopicSpec, timeout time.Duration) error {
	cl := TCP(bootstrap)(ClientOptions{ID: "chaos-admin", Timeout: 5 * time.Second})
	defer cl.Close()
	return createTopic(ctx, cl, spec, timeout)
}

func createTopic(ctx context.Context, cl Client, spec TopicSpec, timeout time.Duration) error {
	start := time.Now()
	// mayExist: an attempt may have created the topic without our hearing.
	mayExist := false
	// final: an error no retry will mend, which ends the wait.
	var final error
	err := waitfor.Until(ctx, 200*time.Millisecond, timeout, func() (bool, error) {
		err := cl.CreateTopic(ctx, spec, timeout)
		if err == nil {
			return true, nil
		}
		if errors.Is(err, kerr.TopicAlreadyExists) {
			if diffs, derr := topicDiffs(ctx, cl, spec); derr != nil {
				final = fmt.Errorf("create topic %s: it already exists, and %w", spec.Name, derr)
			} else if len(diffs) > 0 {
				final = fmt.Errorf("create topic %s: it already exists with other settings: %s", spec.Name, strings.Join(diffs, ", "))
			} else if !mayExist {
				final = fmt.Errorf("create topic %s: it already exists; a test writes to a topic of its own, on a cluster of its own", spec.Name)
			}
			return true, nil
		}
		var ke *kerr.Error
		isKafka := errors.As(err, &ke)
		if !errors.Is(err, ErrNotSent) && (!isKafka || ke == kerr.RequestTimedOut) {
			mayExist = true
		}
		// Brokers may still be registering (too few for the replication
		// factor yet): try again until the deadline.
		if retriable := isKafka && (ke.Retriable || ke == kerr.InvalidReplicationFactor); !retriable && !errors.Is(err, ErrNotSent) {
			final = fmt.Errorf("create topic %s: %w", spec.Name, err)
			return true, nil
		}
		return false, err
	})
	switch {
	case final != nil:
		return final
	case err != nil:
		return fmt.Errorf("create topic %s: %w", spec.Name, err)
	}
	var md Metadata
	why := ""
	err = waitfor.Until(ctx, 100*time.Millisecond, max(timeout-time.Since(start), time.Millisecond), func() (bool, error) {
		why = converged(ctx, cl, spec.Name, spec.Partitions, &md)
		return why == "", nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("topic %s created but not ready after %s: %s", spec.Name, timeout, why)
	}
	return verifyTopic(ctx, cl, spec)
}

// Watch follows topic's partitions through metadata requests, for the
// nemesis's triggered faults, which poll it every few milliseconds: one
// client for the run (a new one per poll would dial afresh each time),
// asking the broker that answered last first (a dead or paused broker
// costs a timeout only until another answers), and keeping each
// partition at the highest leader epoch heard, so that a broker cut off
// from the controller, answering as it last heard, does not take an
// election back.
type Watch struct {
	topic     string
	bootstrap []string
	cl        Client
	peers     MonitorPeers
	parts     map[history.Key]PartitionState
	epochs    map[history.Key]int32
}

// NewWatch watches topic at bootstrap; Close ends it.
func NewWatch(bootstrap []string, topic string) *Watch {
	return &Watch{topic: topic, bootstrap: bootstrap,
		cl:    TCP(bootstrap)(ClientOptions{ID: "chaos-nemesis-watch", Timeout: time.Second}),
		parts: map[history.Key]PartitionState{}, epochs: map[history.Key]int32{}}
}

// Partitions asks one broker for topic's partitions and returns who
// answered and the partitions as known so far: those the answer lists,
// unless it is older than what was heard before. Not safe for concurrent
// use.
func (w *Watch) Partitions(ctx context.Context) (string, map[int32]PartitionState, error) {
	md, err := w.cl.Metadata(ctx, w.topic, w.peers.Addrs(w.bootstrap)...)
	w.peers.Heard(md, err)
	if err != nil {
		return "", nil, err
	}
	out := map[int32]PartitionState{}
	for p, st := range md.Partitions {
		k := history.Key{Topic: w.topic, Partition: p}
		Learn(w.parts, w.epochs, k, st)
		out[p] = w.parts[k]
	}
	return md.From, out, nil
}

// Close closes the watch's connections.
func (w *Watch) Close() { w.cl.Close() }

// Leaders asks the cluster who leads each partition of topic (-1: nobody).
// The nemesis uses it to aim at leaders.
func Leaders(ctx context.Context, bootstrap []string, topic string) (map[int32]int32, error) {
	cl := TCP(bootstrap)(ClientOptions{ID: "chaos-nemesis", Timeout: 2 * time.Second})
	defer cl.Close()
	md, err := cl.Metadata(ctx, topic)
	if err != nil {
		return nil, err
	}
	out := map[int32]int32{}
	for p, s := range md.Partitions {
		out[p] = s.Leader
	}
	return out, nil
}
