package integration

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// groupConsumed gathers what the members of a group read, by value.
type groupConsumed struct {
	mu   sync.Mutex
	seen map[string]int
}

func (g *groupConsumed) add(v string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.seen[v]++
}

func (g *groupConsumed) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.seen)
}

// committedAtEnd waits until group's committed offsets reach every
// partition's end offset.
func (tc *testCluster) committedAtEnd(t *testing.T, group, topic string, ends map[int32]int64) {
	t.Helper()
	cl := tc.kgoClient()
	defer cl.Close()
	adm := kadm.NewClient(cl)
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		got, err := adm.FetchOffsets(ctx, group)
		cancel()
		short := ""
		if err != nil {
			short = err.Error()
		} else {
			for p, end := range ends {
				o, ok := got.Lookup(topic, p)
				if end > 0 && (!ok || o.At != end) {
					short += fmt.Sprintf(" %s-%d committed %v of %d;", topic, p, o.At, end)
				}
			}
		}
		if short == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %s's committed offsets are not at the log end:%s", group, short)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestGroupFranzGo: two franz-go group consumers share a topic through
// chaos's group coordinator; one leaves half-way, the other takes its
// partitions over, and between them every record is read at least once
// and the group's committed offsets end at the log end.
func TestGroupFranzGo(t *testing.T) {
	tc := startCluster(t, clusterOpts{})
	topic, group := "groups-kgo", "g-kgo"
	tc.createTopic(topic, 3, 3, nil)
	sent := uniqueValues(topic, 300)
	kgoProduce(t, tc, topic, -1, sent[:150])
	got := &groupConsumed{seen: map[string]int{}}
	member := func(ctx context.Context) *kgo.Client {
		cl := tc.kgoClient(kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond),
			kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(500*time.Millisecond),
			kgo.AutoCommitInterval(200*time.Millisecond))
		go func() {
			for ctx.Err() == nil {
				fs := cl.PollFetches(ctx)
				fs.EachError(func(topic string, p int32, err error) { t.Logf("poll %s-%d: %v", topic, p, err) })
				fs.EachRecord(func(r *kgo.Record) { got.add(string(r.Value)) })
			}
		}()
		return cl
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := member(ctx)
	bctx, bcancel := context.WithCancel(ctx)
	b := member(bctx)
	deadline := time.Now().Add(30 * time.Second)
	for got.count() < 150 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if got.count() < 150 {
		t.Fatalf("the group read %d of the first 150 records", got.count())
	}
	bcancel()
	b.Close() // leaves the group
	kgoProduce(t, tc, topic, -1, sent[150:])
	for got.count() < len(sent) && time.Now().Before(deadline.Add(30*time.Second)) {
		time.Sleep(100 * time.Millisecond)
	}
	if got.count() < len(sent) {
		t.Fatalf("the group read %d of %d records", got.count(), len(sent))
	}
	ends := tc.waitEnd(topic, len(sent))
	tc.committedAtEnd(t, group, topic, ends)
	a.Close()
}
