package core

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/broker/bug"
	"github.com/chaos-isr/chaos/broker/control"
	"github.com/chaos-isr/chaos/broker/storage"
)

// pendingFetch is a long-polling fetch waiting for MinBytes or MaxWait.
type pendingFetch struct {
	conn     ConnID
	corr     int32
	req      *kmsg.FetchRequest
	deadline int64
}

func (b *Broker) handleFetch(conn ConnID, corr int32, req *kmsg.FetchRequest) {
	if req.ReplicaID >= 0 {
		// A follower's fetch offset is its LEO: record it once, on arrival.
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				r := b.replica(t.Topic, p.Partition)
				// Only a fetch the leader can serve says where the
				// follower is: one past the log end (a follower that did
				// not truncate first) is refused below as out of range,
				// and counting it would let the HW pass records the
				// follower never had. Kafka records follower state only
				// after a successful read too.
				if r != nil && r.role == roleLeader &&
					(p.CurrentLeaderEpoch < 0 || p.CurrentLeaderEpoch == r.leaderEpoch || b.servesStaleEpoch(r, req.ReplicaID, p.CurrentLeaderEpoch)) &&
					p.FetchOffset >= r.log.LogStartOffset() && p.FetchOffset <= r.log.LogEndOffset() {
					b.followerFetched(r, req.ReplicaID, p.FetchOffset)
				}
			}
		}
	}
	resp, n, failed := b.readFetch(req)
	if failed || n >= int(req.MinBytes) || req.MaxWaitMillis <= 0 {
		b.reply(conn, corr, resp)
		return
	}
	b.fetches = append(b.fetches, &pendingFetch{conn: conn, corr: corr, req: req, deadline: b.now + int64(req.MaxWaitMillis)})
}

// wakeFetches retries the parked fetches that read partition k.
func (b *Broker) wakeFetches(k tp) {
	if len(b.fetches) == 0 {
		return
	}
	b.fetches = deleteFunc(b.fetches, func(pf *pendingFetch) bool {
		if !fetchReads(pf.req, k) {
			return false
		}
		resp, n, failed := b.readFetch(pf.req)
		if failed || n >= int(pf.req.MinBytes) {
			b.reply(pf.conn, pf.corr, resp)
			return true
		}
		return false
	})
}

func fetchReads(req *kmsg.FetchRequest, k tp) bool {
	for _, t := range req.Topics {
		if t.Topic != k.topic {
			continue
		}
		for _, p := range t.Partitions {
			if p.Partition == k.partition {
				return true
			}
		}
	}
	return false
}

func (b *Broker) expireFetches() {
	b.fetches = deleteFunc(b.fetches, func(pf *pendingFetch) bool {
		if b.now < pf.deadline {
			return false
		}
		resp, _, _ := b.readFetch(pf.req)
		b.reply(pf.conn, pf.corr, resp)
		return true
	})
}

