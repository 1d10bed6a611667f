package workload

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/history"
	waitfor "github.com/chaos-isr/chaos/internal/wait"
)

// What a run asks of a cluster it did not start, through the protocol
// only: who its brokers are, what an existing topic is, and whether its
// brokers answer the final phase's replica reads.

// ClusterMetadata asks the bootstrap addresses, in turn, for the cluster's
// brokers until one answers or timeout passes.
func ClusterMetadata(ctx context.Context, bootstrap []string, timeout time.Duration) (Metadata, error) {
	cl := NewSyncClient(bootstrap, ClientOptions{ID: "chaos-admin", Timeout: 5 * time.Second})
	defer cl.Close()
	var md Metadata
	var last error
	err := waitfor.Until(ctx, 500*time.Millisecond, timeout, func() (bool, error) {
		md, last = cl.Metadata(ctx, "", bootstrap...)
		return last == nil && len(md.Brokers) > 0, nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return Metadata{}, ctx.Err()
		}
		if last == nil {
			last = errors.New("the answers list no broker")
		}
		return Metadata{}, fmt.Errorf("no broker at %s answered within %s: %w", strings.Join(bootstrap, ","), timeout, last)
	}
	return md, nil
}

// ExistingTopic is a topic the user gave, as the cluster describes it: its
// settings, and whether it is empty.
type ExistingTopic struct {
	Spec TopicSpec
	// Configs are the configs the cluster described.
	Configs map[string]string
	// Records counts the records each partition holds (its end offset),
	// leaving out the empty ones.
	Records map[int32]int64
}

// DescribeExisting describes topic, or says it does not exist (ok false).
// The spec it returns is what the topic is: the settings a run on it is
// judged by.
func DescribeExisting(ctx context.Context, bootstrap []string, topic string) (ExistingTopic, bool, error) {
	cl := NewSyncClient(bootstrap, ClientOptions{ID: "chaos-admin", Timeout: 5 * time.Second})
	defer cl.Close()
	desc, err := cl.DescribeTopic(ctx, topic)
	if err != nil {
		if strings.Contains(err.Error(), "does not exist") {
			return ExistingTopic{}, false, nil
		}
		return ExistingTopic{}, false, err
	}
	spec := TopicSpec{Name: topic, Partitions: int32(len(desc.Replicas)), Foreign: true}
	for p := range spec.Partitions {
		rs, ok := desc.Replicas[p]
		if !ok {
			return ExistingTopic{}, true, fmt.Errorf("topic %s: partition %d is not described, of %d", topic, p, spec.Partitions)
		}
		if p == 0 {
			spec.ReplicationFactor = int16(len(rs))
		} else if len(rs) != int(spec.ReplicationFactor) {
			return ExistingTopic{}, true, fmt.Errorf("topic %s: partition %d has %d replicas, partition 0 %d: chaos judges a topic by one replication factor", topic, p, len(rs), spec.ReplicationFactor)
		}
	}
	minISR, ok := desc.Configs["min.insync.replicas"]
	if !ok {
		return ExistingTopic{}, true, fmt.Errorf("topic %s's configs do not say min.insync.replicas", topic)
	}
	n, err := strconv.Atoi(minISR)
	if err != nil {
		return ExistingTopic{}, true, fmt.Errorf("topic %s: min.insync.replicas %q is not a number", topic, minISR)
	}
	spec.MinInsyncReplicas = int32(n)
	spec.Unclean = desc.Configs["unclean.leader.election.enable"] == "true"
	spec.ELR = desc.ELR
	out := ExistingTopic{Spec: spec, Configs: desc.Configs, Records: map[int32]int64{}}
	for p := range spec.Partitions {
		var end int64
		// Brokers learn of a topic a moment apart: one that does not
		// know it yet says so.
		err := waitfor.Until(ctx, 200*time.Millisecond, 10*time.Second, func() (bool, error) {
			var err error
			end, err = cl.EndOffset(ctx, history.Key{Topic: topic, Partition: p})
			return err == nil, err
		})
		if err != nil {
			return ExistingTopic{}, true, fmt.Errorf("topic %s: the end offset of partition %d: %w", topic, p, err)
		}
		if end > 0 {
			out.Records[p] = end
		}
	}
	return out, true, nil
}

// TopicConfigs is the topic as the cluster describes it: its configs (what
// Assumed reads) and whether the cluster runs ELR, without the end offsets
// DescribeExisting also asks for.
func TopicConfigs(ctx context.Context, bootstrap []string, topic string) (TopicDescription, error) {
	cl := NewSyncClient(bootstrap, ClientOptions{ID: "chaos-admin", Timeout: 5 * time.Second})
	defer cl.Close()
	return cl.DescribeTopic(ctx, topic)
}

