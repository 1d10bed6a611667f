package checker

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/chaos-isr/chaos/history"
)

// The liveness checks: once the faults have healed, a cluster must recover
// within the liveness bound (Config.LivenessBoundMs), in every
// configuration. Jepsen's analyses of Kafka-protocol systems report a
// cluster that never heals as a bug (Redpanda 21.10's liveness issues,
// Bufstream 0.1's stuck producers and consumers), not as a test that
// could not be judged.
//
// The bound runs from the heal: the nemesis's last completed operation
// (the end of the last fault window, or the final heal), or the start of
// the history when no fault ran. chaos run's and chaos sim's final phase
// goes on waiting, probing and reading until the bound has passed (see
// package workload), so that a cluster that stays broken shows it; a
// history that ends sooner leaves the checks undecided, and a history
// judged without a bound (one recorded before these checks, or by another
// tool) leaves them not applicable.

// Liveness anomaly names, as docs/guarantees.md spells them.
const (
	NoConvergenceName  = "no-convergence"
	StuckPartitionName = "stuck-partition"
	StuckConsumerName  = "stuck-consumer"
)

// livenessReason is the guarantee model's reason for all three.
const livenessReason = "every configuration: once the faults have healed, a cluster whose brokers are all up and connected must elect a leader, bring every replica back into the ISR and serve sends and reads again, within the liveness bound"

// Liveness is what the liveness checks saw of the recovery, for the
// report: the bound, the heal it runs from, and how long each partition
// took to converge.
type Liveness struct {
	BoundMs int64 `json:"bound_ms"`
	// HealMs is the time of the last heal, since the history began.
	HealMs     int64                  `json:"heal_ms"`
	Partitions []PartitionConvergence `json:"partitions"`
}

// PartitionConvergence is how long after the heal one partition was first
// seen with a leader and its whole replica set in the ISR; AfterMs is -1
// if it never was.
type PartitionConvergence struct {
	Partition string `json:"partition"`
	AfterMs   int64  `json:"after_ms"`
}

// livenessBound is the liveness bound in nanoseconds, the heal's time,
// and whether the checks that run from the heal apply; why says why not
// when a bound was set but the cluster is not known to be whole again
// (a node crashed after the last heal: the crash is the finding), and
// unhealed why the history does not show it healed at all (a window that
// never stopped, a heal that failed: the checks are then unknown).
func (h *History) livenessBound() (bound, heal int64, ok bool) {
	if h.cfg.LivenessBoundMs <= 0 || h.faults.downAfterHeal() != "" {
		return 0, 0, false
	}
	return h.cfg.LivenessBoundMs * int64(time.Millisecond), h.faults.lastEnd, true
}

// notBounded marks f not applicable: no bound was set, or a node crashed
// after the last heal (the crash is the finding; a cluster missing a
// node is not held to recover).
func (h *History) notBounded(f *finding) {
	if why := h.faults.downAfterHeal(); why != "" {
		f.notApplicable("%s: the cluster was not whole again, so its recovery is not judged (the crash is the finding)", why)
		return
	}
	f.notApplicable("no liveness bound was set (a history recorded without one); chaos check --liveness-bound judges it")
}

// unhealed marks f not checked when the history does not show the
// cluster healed (an interrupted run, a heal that failed): a stuck
// cluster there is the faults' doing, not a bug's.
func (h *History) unhealed(f *finding) bool {
	why := h.faults.notHealed()
	if why != "" {
		f.noEvidence("the history does not show the faults healed: %s", why)
	}
	return why != ""
}

func (h *History) at(pos int32) int64 {
	if pos < 0 {
		return -1
	}
	return h.ops.time(pos)
}

// convObs is what the tester saw of a partition's convergence after
// the heal: when (a sample's invocation, since its view was read after
// it; a converge operation's completion), whether it was converged, and
// what it saw, to say so.
type convObs struct {
	t         int64
	converged bool
	seen      string
}

