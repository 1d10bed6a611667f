package core

import (
	"math"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/broker/batch"
	"github.com/chaos-isr/chaos/broker/bug"
)

// The producer side of KIP-98 (idempotence, not transactions). A producer
// asks any broker for an id (InitProducerId) and numbers its records per
// partition; each replica keeps, per producer, its epoch and its last five
// batches, learned from the batch headers it appends (as leader from
// clients, as follower from the leader's log, and from its own log when it
// opens it or truncates it), so the state is replicated with the log and a
// new leader judges a retry the way the old one would have.

// producerBatchesKept is how many batches a replica remembers per producer:
// Kafka's, and the most requests an idempotent producer may have in flight
// (max.in.flight.requests.per.connection <= 5), so a retry of any of them
// is recognized.
const producerBatchesKept = 5

// Producer ids are counter*producerIDBrokers + broker id: unique across the
// cluster without asking the controller, since each broker hands out only
// ids ending in its own id (Config.Validate keeps broker ids below it).
// The counter never falls below producerIDsPerMs times the core's clock,
// so a broker that restarts, having lost its counter, starts above every
// id it gave before as long as it gave fewer than that many per
// millisecond on average and its clock went forward across the restart.
const (
	producerIDBrokers = 1024
	producerIDsPerMs  = 16
)

// ProducerBatch is what a replica remembers of one batch of an idempotent
// producer: enough to recognize a retry of it and answer with its offset.
type ProducerBatch struct {
	FirstSequence, LastSequence int32
	FirstOffset, LastOffset     int64
}

// ProducerState is what a replica knows of one idempotent producer.
type ProducerState struct {
	ProducerID int64
	Epoch      int16
	Batches    []ProducerBatch // oldest first, at most five
}

// producerEntry is one producer's state in one replica: made by recording
// a batch, its batches emptied only by a marker of a newer epoch (the
// coordinator's fencing of the producer).
type producerEntry struct {
	epoch   int16
	batches []ProducerBatch
	// txnFirst is the first offset of the producer's transaction open on
	// this partition (its first transactional batch since its last
	// marker), -1 if none: the last stable offset cannot pass it.
	txnFirst int64
	// coordEpoch is the highest coordinator epoch of the producer's
	// markers here (-1: none yet): a marker from an older coordinator,
	// one that has since lost the transactional id, is refused.
	coordEpoch int32
}

func (e *producerEntry) last() ProducerBatch { return e.batches[len(e.batches)-1] }

// find returns the cached batch with these sequences, if any.
func (e *producerEntry) find(first, last int32) (ProducerBatch, bool) {
	for _, x := range e.batches {
		if x.FirstSequence == first && x.LastSequence == last {
			return x, true
		}
	}
	return ProducerBatch{}, false
}

func (e *producerEntry) clone() *producerEntry {
	return &producerEntry{epoch: e.epoch, batches: slices.Clone(e.batches), txnFirst: e.txnFirst, coordEpoch: e.coordEpoch}
}

// producers is a replica's producer state, by producer id.
type producers map[int64]*producerEntry

// tracked says whether a batch carries producer state: it comes from an
// idempotent producer and is not a control batch (which has no sequences).
func tracked(h batch.Header) bool { return h.ProducerID >= 0 && !h.Control() }

// record applies a batch appended at h.BaseOffset, unchecked: whatever is
// in the log is the truth, as Kafka's replicas and log recovery take it. A
// new epoch forgets the old epoch's batches, since a retry never crosses
// epochs. A batch already cached is not cached again: only a planted
// idempotence-no-dedup bug writes one twice, and remembering the copy
// would make the producer's next batch look out of order.
func (ps producers) record(h batch.Header) {
	if !tracked(h) {
		return
	}
	e := ps[h.ProducerID]
	if e == nil {
		e = &producerEntry{epoch: h.ProducerEpoch, txnFirst: -1, coordEpoch: -1}
		ps[h.ProducerID] = e
	}
	if h.Transactional() && e.txnFirst < 0 {
		e.txnFirst = h.BaseOffset
	}
	if h.ProducerEpoch != e.epoch {
		e.epoch, e.batches = h.ProducerEpoch, nil
	}
	if h.BaseSequence < 0 {
		// A coordinator's write for the producer (its transaction's
		// offsets), which has no sequence to follow.
		return
	}
	first, last := h.BaseSequence, h.LastSequence()
	if _, dup := e.find(first, last); dup {
		return
	}
	e.batches = append(e.batches, ProducerBatch{FirstSequence: first, LastSequence: last, FirstOffset: h.BaseOffset, LastOffset: h.LastOffset()})
	if n := len(e.batches); n > producerBatchesKept {
		e.batches = slices.Delete(e.batches, 0, n-producerBatchesKept)
	}
}

// reachesTo says whether some producer's latest batch ends at or past
// offset: only then does a truncation there change the state.
func (ps producers) reachesTo(offset int64) bool {
	for _, e := range ps {
		if len(e.batches) > 0 && e.last().LastOffset >= offset {
			return true
		}
	}
	return false
}

