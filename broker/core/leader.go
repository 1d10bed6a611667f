package core

import (
	"slices"

	"github.com/chaos-isr/chaos/broker/bug"
	"github.com/chaos-isr/chaos/broker/control"
)

// follower is what a leader knows of one follower.
type follower struct {
	leo          int64 // -1 until it fetches in this leader epoch
	lastCaughtUp int64 // last time its fetch reached the leader's LEO
	lastFetch    int64
	leoAtFetch   int64 // the leader's LEO at lastFetch
}

// maximalISR is the ISR the HW must respect: while an ISR change is in
// flight, the union of the old and the new (KIP-497's rule), so a shrink the
// controller has not accepted yet never lets the HW run ahead.
//
// A request whose answer never came may have been applied: its members
// stay in the maximal ISR (replica.unsettled) until the controller's state
// settles it.
func (r *replica) maximalISR() []int32 {
	if r.alterID == 0 && len(r.unsettled) == 0 {
		return r.isr
	}
	out := slices.Clone(r.isr)
	for _, id := range append(slices.Clone(r.unsettled), r.pendingISR...) {
		if !control.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
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
	if r.strictMinISR && int32(len(r.isr)) < r.minISR && !b.cfg.Bugs.Has(bug.ELRHWBelowMin) {
		// (Planted bug elr-hw-below-min skips this: the ELR members left
		// the ISR while it was below the minimum, and hold every
		// committed record only if the HW stood still since.)
		return false
	}
	hw := r.log.LogEndOffset()
	isr := r.maximalISR()
	if b.cfg.Bugs.Has(bug.HWIgnoresISR) {
		// Planted bug hw-ignores-isr: the leader counts itself alone,
		// breaking the rule that the HW is the minimum LEO of the ISR.
		isr = nil
	}
	for _, id := range isr {
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
	switch {
	case b.cfg.Bugs.Has(bug.ISREarlyRejoin):
		// Planted bug isr-early-rejoin: any fetch will do, breaking the
		// rule that a follower rejoins only once it has caught up (the
		// three cases below).
	case f.leo < r.log.HighWatermark():
		return
	case f.leo < r.epochStart && !b.cfg.Bugs.Has(bug.ISRRejoinBeforeEpochStart):
		// (Planted bug isr-rejoin-before-epoch-start skips this case:
		// KAFKA-7128, a new leader's HW may lag the start of its epoch,
		// and a follower between the two may still hold records to
		// truncate, or lack committed ones.)
		return
	case b.cfg.ReplicaLagMaxMessages > 0 && leo-f.leo > b.cfg.ReplicaLagMaxMessages:
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
			if b.cfg.Bugs.Has(bug.ISRShrinkWithoutController) {
				// Planted bug isr-shrink-without-controller: the shrink
				// applies at once, whatever the controller answers (or
				// if it never does), breaking the rule that only the
				// controller changes the ISR (KIP-497): a leader cut off
				// from everyone shrinks to itself and commits alone.
				r.isr = keep
				b.advanceHW(r)
			}
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
	asked := r.pendingISR
	r.alterID, r.pendingISR = 0, nil
	ar, _ := resp.(*control.AlterISRResponse)
	switch {
	case err != nil || ar == nil:
		// No answer is not a refusal: the controller may have applied
		// the change. Its members stay in the maximal ISR, and the leader
		// asks for the ISR it knows, whose answer carries the controller's
		// state, which settles it. A leader that took the timeout for a
		// refusal would commit alone what a follower the controller had
		// already admitted lacks, and that follower may be the next leader
		// (found by chaos hunt: acks=-1, min.insync.replicas=1, committed
		// records lost under clean election). Asking again for the same
		// members would not do: one may since have restarted without what
		// made it eligible, and the controller would admit it (KIP-903).
		for _, id := range asked {
			if !control.Contains(r.unsettled, id) {
				r.unsettled = append(r.unsettled, id)
			}
		}
		b.logf("%s: isr change failed: %v (until the controller says, the hw keeps to %v)", r.key, err, r.maximalISR())
		if r.role == roleLeader {
			b.alterISR(r, slices.Clone(r.isr), "settling the request that had no answer")
			return
		}
	case ar.Error != "":
		b.logf("%s: isr change refused: %s", r.key, ar.Error)
	}
	if ar != nil && ar.State != nil {
		b.updateReplica(r, *ar.State)
	}
	b.advanceHW(r)
	b.checkProduces(r.key)
}