// convergence is what the history shows of partition pi after heal, in
// time order: the monitor's samples that were answered (a leader and a
// full ISR; else what they saw), skipping a full ISR from a view older
// than a leader epoch already seen (a stale broker's), and the final
// phase's converge operations (ok for every partition; a failure for
// those it names). lost is the latest failed converge operation that
// waited at least bound, naming p: the partition was unconverged for
// that whole wait, at the end.
func (h *History) convergence(pi int, heal, bound int64) (obs []convObs, lost string) {
	k := h.parts[pi].key
	epoch := int32(-1)
	ss := &h.parts[pi].samples
	for i := range ss.len() {
		s := ss.at(i)
		t := h.at(s.inv)
		if s.done < 0 || s.inv < 0 {
			continue
		}
		switch {
		case s.view:
			if s.epoch < epoch {
				continue // a stale broker's view
			}
			epoch = s.epoch
			if t < heal {
				continue
			}
			obs = append(obs, convObs{t, s.full, fmt.Sprintf("leader %d, isr %v of replicas %v (op %d)", s.leader, h.sampleISR(s), h.sampleReplicas(s), h.index(s.done))})
		case h.ops.op(s.done).Type == history.OK && t >= heal:
			obs = append(obs, convObs{t, false, fmt.Sprintf("no leader (op %d)", h.index(s.done))})
		}
	}
	for _, c := range h.converges {
		if h.at(c.inv) < heal || c.done < 0 || (c.topic != "" && c.topic != k.Topic) {
			continue
		}
		done := h.at(c.done)
		if c.ok {
			obs = append(obs, convObs{done, true, ""})
			continue
		}
		if c.parts != nil && !slices.Contains(c.parts, k.Partition) {
			continue
		}
		op := h.ops.op(c.done)
		seen := fmt.Sprintf("the final phase gave up waiting: %s (op %d)", op.Error, op.Index)
		obs = append(obs, convObs{done, false, seen})
		if done-h.at(c.inv) >= bound {
			lost = seen
		}
	}
	slices.SortStableFunc(obs, func(a, b convObs) int { return cmp.Compare(a.t, b.t) })
	return obs, lost
}

// convergedAt is when partition pi was first seen converged after the
// heal (-1: never), and the latest time before that it was seen not
// converged, with what was seen (-1: it was not).
func (h *History) convergedAt(pi int, heal, bound int64) (at, unconverged int64, seen, lost string) {
	obs, lost := h.convergence(pi, heal, bound)
	at, unconverged = -1, -1
	for _, o := range obs {
		if o.converged {
			at = o.t
			break
		}
		unconverged, seen = o.t, o.seen
	}
	return at, unconverged, seen, lost
}

// livenessParts are the indexes of the partitions the liveness checks
// judge: those of a topic (nemesis values name none).
func (h *History) livenessParts() []int {
	var out []int
	for i, p := range h.parts {
		if p.key.Topic != "" {
			out = append(out, i)
		}
	}
	return out
}

// LivenessSummary is what the liveness checks saw of each partition's
// recovery; nil without a bound.
func LivenessSummary(h *History) *Liveness {
	bound, heal, ok := h.livenessBound()
	if !ok {
		return nil
	}
	l := &Liveness{BoundMs: bound / int64(time.Millisecond), HealMs: heal / int64(time.Millisecond)}
	for _, pi := range h.livenessParts() {
		at, _, _, _ := h.convergedAt(pi, heal, bound)
		after := int64(-1)
		if at >= 0 {
			after = (at - heal) / int64(time.Millisecond)
		}
		l.Partitions = append(l.Partitions, PartitionConvergence{Partition: h.key(int32(pi)).String(), AfterMs: after})
	}
	return l
}