// inSequence says whether next follows last, wrapping after MaxInt32 as
// producers do.
func inSequence(last, next int32) bool {
	return int64(next) == int64(last)+1 || (next == 0 && last == math.MaxInt32)
}

// producerCheck is the verdict on a partition's batches of a produce.
type producerCheck struct {
	code int16 // refused with this error, nothing appended
	msg  string
	dup  bool          // a retry of a batch the log has: nothing appended
	orig ProducerBatch // that batch, when dup
	// again describes retries written again all the same (planted bug
	// idempotence-no-dedup), to log once they are appended.
	again []string
}

// checkProduced judges a produce's batches for one partition as leader,
// before anything is appended, in order, each as if those before it were
// appended at leo: the batches are appended all together or not at all.
// A transactional or control batch is refused. For an idempotent producer:
// an epoch older than the replica knows is fenced; a newer one must start
// at sequence 0; in the same epoch a batch equal to one of the last five is
// a retry, answered with its offsets and not written again (with several
// batches, the first such answers for all, as in Kafka); any other must
// follow the last sequence. A producer the replica knows nothing of (never
// seen, or its batches are gone) may start at any sequence, as in Kafka
// since KIP-360.
func (b *Broker) checkProduced(r *replica, hs []batch.Header, leo int64) (c producerCheck) {
	var scratch producers // entries of this request's producers, as they would become
	for _, h := range hs {
		h.BaseOffset = leo
		leo += h.Count()
		switch {
		case h.Control():
			// Kafka's answer: only a transaction coordinator writes markers.
			return producerCheck{code: kerr.InvalidRecord.Code, msg: "clients may not write control batches"}
		case h.Transactional() && h.ProducerID < 0:
			return producerCheck{code: kerr.InvalidRecord.Code, msg: "a transactional batch without a producer id"}
		case h.ProducerID < 0:
			continue
		case h.BaseSequence < 0:
			// Kafka's answer too: such a batch could never be matched
			// against a retry.
			return producerCheck{code: kerr.InvalidRecord.Code, msg: sprintf("producer %d sent no sequence number", h.ProducerID)}
		}
		e := scratch[h.ProducerID]
		if e == nil {
			if known := r.producers[h.ProducerID]; known != nil {
				e = known.clone()
			}
		}
		if e != nil {
			first, last := h.BaseSequence, h.LastSequence()
			switch {
			case h.ProducerEpoch < e.epoch && h.Transactional() && b.cfg.Bugs.Has(bug.ZombieNotFenced):
				// Planted bug zombie-not-fenced: a transactional write of
				// an epoch the coordinator has fenced is taken, as if
				// fencing were only for idempotent producers.
			case h.ProducerEpoch < e.epoch:
				return producerCheck{code: kerr.InvalidProducerEpoch.Code,
					msg: sprintf("producer %d epoch %d is older than its current epoch %d", h.ProducerID, h.ProducerEpoch, e.epoch)}
			case h.ProducerEpoch > e.epoch:
				if first != 0 {
					return producerCheck{code: kerr.OutOfOrderSequenceNumber.Code,
						msg: sprintf("producer %d starts epoch %d at sequence %d, not 0", h.ProducerID, h.ProducerEpoch, first)}
				}
			default:
				if orig, dup := e.find(first, last); dup {
					if !b.cfg.Bugs.Has(bug.IdempotenceNoDedup) {
						return producerCheck{dup: true, orig: orig}
					}
					// Planted bug idempotence-no-dedup: the retry is
					// written again, breaking the rule that a batch
					// already in the log is answered with its offsets.
					c.again = append(c.again, sprintf("producer %d epoch %d sequences %d..%d: a retry of the batch at %d, written again at %d (planted bug idempotence-no-dedup)",
						h.ProducerID, h.ProducerEpoch, first, last, orig.FirstOffset, h.BaseOffset))
					continue
				}
				if len(e.batches) == 0 {
					// Its epoch was set by a marker: the producer's first
					// batch in it may start anywhere.
					break
				}
				if prev := e.last().LastSequence; !inSequence(prev, first) {
					return producerCheck{code: kerr.OutOfOrderSequenceNumber.Code,
						msg: sprintf("producer %d epoch %d sent sequence %d after %d", h.ProducerID, h.ProducerEpoch, first, prev)}
				}
			}
		}
		if scratch == nil {
			scratch = producers{}
		}
		if e != nil {
			scratch[h.ProducerID] = e
		}
		scratch.record(h)
	}
	return c
}

// recordAppended applies the batches just appended at base to the
// replica's producer state. Clients' batches: never markers.
func (r *replica) recordAppended(hs []batch.Header, base int64) {
	for _, h := range hs {
		h.BaseOffset = base
		base += h.Count()
		r.producers.record(h)
	}
}

// recordBatch applies one batch of the log (raw, with its header h) to
// the replica's producer and transaction state: a marker ends its
// producer's open transaction, and an abort's is remembered for
// read_committed fetches.
func (r *replica) recordBatch(h batch.Header, raw []byte) {
	r.recordMarker(h, raw, true)
}

