package workload

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Identity is what the cluster a tester started must answer through the
// protocol: the cluster id the tester gave it, and exactly its brokers,
// each at the address the tester dials.
type Identity struct {
	ClusterID string
	Brokers   map[int32]string // broker id -> host:port
}

// notOurs is an answer that no amount of waiting will change: the address
// is served by another cluster.
type notOurs struct{ error }

// VerifyCluster asks every broker of id, at its own address, for metadata
// until each answers with id's cluster id and lists every broker of id at
// its address and no other, or timeout passes. A broker that answers for
// another cluster is an error at once, naming the address and both ids: a
// port held by someone else's cluster must never be tested in place of the
// one the tester started.
func VerifyCluster(ctx context.Context, id Identity, timeout time.Duration) error {
	if len(id.Brokers) == 0 {
		return errors.New("no brokers to verify")
	}
	cl := newClient(nil, 2*time.Second, "chaos-verify")
	defer cl.close()
	ids := slices.Sorted(maps.Keys(id.Brokers))
	done := map[int32]bool{}
	deadline := time.Now().Add(timeout)
	for {
		var waiting []string
		for _, b := range ids {
			if done[b] {
				continue
			}
			err := verifyBroker(ctx, cl, id, b)
			switch {
			case err == nil:
				done[b] = true
			case errors.As(err, new(notOurs)):
				return err
			default:
				waiting = append(waiting, err.Error())
			}
		}
		if len(waiting) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster not ready after %s: %s", timeout, strings.Join(waiting, "; "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// verifyBroker asks broker b's address for the cluster's brokers (no
// topics).
func verifyBroker(ctx context.Context, cl *client, id Identity, b int32) error {
	addr := id.Brokers[b]
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	req.Topics = []kmsg.MetadataRequestTopic{} // none; nil would ask for all
	md, _, err := cl.metadata(ctx, []string{addr}, req)
	if err != nil {
		return fmt.Errorf("broker %d at %s: %w", b, addr, err)
	}
	if md.ClusterID == nil || *md.ClusterID != id.ClusterID {
		as := "without a cluster id"
		if md.ClusterID != nil {
			as = "as cluster " + *md.ClusterID
		}
		return notOurs{fmt.Errorf("%s answers %s, not the cluster chaos started (%s): is another cluster on these ports?",
			addr, as, id.ClusterID)}
	}
	listed := map[int32]string{}
	for _, br := range md.Brokers {
		at := net.JoinHostPort(br.Host, strconv.Itoa(int(br.Port)))
		want, ours := id.Brokers[br.NodeID]
		if !ours || at != want {
			return notOurs{fmt.Errorf("%s lists broker %d at %s, which is not one of the cluster's brokers (%s)",
				addr, br.NodeID, at, describeBrokers(id.Brokers))}
		}
		listed[br.NodeID] = at
	}
	if len(listed) < len(id.Brokers) {
		return fmt.Errorf("%s lists %d of %d brokers (%s): the others have not registered yet",
			addr, len(listed), len(id.Brokers), describeBrokers(listed))
	}
	return nil
}

func describeBrokers(bs map[int32]string) string {
	var out []string
	for _, b := range slices.Sorted(maps.Keys(bs)) {
		out = append(out, fmt.Sprintf("%d at %s", b, bs[b]))
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// VerifyTopic checks through the protocol that the topic exists with
// exactly spec's partitions and replication factor (Metadata) and its
// min.insync.replicas and election policy (DescribeConfigs): a test judged
// against settings its topic does not have would promise the wrong things.
func VerifyTopic(ctx context.Context, bootstrap []string, spec TopicSpec) error {
	cl := newClient(bootstrap, 5*time.Second, "chaos-admin")
	defer cl.close()
	diffs, err := topicDiffs(ctx, cl, spec)
	if err != nil {
		return err
	}
	if len(diffs) > 0 {
		return fmt.Errorf("topic %s is not what was asked for: %s", spec.Name, strings.Join(diffs, ", "))
	}
	return nil
}

// topicDiffs lists how the topic as the cluster describes it differs from
// spec, as "setting=got (asked want)".
func topicDiffs(ctx context.Context, cl *client, spec TopicSpec) ([]string, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(spec.Name)
	req.Topics = append(req.Topics, t)
	md, _, err := cl.metadata(ctx, cl.bootstrap, req)
	if err != nil {
		return nil, fmt.Errorf("describing topic %s: %w", spec.Name, err)
	}
	if len(md.Topics) != 1 || md.Topics[0].ErrorCode == kerr.UnknownTopicOrPartition.Code {
		return nil, fmt.Errorf("topic %s does not exist", spec.Name)
	}
	var diffs []string
	differs := func(name string, got, want any) {
		if fmt.Sprint(got) != fmt.Sprint(want) {
			diffs = append(diffs, fmt.Sprintf("%s=%v (asked %v)", name, got, want))
		}
	}
	parts := md.Topics[0].Partitions
	differs("partitions", len(parts), spec.Partitions)
	for _, p := range parts {
		if len(p.Replicas) != int(spec.ReplicationFactor) {
			differs(fmt.Sprintf("partition %d's replication factor", p.Partition), len(p.Replicas), spec.ReplicationFactor)
		}
	}
	configs, err := describeTopicConfigs(ctx, cl, md, spec.Name)
	if err != nil {
		return nil, err
	}
	differs("min.insync.replicas", configs["min.insync.replicas"], spec.MinInsyncReplicas)
	differs("unclean.leader.election.enable", configs["unclean.leader.election.enable"], spec.Unclean)
	return diffs, nil
}

// describeTopicConfigs asks a broker of md for the topic's
// min.insync.replicas and unclean.leader.election.enable. A broker that
// cannot say is an error: the test's promise depends on both.
func describeTopicConfigs(ctx context.Context, cl *client, md *kmsg.MetadataResponse, topic string) (map[string]string, error) {
	cl.apply(topic, md)
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version = 4
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	res.ConfigNames = []string{"min.insync.replicas", "unclean.leader.election.enable"}
	req.Resources = append(req.Resources, res)
	var lastErr error
	for _, b := range slices.Sorted(maps.Keys(cl.addrs)) {
		resp, err := cl.call(ctx, b, req)
		if err != nil {
			lastErr = err
			continue
		}
		r := resp.(*kmsg.DescribeConfigsResponse)
		if len(r.Resources) != 1 {
			return nil, fmt.Errorf("describing topic %s's configs: %d resources in the answer", topic, len(r.Resources))
		}
		if err := kerr.ErrorForCode(r.Resources[0].ErrorCode); err != nil {
			return nil, fmt.Errorf("describing topic %s's configs: %w", topic, err)
		}
		out := map[string]string{}
		for _, c := range r.Resources[0].Configs {
			if c.Value != nil {
				out[c.Name] = *c.Value
			}
		}
		for _, name := range res.ConfigNames {
			if _, ok := out[name]; !ok {
				return nil, fmt.Errorf("topic %s's configs do not say %s", topic, name)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("describing topic %s's configs (DescribeConfigs): %w", topic, lastErr)
}
