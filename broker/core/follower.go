package core

import (
	"math"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/broker/batch"
	"github.com/chaos-isr/chaos/broker/bug"
	"github.com/chaos-isr/chaos/broker/storage"
)

// startFetches sends what followers need: OffsetForLeaderEpoch for replicas
// that must truncate, and one Fetch per leader for those that may fetch.
func (b *Broker) startFetches() {
	byLeader := map[int32][]*replica{}
	var leaders []int32
	for _, k := range b.order {
		r := b.replicas[k]
		if r.role != roleFollower || b.now < r.retryAt {
			continue
		}
		addr := b.brokerAddr(r.leader)
		if addr == "" {
			continue
		}
		if r.truncating {
			if !r.oflePending {
				b.truncateByEpoch(r, addr, -2)
			}
			continue
		}
		if _, busy := b.fetching[r.leader]; busy || b.now < b.fetchBackoff[r.leader] {
			continue
		}
		if byLeader[r.leader] == nil {
			leaders = append(leaders, r.leader)
		}
		byLeader[r.leader] = append(byLeader[r.leader], r)
	}
	slices.Sort(leaders)
	for _, l := range leaders {
		b.sendFetch(l, byLeader[l])
	}
}

func (b *Broker) brokerAddr(id int32) string {
	br := b.md.BrokerByID(id)
	if br == nil {
		return ""
	}
	return joinHostPort(br.Host, br.Port)
}

type fetchPart struct {
	key         tp
	leaderEpoch int32
	offset      int64
}

type fetchInFlight struct {
	id    uint64
	parts []fetchPart
}

func (b *Broker) sendFetch(leader int32, rs []*replica) {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.ReplicaID = b.cfg.BrokerID
	req.MaxWaitMillis = b.cfg.ReplicaFetchWaitMaxMs
	req.MinBytes = 1
	req.MaxBytes = 10 << 20 // Kafka's replica.fetch.response.max.bytes
	req.SessionEpoch = -1
	f := &fetchInFlight{}
	for _, r := range rs {
		if len(req.Topics) == 0 || req.Topics[len(req.Topics)-1].Topic != r.key.topic {
			t := kmsg.NewFetchRequestTopic()
			t.Topic = r.key.topic
			req.Topics = append(req.Topics, t)
		}
		p := kmsg.NewFetchRequestTopicPartition()
		p.Partition = r.key.partition
		p.CurrentLeaderEpoch = r.leaderEpoch
		p.FetchOffset = r.log.LogEndOffset()
		p.LastFetchedEpoch = latestEpoch(r.log)
		p.LogStartOffset = r.log.LogStartOffset()
		p.PartitionMaxBytes = b.cfg.ReplicaFetchMaxBytes
		t := &req.Topics[len(req.Topics)-1]
		t.Partitions = append(t.Partitions, p)
		f.parts = append(f.parts, fetchPart{key: r.key, leaderEpoch: r.leaderEpoch, offset: p.FetchOffset})
	}
	timeout := int64(b.cfg.ReplicaFetchWaitMaxMs) + b.cfg.ControllerTimeoutMs
	f.id = b.send(leader, b.brokerAddr(leader), "fetch", req, timeout)
	b.fetching[leader] = f
}

func latestEpoch(l storage.Log) int32 {
	ep := l.Epochs()
	if len(ep) == 0 {
		return -1
	}
	return ep[len(ep)-1].Epoch
}

func (b *Broker) fetchResponse(leader int32, f *fetchInFlight, resp any, err error) {
	fr, _ := resp.(*kmsg.FetchResponse)
	if err != nil || fr == nil {
		b.fetchBackoff[leader] = b.now + b.cfg.RetryBackoffMs
		return
	}
	if fr.ErrorCode != 0 {
		b.fetchBackoff[leader] = b.now + b.cfg.RetryBackoffMs
		return
	}
	for _, t := range fr.Topics {
		for _, p := range t.Partitions {
			k := tp{t.Topic, p.Partition}
			r := b.replicas[k]
			if r == nil || r.role != roleFollower || r.leader != leader || !sentAt(f, k, r.leaderEpoch) {
				continue
			}
			switch p.ErrorCode {
			case 0:
				b.appendFetched(r, p.RecordBatches)
				if hw := min(p.HighWatermark, r.log.LogEndOffset()); hw > r.log.HighWatermark() {
					r.log.SetHighWatermark(hw)
				}
			case kerr.OffsetOutOfRange.Code:
				b.logf("%s: fetch offset %d out of range at leader %d: truncating again", k, r.log.LogEndOffset(), leader)
				r.truncating, r.retryAt = true, b.now+b.cfg.RetryBackoffMs
			default:
				r.retryAt = b.now + b.cfg.RetryBackoffMs
			}
		}
	}
}

