package core

import (
	"encoding/json"
	"math"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/broker/batch"
	"github.com/chaos-isr/chaos/broker/bug"
	"github.com/chaos-isr/chaos/broker/control"
)

// The transaction coordinator (KIP-98). A transactional id lives in a
// partition of the internal topic __transaction_state (the hash of the
// id), which the controller creates with the cluster's defaults the first
// time a client looks for a transaction coordinator; that partition's
// leader is the id's coordinator. It gives the id a producer id and an
// epoch (InitProducerId: a new epoch fences the producer's older
// incarnations, aborting a transaction they left open), records the
// partitions a transaction writes to (AddPartitionsToTxn), and ends it
// (EndTxn): the decision is written first (PrepareCommit, PrepareAbort),
// then a marker to every partition (WriteTxnMarkers to their leaders),
// then the outcome (CompleteCommit, CompleteAbort). Every state is a
// record of the id's partition, answered once the high watermark passes
// it, and a new leader of the partition reads the ids back and finishes
// the markers of a decision it finds. A transaction open longer than its
// timeout is aborted by the coordinator, with a new epoch.
//
// An EndTxn of version 5 or more asks for KIP-890's per-transaction epoch:
// the decision bumps the epoch, the answer gives the producer the new one,
// and an EndTxn of the old epoch is then only a retry of that decision, so
// one that arrives late cannot decide the producer's next transaction.
//
// Not supported: KIP-890's verification of a partition's transaction by
// its leader (produce v12's implicit AddPartitionsToTxn, so the
// transaction.version feature is not advertised), DescribeTransactions and
// ListTransactions.

// TransactionTopic is the internal topic that holds the transactional ids.
const TransactionTopic = "__transaction_state"

// Transaction states, as Kafka names them.
const (
	txnEmpty          = "Empty"
	txnOngoing        = "Ongoing"
	txnPrepareCommit  = "PrepareCommit"
	txnPrepareAbort   = "PrepareAbort"
	txnCompleteCommit = "CompleteCommit"
	txnCompleteAbort  = "CompleteAbort"
)

// transaction is a transactional id this broker coordinates.
type transaction struct {
	id        string
	partition int32 // of TransactionTopic
	pid       int64
	epoch     int16
	timeoutMs int64
	state     string
	parts     []tp  // the partitions of the transaction, sorted
	started   int64 // when it began (Ongoing)
	// pending are the partitions still to be told of a decision;
	// inFlight the marker requests sent and not yet answered, retryAt
	// when the coordinator asks again.
	pending  []tp
	inFlight int
	retryAt  int64
	// writing: a state record is being written; no other change starts
	// until it is committed.
	writing bool
	// KIP-890's per-transaction epoch (an EndTxn of version 5 or more):
	// tv2 says the last decision bumped the epoch; lastPID and lastEpoch
	// are what the decided transaction ran under, so that a retry of its
	// EndTxn is told the outcome and a late one cannot decide the next
	// transaction; nextPID, when not -1, is the producer id the next
	// transaction runs under, the epoch having run out.
	tv2       bool
	lastPID   int64
	lastEpoch int16
	nextPID   int64
}

type txnRecord struct {
	Txn       string   `json:"txn"`
	PID       int64    `json:"producer_id"`
	Epoch     int16    `json:"producer_epoch"`
	TimeoutMs int64    `json:"timeout_ms"`
	State     string   `json:"state"`
	Parts     []txnTPs `json:"partitions,omitempty"`
	// KIP-890's (transaction.tv2 and the rest): absent before it.
	TV2       bool  `json:"tv2,omitempty"`
	LastPID   int64 `json:"last_producer_id,omitempty"`
	LastEpoch int16 `json:"last_producer_epoch,omitempty"`
	NextPID   int64 `json:"next_producer_id,omitempty"`
}

type txnTPs struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// markerSend is a WriteTxnMarkers request in flight for a transaction.
type markerSend struct {
	txn   string
	parts []tp
}

