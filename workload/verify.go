package workload

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
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
	cl := NewSyncClient(nil, ClientOptions{ID: "chaos-verify", Timeout: 2 * time.Second})
	defer cl.Close()
	return verifyCluster(ctx, cl, id, timeout)
}

func verifyCluster(ctx context.Context, cl *SyncClient, id Identity, timeout time.Duration) error {
	if len(id.Brokers) == 0 {
		return errors.New("no brokers to verify")
	}
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

// verifyBroker asks broker b's address, and no other, for the cluster's
// brokers (no topics).
func verifyBroker(ctx context.Context, cl *SyncClient, id Identity, b int32) error {
	addr := id.Brokers[b]
	md, err := cl.Metadata(ctx, "", addr)
	if err != nil {
		return fmt.Errorf("broker %d at %s: %w", b, addr, err)
	}
	if md.ClusterID != id.ClusterID {
		as := "without a cluster id"
		if md.ClusterID != "" {
			as = "as cluster " + md.ClusterID
		}
		return notOurs{fmt.Errorf("%s answers %s, not the cluster chaos started (%s): is another cluster on these ports?",
			addr, as, id.ClusterID)}
	}
	for _, br := range slices.Sorted(maps.Keys(md.Brokers)) {
		at := md.Brokers[br]
		if want, ours := id.Brokers[br]; !ours || at != want {
			return notOurs{fmt.Errorf("%s lists broker %d at %s, which is not one of the cluster's brokers (%s)",
				addr, br, at, describeBrokers(id.Brokers))}
		}
	}
	if len(md.Brokers) < len(id.Brokers) {
		return fmt.Errorf("%s lists %d of %d brokers (%s): the others have not registered yet",
			addr, len(md.Brokers), len(id.Brokers), describeBrokers(md.Brokers))
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
	cl := NewSyncClient(bootstrap, ClientOptions{ID: "chaos-admin", Timeout: 5 * time.Second})
	defer cl.Close()
	return verifyTopic(ctx, cl, spec)
}

func verifyTopic(ctx context.Context, cl *SyncClient, spec TopicSpec) error {
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
func topicDiffs(ctx context.Context, cl *SyncClient, spec TopicSpec) ([]string, error) {
	desc, err := cl.DescribeTopic(ctx, spec.Name)
	if err != nil {
		return nil, err
	}
	var diffs []string
	differs := func(name string, got, want any) {
		if fmt.Sprint(got) != fmt.Sprint(want) {
			diffs = append(diffs, fmt.Sprintf("%s=%v (asked %v)", name, got, want))
		}
	}
	differs("partitions", len(desc.Replicas), spec.Partitions)
	for _, p := range slices.Sorted(maps.Keys(desc.Replicas)) {
		if n := len(desc.Replicas[p]); n != int(spec.ReplicationFactor) {
			differs(fmt.Sprintf("partition %d's replication factor", p), n, spec.ReplicationFactor)
		}
	}
	for _, name := range []string{"min.insync.replicas", "unclean.leader.election.enable"} {
		if _, ok := desc.Configs[name]; !ok && !(spec.Foreign && name == "unclean.leader.election.enable") {
			// The test's promise depends on it: a cluster that cannot
			// say is not one whose topic could be verified.
			return nil, fmt.Errorf("topic %s's configs do not say %s", spec.Name, name)
		}
	}
	differs("min.insync.replicas", desc.Configs["min.insync.replicas"], spec.MinInsyncReplicas)
	unclean, ok := desc.Configs["unclean.leader.election.enable"]
	if !ok {
		unclean = "false"
	}
	differs("unclean.leader.election.enable", unclean, spec.Unclean)
	if !spec.Foreign || spec.ELR {
		// A foreign cluster that runs ELR unasked is judged by it
		// (External.topic); one asked for it must run it.
		differs(FeatureELR+">=1", desc.ELR, spec.ELR)
	}
	return diffs, nil
}