// readFetch builds a fetch response from the logs as they are now. It
// returns the number of record bytes and whether any partition failed (a
// failed partition answers at once rather than waiting).
func (b *Broker) readFetch(req *kmsg.FetchRequest) (*kmsg.FetchResponse, int, bool) {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	resp.SetVersion(req.Version)
	budget := int(req.MaxBytes)
	if req.Version < 3 || budget <= 0 {
		budget = 50 << 20
	}
	total, failed := 0, false
	for _, t := range req.Topics {
		rt := kmsg.NewFetchResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewFetchResponseTopicPartition()
			rp.Partition = p.Partition
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
			rp.PreferredReadReplica = -1
			// Empty, not null: librdkafka cannot parse a null record set.
			rp.RecordBatches = []byte{}
			b.readPartition(req, t.Topic, p, &rp, &budget)
			total += len(rp.RecordBatches)
			failed = failed || rp.ErrorCode != 0
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, total, failed
}

func (b *Broker) readPartition(req *kmsg.FetchRequest, topic string, p kmsg.FetchRequestTopicPartition, rp *kmsg.FetchResponseTopicPartition, budget *int) {
	r := b.replica(topic, p.Partition)
	if r == nil {
		rp.ErrorCode = b.missingCode(topic, p.Partition)
		return
	}
	if code := b.checkLeader(r, req.ReplicaID, p.CurrentLeaderEpoch); code != 0 && !b.servesStaleEpoch(r, req.ReplicaID, p.CurrentLeaderEpoch) {
		rp.ErrorCode = code
		return
	}
	hw, leo, lso := r.log.HighWatermark(), r.log.LogEndOffset(), b.lastStable(r)
	rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = hw, lso, r.log.LogStartOffset()
	upTo := hw // consumers read only what is committed
	committed := req.IsolationLevel == 1 && req.ReplicaID < 0 && req.ReplicaID != DebugReplicaID
	switch {
	case req.ReplicaID >= 0 || req.ReplicaID == DebugReplicaID:
		upTo = leo
	case committed:
		// read_committed: no further than the last stable offset, and
		// told which of the records returned are aborted transactions'.
		upTo = lso
		defer func() {
			if len(rp.RecordBatches) > 0 {
				rp.AbortedTransactions = r.abortedIn(p.FetchOffset, upTo)
			}
		}()
	case b.cfg.Bugs.Has(bug.ReadPastHW):
		// Planted bug read-past-hw: a consumer reads the whole log,
		// breaking the rule that consumers see only committed records.
		upTo = leo
	}
	if p.FetchOffset < r.log.LogStartOffset() || p.FetchOffset > leo {
		rp.ErrorCode = kerr.OffsetOutOfRange.Code
		return
	}
	if *budget <= 0 || p.FetchOffset >= upTo {
		return
	}
	if b.cfg.Bugs.Has(bug.FetchStallsBelowEpochStart) && req.ReplicaID < 0 && req.ReplicaID != DebugReplicaID && p.FetchOffset < r.epochStart {
		// Planted bug fetch-stalls-below-epoch-start: a consumer behind
		// the start of this leader's epoch gets nothing, breaking the
		// rule that a leader serves every record below its HW.
		return
	}
	data, err := r.log.Read(p.FetchOffset, upTo, min(int(p.PartitionMaxBytes), *budget))
	switch {
	case errors.Is(err, storage.ErrOffsetOutOfRange):
		rp.ErrorCode = kerr.OffsetOutOfRange.Code
	case err != nil:
		b.logf("%s: read at %d failed: %v", r.key, p.FetchOffset, err)
		rp.ErrorCode = kerr.KafkaStorageError.Code
	default:
		// The driver writes the response after later events may have
		// appended or truncated, which the log promises leave data be.
		rp.RecordBatches = data
		*budget -= len(data)
	}
}

// checkLeader says whether replica r may serve a read by replicaID that
// believes the leader epoch is epoch (-1: no opinion). Debug consumers may
// read any replica.
func (b *Broker) checkLeader(r *replica, replicaID, epoch int32) int16 {
	if replicaID == DebugReplicaID {
		return 0
	}
	if r.role != roleLeader {
		return kerr.NotLeaderForPartition.Code
	}
	switch {
	case epoch >= 0 && epoch < r.leaderEpoch:
		return kerr.FencedLeaderEpoch.Code
	case epoch > r.leaderEpoch:
		return kerr.UnknownLeaderEpoch.Code
	}
	if replicaID >= 0 && !control.Contains(r.replicas, replicaID) {
		return kerr.NotLeaderForPartition.Code
	}
	return 0
}

// servesStaleEpoch says whether the leader r serves a fetch by follower
// replicaID made in an older leader epoch, which checkLeader fences
// (FENCED_LEADER_EPOCH, KIP-320): only with planted bug stale-epoch-fetch,
// which breaks that rule so that a zombie follower with stale metadata,
// which never truncated for this epoch, is served and counted as caught up
// (KAFKA-6880).
func (b *Broker) servesStaleEpoch(r *replica, replicaID, epoch int32) bool {
	return b.cfg.Bugs.Has(bug.StaleEpochFetch) && replicaID >= 0 && r.role == roleLeader &&
		epoch >= 0 && epoch < r.leaderEpoch && control.Contains(r.replicas, replicaID)
}

// missingCode is the error for a partition this broker has no replica of.
func (b *Broker) missingCode(topic string, partition int32) int16 {
	if b.topicKnown(topic, partition) {
		return kerr.NotLeaderForPartition.Code
	}
	return kerr.UnknownTopicOrPartition.Code
}

func (b *Broker) handleListOffsets(req *kmsg.ListOffsetsRequest) *kmsg.ListOffsetsResponse {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	resp.SetVersion(req.Version)
	for _, t := range req.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition = p.Partition
			rp.Timestamp, rp.Offset, rp.LeaderEpoch = -1, -1, -1
			r := b.replica(t.Topic, p.Partition)
			switch {
			case r == nil:
				rp.ErrorCode = b.missingCode(t.Topic, p.Partition)
			default:
				rp.ErrorCode = b.checkLeader(r, req.ReplicaID, p.CurrentLeaderEpoch)
			}
			if rp.ErrorCode == 0 {
				b.listOffset(r, req.ReplicaID, req.IsolationLevel, p.Timestamp, &rp)
			}
			if req.Version == 0 && rp.Offset >= 0 {
				rp.OldStyleOffsets = []int64{rp.Offset}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (b *Broker) listOffset(r *replica, replicaID int32, isolation int8, ts int64, rp *kmsg.ListOffsetsResponseTopicPartition) {
	end := r.log.HighWatermark()
	switch {
	case replicaID == DebugReplicaID:
		end = r.log.LogEndOffset()
	case isolation == 1:
		end = b.lastStable(r) // read_committed's end
	}
	switch ts {
	case -1: // latest: the HW, since consumers cannot read past it
		rp.Offset, rp.LeaderEpoch = end, r.leaderEpoch
	case -2, -4: // earliest; earliest-local (KIP-405) is the same without tiered storage
		rp.Offset = r.log.LogStartOffset()
		rp.LeaderEpoch = epochAt(r.log, rp.Offset)
	case -3: // max timestamp (KIP-734): not indexed here; answered as "none"
		return
	default:
		off, t, ok := r.log.OffsetForTimestamp(ts)
		if ts < 0 || !ok || off >= end {
			return
		}
		rp.Offset, rp.Timestamp, rp.LeaderEpoch = off, t, epochAt(r.log, off)
	}
}

// epochAt is the leader epoch of the record at offset, from the epoch cache.
func epochAt(l storage.Log, offset int64) int32 {
	e := int32(-1)
	for _, x := range l.Epochs() {
		if x.StartOffset > offset {
			break
		}
		e = x.Epoch
	}
	return e
}

func (b *Broker) handleOffsetForLeaderEpoch(req *kmsg.OffsetForLeaderEpochRequest) *kmsg.OffsetForLeaderEpochResponse {
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	resp.SetVersion(req.Version)
	replicaID := req.ReplicaID
	if req.Version < 3 {
		replicaID = ConsumerReplicaID
	}
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.Partition, rp.LeaderEpoch, rp.EndOffset = p.Partition, -1, -1
			r := b.replica(t.Topic, p.Partition)
			switch {
			case r == nil:
				rp.ErrorCode = b.missingCode(t.Topic, p.Partition)
			default:
				rp.ErrorCode = b.checkLeader(r, replicaID, p.CurrentLeaderEpoch)
			}
			if rp.ErrorCode == 0 {
				if p.LeaderEpoch == r.leaderEpoch && r.role == roleLeader {
					rp.LeaderEpoch, rp.EndOffset = r.leaderEpoch, r.log.LogEndOffset()
				} else {
					rp.LeaderEpoch, rp.EndOffset = r.log.EndOffsetForEpoch(p.LeaderEpoch)
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// lastStable is r's last stable offset (replica.lastStable).
func (b *Broker) lastStable(r *replica) int64 {
	if b.cfg.Bugs.Has(bug.LSOPastOpenTxn) {
		// Planted bug lso-past-open-txn: the open transactions are not
		// held back, breaking the rule that read_committed reads only
		// decided transactions.
		return r.log.HighWatermark()
	}
	return r.lastStable()
}