// NoConvergence finds partitions that did not converge (a leader and the
// whole replica set in the ISR) within the bound after the last heal: the
// tester saw one not converged at the bound or later, before it was first
// seen converged (or never); or the final phase's wait gave up on it after
// waiting the bound or longer, whatever an earlier sample saw (it lost its
// ISR and never got it back). Count is the number of such partitions. One
// first seen converged later than the bound, with nothing seen between,
// is undecided: it may have converged long before.
func NoConvergence(h *History) Result {
	f := h.newFinding(NoConvergenceName)
	bound, heal, ok := h.livenessBound()
	switch {
	case !ok:
		h.notBounded(f)
		return f.result()
	case h.unhealed(f):
		return f.result()
	}
	judged := int64(0)
	for _, pi := range h.livenessParts() {
		at, unconverged, seen, lost := h.convergedAt(pi, heal, bound)
		k := h.key(int32(pi))
		switch {
		case unconverged >= 0 && unconverged-heal >= bound:
			judged++
			first := "it was never seen converged"
			if at >= 0 {
				first = fmt.Sprintf("first seen converged at %s", secs(at))
			}
			f.add(Unexplained, fmt.Sprintf("%s had no leader and full ISR %s after the last heal (at %s): at %s, %s; %s; the liveness bound is %s",
				k, secs(unconverged-heal), secs(heal), secs(unconverged), seen, first, secs(bound)))
		case lost != "":
			judged++
			f.add(Unexplained, fmt.Sprintf("%s was seen converged after the last heal (at %s), then not for the final phase's whole wait of the liveness bound (%s) or more: %s",
				k, secs(heal), secs(bound), lost))
		case at >= 0 && at-heal <= bound:
			judged++
		default:
			f.undecide(Unexplained, "no-convergence-undecided", 1)
		}
	}
	f.stat("partitions-judged", judged)
	switch {
	case judged == 0 && f.open == 0:
		f.noEvidence("no partition was seen after the last heal (no monitor sample, no final phase)")
	case f.open > 0:
		f.note("%d partitions were not seen converged, nor unconverged at the liveness bound: the history cannot tell when they converged", f.open)
	}
	return f.result()
}

// StuckPartition finds partitions that kept failing after the last heal
// for longer than the bound: every send invoked after the heal failed (or
// has no known outcome), under acks 1 or -1 where a send can be
// acknowledged; or every poll and final read invoked after the heal failed
// or returned nothing below the high watermark; and the failures
// themselves span the bound, from the first (invoked) to the last (ended)
// at or past the bound after the heal. A partition that served once after
// the heal is not stuck; one that failed every time, but not over the
// bound, is undecided. Count is the number of (partition, sends or reads)
// found stuck.
func StuckPartition(h *History) Result {
	f := h.newFinding(StuckPartitionName)
	bound, heal, ok := h.livenessBound()
	switch {
	case !ok:
		h.notBounded(f)
		return f.result()
	case h.unhealed(f):
		return f.result()
	}
	type tally struct {
		tried, ok   bool
		first, last int64 // the first failed attempt's invocation, the last one's end
		lastPos     int32
	}
	fail := func(c *tally, inv, end int64, pos int32) {
		if !c.tried || inv < c.first {
			c.first = inv
		}
		c.tried = true
		if end >= c.last {
			c.last, c.lastPos = end, pos
		}
	}
	sends := make([]tally, len(h.parts))
	reads := make([]tally, len(h.parts))
	if h.cfg.Acks != 0 {
		for i := range h.sends.len() {
			s := h.sends.at(i)
			inv := h.at(s.inv)
			if s.inv < 0 || inv < heal {
				continue
			}
			c := &sends[s.part()]
			switch {
			case s.typ() == outOK, s.offset >= 0:
				// A transaction's send that got an offset was written,
				// whatever became of the transaction (the workload
				// aborts some on purpose).
				c.tried, c.ok = true, true
			case s.done >= 0:
				fail(c, inv, inv, s.done) // a send failing late may have been sent early: its invocation counts
			default:
				fail(c, inv, inv, s.inv)
			}
		}
	}
	h.eachTry(func(r *readTry) {
		inv := h.at(r.inv)
		if r.inv < 0 || r.done < 0 || inv < heal {
			return
		}
		c := &reads[r.part]
		if r.progress {
			c.tried, c.ok = true, true
			return
		}
		fail(c, inv, h.at(r.done), r.done)
	})
	judge := func(pi int, c tally, what string) {
		if !c.tried || c.ok {
			return
		}
		if c.last-heal < bound || c.last-c.first < bound {
			f.undecide(Unexplained, "stuck-partition-undecided", 1)
			return
		}
		op := h.ops.op(c.lastPos)
		f.add(Unexplained, fmt.Sprintf("no %s of %s succeeded after the last heal (at %s): they failed from %s to %s (op %d: %s); the liveness bound is %s",
			what, h.key(int32(pi)), secs(heal), secs(c.first), secs(c.last), op.Index, describeFailure(op), secs(bound)), op.Index)
	}
	for _, pi := range h.livenessParts() {
		judge(pi, sends[pi], "send")
		judge(pi, reads[pi], "poll or final read")
	}
	if f.open > 0 {
		f.note("%d partitions failed every attempt after the last heal, but not over the liveness bound: the history cannot tell them stuck", f.open)
	}
	if h.cfg.Acks == 0 {
		f.note("acks=0: no send is acknowledged, so only reads are judged")
	}
	return f.result()
}

