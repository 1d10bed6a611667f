package core

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/broker/batch"
)

// Offsets committed inside a transaction (KIP-98's consume-transform-
// produce): the producer adds the group's partition of __consumer_offsets
// to its transaction (AddOffsetsToTxn, at the transaction coordinator),
// then commits the offsets it consumed to the group coordinator
// (TxnOffsetCommit). Those are written to the group's partition as a
// transactional batch of the producer, like its records on the partitions
// it writes to, and count only once the transaction's commit marker is
// written there: until then OffsetFetch answers the offset committed
// before (or, asked for a stable offset, UNSTABLE_OFFSET_COMMIT); an abort
// marker drops them. A coordinator reading the partition back does the
// same (loadGroups).

// stageTxnOffset holds c for partition k until producer pid's transaction
// ends.
func (g *group) stageTxnOffset(pid int64, k tp, c committed) {
	if g.txnOffsets == nil {
		g.txnOffsets = map[int64]map[tp]committed{}
	}
	if g.txnOffsets[pid] == nil {
		g.txnOffsets[pid] = map[tp]committed{}
	}
	g.txnOffsets[pid][k] = c
}

// txnPending says whether an open transaction has committed an offset of
// partition k.
func (g *group) txnPending(k tp) bool {
	if g == nil {
		return false
	}
	for _, offsets := range g.txnOffsets {
		if _, ok := offsets[k]; ok {
			return true
		}
	}
	return false
}

// txnOffsetsEnded applies (commit) or drops the offsets producer pid
// committed in its transaction to the groups of offsets partition p: its
// marker has been written there.
func (b *Broker) txnOffsetsEnded(p int32, pid int64, commit bool) {
	for _, name := range sortedKeys(b.groups) {
		g := b.groups[name]
		staged, ok := g.txnOffsets[pid]
		if g.partition != p || !ok {
			continue
		}
		delete(g.txnOffsets, pid)
		if !commit {
			continue
		}
		for k, c := range staged {
			g.offsets[k] = c
		}
	}
}

// writeMarker has this broker, as the leader of r, write a transaction
// marker of producer pid: the one place a marker is written, whether the
// coordinator is this broker or another (WriteTxnMarkers). Once it is
// committed, offsets that the transaction committed to a group here are
// applied or dropped.
//
// A marker that cannot be this producer's next is refused, as Kafka's
// producer state refuses it: one from a coordinator older than the last
// that wrote here (it lost the transactional id, and may be resending a
// decision carried out long ago), one of an epoch older than the
// producer's, and, under KIP-890's per-transaction epoch (tv2), one whose
// epoch is not past the open transaction's, which can only be the late
// copy of the last transaction's marker. A retry of a marker already
// appended is written again, not answered at once: the first copy may
// never be committed (its leader may lose it), and the coordinator may
// count the marker only once one is.
func (b *Broker) writeMarker(r *replica, pid int64, epoch int16, commit, tv2 bool, coordinatorEpoch int32, done func(code int16)) {
	if r != nil && r.role == roleLeader {
		if e := r.producers[pid]; e != nil {
			switch {
			case coordinatorEpoch < e.coordEpoch:
				done(kerr.TransactionCoordinatorFenced.Code)
				return
			case epoch < e.epoch:
				done(kerr.InvalidProducerEpoch.Code)
				return
			case tv2 && epoch == e.epoch && e.txnFirst >= 0:
				b.logf("%s: producer %d epoch %d: a marker of the transaction before the open one, refused", r.key, pid, epoch)
				done(kerr.InvalidProducerEpoch.Code)
				return
			}
		}
	}
	raw := batch.BuildControl(pid, epoch, b.now, commit, coordinatorEpoch)
	b.appendInternal(r, raw, markerTimeoutMs, false, func(code int16) {
		if code == 0 && r.key.topic == OffsetsTopic {
			b.txnOffsetsEnded(r.key.partition, pid, commit)
		}
		done(code)
	})
}

// handleAddOffsetsToTxn adds the partition of __consumer_offsets that
// holds group to the transaction, so that its marker is written there.
func (b *Broker) handleAddOffsetsToTxn(conn ConnID, corr int32, req *kmsg.AddOffsetsToTxnRequest) {
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	resp.SetVersion(req.Version)
	answer := func(code int16) {
		resp.ErrorCode = code
		b.reply(conn, corr, resp)
	}
	t, code := b.txnFor(req.TransactionalID, req.ProducerID, req.ProducerEpoch)
	if code != 0 {
		answer(code)
		return
	}
	offsets, _ := b.md.Lookup(OffsetsTopic, -1)
	if offsets == nil {
		b.createInternalTopic(OffsetsTopic, b.cfg.OffsetsTopicPartitions)
		answer(kerr.CoordinatorNotAvailable.Code)
		return
	}
	b.addToTxn(t, []tp{{OffsetsTopic, groupKeyPartition(req.Group, int32(len(offsets.Partitions)))}}, answer)
}

// handleTxnOffsetCommit stages a transaction's offsets in the group, as a
// transactional batch of the producer in the group's partition.
func (b *Broker) handleTxnOffsetCommit(conn ConnID, corr int32, req *kmsg.TxnOffsetCommitRequest) {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	resp.SetVersion(req.Version)
	for _, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	answer := func(code int16) {
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				resp.Topics[i].Partitions[j].ErrorCode = code
			}
		}
		b.reply(conn, corr, resp)
	}
	// Before v3 a transactional commit names no member, and Kafka takes
	// it whatever the group's generation; from v3 it is checked as a
	// member's commit.
	g, code := b.committingGroup(req.Group, req.MemberID, req.Generation, true)
	if code != 0 {
		answer(code)
		return
	}
	r := b.replica(OffsetsTopic, g.partition)
	if e := r.producers[req.ProducerID]; e != nil && e.epoch > req.ProducerEpoch {
		// A marker of a newer epoch was written here: the producer was
		// fenced.
		answer(kerr.InvalidProducerEpoch.Code)
		return
	}
	var recs []groupRecord
	var values [][]byte
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			c := newCommitted(p.Offset, p.LeaderEpoch, p.Metadata)
			rec := groupRecord{Kind: recordOffset, Group: g.name, Topic: t.Topic, Partition: p.Partition, Generation: req.Generation, Commit: &c}
			recs = append(recs, rec)
			values = append(values, mustJSON(rec))
		}
	}
	raw := batch.BuildTransactional(req.ProducerID, req.ProducerEpoch, -1, b.now, values...)
	b.appendInternal(r, raw, b.cfg.GroupCommitTimeoutMs, false, func(code int16) {
		code = coordinatorCode(code)
		if code == 0 && b.groups[g.name] == g {
			for _, rec := range recs {
				g.stageTxnOffset(req.ProducerID, tp{rec.Topic, rec.Partition}, *rec.Commit)
			}
		}
		answer(code)
	})
}
