package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestELR is KIP-966's case on real processes, written and read with
// franz-go: RF=3, min.insync.replicas=2, --election elr. The followers
// stop cleanly (SIGTERM), which shrinks the ISR to the leader, and the
// last of them to leave joins the ELR; the leader is killed (SIGKILL) and
// comes back first. It shut down uncleanly, so it must not lead (it could
// have lost unsynced writes): the partition stays offline until the
// follower in the ELR is back, which is then elected, with every record.
// The clean shutdown is a file the stopping broker writes, and the
// unclean one its absence, so this runs both through real files and the
// registration's PreviousBrokerEpoch.
func TestELR(t *testing.T) {
	tc := startCluster(t, clusterOpts{election: "elr"})
	const topic = "elr"
	tc.createTopic(topic, 1, 3, map[string]string{"min.insync.replicas": "2"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	cl := tc.kgoClient(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	// The cluster says what it runs, as Kafka 4.1 does.
	av, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(av.FinalizedFeatures, func(f kmsg.ApiVersionsResponseFinalizedFeature) bool {
		return f.Name == "eligible.leader.replicas.version" && f.MaxVersionLevel == 1
	}) {
		t.Errorf("finalized features %+v: eligible.leader.replicas.version 1 missing", av.FinalizedFeatures)
	}
	produce := func(prefix string, n int) []string {
		t.Helper()
		var vs []string
		for i := range n {
			v := fmt.Sprintf("%s-%d", prefix, i)
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("produce %s: %v", v, err)
			}
			vs = append(vs, v)
		}
		return vs
	}
	sent := produce("before", 20)

	leader := tc.mustState(topic, 0).leader
	var followers []int32
	for _, id := range tc.brokerIDs() {
		if id != leader {
			followers = append(followers, id)
		}
	}
	for _, f := range followers {
		if err := tc.Stop(int(f), 10*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	tc.waitISR(topic, 0, 1, 15*time.Second, leader)
	if err := tc.Kill(int(leader)); err != nil {
		t.Fatal(err)
	}
	if err := tc.Restart(ctx, int(leader)); err != nil {
		t.Fatal(err)
	}
	// Back first after an unclean shutdown, the old leader must not lead:
	// the ELR's member, stopped cleanly, holds every committed record.
	until := time.Now().Add(sessionTimeout + 3*time.Second)
	var last partitionState
	for time.Now().Before(until) {
		time.Sleep(100 * time.Millisecond)
		// The restarted broker knows the topic once the controller has
		// sent it the metadata.
		s, err := tc.state(leader, topic, 0)
		if err != nil {
			continue
		}
		if last = s; s.leader == leader && time.Now().After(until.Add(-3*time.Second)) {
			t.Fatalf("broker %d led again after its unclean shutdown, its followers down: %v", leader, s)
		}
	}
	if last.leader != -1 {
		t.Fatalf("after the unclean restart %v, want the partition offline until a follower is back", last)
	}
	for _, f := range followers {
		if err := tc.Restart(ctx, int(f)); err != nil {
			t.Fatal(err)
		}
	}
	s := tc.waitISR(topic, 0, 3, 20*time.Second)
	if !slices.Contains(followers, s.leader) {
		t.Errorf("after the followers' return %v, want one of them (%v) elected from the ELR", s, followers)
	}
	sent = append(sent, produce("after", 5)...)

	consumer := tc.kgoClient(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer consumer.Close()
	var got []string
	for len(got) < len(sent) && ctx.Err() == nil {
		consumer.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if !slices.Equal(got, sent) {
		t.Fatalf("read %d records %s, want %d %s", len(got), strings.Join(got, ","), len(sent), strings.Join(sent, ","))
	}
}
