package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTransactionsFranzGo: franz-go's transactional producer commits and
// aborts transactions in turn through chaos's transaction coordinator; a
// read_committed consumer reads exactly the committed records, a
// read_uncommitted one every record written.
func TestTransactionsFranzGo(t *testing.T) {
	tc := startCluster(t, clusterOpts{})
	topic := "txn-kgo"
	tc.createTopic(topic, 3, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := tc.kgoClient(kgo.TransactionalID("chaos-txn-1"), kgo.TransactionTimeout(20*time.Second),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.RequiredAcks(kgo.AllISRAcks()))
	defer p.Close()
	var committed, all []string
	for i := range 10 {
		if err := p.BeginTransaction(); err != nil {
			t.Fatalf("begin %d: %v", i, err)
		}
		var vals []string
		for j := range 6 {
			v := fmt.Sprintf("txn%d-%d", i, j)
			done := make(chan error, 1)
			p.Produce(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}, func(_ *kgo.Record, err error) { done <- err })
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("produce %s: %v", v, err)
				}
			case <-time.After(15 * time.Second):
				t.Fatalf("produce %s: no answer in 15 s", v)
			}
			vals = append(vals, v)
		}
		commit := i%2 == 0
		if err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end transaction %d (commit %v): %v", i, commit, err)
		}
		all = append(all, vals...)
		if commit {
			committed = append(committed, vals...)
		}
	}
	read := func(level kgo.IsolationLevel, want int) []string {
		cl := tc.kgoClient(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchIsolationLevel(level), kgo.FetchMaxWait(200*time.Millisecond))
		defer cl.Close()
		var got []string
		deadline := time.Now().Add(20 * time.Second)
		for len(got) < want && time.Now().Before(deadline) {
			pctx, pcancel := context.WithTimeout(ctx, time.Second)
			fs := cl.PollFetches(pctx)
			pcancel()
			fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		}
		// A moment more: nothing else may come.
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		cl.PollFetches(pctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
		pcancel()
		slices.Sort(got)
		return got
	}
	slices.Sort(committed)
	slices.Sort(all)
	if got := read(kgo.ReadCommitted(), len(committed)); !slices.Equal(got, committed) {
		t.Errorf("read_committed read %d records %v, want the %d committed %v", len(got), got, len(committed), committed)
	}
	if got := read(kgo.ReadUncommitted(), len(all)); !slices.Equal(got, all) {
		t.Errorf("read_uncommitted read %d records, want all %d written", len(got), len(all))
	}
}
