package core

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/broker/batch"
	"github.com/chaos-isr/chaos/broker/control"
	"github.com/chaos-isr/chaos/broker/storage"
)

type role int

const (
	roleNone role = iota // offline partition, or not yet told
	roleLeader
	roleFollower
)

func (r role) String() string {
	return [...]string{"none", "leader", "follower"}[r]
}

// follower is what a leader knows of one follower.
type follower struct {
	leo          int64 // -1 until it fetches in this leader epoch
	lastCaughtUp int64 // last time its fetch reached the leader's LEO
	lastFetch    int64
	leoAtFetch   int64 // the leader's LEO at lastFetch
}

// replica is this broker's replica of one partition.
type replica struct {
	key            tp
	log            storage.Log
	minISR         int32
	role           role
	leader         int32
	leaderEpoch    int32
	partitionEpoch int32
	replicas       []int32
	isr            []int32

	// leader side
	epochStart int64 // LEO when this leadership began
	followers  map[int32]*follower
	alterID    uint64  // in-flight AlterISR request, 0 if none
	pendingISR []int32 // what that request asks for

	// follower side
	truncating  bool   // must truncate by leader epoch before fetching
	oflePending bool   // an OffsetForLeaderEpoch is in flight
	ofleID      uint64 // its request id: answers to older ones are stale
	retryAt     int64
}