func sentAt(f *fetchInFlight, k tp, epoch int32) bool {
	for _, p := range f.parts {
		if p.key == k {
			return p.leaderEpoch == epoch
		}
	}
	return false
}

// appendFetched appends the batches a leader returned. Batches the follower
// already has are skipped; a batch straddling its LEO means its last batch
// differs from the leader's, so it truncates to the leader's boundary first.
func (b *Broker) appendFetched(r *replica, data []byte) {
	leo := r.log.LogEndOffset()
	start, end := -1, 0
	_, err := batch.Walk(data, func(h batch.Header, raw []byte) bool {
		pos := end
		end += h.Size()
		switch {
		case h.NextOffset() <= leo:
			return true
		case h.BaseOffset < leo:
			b.logf("%s: batch %d..%d straddles leo %d: truncating to %d", r.key, h.BaseOffset, h.LastOffset(), leo, h.BaseOffset)
			if err := b.truncateLog(r, h.BaseOffset); err != nil {
				b.logf("%s: truncate failed: %v", r.key, err)
				return false
			}
			leo = h.BaseOffset
		case h.BaseOffset > leo && start < 0:
			b.logf("%s: leader sent offset %d but leo is %d", r.key, h.BaseOffset, leo)
			return false
		}
		if start < 0 {
			start = pos
		}
		return true
	})
	if err != nil && err != batch.ErrShort {
		// A short tail is normal (the leader cut a batch at max bytes); other
		// errors mean a corrupt response: drop it and fetch again.
		b.logf("%s: bad batch from leader: %v", r.key, err)
	}
	if start < 0 {
		return
	}
	if err := r.log.Append(data[start:end]); err != nil {
		b.logf("%s: append of fetched data failed: %v", r.key, err)
		r.retryAt = b.now + b.cfg.RetryBackoffMs
		return
	}
	// The leader's producer state travels in the batch headers: a
	// follower that becomes leader judges retries as the leader would.
	// Planted bug abort-lost-on-follower: a follower ends an aborted
	// transaction without recording it, breaking the rule that every
	// replica learns the transactions from its log as the leader did.
	keepAbort := !b.cfg.Bugs.Has(bug.AbortLostOnFollower)
	_, _ = batch.Walk(data[start:end], func(h batch.Header, raw []byte) bool {
		r.recordMarker(h, raw, keepAbort)
		return true
	})
}

// truncateByEpoch asks the leader where the follower's latest epoch (or
// epoch, if >= -1) ends on the leader; the answer bounds what the follower
// may keep (KIP-101, with KIP-279's rounds for epochs it lacks).
func (b *Broker) truncateByEpoch(r *replica, addr string, epoch int32) {
	if epoch == -2 {
		switch {
		case r.log.LogEndOffset() == 0 || len(r.log.Epochs()) == 0:
			r.truncating = false
			return
		case b.cfg.Bugs.Has(bug.NoFollowerTruncation):
			// Planted bug no-follower-truncation: the follower keeps its
			// whole log and fetches from its end, breaking the rule that
			// it first drops a suffix the leader does not have.
			r.truncating = false
			return
		case b.cfg.Bugs.Has(bug.TruncateToHW):
			// Planted bug truncate-to-hw: Kafka before KIP-101
			// (KAFKA-1211), breaking the rule that the follower truncates
			// where the leader says its epoch ends: its own HW lags the
			// leader's (committed records go) and may exceed what a new
			// leader has (diverged records stay).
			b.truncateTo(r, r.log.HighWatermark(), "to its high watermark", " (planted bug truncate-to-hw)")
			return
		}
		epoch = latestEpoch(r.log)
	}
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.Version = 4
	req.ReplicaID = b.cfg.BrokerID
	t := kmsg.NewOffsetForLeaderEpochRequestTopic()
	t.Topic = r.key.topic
	p := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	p.Partition, p.CurrentLeaderEpoch, p.LeaderEpoch = r.key.partition, r.leaderEpoch, epoch
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	r.oflePending = true
	r.ofleID = b.send(r.leader, addr, "epoch", req, b.cfg.ControllerTimeoutMs)
	b.offsetReqs[r.ofleID] = r.key
}

