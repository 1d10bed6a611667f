package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
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
	slices.Sort(committed)
	slices.Sort(all)
	if got := tc.readIsolated(t, topic, kgo.ReadCommitted(), len(committed)); !slices.Equal(got, committed) {
		t.Errorf("read_committed read %d records %v, want the %d committed %v", len(got), got, len(committed), committed)
	}
	if got := tc.readIsolated(t, topic, kgo.ReadUncommitted(), len(all)); !slices.Equal(got, all) {
		t.Errorf("read_uncommitted read %d records, want all %d written", len(got), len(all))
	}
}

// readIsolated reads topic from the start at isolation level until want
// records are read (or 20 s pass), and a second more: the values read,
// sorted.
func (tc *testCluster) readIsolated(t *testing.T, topic string, level kgo.IsolationLevel, want int) []string {
	t.Helper()
	cl := tc.kgoClient(kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(level), kgo.FetchMaxWait(200*time.Millisecond))
	defer cl.Close()
	var got []string
	poll := func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	for deadline := time.Now().Add(20 * time.Second); len(got) < want && time.Now().Before(deadline); {
		poll()
	}
	poll() // a moment more: nothing else may come
	slices.Sort(got)
	return got
}

// TestTransactionsFenced: a second producer with the same transactional
// id fences the first: the first's open transaction is aborted and its
// commit refused, and the second's transactions commit.
func TestTransactionsFenced(t *testing.T) {
	tc := startCluster(t, clusterOpts{})
	topic := "txn-fenced"
	tc.createTopic(topic, 2, 3, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	opts := []kgo.Opt{kgo.TransactionalID("chaos-txn-fenced"), kgo.TransactionTimeout(20 * time.Second),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordRetries(3)}
	old := tc.kgoClient(opts...)
	defer old.Close()
	if err := old.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := old.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("zombie")}).FirstErr(); err != nil {
		t.Fatalf("the first producer's write: %v", err)
	}
	fresh := tc.kgoClient(opts...)
	defer fresh.Close()
	if err := fresh.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := fresh.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("fresh")}).FirstErr(); err != nil {
		t.Fatalf("the second producer's write: %v", err)
	}
	if err := fresh.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("the second producer's commit: %v", err)
	}
	if err := old.EndTransaction(ctx, kgo.TryCommit); err == nil {
		t.Fatal("the fenced producer's commit was taken")
	}
	if got := tc.readIsolated(t, topic, kgo.ReadCommitted(), 1); !slices.Equal(got, []string{"fresh"}) {
		t.Fatalf("read_committed: %v, want only the second producer's record", got)
	}
}

// TestTransactionsGroupSession: franz-go's GroupTransactSession reads a
// topic in a consumer group and writes each record on to another topic,
// committing the consumed offsets in the same transaction
// (AddOffsetsToTxn, TxnOffsetCommit); every third transaction is
// aborted, and a new session (a new incarnation of the producer, which
// joins the group again) reads on from the group's committed offsets. A read_committed consumer of the output sees every input
// record exactly once, and the group's committed offsets are at the
// input's log end.
func TestTransactionsGroupSession(t *testing.T) {
	tc := startGroupCluster(t)
	in, out := "ctp-in", "ctp-out"
	tc.createTopic(in, groupPartitions, 3, nil)
	tc.createTopic(out, groupPartitions, 3, nil)
	values := uniqueValues("ctp", 200)
	p := tc.spreadProducer()
	produceSpread(t, p, in, values)
	p.Close()
	ends := tc.waitEnd(in, len(values))

	open := func() *kgo.GroupTransactSession {
		sess, err := kgo.NewGroupTransactSession(tc.kgoOpts(kgo.TransactionalID("chaos-ctp"), kgo.TransactionTimeout(20*time.Second),
			kgo.ConsumerGroup("ctp"), kgo.ConsumeTopics(in), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.SessionTimeout(memberSession), kgo.HeartbeatInterval(memberHeartbeat), kgo.FetchMaxWait(200*time.Millisecond))...)
		if err != nil {
			t.Fatal(err)
		}
		return sess
	}
	sess := open()
	defer func() { sess.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	aborts, commits := 0, 0
	for n := 0; ; {
		if ctx.Err() != nil {
			t.Fatalf("after %d commits and %d aborts the output is not complete", commits, aborts)
		}
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		fs := sess.PollRecords(pctx, 20)
		pcancel()
		var recs []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			recs = append(recs, &kgo.Record{Topic: out, Partition: r.Partition, Value: r.Value})
		})
		if len(recs) == 0 {
			if commits > 0 && tc.committedReached("ctp", in, ends) {
				break
			}
			continue
		}
		if err := sess.Begin(); err != nil {
			t.Fatalf("begin: %v", err)
		}
		if err := sess.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
		try := kgo.TryCommit
		if n++; n%3 == 0 {
			try = kgo.TryAbort
		}
		committed, err := sess.End(ctx, try)
		if err != nil {
			t.Fatalf("end: %v", err)
		}
		if committed {
			commits++
			continue
		}
		// A new session after an abort reads on from the offsets the
		// group committed, not from where this one had read to: an
		// aborted transaction's offsets must not count.
		aborts++
		sess.Close()
		sess = open()
	}
	t.Logf("%d commits, %d aborts", commits, aborts)
	if aborts == 0 || commits < 2 {
		t.Fatalf("%d commits and %d aborts: the test did not exercise both", commits, aborts)
	}
	slices.Sort(values)
	if got := tc.readIsolated(t, out, kgo.ReadCommitted(), len(values)); !slices.Equal(got, values) {
		t.Fatalf("read_committed of the output: %d records, want each of the %d input records once", len(got), len(values))
	}
	tc.committedAtEnd(t, "ctp", in, ends)
}

