package workload

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TopicSpec is the topic a test writes to.
type TopicSpec struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16
	MinInsyncReplicas int32
	Unclean           bool
}

// CreateTopic creates the test's topic with CreateTopics, waits until
// every partition has a leader, and checks that the topic has exactly
// spec's settings (VerifyTopic). The topic must not exist: a test that
// reused another's data would judge a history it did not write. Only when
// an earlier attempt's outcome is unknown (its answer was lost) may the
// topic exist, and then it must be exactly spec.
func CreateTopic(ctx context.Context, bootstrap []string, spec TopicSpec, timeout time.Duration) error {
	cl := newClient(bootstrap, 5*time.Second, "chaos-admin")
	defer cl.close()
	deadline := time.Now().Add(timeout)
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 4
	req.TimeoutMillis = int32(timeout / time.Millisecond)
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = spec.Name, spec.Partitions, spec.ReplicationFactor
	for name, val := range map[string]string{
		"min.insync.replicas":            strconv.Itoa(int(spec.MinInsyncReplicas)),
		"unclean.leader.election.enable": strconv.FormatBool(spec.Unclean),
	} {
		t.Configs = append(t.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: name, Value: kmsg.StringPtr(val)})
	}
	req.Topics = append(req.Topics, t)
	// mayExist: an attempt may have created the topic without our hearing.
	mayExist := false
	for {
		err := createOnce(ctx, cl, req)
		if err == nil {
			break
		}
		if errors.Is(err, kerr.TopicAlreadyExists) {
			if diffs, derr := topicDiffs(ctx, cl, spec); derr != nil {
				return fmt.Errorf("create topic %s: it already exists, and %w", spec.Name, derr)
			} else if len(diffs) > 0 {
				return fmt.Errorf("create topic %s: it already exists with other settings: %s", spec.Name, strings.Join(diffs, ", "))
			} else if !mayExist {
				return fmt.Errorf("create topic %s: it already exists; a test writes to a topic of its own, on a cluster of its own", spec.Name)
			}
			break
		}
		var ke *kerr.Error
		isKafka := errors.As(err, &ke)
		if !errors.Is(err, errNotSent) && (!isKafka || ke == kerr.RequestTimedOut) {
			mayExist = true
		}
		retriable := isKafka && (ke.Retriable || ke == kerr.InvalidReplicationFactor)
		if !retriable && !errors.Is(err, errNotSent) || time.Now().After(deadline) {
			return fmt.Errorf("create topic %s: %w", spec.Name, err)
		}
		// Brokers may still be registering (too few for the replication
		// factor yet): try again until the deadline.
		time.Sleep(200 * time.Millisecond)
	}
	for {
		why := converged(ctx, cl, Config{Topic: spec.Name, Partitions: spec.Partitions})
		if why == "" {
			return VerifyTopic(ctx, bootstrap, spec)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topic %s created but not ready after %s: %s", spec.Name, timeout, why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func createOnce(ctx context.Context, cl *client, req *kmsg.CreateTopicsRequest) error {
	if err := cl.refresh(ctx, req.Topics[0].Topic); err != nil {
		return fmt.Errorf("%w: %v", errNotSent, err)
	}
	var id int32 = -1
	for b := range cl.addrs {
		if id < 0 || b < id {
			id = b
		}
	}
	resp, err := cl.call(ctx, id, req)
	if err != nil {
		return err
	}
	r := resp.(*kmsg.CreateTopicsResponse)
	if len(r.Topics) != 1 {
		return errors.New("malformed create topics response")
	}
	if code := r.Topics[0].ErrorCode; code != 0 {
		err := kerr.ErrorForCode(code)
		if msg := r.Topics[0].ErrorMessage; msg != nil {
			return fmt.Errorf("%w: %s", err, *msg)
		}
		return err
	}
	return nil
}

// Leaders asks the cluster who leads each partition of topic (-1: nobody).
// The nemesis uses it to aim at leaders.
func Leaders(ctx context.Context, bootstrap []string, topic string) (map[int32]int32, error) {
	cl := newClient(bootstrap, 2*time.Second, "chaos-nemesis")
	defer cl.close()
	if err := cl.refresh(ctx, topic); err != nil {
		return nil, err
	}
	out := map[int32]int32{}
	for k, l := range cl.leaders {
		if k.Topic == topic {
			out[k.Partition] = l
		}
	}
	return out, nil
}
