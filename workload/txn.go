package workload

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/history"
)

// The transaction half of the Client: what a transactional producer
// (KIP-98) asks its transaction coordinator and the partitions' leaders.
// Each call is one step of a transaction, asked again while the answer
// says to (the coordinator moved, or is still ending the last
// transaction); the workload decides what a transaction does and when it
// ends.

// TxnAnswer is how a transaction request ended: the broker's error code,
// or err when no answer came. Retried says an earlier attempt of the
// request was sent and its answer lost, or answered that the coordinator
// was busy ending a transaction (perhaps with this very request): it may
// have been carried out, so a refusal of a later attempt does not say it
// was not.
type TxnAnswer struct {
	GroupAnswer
	Retried bool
}

// Busy says the coordinator is still ending the id's previous transaction
// (CONCURRENT_TRANSACTIONS): ask again.
func (a TxnAnswer) Busy() bool { return a.Err == nil && a.Code == kerr.ConcurrentTransactions.Code }

// Fenced says the session's producer epoch is no longer the id's: a newer
// incarnation has taken the id over, or the coordinator aborted the
// transaction when it timed out and bumped the epoch. The session must
// start again (InitTxn), and its open transaction is aborted.
func (a TxnAnswer) Fenced() bool {
	switch a.Code {
	case kerr.ProducerFenced.Code, kerr.InvalidProducerEpoch.Code, kerr.InvalidProducerIDMapping.Code:
		return true
	}
	return false
}

// Txn is one transactional producer session: its transactional id and
// timeout, and, once InitTxn succeeds, the coordinator, producer id and
// epoch it has, with each partition's next sequence number and whether
// the open transaction has added the partition yet.
type Txn struct {
	ID      string
	Timeout time.Duration
	coord   int32
	pid     int64
	epoch   int16
	next    map[history.Key]int32
	added   map[history.Key]bool
	// endVersion is the EndTxn version the coordinator takes (0 until
	// asked): from 5 each transaction ends with a new epoch (KIP-890),
	// which the session goes on with.
	endVersion int16
}

// NewTxn is a session of transactional id, whose transactions the
// coordinator aborts if they stay open longer than timeout.
func NewTxn(id string, timeout time.Duration) *Txn {
	return &Txn{ID: id, Timeout: timeout, coord: -1, pid: -1, epoch: -1}
}

// txnAttempts bounds how often one step is asked again, RetryBackoff
// apart, before its last answer is given up on: long enough for a
// coordinator to move or finish writing the last transaction's markers.
const txnAttempts = 50

// FindTxnCoordinator asks any broker which broker coordinates
// transactional id, and learns that broker's address.
func (c *Client) FindTxnCoordinator(id string, done func(int32, GroupAnswer)) {
	c.findCoordinator(id, 1, done)
}

// txnCall sends the request build makes to x's coordinator (found first
// if unknown), again after RetryBackoff while the answer is that the
// coordinator moved or is busy, at most txnAttempts times. code reads a
// response's error code.
func (c *Client) txnCall(x *Txn, build func() kmsg.Request, code func(kmsg.Response) int16, done func(kmsg.Response, TxnAnswer)) {
	var try func(left int)
	lost := false // an attempt was sent and its answer lost
	try = func(left int) {
		again := func(resp kmsg.Response, a TxnAnswer) {
			if left <= 1 {
				done(resp, a)
				return
			}
			c.after(RetryBackoff, func() { try(left - 1) })
		}
		if x.coord < 0 {
			c.FindTxnCoordinator(x.ID, func(coord int32, a GroupAnswer) {
				if !a.OK() {
					again(nil, TxnAnswer{GroupAnswer: a, Retried: lost})
					return
				}
				x.coord = coord
				try(left)
			})
			return
		}
		c.Call(x.coord, build(), func(resp kmsg.Response, err error) {
			a := TxnAnswer{GroupAnswer: GroupAnswer{Err: err}, Retried: lost}
			if err == nil {
				a.Code = code(resp)
			}
			switch {
			case a.Lost():
				x.coord = -1
				lost = lost || err != nil && !errors.Is(err, ErrNotSent)
				again(resp, a)
			case a.Busy():
				// The coordinator may be carrying out this very request
				// (a retry of an EndTxn whose decision it is writing).
				lost = true
				again(resp, a)
			default:
				done(resp, a)
			}
		})
	}
	try(txnAttempts)
}

// InitTxn asks the coordinator for the session's producer id and a new
// epoch, which fences the id's earlier incarnations and aborts a
// transaction one of them left open. On success the session has no
// transaction open and every sequence number starts again.
func (c *Client) InitTxn(x *Txn, done func(TxnAnswer)) {
	if x.endVersion == 0 {
		c.txnVersions(x, func(a TxnAnswer) {
			if !a.OK() {
				done(a)
				return
			}
			c.InitTxn(x, done)
		})
		return
	}
	build := func() kmsg.Request {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version = 3
		req.TransactionalID = kmsg.StringPtr(x.ID)
		req.TransactionTimeoutMillis = int32(x.Timeout / time.Millisecond)
		req.ProducerID, req.ProducerEpoch = x.pid, x.epoch
		return req
	}
	code := func(resp kmsg.Response) int16 { return resp.(*kmsg.InitProducerIDResponse).ErrorCode }
	c.txnCall(x, build, code, func(resp kmsg.Response, a TxnAnswer) {
		if a.OK() {
			r := resp.(*kmsg.InitProducerIDResponse)
			x.pid, x.epoch = r.ProducerID, r.ProducerEpoch
			x.next, x.added = map[history.Key]int32{}, map[history.Key]bool{}
		}
		done(a)
	})
}

