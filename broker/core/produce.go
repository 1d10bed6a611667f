package core

import (
	"fmt"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/broker/batch"
	"github.com/chaos-isr/chaos/broker/bug"
)

var sprintf = fmt.Sprintf

func joinHostPort(host string, port int32) string {
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}

// produceWait is one partition of an acks=-1 produce waiting for the HW.
type produceWait struct {
	key         tp
	part        *kmsg.ProduceResponseTopicPartition
	base        int64 // the offset of the first appended record
	required    int64 // the HW that covers the appended batches
	leaderEpoch int32
}

type pendingProduce struct {
	conn     ConnID
	corr     int32
	resp     *kmsg.ProduceResponse
	deadline int64
	waits    []produceWait
}

func (b *Broker) handleProduce(conn ConnID, corr int32, req *kmsg.ProduceRequest) {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	resp.SetVersion(req.Version)
	acks := req.Acks
	pp := &pendingProduce{conn: conn, corr: corr, resp: resp, deadline: b.now + int64(req.TimeoutMillis)}
	for _, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(t.Partitions))
		resp.Topics = append(resp.Topics, rt)
	}
	for ti, t := range req.Topics {
		for pi, p := range t.Partitions {
			part := &resp.Topics[ti].Partitions[pi]
			*part = kmsg.NewProduceResponseTopicPartition()
			part.Partition = p.Partition
			part.BaseOffset, part.LogAppendTime, part.LogStartOffset = -1, -1, -1
			if acks != 0 && acks != 1 && acks != -1 {
				part.ErrorCode = kerr.InvalidRequiredAcks.Code
				continue
			}
			if w, ok := b.appendProduced(t.Topic, p, acks, part); ok {
				pp.waits = append(pp.waits, w)
			}
		}
	}
	switch {
	case acks == 0:
		failed := false
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				failed = failed || p.ErrorCode != 0
			}
		}
		if failed {
			b.logf("closing connection %d: an acks=0 produce failed, and closing is the only way to tell the producer", conn)
		}
		b.emit(Reply{Conn: conn, Corr: corr, Close: failed})
	case len(pp.waits) == 0:
		b.reply(conn, corr, resp)
	default:
		b.produces = append(b.produces, pp)
		for _, w := range pp.waits {
			b.checkProduces(w.key)
		}
	}
}

// appendProduced appends one partition's batches as leader. For acks=-1 it
// returns what to wait for.
func (b *Broker) appendProduced(topic string, p kmsg.ProduceRequestTopicPartition, acks int16, part *kmsg.ProduceResponseTopicPartition) (produceWait, bool) {
	r := b.replica(topic, p.Partition)
	switch {
	case r == nil && b.topicKnown(topic, p.Partition):
		part.ErrorCode = kerr.NotLeaderForPartition.Code
		return produceWait{}, false
	case r == nil:
		part.ErrorCode = kerr.UnknownTopicOrPartition.Code
		return produceWait{}, false
	case r.role != roleLeader:
		part.ErrorCode = kerr.NotLeaderForPartition.Code
		return produceWait{}, false
	}
	hs, err := batch.Validate(p.Records)
	if err != nil {
		part.ErrorCode = kerr.CorruptMessage.Code
		msg := err.Error()
		part.ErrorMessage = &msg
		return produceWait{}, false
	}
	if acks == -1 && b.belowMinISR(r) {
		// Refused before appending: definitely not written. Kafka checks
		// this before looking for a retried batch too.
		part.ErrorCode = kerr.NotEnoughReplicas.Code
		msg := sprintf("isr %v is smaller than min.insync.replicas %d", r.isr, r.minISR)
		part.ErrorMessage = &msg
		return produceWait{}, false
	}
	leo := r.log.LogEndOffset()
	base := leo
	pc := b.checkProduced(r, hs, leo)
	switch {
	case pc.code != 0:
		part.ErrorCode, part.ErrorMessage = pc.code, &pc.msg
		b.logf("%s: refused a produce: %s", r.key, pc.msg)
		return produceWait{}, false
	case pc.dup:
		// A retry of a batch the log has: answered as the first attempt
		// would have been, with its offset, and under acks=-1 only once
		// the HW covers it, which it may not yet.
		b.logf("%s: a retry of the batch at %d..%d (sequences %d..%d), not written again",
			r.key, pc.orig.FirstOffset, pc.orig.LastOffset, pc.orig.FirstSequence, pc.orig.LastSequence)
		base, leo = pc.orig.FirstOffset, pc.orig.LastOffset+1
	default:
		pos := 0
		for _, h := range hs {
			batch.Stamp(p.Records[pos:], leo, r.leaderEpoch)
			leo += h.Count()
			pos += h.Size()
		}
		if err := r.log.Append(p.Records); err != nil {
			b.logf("%s: append failed: %v", r.key, err)
			part.ErrorCode = kerr.KafkaStorageError.Code
			return produceWait{}, false
		}
		r.recordAppended(hs, base)
		for _, line := range pc.again {
			b.logf("%s: %s", r.key, line)
		}
		b.wakeFetches(r.key)
	}
	part.BaseOffset, part.LogStartOffset = base, r.log.LogStartOffset()
	w := produceWait{key: r.key, part: part, base: base, required: leo, leaderEpoch: r.leaderEpoch}
	if acks != -1 {
		b.advanceHW(r)
		return w, false
	}
	if b.cfg.Bugs.Has(bug.AckBeforeReplicate) {
		// Planted bug ack-before-replicate: answered now, as acks=1 is,
		// breaking the rule that acks=-1 is answered once the HW passes
		// the batch (every in-sync replica has it).
		b.advanceHW(r)
		return w, false
	}
	// Registering the wait before advancing the HW lets a leader alone in
	// the ISR answer at once, through checkProduces.
	return w, true
}