// NotEmpty says why the topic cannot be tested, "" if it can: every
// record in a test's topic must be one the test wrote, or the checkers
// would judge records nobody in the history sent.
func (t ExistingTopic) NotEmpty() string {
	if len(t.Records) == 0 {
		return ""
	}
	var parts []string
	for _, p := range slices.Sorted(maps.Keys(t.Records)) {
		parts = append(parts, fmt.Sprintf("partition %d ends at offset %d", p, t.Records[p]))
	}
	return fmt.Sprintf("topic %s is not empty (%s): chaos judges every record in its topic as one it wrote; give a new topic's name, or none to have chaos create one",
		t.Spec.Name, strings.Join(parts, ", "))
}

// ReplicaReadsRefused asks every replica of each of topic's partitions
// for a replica read (Fetch as the debug consumer, replica id -2), as the
// final phase will, and says why the cluster cannot give them ("" if it
// can): chaos's brokers answer it; franz-go's kfake refuses a follower's.
// Only a broker's refusal says so; a broker that cannot be asked at all is
// an error, not a reason to leave a check out.
func ReplicaReadsRefused(ctx context.Context, bootstrap []string, topic string, partitions int32) (string, error) {
	cl := NewSyncClient(bootstrap, ClientOptions{ID: "chaos-probe", Timeout: 5 * time.Second})
	defer cl.Close()
	md, err := cl.Metadata(ctx, topic)
	if err != nil {
		return "", fmt.Errorf("asking for topic %s's replicas: %w", topic, err)
	}
	for p := range partitions {
		for _, b := range slices.Sorted(slices.Values(md.Partitions[p].Replicas)) {
			err := replicaReadable(ctx, cl, history.Key{Topic: topic, Partition: p}, b)
			var ke *kerr.Error
			switch {
			case errors.As(err, &ke):
				return fmt.Sprintf("broker %d refused a replica read of partition %d (Fetch with replica id -2): %v", b, p, err), nil
			case err != nil:
				return "", fmt.Errorf("a replica read of partition %d at broker %d: %w", p, b, err)
			}
		}
	}
	return "", nil
}

// replicaReadable asks broker b for a replica read of k until it answers
// or refuses. A broker that has not heard of the new topic yet, or that
// cannot be reached for a moment, has not refused: declaring the check
// unsupported on such an answer would drop it from the verdict by chance.
func replicaReadable(ctx context.Context, cl *SyncClient, k history.Key, b int32) error {
	var last error
	err := waitfor.Until(ctx, 200*time.Millisecond, 10*time.Second, func() (bool, error) {
		_, last = cl.ReplicaRead(ctx, k, b)
		var ke *kerr.Error
		switch {
		case last == nil:
			return true, nil
		case errors.As(last, &ke) && ke != kerr.UnknownTopicOrPartition:
			return true, nil
		}
		return false, nil
	})
	if err != nil && last == nil {
		return err
	}
	return last
}

// BrokerConfig asks broker id for its config name (DescribeConfigs of a
// broker resource), as Kafka describes replica.lag.time.max.ms; ok is
// false when the broker does not describe it (or cannot be asked).
func BrokerConfig(ctx context.Context, bootstrap []string, id int32, name string) (string, bool) {
	cl := NewSyncClient(bootstrap, ClientOptions{ID: "chaos-admin", Timeout: 5 * time.Second})
	defer cl.Close()
	if _, err := cl.Metadata(ctx, ""); err != nil {
		return "", false
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version = 4
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeBroker, strconv.Itoa(int(id))
	res.ConfigNames = []string{name}
	req.Resources = append(req.Resources, res)
	resp, err := cl.Call(ctx, id, req)
	if err != nil {
		return "", false
	}
	r := resp.(*kmsg.DescribeConfigsResponse)
	if len(r.Resources) != 1 || r.Resources[0].ErrorCode != 0 {
		return "", false
	}
	for _, c := range r.Resources[0].Configs {
		if c.Name == name && c.Value != nil {
			return *c.Value, true
		}
	}
	return "", false
}

// TopicUnconverged waits up to timeout for every partition of topic to
// have a leader and its whole replica set in the ISR, and says what still
// keeps one from it then ("" once converged): a test that begins on a
// topic already degraded could not blame the end state on its faults.
func TopicUnconverged(ctx context.Context, bootstrap []string, topic string, partitions int32, timeout time.Duration) string {
	cl := NewSyncClient(bootstrap, ClientOptions{ID: "chaos-admin", Timeout: 5 * time.Second})
	defer cl.Close()
	var md Metadata
	why := "no answer"
	_ = waitfor.Until(ctx, 500*time.Millisecond, timeout, func() (bool, error) {
		why = cl.Converged(ctx, topic, partitions, &md)
		return why == "", nil
	})
	return why
}
