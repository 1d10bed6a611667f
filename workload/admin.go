package workload

import (
	"context"
	"errors"
	"fmt"
	"strconv"
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

// CreateTopic creates the test's topic with CreateTopics and waits until
// every partition has a leader. The topic must not exist: a test that
// reused another's data would judge a history it did not write.
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
	for {
		err := createOnce(ctx, cl, req)
		if err == nil {
			break
		}
		var ke *kerr.Error
		retriable := errors.As(err, &ke) && (ke.Retriable || ke == kerr.InvalidReplicationFactor)
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
			return nil
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
