package memdriver

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/broker/batch"
	"github.com/chaos-isr/chaos/broker/bug"
)

// endV5 sends EndTxn v5 (KIP-890) for x's epoch, and takes the epoch
// the answer gives.
func (x *txnClient) endV5(commit bool) string {
	x.t.Helper()
	end := x.endReq(commit)
	er := x.retry(x.coord, end, func(r kmsg.Response) int16 { return r.(*kmsg.EndTxnResponse).ErrorCode }).(*kmsg.EndTxnResponse)
	if er.ErrorCode == 0 {
		if er.ProducerID != x.pid || er.ProducerEpoch < x.epoch {
			x.t.Fatalf("EndTxn v5 answered producer %d epoch %d after %d epoch %d", er.ProducerID, er.ProducerEpoch, x.pid, x.epoch)
		}
		if er.ProducerEpoch != x.epoch {
			x.epoch, x.seq = er.ProducerEpoch, map[int32]int32{}
		}
	}
	return errName(er.ErrorCode)
}

func (x *txnClient) endReq(commit bool) *kmsg.EndTxnRequest {
	end := kmsg.NewPtrEndTxnRequest()
	end.Version, end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = 5, x.id, x.pid, x.epoch, commit
	return end
}

// TestLateEndTxn: with EndTxn v5 each transaction ends with a new epoch,
// a retry of the decision is told it, and an EndTxn that arrives late,
// once the producer's next transaction is open, does not end that one;
// with the planted bug txn-epoch-not-bumped it does (KAFKA-17754).
func TestLateEndTxn(t *testing.T) {
	for _, planted := range []bool{false, true} {
		opts := DefaultOptions(1)
		if planted {
			opts.Broker.Bugs = bug.Of(bug.TxnEpochNotBumped)
		}
		c, x := txnCluster(t, opts, 1)
		first := x.epoch
		if got := x.send(0, "a"); got != "ok@0" {
			t.Fatalf("send a: %s", got)
		}
		late := x.endReq(true) // the commit whose answer is lost
		if got := x.endV5(true); got != "ok" {
			t.Fatalf("commit: %s", got)
		}
		if bumped := x.epoch == first+1; bumped == planted {
			t.Fatalf("planted %v: epoch %d after %d", planted, x.epoch, first)
		}
		if !planted {
			// A retry of the same decision, asked again every
			// millisecond from the answer on: CONCURRENT_TRANSACTIONS
			// while the markers and the outcome are written (never a
			// fencing error, which would say the commit did not
			// happen), then the answer the first had.
			for i := 0; ; i++ {
				er := x.call(x.coord, late).(*kmsg.EndTxnResponse)
				if er.ErrorCode == 0 && er.ProducerEpoch == x.epoch {
					break
				}
				if er.ErrorCode != kerr.ConcurrentTransactions.Code || i > 1000 {
					t.Fatalf("a retry of the commit: %s, epoch %d; want ok, epoch %d", errName(er.ErrorCode), er.ProducerEpoch, x.epoch)
				}
				c.Run(1)
			}
		}
		c.Run(1000)
		// The next transaction, which the producer means to abort.
		if got := x.send(0, "b"); got[:2] != "ok" {
			t.Fatalf("send b: %s", got)
		}
		er := x.call(x.coord, late).(*kmsg.EndTxnResponse)
		c.Run(1000)
		vals, _, _ := fetchAt(t, c, 0, 1)
		decided := slices.Contains(vals, "b")
		if decided != planted {
			t.Fatalf("planted %v: the late commit answered %s, and read_committed reads %v", planted, errName(er.ErrorCode), vals)
		}
		if !planted {
			if got := x.endV5(false); got != "ok" {
				t.Fatalf("abort: %s", got)
			}
			c.Run(1000)
			// The batch of b is returned, named as an aborted transaction
			// for the client to drop.
			if vals, aborted, _ := fetchAt(t, c, 0, 1); !slices.Equal(vals, []string{"a", "b"}) || aborted != 1 {
				t.Fatalf("after the abort: %v, %d aborted; want a and b, b's transaction aborted", vals, aborted)
			}
		}
	}
}

// TestLateWriteAfterAbort: a transaction's write held on its way to a
// partition arrives after the transaction was aborted there under a new
// epoch; the partition never saw the producer before the marker, and
// must still refuse the older epoch (else the write would open a
// transaction no coordinator knows of, which a later commit of the
// producer's would take in).
func TestLateWriteAfterAbort(t *testing.T) {
	c, x := txnCluster(t, DefaultOptions(1), 1)
	if code := x.add(0); code != 0 {
		t.Fatalf("add: %s", errName(code))
	}
	old := *x
	if got := x.endV5(false); got != "ok" {
		t.Fatalf("abort: %s", got)
	}
	c.Run(1000)
	// The write the producer sent before it aborted, arriving now.
	raw := batch.BuildTransactional(old.pid, old.epoch, 0, c.Now(), []byte("late"))
	call := c.ProduceRecords(c.Partition("t", 0).Leader, "t", 0, -1, 5000, raw)
	c.Await(call, 10_000)
	if got := ProduceResult(call); got[:2] == "ok" {
		t.Fatalf("a write of epoch %d after the abort under epoch %d: %s", old.epoch, x.epoch, got)
	}
	c.Run(1000)
	if rp := fetchWhole(t, c, 0, 1); rp.LastStableOffset != rp.HighWatermark {
		t.Fatalf("last stable offset %d below the high watermark %d: a transaction is open", rp.LastStableOffset, rp.HighWatermark)
	}
}

// TestLateMarker: under KIP-890's per-transaction epoch the producer's
// next transaction runs under the epoch its last transaction's markers
// carry, so a late copy of one of those markers (a coordinator's retry,
// or a coordinator that lost the id resending it) reaches a partition
// where the next transaction is open under the same epoch; it must not
// end that transaction.
func TestLateMarker(t *testing.T) {
	c, x := txnCluster(t, DefaultOptions(1), 1)
	if got := x.send(0, "a"); got != "ok@0" {
		t.Fatalf("send a: %s", got)
	}
	if got := x.endV5(true); got != "ok" {
		t.Fatalf("commit: %s", got)
	}
	c.Run(1000)
	if got := x.send(0, "b"); got[:2] != "ok" {
		t.Fatalf("send b: %s", got)
	}
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.Version = 2
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.TransactionVersion = x.pid, x.epoch, true, 2
	mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
	mt.Topic, mt.Partitions = "t", []int32{0}
	m.Topics = append(m.Topics, mt)
	req.Markers = append(req.Markers, m)
	resp := x.call(c.Partition("t", 0).Leader, req).(*kmsg.WriteTxnMarkersResponse)
	if code := resp.Markers[0].Topics[0].Partitions[0].ErrorCode; code != kerr.InvalidProducerEpoch.Code {
		t.Errorf("the late marker was answered %s, want INVALID_PRODUCER_EPOCH", errName(code))
	}
	c.Run(1000)
	if vals, _, lso := fetchAt(t, c, 0, 1); slices.Contains(vals, "b") || lso != 2 {
		t.Fatalf("after the late marker read_committed reads %v, lso %d: want b's transaction still open at 2 (a, its marker, b)", vals, lso)
	}
}
