package memdriver

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/broker/batch"
	"github.com/chaos-isr/chaos/broker/control"
)

// txnClient is a transactional producer spoken by hand: its coordinator,
// id and epoch.
type txnClient struct {
	t     *testing.T
	c     *Cluster
	id    string
	coord int32
	pid   int64
	epoch int16
	seq   map[int32]int32
}

func (x *txnClient) call(to int32, req kmsg.Request) kmsg.Response {
	x.t.Helper()
	call := x.c.Send(to, req)
	if !x.c.Await(call, 10_000) || call.Err != nil {
		x.t.Fatalf("%s to b%d: no answer (%v)", kmsg.NameForKey(req.Key()), to, call.Err)
	}
	return call.Resp
}

// retry sends req until its answer's code is not CONCURRENT_TRANSACTIONS
// or a coordinator's transient one.
func (x *txnClient) retry(to int32, req kmsg.Request, code func(kmsg.Response) int16) kmsg.Response {
	x.t.Helper()
	for range 100 {
		resp := x.call(to, req)
		switch code(resp) {
		case kerr.ConcurrentTransactions.Code, kerr.CoordinatorNotAvailable.Code, kerr.CoordinatorLoadInProgress.Code:
			x.c.Run(100)
			continue
		}
		return resp
	}
	x.t.Fatalf("%s kept answering a transient error", kmsg.NameForKey(req.Key()))
	return nil
}

// find asks a running broker for the id's coordinator.
func (x *txnClient) find() {
	x.t.Helper()
	via := int32(1)
	for !x.c.Up(via) {
		via++
	}
	find := kmsg.NewPtrFindCoordinatorRequest()
	find.Version, find.CoordinatorKey, find.CoordinatorType = 3, x.id, 1
	fr := x.retry(via, find, func(r kmsg.Response) int16 { return r.(*kmsg.FindCoordinatorResponse).ErrorCode }).(*kmsg.FindCoordinatorResponse)
	if fr.ErrorCode != 0 {
		x.t.Fatalf("find coordinator: %s", errName(fr.ErrorCode))
	}
	x.coord = fr.NodeID
}

func (x *txnClient) init() {
	x.t.Helper()
	x.find()
	x.c.Run(500) // the new leaders learn of their partitions
	init := kmsg.NewPtrInitProducerIDRequest()
	init.Version, init.TransactionalID, init.TransactionTimeoutMillis = 3, kmsg.StringPtr(x.id), 10_000
	ir := x.retry(x.coord, init, func(r kmsg.Response) int16 { return r.(*kmsg.InitProducerIDResponse).ErrorCode }).(*kmsg.InitProducerIDResponse)
	if ir.ErrorCode != 0 {
		x.t.Fatalf("init producer id: %s", errName(ir.ErrorCode))
	}
	x.pid, x.epoch, x.seq = ir.ProducerID, ir.ProducerEpoch, map[int32]int32{}
}

// txnCluster is a cluster with topic t of partitions partitions, and a
// transactional producer of id tx that has its producer id.
func txnCluster(t *testing.T, opts Options, partitions int32) (*Cluster, *txnClient) {
	t.Helper()
	c := New(opts)
	c.Run(500)
	if err := c.CreateTopic(control.TopicSpec{Name: "t", Partitions: partitions, ReplicationFactor: 3, MinInsyncReplicas: 2, Election: control.Clean}); err != nil {
		t.Fatal(err)
	}
	x := &txnClient{t: t, c: c, id: "tx"}
	x.init()
	return c, x
}

// add adds partition p of t to the open transaction: the error code.
func (x *txnClient) add(p int32) int16 {
	x.t.Helper()
	add := kmsg.NewPtrAddPartitionsToTxnRequest()
	add.Version, add.TransactionalID, add.ProducerID, add.ProducerEpoch = 3, x.id, x.pid, x.epoch
	add.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: "t", Partitions: []int32{p}}}
	ar := x.retry(x.coord, add, func(r kmsg.Response) int16 {
		return r.(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode
	}).(*kmsg.AddPartitionsToTxnResponse)
	return ar.Topics[0].Partitions[0].ErrorCode
}

// send writes value to partition p of t in the open transaction.
func (x *txnClient) send(p int32, value string) string {
	x.t.Helper()
	if code := x.add(p); code != 0 {
		return errName(code)
	}
	raw := batch.BuildTransactional(x.pid, x.epoch, x.seq[p], x.c.Now(), []byte(value))
	call := x.c.ProduceRecords(x.c.Partition("t", p).Leader, "t", p, -1, 5000, raw)
	x.c.Await(call, 10_000)
	res := ProduceResult(call)
	if res[:2] == "ok" {
		x.seq[p]++
	}
	return res
}