func (b *Broker) offsetForEpochResponse(id uint64, k tp, resp any, err error) {
	r := b.replicas[k]
	if r == nil || r.role != roleFollower || !r.truncating || r.ofleID != id {
		return // asked of an earlier leader or epoch
	}
	r.oflePending = false
	or, _ := resp.(*kmsg.OffsetForLeaderEpochResponse)
	if err != nil || or == nil || len(or.Topics) != 1 || len(or.Topics[0].Partitions) != 1 {
		r.retryAt = b.now + b.cfg.RetryBackoffMs
		return
	}
	p := or.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		r.retryAt = b.now + b.cfg.RetryBackoffMs
		return
	}
	leo := r.log.LogEndOffset()
	target := leo
	if p.LeaderEpoch < 0 || p.EndOffset < 0 {
		// The leader has no epoch as old as ours: its whole log (it keeps
		// everything from offset 0) was written in later epochs, or it is
		// empty, so nothing of ours is known to match it. Keeping our HW
		// instead (the pre-KIP-101 rule) can keep records the leader lost.
		target = r.log.LogStartOffset()
	} else if b.cfg.Bugs.Has(bug.EpochTruncationSingleRound) {
		// Planted bug epoch-truncation-single-round: KIP-101 before
		// KIP-279 (KAFKA-6361), breaking the rule below that an answer
		// about an epoch we never had is asked again about ours: the
		// leader's end for its epoch can lie past where ours diverged.
		target = min(leo, p.EndOffset)
	} else {
		localEpoch, localEnd := r.log.EndOffsetForEpoch(p.LeaderEpoch)
		if localEpoch != p.LeaderEpoch && localEpoch >= 0 {
			// The leader's answer names an epoch we never had: ask again
			// about our latest epoch below it.
			b.truncateByEpoch(r, b.brokerAddr(r.leader), localEpoch)
			return
		}
		if localEpoch < 0 {
			localEnd = 0
		}
		target = min(leo, p.EndOffset, localEnd)
	}
	b.truncateTo(r, target, "by leader epoch", sprintf(" (leader epoch %d ends at %d)", p.LeaderEpoch, p.EndOffset))
}

// truncateTo truncates a follower's log to target, if it is longer, and
// lets it fetch; on failure it retries after the backoff. how and note go
// into the log line.
func (b *Broker) truncateTo(r *replica, target int64, how, note string) {
	if leo := r.log.LogEndOffset(); target < leo {
		epochs := r.log.Epochs()
		if err := b.truncateLog(r, target); err != nil {
			b.logf("%s: truncate to %d failed: %v", r.key, target, err)
			r.retryAt = b.now + b.cfg.RetryBackoffMs
			return
		}
		if b.cfg.Bugs.Has(bug.TruncationIndexOutOfRange) {
			note += droppedEpochs(epochs, r.log.LogEndOffset())
		}
		b.logf("%s: truncated %s from %d to %d%s", r.key, how, leo, r.log.LogEndOffset(), note)
		if b.cfg.Bugs.Has(bug.FollowerStallsAfterTruncation) {
			// Planted bug follower-stalls-after-truncation: the follower
			// is left done truncating but never due to fetch, breaking
			// the rule that it fetches from its new log end at once.
			r.truncating, r.retryAt = false, math.MaxInt64
			return
		}
	}
	r.truncating = false
}

// droppedEpochs is planted bug truncation-index-out-of-range: it names
// the epochs of epochs (the cache before a truncation) that start past
// the new log end leo, taking them to begin with the entry after the one
// leo lies in, which it reads unchecked, breaking the rule that an index
// is checked against its bounds: a truncation that cuts into the latest
// epoch has no entry after it, and the broker panics.
func droppedEpochs(epochs []storage.EpochEntry, leo int64) string {
	i := 0
	for i+1 < len(epochs) && epochs[i+1].StartOffset < leo {
		i++
	}
	first := epochs[i+1]
	return sprintf(" (dropped epochs %d..%d)", first.Epoch, epochs[len(epochs)-1].Epoch)
}