// recordMarker is recordBatch, keeping an abort marker's aborted
// transaction (or, with keepAbort false, only a planted bug's, ending the
// transaction without it).
func (r *replica) recordMarker(h batch.Header, raw []byte, keepAbort bool) {
	if !h.Control() {
		r.producers.record(h)
		return
	}
	r.txns = true
	commit, coordEpoch, ok := batch.ControlMarker(raw)
	if !ok {
		return
	}
	e := r.producers[h.ProducerID]
	if e == nil {
		// A marker for a producer none of whose batches reached this
		// replica (they may still be on their way): its epoch is known
		// from now on, so that a late write of an older one is refused,
		// as Kafka's producer state records a marker's epoch.
		r.producers[h.ProducerID] = &producerEntry{epoch: h.ProducerEpoch, txnFirst: -1, coordEpoch: coordEpoch}
		return
	}
	e.coordEpoch = max(e.coordEpoch, coordEpoch)
	if h.ProducerEpoch > e.epoch {
		// The coordinator bumped the epoch to fence the producer: its
		// older epoch's batches are refused from now on.
		e.epoch, e.batches = h.ProducerEpoch, nil
	}
	if !commit && e.txnFirst >= 0 && keepAbort {
		r.aborted = append(r.aborted, abortedTxn{producerID: h.ProducerID, first: e.txnFirst, last: h.BaseOffset})
	}
	e.txnFirst = -1
}

// abortedTxn is a transaction aborted on a partition: its producer, its
// first offset there and its marker's.
type abortedTxn struct {
	producerID  int64
	first, last int64
}

// lastStable is the partition's last stable offset: the high watermark,
// or the first offset of the earliest transaction still open below it.
func (r *replica) lastStable() int64 {
	lso := r.log.HighWatermark()
	for _, e := range r.producers {
		if e.txnFirst >= 0 && e.txnFirst < lso {
			lso = e.txnFirst
		}
	}
	return lso
}

// abortedIn are the aborted transactions a read_committed fetch of
// [from, upTo) must be told of: those with records there.
func (r *replica) abortedIn(from, upTo int64) []kmsg.FetchResponseTopicPartitionAbortedTransaction {
	var out []kmsg.FetchResponseTopicPartitionAbortedTransaction
	for _, a := range r.aborted {
		if a.last >= from && a.first < upTo {
			x := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
			x.ProducerID, x.FirstOffset = a.producerID, a.first
			out = append(out, x)
		}
	}
	return out
}

// rebuildChunk bounds one read of a rebuild: whole batches, so a batch
// larger than it is still read whole.
const rebuildChunk = 1 << 20

// rebuildProducers reads the producer state back from the replica's log,
// every batch header from the log start on, as Kafka does without a
// snapshot. It costs a read of the whole retained log (headers parsed, no
// CRC or decompression): at open, and after a truncation that removed a
// producer's latest batch (truncateLog), not after others.
func (b *Broker) rebuildProducers(r *replica) {
	r.producers, r.aborted = producers{}, nil
	off, end := r.log.LogStartOffset(), r.log.LogEndOffset()
	for off < end {
		data, err := r.log.Read(off, end, rebuildChunk)
		if err != nil {
			b.logf("%s: reading producer state at %d failed, the rest of the log is not in it: %v", r.key, off, err)
			return
		}
		next := off
		if _, err := batch.Walk(data, func(h batch.Header, raw []byte) bool {
			r.recordBatch(h, raw)
			next = h.NextOffset()
			return true
		}); err != nil || next <= off {
			b.logf("%s: reading producer state at %d stopped: %v", r.key, off, err)
			return
		}
		off = next
	}
}

// truncateLog truncates a replica's log and keeps its producer state in
// step with it.
func (b *Broker) truncateLog(r *replica, offset int64) error {
	if err := r.log.Truncate(offset); err != nil {
		return err
	}
	// A partition that has had transactions is read back whole: a
	// truncated marker reopens its transaction.
	if r.txns || r.producers.reachesTo(r.log.LogEndOffset()) {
		b.rebuildProducers(r)
	}
	return nil
}

// handleInitProducerID gives an idempotent producer a new id. Kafka's
// coordinator does the same for a producer without a transactional id,
// even one that names its current id and epoch (v3+, KIP-360): there is no
// transaction to fence, and a new id starts every partition afresh.
func (b *Broker) handleInitProducerID(req *kmsg.InitProducerIDRequest) *kmsg.InitProducerIDResponse {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.SetVersion(req.Version)
	resp.ProducerID, resp.ProducerEpoch = b.newProducerID(), 0
	return resp
}

// Producers returns what this broker's replica of a partition knows of its
// idempotent producers, by producer id, for tests and tools.
func (b *Broker) Producers(topic string, partition int32) []ProducerState {
	r := b.replica(topic, partition)
	if r == nil {
		return nil
	}
	ids := make([]int64, 0, len(r.producers))
	for id := range r.producers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]ProducerState, len(ids))
	for i, id := range ids {
		e := r.producers[id]
		out[i] = ProducerState{ProducerID: id, Epoch: e.epoch, Batches: slices.Clone(e.batches)}
	}
	return out
}