// txnVersions asks x's coordinator (ApiVersions) which EndTxn it takes:
// 5, KIP-890's per-transaction epoch, where it can, else 3, which every
// coordinator since Kafka 2.4 takes.
func (c *Client) txnVersions(x *Txn, done func(TxnAnswer)) {
	build := func() kmsg.Request {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 3
		req.ClientSoftwareName, req.ClientSoftwareVersion = "chaos", "1"
		return req
	}
	code := func(resp kmsg.Response) int16 { return resp.(*kmsg.ApiVersionsResponse).ErrorCode }
	c.txnCall(x, build, code, func(resp kmsg.Response, a TxnAnswer) {
		if a.OK() {
			x.endVersion = 3
			for _, k := range resp.(*kmsg.ApiVersionsResponse).ApiKeys {
				if k.ApiKey == int16(kmsg.EndTxn) && k.MaxVersion >= 5 {
					x.endVersion = 5
				}
			}
		}
		done(a)
	})
}

// AddToTxn adds k to the open transaction (starting one if none is), once
// per transaction.
func (c *Client) AddToTxn(x *Txn, k history.Key, done func(TxnAnswer)) {
	if x.added[k] {
		done(TxnAnswer{})
		return
	}
	build := func() kmsg.Request {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version = 3
		req.TransactionalID, req.ProducerID, req.ProducerEpoch = x.ID, x.pid, x.epoch
		req.Topics = []kmsg.AddPartitionsToTxnRequestTopic{{Topic: k.Topic, Partitions: []int32{k.Partition}}}
		return req
	}
	code := func(resp kmsg.Response) int16 {
		r := resp.(*kmsg.AddPartitionsToTxnResponse)
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			return kerr.UnknownServerError.Code
		}
		return r.Topics[0].Partitions[0].ErrorCode
	}
	c.txnCall(x, build, code, func(_ kmsg.Response, a TxnAnswer) {
		if a.OK() {
			x.added[k] = true
		}
		done(a)
	})
}

// TxnSend writes value to k in the open transaction: AddToTxn, then one
// record in a transactional batch with acks=-1 and the partition's next
// sequence number, sent again with the same number after a retriable
// error (up to the client's retries), so that the broker writes it once.
// An outcome other than OK leaves the transaction unable to commit
// safely, and the partition's sequence unknown (the broker may hold the
// record under the number the next send would take, and answer that send
// as its duplicate): the caller aborts the transaction and starts the
// session again (InitTxn), whose new epoch starts every sequence anew.
func (c *Client) TxnSend(x *Txn, k history.Key, value string, done func(Outcome)) {
	c.AddToTxn(x, k, func(a TxnAnswer) {
		if !a.OK() {
			done(Outcome{Type: history.Fail, Error: fmt.Sprintf("%v: AddPartitionsToTxn: %s", ErrNotSent, a.Error())})
			return
		}
		seq := x.next[k]
		// maybe: an earlier attempt may have been written, so a later
		// refusal does not make the send one that was not.
		maybe := false
		var try func(left int, retried []string)
		try = func(left int, retried []string) {
			c.leader(k, func(leader int32, err error) {
				if err != nil {
					o := Outcome{Type: history.Fail, Error: err.Error(), Retries: retried}
					if maybe {
						o.Type = history.Info
					}
					done(o)
					return
				}
				req := produceBatch(k, encodeTxnBatch(x.pid, x.epoch, seq, c.env.Stamp(), []byte(value)), -1, c.produceTimeout)
				req.TransactionID = kmsg.StringPtr(x.ID)
				c.Call(leader, req, func(resp kmsg.Response, err error) {
					o, forget := SendOutcome(resp, err, -1)
					if forget {
						c.forget(k)
					}
					if o.Type == history.Info {
						maybe = true
					}
					if o.Type != history.OK && left > 0 && retriable(o, err) {
						c.after(RetryBackoff, func() { try(left-1, append(retried, o.Error)) })
						return
					}
					switch {
					case o.Type == history.OK:
						x.next[k] = seq + 1
					case maybe:
						o.Type = history.Info
					}
					o.Retries = retried
					done(o)
				})
			})
		}
		try(c.producer.retries, nil)
	})
}

// EndTxn commits or aborts the open transaction. A commit asked again
// after an answer was lost is answered as the first was, so an OK means
// the decision is made; any other answer leaves the outcome of a commit
// unknown (the caller starts the session again, which aborts it if it was
// not decided). The next transaction adds its partitions anew; where the
// coordinator bumps the epoch for each transaction (EndTxn v5, KIP-890),
// it runs under the epoch (or producer id) the answer gives, and its
// sequence numbers start again.
func (c *Client) EndTxn(x *Txn, commit bool, done func(TxnAnswer)) {
	build := func() kmsg.Request {
		req := kmsg.NewPtrEndTxnRequest()
		req.Version = max(x.endVersion, 3)
		req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = x.ID, x.pid, x.epoch, commit
		return req
	}
	code := func(resp kmsg.Response) int16 { return resp.(*kmsg.EndTxnResponse).ErrorCode }
	c.txnCall(x, build, code, func(resp kmsg.Response, a TxnAnswer) {
		clear(x.added)
		if r, ok := resp.(*kmsg.EndTxnResponse); ok && a.OK() && r.Version >= 5 && r.ProducerID >= 0 &&
			(r.ProducerID != x.pid || r.ProducerEpoch != x.epoch) {
			x.pid, x.epoch = r.ProducerID, r.ProducerEpoch
			clear(x.next)
		}
		done(a)
	})
}
