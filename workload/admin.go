package workload

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	waitfor "github.com/chaos-isr/chaos/internal/wait"
)

// TopicSpec is the topic a test writes to.
type TopicSpec struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16
	MinInsyncReplicas int32
	Unclean           bool
	// ELR: the cluster elects by KIP-966's eligible leader replicas, a
	// feature of the cluster (eligible.leader.replicas.version, which
	// ApiVersions gives), not of the topic; it applies unless Unclean.
	ELR bool
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
	cl := NewSyncClient(bootstrap, ClientOptions{ID: "chaos-admin", Timeout: 5 * time.Second})
	defer cl.Close()
	return createTopic(ctx, cl, spec, timeout)
}

func createTopic(ctx context.Context, cl *SyncClient, spec TopicSpec, timeout time.Duration) error {
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
		why = cl.Converged(ctx, spec.Name, spec.Partitions, &md)
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
// nemesis's triggered faults, which poll it every few milliseconds. Each
// poll asks every broker the cluster lists, at once, on a connection kept
// to each (a poll's requests would otherwise dial afresh every time), so
// that an election is heard from the first broker to learn of it: a
// broker learns of the controller's decisions on its own schedule
// (chaos's brokers with their heartbeats), and the new leader may not be
// the one that answered last. A broker that does not answer within a
// moment (dead, paused, cut off) is left out of the poll, and not asked
// again until it answers.
type Watch struct {
	topic string
	s     *SyncClient
	busy  map[int32]bool // brokers asked that have not answered yet; the loop's
}

// watchWait is how long a poll waits for the brokers' answers: many times
// a local round trip, well below a fetch's.
const watchWait = 20 * time.Millisecond

// NewWatch watches topic at bootstrap; Close ends it.
func NewWatch(bootstrap []string, topic string) *Watch {
	return &Watch{topic: topic, s: NewSyncClient(bootstrap, ClientOptions{ID: "chaos-nemesis-watch", Timeout: time.Second}),
		busy: map[int32]bool{}}
}

// WatchAnswer is one broker's answer to a poll.
type WatchAnswer struct {
	Broker     int32
	Partitions map[int32]PartitionState
}

// Poll asks every broker the cluster lists for topic's partitions and
// returns the answers that came within a moment, by broker id; the first
// poll asks the bootstrap brokers who they are. An error only when no
// broker answered. Not safe for concurrent use.
func (w *Watch) Poll(ctx context.Context) ([]WatchAnswer, error) {
	var ids []int32
	w.s.l.do(func() { ids = w.s.cl.Brokers() })
	if len(ids) == 0 {
		md, err := w.s.Metadata(ctx, w.topic)
		if err != nil {
			return nil, err
		}
		id := int32(-1)
		for b, addr := range md.Brokers {
			if addr == md.From {
				id = b
			}
		}
		return []WatchAnswer{{Broker: id, Partitions: md.Partitions}}, nil
	}
	type reply struct {
		a   WatchAnswer
		err error
	}
	got := make(chan reply, len(ids))
	asked := 0
	w.s.l.do(func() {
		for _, id := range ids {
			if w.busy[id] {
				continue
			}
			w.busy[id] = true
			asked++
			// An answer that comes after the poll gave up on it still
			// frees the broker for the next.
			w.s.cl.Call(id, MetadataRequest(w.topic), func(resp kmsg.Response, err error) {
				delete(w.busy, id)
				var a WatchAnswer
				if err == nil {
					md := resp.(*kmsg.MetadataResponse)
					w.s.cl.apply(w.topic, md)
					a = WatchAnswer{Broker: id, Partitions: MetadataAnswer(md, w.topic, "").Partitions}
				}
				got <- reply{a, err}
			})
		}
	})
	var out []WatchAnswer
	var last error
	timeout := time.NewTimer(watchWait)
	defer timeout.Stop()
wait:
	for ; asked > 0; asked-- {
		select {
		case r := <-got:
			if r.err != nil {
				last = r.err
				continue
			}
			out = append(out, r.a)
		case <-timeout.C:
			break wait
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if len(out) == 0 {
		if last == nil {
			last = fmt.Errorf("no broker answered within %s", watchWait)
		}
		return nil, fmt.Errorf("no broker answered a metadata request: %w", last)
	}
	slices.SortFunc(out, func(a, b WatchAnswer) int { return cmp.Compare(a.Broker, b.Broker) })
	return out, nil
}

// Close stops the watch's requests and closes its connections.
func (w *Watch) Close() { w.s.Close() }

// Leaders asks the cluster who leads each partition of topic (-1: nobody).
// The nemesis uses it to aim at leaders.
func Leaders(ctx context.Context, bootstrap []string, topic string) (map[int32]int32, error) {
	cl := NewSyncClient(bootstrap, ClientOptions{ID: "chaos-nemesis", Timeout: 2 * time.Second})
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