func (x *txnClient) end(commit bool) string {
	x.t.Helper()
	end := kmsg.NewPtrEndTxnRequest()
	end.Version, end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = 3, x.id, x.pid, x.epoch, commit
	er := x.retry(x.coord, end, func(r kmsg.Response) int16 { return r.(*kmsg.EndTxnResponse).ErrorCode }).(*kmsg.EndTxnResponse)
	return errName(er.ErrorCode)
}

// fetch reads partition p of t from its leader at isolation level
// (0 read_uncommitted, 1 read_committed): the values, the aborted
// transactions it names and the last stable offset.
func fetchAt(t *testing.T, c *Cluster, p int32, isolation int8) (values []string, aborted int, lso int64) {
	t.Helper()
	rp := fetchWhole(t, c, p, isolation)
	_, vals, err := batch.Values(rp.RecordBatches)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vals {
		values = append(values, string(v))
	}
	return values, len(rp.AbortedTransactions), rp.LastStableOffset
}

// fetchWhole fetches partition p of t from offset 0 at its leader, at
// isolation level, up to 16 MiB.
func fetchWhole(t *testing.T, c *Cluster, p int32, isolation int8) kmsg.FetchResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.IsolationLevel, req.MaxBytes = 11, -1, isolation, 1<<24
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "t"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.Partition, fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = p, 1<<24, -1
	ft.Partitions = append(ft.Partitions, fp)
	req.Topics = append(req.Topics, ft)
	call := c.Send(c.Partition("t", p).Leader, req)
	c.Await(call, 5000)
	if call.Err != nil {
		t.Fatalf("fetch of t-%d: %v", p, call.Err)
	}
	rp := call.Resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
	if rp.ErrorCode != 0 {
		t.Fatalf("fetch of t-%d: %s", p, errName(rp.ErrorCode))
	}
	return rp
}

// TestTransactions: a transactional producer's records wait for its
// decision: an open transaction holds the last stable offset, so a
// read_committed consumer reads no further; a commit's and an abort's
// markers end it on every partition, and read_committed is told which
// records were aborted. A new InitProducerId aborts what the old
// incarnation left open and fences it.
func TestTransactions(t *testing.T) {
	opts := DefaultOptions(1)
	opts.OnLog = func(node int32, line string) {
		if strings.Contains(line, "transaction") || strings.Contains(line, "marker") {
			t.Logf("b%d %s", node, line)
		}
	}
	c := New(opts)
	c.Run(500)
	if err := c.CreateTopic(control.TopicSpec{Name: "t", Partitions: 2, ReplicationFactor: 3, MinInsyncReplicas: 2, Election: control.Clean}); err != nil {
		t.Fatal(err)
	}
	x := &txnClient{t: t, c: c, id: "tx"}
	x.init()
	for _, v := range []string{"a", "b"} {
		if got := x.send(0, v); got != "ok@0" && got != "ok@1" {
			t.Fatalf("send %s: %s", v, got)
		}
	}
	c.Run(500)
	if vals, _, lso := fetchAt(t, c, 0, 1); len(vals) != 0 || lso != 0 {
		t.Fatalf("read_committed during the transaction: %v, lso %d; want nothing, lso 0", vals, lso)
	}
	if vals, _, _ := fetchAt(t, c, 0, 0); len(vals) != 2 {
		t.Fatalf("read_uncommitted during the transaction: %v", vals)
	}
	if got := x.end(true); got != "ok" {
		t.Fatalf("commit: %s", got)
	}
	c.Run(1000)
	vals, aborted, lso := fetchAt(t, c, 0, 1)
	if len(vals) != 2 || aborted != 0 || lso != 3 {
		t.Fatalf("after the commit: %v, %d aborted, lso %d; want a b, none, 3 (the marker counts)", vals, aborted, lso)
	}

	// An aborted transaction on both partitions.
	x.send(0, "c")
	x.send(1, "d")
	if got := x.end(false); got != "ok" {
		t.Fatalf("abort: %s", got)
	}
	c.Run(1000)
	if vals, aborted, lso := fetchAt(t, c, 0, 1); len(vals) != 3 || aborted != 1 || lso != 5 {
		t.Fatalf("after the abort: %v, %d aborted, lso %d; want a b c with one aborted transaction, lso 5", vals, aborted, lso)
	}

	// A transaction left open by a producer that then starts again is
	// aborted, and the old incarnation fenced.
	x.send(1, "e")
	old := *x
	x.init()
	if x.epoch <= old.epoch {
		t.Fatalf("epoch %d after %d: not bumped", x.epoch, old.epoch)
	}
	c.Run(1000)
	if _, aborted, lso := fetchAt(t, c, 1, 1); aborted != 2 || lso != 4 {
		t.Fatalf("partition 1 after the restart: %d aborted, lso %d; want both transactions aborted, lso 4", aborted, lso)
	}
	if got := old.send(1, "zombie"); got == "ok@4" {
		t.Fatalf("the fenced producer's write: %s", got)
	}
}