// txnHome is this broker's replica of the partition that holds
// transactional id, with NOT_COORDINATOR if it does not lead it (or the
// topic does not exist yet).
func (b *Broker) txnHome(id string) (*replica, int16) {
	if b.md == nil {
		return nil, kerr.CoordinatorNotAvailable.Code
	}
	t, _ := b.md.Lookup(TransactionTopic, -1)
	if t == nil {
		b.createInternalTopic(TransactionTopic, b.cfg.TransactionTopicPartitions)
		return nil, kerr.NotCoordinator.Code
	}
	r := b.replica(TransactionTopic, groupKeyPartition(id, int32(len(t.Partitions))))
	if r == nil || r.role != roleLeader {
		return nil, kerr.NotCoordinator.Code
	}
	return r, 0
}

// newProducerID is a producer id no broker has given (producers.go).
func (b *Broker) newProducerID() int64 {
	b.producerCounter = max(b.producerCounter+1, b.now*producerIDsPerMs)
	return b.producerCounter*producerIDBrokers + int64(b.cfg.BrokerID)
}

// initTransactional answers InitProducerId for a transactional id.
func (b *Broker) initTransactional(conn ConnID, corr int32, req *kmsg.InitProducerIDRequest) {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.SetVersion(req.Version)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	answer := func(code int16) {
		resp.ErrorCode = code
		b.reply(conn, corr, resp)
	}
	id := *req.TransactionalID
	r, code := b.txnHome(id)
	switch {
	case code != 0:
		answer(code)
		return
	case req.TransactionTimeoutMillis <= 0 || int64(req.TransactionTimeoutMillis) > b.cfg.TransactionMaxTimeoutMs:
		answer(kerr.InvalidTransactionTimeout.Code)
		return
	}
	t := b.txns[id]
	if t == nil {
		t = &transaction{id: id, partition: r.key.partition, pid: b.newProducerID(), epoch: -1, state: txnEmpty, lastPID: -1, lastEpoch: -1, nextPID: -1}
		b.txns[id] = t
	}
	switch {
	case t.writing, t.state == txnPrepareCommit, t.state == txnPrepareAbort:
		answer(kerr.ConcurrentTransactions.Code)
		return
	case t.state == txnOngoing:
		// A new incarnation of the producer: the transaction the old one
		// left open is aborted, under a new epoch that fences it, and the
		// new one asks again once that is done.
		b.logf("transaction %s: producer %d epoch %d started again with a transaction open: aborting it", id, t.pid, t.epoch)
		b.decideTxn(t, false, true, false, nil)
		answer(kerr.ConcurrentTransactions.Code)
		return
	}
	if t.epoch >= math.MaxInt16-1 {
		t.pid, t.epoch = b.newProducerID(), -1
	}
	t.epoch++
	t.state, t.parts, t.timeoutMs = txnEmpty, nil, int64(req.TransactionTimeoutMillis)
	t.tv2, t.lastPID, t.lastEpoch = false, -1, -1
	b.writeTxn(t, func(code int16) {
		if code == 0 {
			resp.ProducerID, resp.ProducerEpoch = t.pid, t.epoch
		}
		answer(code)
	})
}

// txnFor is the transaction of id at this coordinator, checked against
// the producer id and epoch a request names, or the error to answer.
func (b *Broker) txnFor(id string, pid int64, epoch int16) (*transaction, int16) {
	if _, code := b.txnHome(id); code != 0 {
		return nil, code
	}
	t := b.txns[id]
	switch {
	case t != nil && t.nextPID >= 0 && t.nextPID == pid && epoch == 0:
		// The producer id that follows an exhausted epoch, asked for
		// before the decision that gave it is complete.
		return nil, kerr.ConcurrentTransactions.Code
	case t == nil, t.pid != pid:
		return nil, kerr.InvalidProducerIDMapping.Code
	case epoch != t.epoch:
		return nil, kerr.InvalidProducerEpoch.Code
	case t.writing, t.state == txnPrepareCommit, t.state == txnPrepareAbort:
		return nil, kerr.ConcurrentTransactions.Code
	}
	return t, 0
}