func describeFailure(op *history.Op) string {
	switch {
	case op.Error != "":
		return fmt.Sprintf("%s %s", op.Type, op.Error)
	case op.Value != nil && op.Value.HW != nil:
		return fmt.Sprintf("%s with no records below the high watermark %d", op.Type, *op.Value.HW)
	}
	return string(op.Type)
}

// StuckConsumer finds consumers that stalled: polls of a partition from
// one offset that returned no records while the high watermark they
// reported stayed above it, for longer than the bound, with no read from
// that offset returning records in between. The final phase's reads count
// as the tester's own consumer: a final read that got no records from
// below the high watermark fails history.StuckRead, and is tried again
// until the stall outlasts the bound. A correct leader returns at least
// one record from below its high watermark, so a stall is judged wherever
// it happens, in a fault window or not. Count is the number of stalls
// longer than the bound.
func StuckConsumer(h *History) Result {
	f := h.newFinding(StuckConsumerName)
	// A stall is judged wherever it happens, so a node down after the
	// last heal leaves it judged.
	bound := h.cfg.LivenessBoundMs * int64(time.Millisecond)
	if bound <= 0 {
		h.notBounded(f)
		return f.result()
	}
	type at struct {
		part int32
		from int64
	}
	type stall struct {
		start, end     int64
		first, last, n int32
		hw             int64
		// committed: every read of the stall was read_committed, which
		// an open transaction holds back until its timeout.
		committed bool
	}
	open := map[at]*stall{}
	var longest int64
	end := func(k at, s *stall) {
		longest = max(longest, s.end-s.start)
		limit, why := bound, "the liveness bound is "+secs(bound)
		if s.committed && h.cfg.TransactionTimeoutMs > 0 {
			txn := h.cfg.TransactionTimeoutMs * int64(time.Millisecond)
			limit, why = bound+txn, fmt.Sprintf("read_committed reads may wait out a transaction's timeout of %s on top of the liveness bound of %s", secs(txn), secs(bound))
		}
		if s.end-s.start > limit {
			f.add(Unexplained, fmt.Sprintf("reads of %s from offset %d returned no records for %s (%d reads, op %d to op %d), though the high watermark they reported was above it (%d); %s",
				h.key(k.part), k.from, secs(s.end-s.start), s.n, h.index(s.first), h.index(s.last), s.hw, why),
				h.index(s.first), h.index(s.last))
		}
	}
	// ordered are the open stalls' keys in a fixed order, so that the
	// stalls ended together are reported in the same order every time.
	ordered := func() []at {
		keys := slices.Collect(maps.Keys(open))
		slices.SortFunc(keys, func(a, b at) int { return cmp.Or(cmp.Compare(a.part, b.part), cmp.Compare(a.from, b.from)) })
		return keys
	}
	reads := int64(0)
	h.eachTry(func(r *readTry) {
		if r.from < 0 || r.inv < 0 || r.done < 0 || (!r.progress && !r.stalled) {
			return
		}
		reads++
		// A read from beyond an offset ends its stall: the reader got
		// past it, as one does past a transaction marker, which a read
		// returns no record of.
		if len(open) > 0 {
			for _, k := range ordered() {
				if k.part == r.part && k.from < r.from {
					end(k, open[k])
					delete(open, k)
				}
			}
		}
		k := at{r.part, r.from}
		s := open[k]
		if r.progress {
			if s != nil {
				end(k, s)
				delete(open, k)
			}
			return
		}
		if s == nil {
			s = &stall{start: h.at(r.inv), first: r.inv, committed: true}
			open[k] = s
		}
		s.committed = s.committed && r.committed
		s.end, s.last, s.hw = h.at(r.done), r.done, r.hw
		s.n++
	})
	// Stalls still open when the reads ended.
	for _, k := range ordered() {
		end(k, open[k])
	}
	f.stat("longest-stall-ms", longest/int64(time.Millisecond))
	if reads == 0 {
		f.noEvidence("no poll returned")
	}
	return f.result()
}