// TestTransactionsSarama: sarama's transactional producer commits and
// aborts in turn, each transaction with three records and an offset of a
// consumer group committed in it (AddOffsetsToTxn, TxnOffsetCommit): a
// read_committed consumer reads exactly the committed records, and the
// group's offset is the last committed transaction's, not the aborted
// one's written after it.
func TestTransactionsSarama(t *testing.T) {
	tc := startCluster(t, clusterOpts{})
	topic, group := "txn-sarama", "sarama-txn-group"
	tc.createTopic(topic, 3, 3, nil)
	cfg := saramaConfig(-1)
	cfg.Version = sarama.V2_8_0_0
	cfg.Producer.Idempotent = true
	cfg.Producer.Transaction.ID = "chaos-sarama-txn"
	cfg.Producer.Transaction.Retry.Backoff = 100 * time.Millisecond
	cfg.Producer.Transaction.Retry.Max = 100
	cfg.Net.MaxOpenRequests = 1
	p, err := sarama.NewSyncProducer(strings.Split(tc.Bootstrap(), ","), cfg)
	if err != nil {
		t.Fatalf("sarama transactional producer: %v", err)
	}
	defer p.Close()
	var committed []string
	for i := range 6 {
		if err := p.BeginTxn(); err != nil {
			t.Fatalf("begin %d: %v", i, err)
		}
		var vals []string
		for j := range 3 {
			v := fmt.Sprintf("sarama%d-%d", i, j)
			if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Value: sarama.StringEncoder(v)}); err != nil {
				t.Fatalf("send %s: %v", v, err)
			}
			vals = append(vals, v)
		}
		offsets := map[string][]*sarama.PartitionOffsetMetadata{topic: {{Partition: 0, Offset: int64(10 * (i + 1))}}}
		if err := p.AddOffsetsToTxn(offsets, group); err != nil {
			t.Fatalf("offsets in transaction %d: %v", i, err)
		}
		if i%2 == 0 {
			if err := p.CommitTxn(); err != nil {
				t.Fatalf("commit %d: %v", i, err)
			}
			committed = append(committed, vals...)
			continue
		}
		if err := p.AbortTxn(); err != nil {
			t.Fatalf("abort %d: %v", i, err)
		}
	}
	slices.Sort(committed)
	if got := tc.readIsolated(t, topic, kgo.ReadCommitted(), len(committed)); !slices.Equal(got, committed) {
		t.Errorf("read_committed read %v, want the committed %v", got, committed)
	}
	// Transaction 4 committed offset 50; 5 aborted 60.
	tc.committedAtEnd(t, group, topic, map[int32]int64{0: 50})
}