func (b *Broker) handleAddPartitionsToTxn(conn ConnID, corr int32, req *kmsg.AddPartitionsToTxnRequest) {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	resp.SetVersion(req.Version)
	answer := func(code int16) {
		for _, rt := range req.Topics {
			t := kmsg.NewAddPartitionsToTxnResponseTopic()
			t.Topic = rt.Topic
			for _, p := range rt.Partitions {
				x := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				x.Partition, x.ErrorCode = p, code
				t.Partitions = append(t.Partitions, x)
			}
			resp.Topics = append(resp.Topics, t)
		}
		b.reply(conn, corr, resp)
	}
	t, code := b.txnFor(req.TransactionalID, req.ProducerID, req.ProducerEpoch)
	if code != 0 {
		answer(code)
		return
	}
	var parts []tp
	for _, rt := range req.Topics {
		if known, _ := b.md.Lookup(rt.Topic, -1); known == nil {
			answer(kerr.UnknownTopicOrPartition.Code)
			return
		}
		for _, p := range rt.Partitions {
			parts = append(parts, tp{rt.Topic, p})
		}
	}
	b.addToTxn(t, parts, answer)
}

// addToTxn adds parts to t, starting it if it is not open, and answers
// once that is written.
func (b *Broker) addToTxn(t *transaction, parts []tp, answer func(code int16)) {
	if t.state != txnOngoing {
		t.state, t.parts, t.started = txnOngoing, nil, b.now
	}
	for _, k := range parts {
		if !slices.Contains(t.parts, k) {
			t.parts = append(t.parts, k)
		}
	}
	slices.SortFunc(t.parts, compareTP)
	b.writeTxn(t, answer)
}

func (b *Broker) handleEndTxn(conn ConnID, corr int32, req *kmsg.EndTxnRequest) {
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	resp.SetVersion(req.Version)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	answer := func(code int16) {
		resp.ErrorCode = code
		b.reply(conn, corr, resp)
	}
	if _, code := b.txnHome(req.TransactionalID); code != 0 {
		answer(code)
		return
	}
	t := b.txns[req.TransactionalID]
	if t != nil {
		if req.Version >= 5 && t.tv2 && t.lastPID == req.ProducerID && t.lastEpoch == req.ProducerEpoch {
			// KIP-890: the transaction this EndTxn names was decided
			// already, and the epoch bumped. A retry of the same decision
			// is told the outcome and the epoch to go on with (once the
			// state being written is kept); anything else is refused, so
			// that an EndTxn that arrives late never decides the
			// transaction after it (KAFKA-17754).
			switch {
			case t.writing:
				answer(kerr.ConcurrentTransactions.Code)
			case t.state == txnCompleteCommit && req.Commit, t.state == txnCompleteAbort && !req.Commit:
				resp.ProducerID, resp.ProducerEpoch = t.pid, t.epoch
				answer(0)
			case t.state == txnPrepareCommit && req.Commit, t.state == txnPrepareAbort && !req.Commit:
				answer(kerr.ConcurrentTransactions.Code)
			default:
				answer(kerr.InvalidTxnState.Code)
			}
			return
		}
		// A retry of the decision already carried out is answered as the
		// first was.
		if !t.writing && !t.tv2 && t.pid == req.ProducerID && t.epoch == req.ProducerEpoch &&
			(t.state == txnCompleteCommit && req.Commit || t.state == txnCompleteAbort && !req.Commit) {
			answer(0)
			return
		}
	}
	t, code := b.txnFor(req.TransactionalID, req.ProducerID, req.ProducerEpoch)
	switch {
	case code != 0:
		answer(code)
	case t.state != txnOngoing:
		answer(kerr.InvalidTxnState.Code)
	case req.Version >= 5:
		// KIP-890 part 2: every transaction ends with a new epoch, which
		// the answer gives the producer for its next one.
		// Planted bug txn-epoch-not-bumped: the answer names the same
		// epoch, and the id's transactions run under one epoch as before
		// KIP-890, so a late EndTxn can decide the next one.
		bump := !b.cfg.Bugs.Has(bug.TxnEpochNotBumped)
		b.decideTxn(t, req.Commit, bump, bump, func(code int16) {
			if code == 0 {
				resp.ProducerID, resp.ProducerEpoch = t.pid, t.epoch
				if t.nextPID >= 0 {
					resp.ProducerID, resp.ProducerEpoch = t.nextPID, 0
				}
			}
			answer(code)
		})
	default:
		b.decideTxn(t, req.Commit, false, false, answer)
	}
}