// belowMinISR says whether the ISR is smaller than min.insync.replicas: an
// acks=-1 write is then refused before its append, and answered
// NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below it while waiting.
func (b *Broker) belowMinISR(r *replica) bool {
	if b.cfg.Bugs.Has(bug.MinISRIgnored) {
		// Planted bug min-isr-ignored: never, breaking the rule that an
		// acks=-1 write needs min.insync.replicas in-sync replicas.
		return false
	}
	return int32(len(r.isr)) < r.minISR
}

func (b *Broker) topicKnown(topic string, partition int32) bool {
	_, p := b.md.Lookup(topic, partition)
	return p != nil
}

// checkProduces completes the acks=-1 waits on a partition whose HW,
// leadership or ISR changed. A wait is done when the HW covers it (then
// NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below
// min.insync.replicas meanwhile) or when this broker stopped leading that
// epoch (NOT_LEADER_OR_FOLLOWER: the outcome is unknown to the client).
func (b *Broker) checkProduces(k tp) {
	r := b.replicas[k]
	if r != nil {
		b.raiseHW(r)
	}
	b.checkInternalWaits(k)
	b.produces = deleteFunc(b.produces, func(pp *pendingProduce) bool {
		waits := pp.waits[:0]
		for _, w := range pp.waits {
			if w.key != k {
				waits = append(waits, w)
				continue
			}
			switch {
			case r == nil || r.role != roleLeader || r.leaderEpoch != w.leaderEpoch:
				b.failWait(w, kerr.NotLeaderForPartition.Code)
			case r.log.HighWatermark() >= w.required:
				if b.belowMinISR(r) {
					b.failWait(w, kerr.NotEnoughReplicasAfterAppend.Code)
				}
			default:
				waits = append(waits, w)
				continue
			}
		}
		pp.waits = waits
		if len(waits) == 0 {
			b.reply(pp.conn, pp.corr, pp.resp)
			return true
		}
		return false
	})
}

func (b *Broker) expireProduces() {
	b.produces = deleteFunc(b.produces, func(pp *pendingProduce) bool {
		if b.now < pp.deadline {
			return false
		}
		for _, w := range pp.waits {
			b.failWait(w, kerr.RequestTimedOut.Code)
		}
		b.reply(pp.conn, pp.corr, pp.resp)
		return true
	})
}

// failWait answers an acks=-1 wait with an error. Every one of them means
// "outcome unknown": the batch stays in the log, and may yet be committed.
func (b *Broker) failWait(w produceWait, code int16) {
	w.part.ErrorCode = code
	w.part.BaseOffset = -1
	if !b.cfg.Bugs.Has(bug.OffsetReuse) || code == kerr.NotLeaderForPartition.Code {
		return
	}
	// Planted bug offset-reuse: the failed batch is taken back if nothing
	// followed it, so the next batch gets its offsets, breaking the rule
	// that an offset once given names one record for ever (followers may
	// hold the batch, consumers may have read it).
	r := b.replicas[w.key]
	if r == nil || r.role != roleLeader || r.leaderEpoch != w.leaderEpoch || r.log.LogEndOffset() != w.required {
		return
	}
	if err := b.truncateLog(r, w.base); err != nil {
		b.logf("%s: taking back the failed batch at %d: %v", r.key, w.base, err)
		return
	}
	b.logf("%s: took back the failed batch at %d..%d (planted bug offset-reuse)", r.key, w.base, w.required-1)
}