// commitOffset commits offset of t-0 for group in the open transaction.
func (x *txnClient) commitOffset(group string, offset int64) string {
	x.t.Helper()
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.Version, add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = 3, x.id, x.pid, x.epoch, group
	ar := x.retry(x.coord, add, func(r kmsg.Response) int16 { return r.(*kmsg.AddOffsetsToTxnResponse).ErrorCode }).(*kmsg.AddOffsetsToTxnResponse)
	if ar.ErrorCode != 0 {
		return "add offsets: " + errName(ar.ErrorCode)
	}
	coord := groupCoordinator(x.t, x.c, group)
	commit := kmsg.NewPtrTxnOffsetCommitRequest()
	commit.Version, commit.TransactionalID, commit.Group, commit.ProducerID, commit.ProducerEpoch = 3, x.id, group, x.pid, x.epoch
	commit.Generation = -1
	ct := kmsg.NewTxnOffsetCommitRequestTopic()
	ct.Topic = "t"
	cp := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	cp.Partition, cp.Offset, cp.LeaderEpoch = 0, offset, -1
	ct.Partitions = append(ct.Partitions, cp)
	commit.Topics = append(commit.Topics, ct)
	cr := x.call(coord, commit).(*kmsg.TxnOffsetCommitResponse)
	return errName(cr.Topics[0].Partitions[0].ErrorCode)
}

func groupCoordinator(t *testing.T, c *Cluster, group string) int32 {
	t.Helper()
	find := kmsg.NewPtrFindCoordinatorRequest()
	find.Version, find.CoordinatorKey = 3, group
	via := int32(1)
	for !c.Up(via) {
		via++
	}
	for range 100 {
		call := c.Send(via, find)
		c.Await(call, 5000)
		if r, ok := call.Resp.(*kmsg.FindCoordinatorResponse); ok && r.ErrorCode == 0 && c.Up(r.NodeID) {
			return r.NodeID
		}
		c.Run(100)
	}
	t.Fatalf("no coordinator for group %s", group)
	return 0
}

// committedOffset is group's committed offset of t-0 (asking for a stable
// one with stable), or the error its coordinator answers.
func committedOffset(t *testing.T, c *Cluster, group string, stable bool) string {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version, req.Group, req.RequireStable = 7, group, stable
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic, rt.Partitions = "t", []int32{0}
	req.Topics = append(req.Topics, rt)
	call := c.Send(groupCoordinator(t, c, group), req)
	c.Await(call, 5000)
	r := call.Resp.(*kmsg.OffsetFetchResponse)
	if r.ErrorCode != 0 {
		return errName(r.ErrorCode)
	}
	p := r.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		return errName(p.ErrorCode)
	}
	return fmt.Sprint(p.Offset)
}

// TestTransactionalOffsets: offsets committed in a transaction count once
// it commits and never if it aborts; while it is open a fetch of a stable
// offset is told to wait; and a coordinator that takes the group's
// partition over reads them back the same way.
func TestTransactionalOffsets(t *testing.T) {
	c, x := txnCluster(t, DefaultOptions(1), 1)
	const group = "g"
	step := func(value string, offset int64, commit bool) {
		t.Helper()
		x.send(0, value)
		if got := x.commitOffset(group, offset); got != "ok" {
			t.Fatalf("transactional commit of offset %d: %s", offset, got)
		}
		if got := committedOffset(t, c, group, true); got != errName(kerr.UnstableOffsetCommit.Code) {
			t.Fatalf("a stable offset fetched during the transaction: %s", got)
		}
		if got := x.end(commit); got != "ok" {
			t.Fatalf("end: %s", got)
		}
		c.Run(1000)
	}
	step("a", 5, true)
	if got := committedOffset(t, c, group, true); got != "5" {
		t.Fatalf("after the commit: offset %s, want 5", got)
	}
	step("b", 9, false)
	if got := committedOffset(t, c, group, false); got != "5" {
		t.Fatalf("after the abort: offset %s, want 5 (the aborted 9 must not count)", got)
	}
	step("c", 12, true)
	// Offsets committed in a transaction left open are not yet read back.
	x.send(0, "d")
	if got := x.commitOffset(group, 20); got != "ok" {
		t.Fatalf("transactional commit of offset 20: %s", got)
	}

	old := groupCoordinator(t, c, group)
	c.Kill(old, false)
	c.Run(3000)
	if now := groupCoordinator(t, c, group); now == old {
		t.Fatalf("the coordinator did not move from b%d", old)
	}
	if got := committedOffset(t, c, group, false); got != "12" {
		t.Fatalf("read back by the new coordinator: offset %s, want 12", got)
	}
	c.Restart(old)
	c.Run(1000)
	x.find()
	if got := x.end(true); got != "ok" {
		t.Fatalf("commit after the failover: %s", got)
	}
	c.Run(2000)
	if got := committedOffset(t, c, group, true); got != "20" {
		t.Fatalf("after the last commit: offset %s, want 20", got)
	}
}