// decideTxn writes t's decision (a new epoch first with bump, fencing the
// producer; tv2 when the epoch is KIP-890's per-transaction one, which the
// producer goes on with), answers done once it is kept, and then has the
// markers written.
func (b *Broker) decideTxn(t *transaction, commit, bump, tv2 bool, done func(code int16)) {
	was := *t
	t.state = txnPrepareAbort
	if commit {
		t.state = txnPrepareCommit
	}
	t.tv2, t.lastPID, t.lastEpoch, t.nextPID = tv2, -1, -1, -1
	if tv2 {
		t.lastPID, t.lastEpoch = t.pid, t.epoch
	}
	if bump {
		if t.epoch >= math.MaxInt16-1 {
			// The markers go out under the old id's last epoch; the next
			// InitProducerId gives a new id.
			t.epoch = math.MaxInt16 - 1
		} else {
			t.epoch++
		}
		if tv2 && t.epoch >= math.MaxInt16-1 {
			// The epoch has run out: the producer's next transaction
			// runs under a new producer id, as Kafka's coordinator does.
			t.nextPID = b.newProducerID()
		}
	}
	b.logf("transaction %s: producer %d epoch %d: %s of %d partitions", t.id, t.pid, t.epoch, t.state, len(t.parts))
	b.writeTxn(t, func(code int16) {
		if code != 0 {
			if t.state == txnPrepareCommit || t.state == txnPrepareAbort {
				// Not kept: the transaction is as it was, for the client
				// to end again (a coordinator that moved reads it back).
				t.state, t.epoch = was.state, was.epoch
				t.tv2, t.lastPID, t.lastEpoch, t.nextPID = was.tv2, was.lastPID, was.lastEpoch, was.nextPID
			}
			if done != nil {
				done(code)
			}
			return
		}
		if done != nil {
			done(0)
		}
		t.pending = slices.Clone(t.parts)
		b.sendMarkers(t)
	})
}

// writeTxn writes t's state to its partition; done hears the
// coordinator's answer.
func (b *Broker) writeTxn(t *transaction, done func(code int16)) {
	rec := txnRecord{Txn: t.id, PID: t.pid, Epoch: t.epoch, TimeoutMs: t.timeoutMs, State: t.state, TV2: t.tv2}
	if t.tv2 {
		rec.LastPID, rec.LastEpoch = t.lastPID, t.lastEpoch
	}
	if t.nextPID >= 0 {
		rec.NextPID = t.nextPID
	}
	for _, k := range t.parts {
		rec.Parts = append(rec.Parts, txnTPs{k.topic, k.partition})
	}
	t.writing = true
	b.appendInternal(b.replica(TransactionTopic, t.partition), batch.Build(b.now, mustJSON(rec)), b.cfg.GroupCommitTimeoutMs, false, func(code int16) {
		t.writing = false
		done(coordinatorCode(code))
	})
}

