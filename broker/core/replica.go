package core

import (
	"slices"

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

// replica is this broker's replica of one partition.
type replica struct {
	key    tp
	log    storage.Log
	minISR int32
	// strictMinISR is KIP-966's rule (policy elr): the high watermark
	// stands still while the ISR is below minISR.
	strictMinISR   bool
	role           role
	leader         int32
	leaderEpoch    int32
	partitionEpoch int32
	replicas       []int32
	isr            []int32
	producers      producers // idempotent producers' state, in step with the log
	// aborted are the transactions aborted on the partition, in marker
	// order; txns says its log has held a marker (recordBatch).
	aborted []abortedTxn
	txns    bool

	// leader side
	epochStart int64 // LEO when this leadership began
	followers  map[int32]*follower
	alterID    uint64  // in-flight AlterISR request, 0 if none
	pendingISR []int32 // what that request asks for
	// unsettled are members an AlterISR request asked for whose answer
	// never came (it timed out): the controller may have admitted them,
	// so they stay in the maximal ISR until its state says which ISR is
	// in force.
	unsettled []int32

	// follower side
	truncating  bool   // must truncate by leader epoch before fetching
	oflePending bool   // an OffsetForLeaderEpoch is in flight
	ofleID      uint64 // its request id: answers to older ones are stale
	retryAt     int64
}

// updateReplica applies a partition state from the controller if it is newer
// than what the replica has.
func (b *Broker) updateReplica(r *replica, p control.Partition) {
	if p.LeaderEpoch < r.leaderEpoch || (p.LeaderEpoch == r.leaderEpoch && p.PartitionEpoch <= r.partitionEpoch) {
		return
	}
	newEpoch := p.LeaderEpoch != r.leaderEpoch
	r.replicas, r.isr, r.partitionEpoch = slices.Clone(p.Replicas), slices.Clone(p.ISR), p.PartitionEpoch
	r.unsettled = nil // the controller's word on the ISR
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
	if wasLeader || r.role == roleLeader {
		// A coordinator's groups live in its leadership: a new epoch
		// reads them back, or they go.
		b.groupsLead(r, r.role == roleLeader)
		b.txnsLead(r, r.role == roleLeader)
	}
	if wasLeader {
		// Produces waiting on this leadership can no longer be judged here.
		b.checkProduces(r.key)
	}
	b.wakeFetches(r.key)
}