// maximalISR is the ISR the HW must respect: while an ISR change is in
// flight, the union of the old and the new (KIP-497's rule), so a shrink the
// controller has not accepted yet never lets the HW run ahead.
func (r *replica) maximalISR() []int32 {
	if r.alterID == 0 {
		return r.isr
	}
	out := slices.Clone(r.isr)
	for _, id := range r.pendingISR {
		if !control.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// updateReplica applies a partition state from the controller if it is newer
// than what the replica has.
func (b *Broker) updateReplica(r *replica, p control.Partition) {
	if p.LeaderEpoch < r.leaderEpoch || (p.LeaderEpoch == r.leaderEpoch && p.PartitionEpoch <= r.partitionEpoch) {
		return
	}
	newEpoch := p.LeaderEpoch != r.leaderEpoch
	r.replicas, r.isr, r.partitionEpoch = slices.Clone(p.Replicas), slices.Clone(p.ISR), p.PartitionEpoch
	if !newEpoch {
		if r.role == roleLeader {
			b.advanceHW(r)
			b.checkProduces(r.key)
		}
		return
	}
	wasLeader := r.role == roleLeader
	r.leader, r.leaderEpoch = p.Leader, p.LeaderEpoch
	r.alterID, r.pendingISR = 0, nil
	switch {
	case p.Leader == b.cfg.BrokerID:
		r.role = roleLeader
		r.truncating, r.oflePending = false, false
		r.epochStart = r.log.LogEndOffset()
		r.followers = map[int32]*follower{}
		for _, id := range r.replicas {
			if id != b.cfg.BrokerID {
				r.followers[id] = &follower{leo: -1, lastCaughtUp: b.now, lastFetch: b.now}
			}
		}
		b.logf("%s: leader, epoch %d, isr %v, leo %d, hw %d", r.key, r.leaderEpoch, r.isr, r.log.LogEndOffset(), r.log.HighWatermark())
		b.advanceHW(r)
	case p.Leader == control.NoLeader:
		r.role = roleNone
		b.logf("%s: offline, epoch %d, isr %v", r.key, r.leaderEpoch, r.isr)
	default:
		r.role = roleFollower
		r.followers = nil
		r.truncating, r.oflePending, r.retryAt = true, false, 0
		b.logf("%s: follower of %d, epoch %d, leo %d, hw %d", r.key, r.leader, r.leaderEpoch, r.log.LogEndOffset(), r.log.HighWatermark())
	}
	if wasLeader {
		// Produces waiting on this leadership can no longer be judged here.
		b.checkProduces(r.key)
	}
	b.wakeFetches(r.key)
}

// advanceHW raises a leader's HW and completes what waited for it.
func (b *Broker) advanceHW(r *replica) {
	if b.raiseHW(r) {
		b.checkProduces(r.key)
	}
}

// raiseHW moves a leader's high watermark to the minimum LEO of the
// (maximal) ISR, never back, and wakes consumers parked on it. A follower
// whose LEO this leader has not yet seen holds the HW where it is.
func (b *Broker) raiseHW(r *replica) bool {
	if r.role != roleLeader {
		return false
	}
	hw := r.log.LogEndOffset()
	for _, id := range r.maximalISR() {
		if id == b.cfg.BrokerID {
			continue
		}
		f := r.followers[id]
		if f == nil || f.leo < 0 {
			return false
		}
		hw = min(hw, f.leo)
	}
	if hw <= r.log.HighWatermark() {
		return false
	}
	r.log.SetHighWatermark(hw)
	b.wakeFetches(r.key)
	return true
}

// followerFetched records a follower's fetch position (its LEO). A follower
// is caught up at a fetch that reaches the leader's LEO, or, if it reached
// the LEO the leader had at its previous fetch, as of that previous fetch
// (Kafka's lastCaughtUpTime rule).
func (b *Broker) followerFetched(r *replica, id int32, offset int64) {
	f := r.followers[id]
	if f == nil {
		return
	}
	leo := r.log.LogEndOffset()
	switch {
	case offset >= leo:
		f.lastCaughtUp = b.now
	case offset >= f.leoAtFetch:
		f.lastCaughtUp = max(f.lastCaughtUp, f.lastFetch)
	}
	f.leo, f.lastFetch, f.leoAtFetch = offset, b.now, leo
	b.maybeExpandISR(r, id, f)
	b.advanceHW(r)
}

// maybeExpandISR asks to add a follower that has caught up: at or past the
// HW and the start of this leader epoch (so it has truncated), and within
// replica.lag.max.messages.
func (b *Broker) maybeExpandISR(r *replica, id int32, f *follower) {
	if r.alterID != 0 || control.Contains(r.isr, id) {
		return
	}
	leo := r.log.LogEndOffset()
	if f.leo < r.log.HighWatermark() || f.leo < r.epochStart {
		return
	}
	if b.cfg.ReplicaLagMaxMessages > 0 && leo-f.leo > b.cfg.ReplicaLagMaxMessages {
		return
	}
	var isr []int32
	for _, x := range r.replicas { // keep replica order
		if x == id || control.Contains(r.isr, x) {
			isr = append(isr, x)
		}
	}
	b.alterISR(r, isr, "follower %d caught up (leo %d, hw %d)", id, f.leo, r.log.HighWatermark())
}

// maybeShrinkISRs drops followers that are too slow, by time or by messages.
func (b *Broker) maybeShrinkISRs() {
	for _, k := range b.order {
		r := b.replicas[k]
		if r.role != roleLeader || r.alterID != 0 {
			continue
		}
		leo := r.log.LogEndOffset()
		var keep []int32
		var why string
		for _, id := range r.isr {
			f := r.followers[id]
			if id == b.cfg.BrokerID || f == nil {
				keep = append(keep, id)
				continue
			}
			switch {
			case b.now-f.lastCaughtUp > b.cfg.ReplicaLagTimeMaxMs:
				why += sprintf(" %d not caught up for %dms;", id, b.now-f.lastCaughtUp)
			case b.cfg.ReplicaLagMaxMessages > 0 && f.leo >= 0 && leo-f.leo > b.cfg.ReplicaLagMaxMessages:
				why += sprintf(" %d is %d messages behind;", id, leo-f.leo)
			default:
				keep = append(keep, id)
			}
		}
		if len(keep) < len(r.isr) {
			b.alterISR(r, keep, "shrink:%s", why)
		}
	}
}

func (b *Broker) alterISR(r *replica, isr []int32, why string, args ...any) {
	if b.brokerEpoch == 0 {
		return
	}
	b.logf("%s: asking controller for isr %v (was %v): %s", r.key, isr, r.isr, sprintf(why, args...))
	r.pendingISR = isr
	r.alterID = b.sendController("alter-isr", &control.AlterISRRequest{
		BrokerID: b.cfg.BrokerID, BrokerEpoch: b.brokerEpoch, Topic: r.key.topic, Partition: r.key.partition,
		LeaderEpoch: r.leaderEpoch, PartitionEpoch: r.partitionEpoch, ISR: isr,
	})
}

func (b *Broker) alterISRResponse(id uint64, resp any, err error) {
	var r *replica
	for _, k := range b.order {
		if b.replicas[k].alterID == id {
			r = b.replicas[k]
			break
		}
	}
	if r == nil {
		return // leadership changed meanwhile
	}
	r.alterID, r.pendingISR = 0, nil
	ar, _ := resp.(*control.AlterISRResponse)
	switch {
	case err != nil || ar == nil:
		b.logf("%s: isr change failed: %v", r.key, err)
	case ar.Error != "":
		b.logf("%s: isr change refused: %s", r.key, ar.Error)
	}
	if ar != nil && ar.State != nil {
		b.updateReplica(r, *ar.State)
	}
	b.advanceHW(r)
	b.checkProduces(r.key)
}

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
			if err := r.log.Truncate(h.BaseOffset); err != nil {
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
	}
}

// truncateByEpoch asks the leader where the follower's latest epoch (or
// epoch, if >= -1) ends on the leader; the answer bounds what the follower
// may keep (KIP-101, with KIP-279's rounds for epochs it lacks).
func (b *Broker) truncateByEpoch(r *replica, addr string, epoch int32) {
	if epoch == -2 {
		if r.log.LogEndOffset() == 0 || len(r.log.Epochs()) == 0 {
			r.truncating = false
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
	if target < leo {
		if err := r.log.Truncate(target); err != nil {
			b.logf("%s: truncate to %d failed: %v", k, target, err)
			r.retryAt = b.now + b.cfg.RetryBackoffMs
			return
		}
		b.logf("%s: truncated by leader epoch from %d to %d (leader epoch %d ends at %d)", k, leo, r.log.LogEndOffset(), p.LeaderEpoch, p.EndOffset)
	}
	r.truncating = false
}