// sendMarkers has each pending partition's leader write t's marker, this
// broker's own partitions at once; what fails is asked again after the
// retry backoff (tickTxns).
func (b *Broker) sendMarkers(t *transaction) {
	if len(t.pending) == 0 {
		b.completeTxn(t)
		return
	}
	commit := t.state == txnPrepareCommit
	// The coordinator's epoch is its leader epoch of the id's partition:
	// a coordinator elected since has a higher one, and the partitions
	// refuse this one's markers once they have seen its.
	coordEpoch := int32(0)
	if home := b.replica(TransactionTopic, t.partition); home != nil {
		coordEpoch = home.leaderEpoch
	}
	txnVersion := int8(0)
	if t.tv2 {
		txnVersion = 2
	}
	byLeader := map[int32][]tp{}
	var leaders []int32
	pending := t.pending
	// What cannot be sent now, or fails at once (a marker of this
	// broker's own), is pending again; the send itself counts as in
	// flight, so that a marker answered at once does not complete the
	// transaction before the others are sent.
	t.pending = nil
	t.inFlight++
	for _, k := range pending {
		_, p := b.md.Lookup(k.topic, k.partition)
		leader := control.NoLeader
		if p != nil {
			leader = p.Leader
		}
		if _, ok := byLeader[leader]; !ok {
			leaders = append(leaders, leader)
		}
		byLeader[leader] = append(byLeader[leader], k)
	}
	slices.Sort(leaders)
	b.logf("transaction %s: markers to %d partitions at leaders %v", t.id, len(pending), leaders)
	for _, leader := range leaders {
		parts := byLeader[leader]
		switch {
		case leader == control.NoLeader:
			t.pending = append(t.pending, parts...)
			t.retryAt = b.now + b.cfg.RetryBackoffMs
		case leader == b.cfg.BrokerID:
			for _, k := range parts {
				t.inFlight++
				b.writeMarker(b.replica(k.topic, k.partition), t.pid, t.epoch, commit, t.tv2, coordEpoch, func(code int16) {
					b.markerDone(t.id, []tp{k}, []int16{code})
				})
			}
		default:
			br := b.md.BrokerByID(leader)
			if br == nil {
				t.pending = append(t.pending, parts...)
				t.retryAt = b.now + b.cfg.RetryBackoffMs
				continue
			}
			req := kmsg.NewPtrWriteTxnMarkersRequest()
			req.Version = 2
			m := kmsg.NewWriteTxnMarkersRequestMarker()
			m.ProducerID, m.ProducerEpoch, m.Committed = t.pid, t.epoch, commit
			m.CoordinatorEpoch, m.TransactionVersion = coordEpoch, txnVersion
			for _, k := range parts {
				if n := len(m.Topics); n > 0 && m.Topics[n-1].Topic == k.topic {
					m.Topics[n-1].Partitions = append(m.Topics[n-1].Partitions, k.partition)
					continue
				}
				mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
				mt.Topic, mt.Partitions = k.topic, []int32{k.partition}
				m.Topics = append(m.Topics, mt)
			}
			req.Markers = []kmsg.WriteTxnMarkersRequestMarker{m}
			id := b.send(leader, joinHostPort(br.Host, br.Port), "markers", req, markerTimeoutMs)
			b.markerReqs[id] = markerSend{txn: t.id, parts: parts}
			t.inFlight++
		}
	}
	b.markerDone(t.id, nil, nil)
}

// markerResponse takes a leader's answer to WriteTxnMarkers.
func (b *Broker) markerResponse(ms markerSend, resp any, err error) {
	codes := make([]int16, len(ms.parts))
	r, _ := resp.(*kmsg.WriteTxnMarkersResponse)
	for i, k := range ms.parts {
		codes[i] = kerr.RequestTimedOut.Code
		if err != nil || r == nil {
			continue
		}
		for _, m := range r.Markers {
			for _, mt := range m.Topics {
				for _, mp := range mt.Partitions {
					if mt.Topic == k.topic && mp.Partition == k.partition {
						codes[i] = mp.ErrorCode
					}
				}
			}
		}
	}
	b.markerDone(ms.txn, ms.parts, codes)
}

// markerDone takes the outcome of markers of transaction id: a partition
// whose marker failed is asked again, and once every one is written the
// transaction is complete.
func (b *Broker) markerDone(id string, parts []tp, codes []int16) {
	t := b.txns[id]
	if t == nil || (t.state != txnPrepareCommit && t.state != txnPrepareAbort) {
		return
	}
	t.inFlight--
	for i, k := range parts {
		if codes[i] != 0 {
			b.logf("transaction %s: the marker of %s failed: %s; asking again", id, k, kerr.ErrorForCode(codes[i]))
			t.pending = append(t.pending, k)
			t.retryAt = b.now + b.cfg.RetryBackoffMs
		}
	}
	if t.inFlight == 0 && len(t.pending) == 0 {
		b.completeTxn(t)
	}
}

// completeTxn writes that t's decision is carried out.
func (b *Broker) completeTxn(t *transaction) {
	decided, pid, epoch, next := t.state, t.pid, t.epoch, t.nextPID
	t.state = txnCompleteAbort
	if decided == txnPrepareCommit {
		t.state = txnCompleteCommit
	}
	if next >= 0 {
		// The markers are written under the old id: the next transaction
		// runs under the new one.
		t.pid, t.epoch, t.nextPID = next, 0, -1
	}
	b.writeTxn(t, func(code int16) {
		if code != 0 {
			// Written again by whoever leads the partition next, or here
			// at the next tick.
			t.state, t.retryAt = decided, b.now+b.cfg.RetryBackoffMs
			t.pid, t.epoch, t.nextPID = pid, epoch, next
			return
		}
		b.logf("transaction %s: producer %d epoch %d: %s", t.id, t.pid, t.epoch, t.state)
	})
}

// tickTxns aborts the transactions open past their timeout (fencing their
// producers with a new epoch) and asks again for the markers that failed.
func (b *Broker) tickTxns() {
	for _, id := range sortedKeys(b.txns) {
		t := b.txns[id]
		switch {
		case t.writing:
		case t.state == txnOngoing && b.now-t.started > t.timeoutMs:
			b.logf("transaction %s: open for longer than its timeout of %d ms: aborting it", id, t.timeoutMs)
			b.decideTxn(t, false, true, false, nil)
		case (t.state == txnPrepareCommit || t.state == txnPrepareAbort) && t.inFlight == 0 && b.now >= t.retryAt:
			if len(t.pending) == 0 {
				// A decision read back from the log, or whose completion
				// failed to be written: its markers once more.
				t.pending = slices.Clone(t.parts)
			}
			b.sendMarkers(t)
		}
	}
}

// txnsLead is told that this broker now leads partition r of
// TransactionTopic, or no longer does: it reads the ids back (a decision
// it finds is carried out again), or forgets them.
func (b *Broker) txnsLead(r *replica, leading bool) {
	if r.key.topic != TransactionTopic {
		return
	}
	for _, id := range sortedKeys(b.txns) {
		if b.txns[id].partition == r.key.partition {
			delete(b.txns, id)
		}
	}
	if !leading {
		return
	}
	n := 0
	for off := r.log.LogStartOffset(); off < r.log.LogEndOffset(); {
		raw, err := r.log.Read(off, r.log.LogEndOffset(), 1<<20)
		if err != nil || len(raw) == 0 {
			break
		}
		offsets, values, err := batch.Values(raw)
		if err != nil || len(offsets) == 0 {
			break
		}
		for i, v := range values {
			if offsets[i] < off {
				continue
			}
			var rec txnRecord
			if json.Unmarshal(v, &rec) != nil || rec.Txn == "" {
				continue
			}
			n++
			t := &transaction{id: rec.Txn, partition: r.key.partition, pid: rec.PID, epoch: rec.Epoch, timeoutMs: rec.TimeoutMs,
				state: rec.State, started: b.now, tv2: rec.TV2, lastPID: -1, lastEpoch: -1, nextPID: -1}
			if rec.TV2 {
				t.lastPID, t.lastEpoch = rec.LastPID, rec.LastEpoch
			}
			if rec.NextPID > 0 {
				t.nextPID = rec.NextPID
			}
			for _, p := range rec.Parts {
				t.parts = append(t.parts, tp{p.Topic, p.Partition})
			}
			b.txns[rec.Txn] = t
		}
		off = offsets[len(offsets)-1] + 1
	}
	b.logf("%s: coordinator of its transactional ids: read back %d records", r.key, n)
}
