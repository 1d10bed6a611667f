package checker

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// DefaultMetadataLag is the lag AckBelowMinISR allows between the
// controller's ISR and what a broker answers with or leads by, when
// Config.MetadataLagMs is zero: four heartbeats of this project's broker
// (250 ms each), well above what Kafka's brokers take to apply the
// metadata log.
const DefaultMetadataLag = time.Second

// MaxSampleGap is the longest gap between two monitor samples of a
// partition (between their completions) that AckBelowMinISR reads as
// "the ISR stayed below the minimum in between": half of 2 s, the shortest
// replica.lag.time.max.ms this project's tests use. A follower that
// rejoins the ISR is dropped by its leader only after that long without
// catching up, so it stays long enough for a sample to see it; a longer
// gap (the monitor stalled, or its broker did not answer) could hide it.
const MaxSampleGap = time.Second

// notEnoughReplicas starts the error of a send the leader refused for want
// of in-sync replicas: NOT_ENOUGH_REPLICAS (before the append) or
// NOT_ENOUGH_REPLICAS_AFTER_APPEND, Kafka's names.
const notEnoughReplicas = "NOT_ENOUGH_REPLICAS"

// metadataLag is the lag AckBelowMinISR allows, in the history's time unit
// (nanoseconds).
func (c Config) metadataLag() int64 {
	if c.MetadataLagMs > 0 {
		return c.MetadataLagMs * int64(time.Millisecond)
	}
	return int64(DefaultMetadataLag)
}

// AckBelowMinISR finds acks=-1 sends acknowledged while the partition's ISR
// was below min.insync.replicas, as the monitor's samples (history.Monitor:
// leader, leader epoch and ISR from a broker's Metadata answer) saw it.
// Kafka's contract for acks=-1: the leader refuses the write
// (NOT_ENOUGH_REPLICAS) while its ISR has fewer than min.insync.replicas
// members, and, once the high watermark passes it, answers
// NOT_ENOUGH_REPLICAS_AFTER_APPEND instead of success if the ISR shrank
// below them meanwhile. An acknowledgement is therefore a claim that the
// ISR had min.insync.replicas members both when the leader appended the
// record and when it answered. Count is the number of acknowledged sends
// that contradict it; a clean election keeps a write a lone leader
// acknowledged, so no other checker sees this broken promise unless that
// leader also loses its disk.
//
// The samples are a view from outside, taken every monitor interval from
// whichever broker answered, so an instance needs more than one sample
// saying "below". A send acknowledged ok, invoked at ti and completed at
// td, on a partition p, counts only when, with L the allowed metadata lag
// (Config.MetadataLagMs, default DefaultMetadataLag):
//
//  1. some sample of p completed before ti-L, and the first sample of p
//     whose predecessor completed after td+L exists (its view was read
//     after td+L: the monitor reads one Metadata answer per round and
//     samples a partition once per round, so a sample's view is read
//     after the previous sample of its partition completed);
//  2. every sample of p from the last of the first kind to that one
//     completed ok with a leader (not -1), a leader epoch and an ISR
//     that holds the leader and has fewer than min.insync.replicas
//     members, each completed no more than MaxSampleGap after the one
//     before; a sample that failed, never completed or lacks any of
//     these, or a longer gap, breaks the run, and nothing spans a break;
//  3. all of them name the same leader and the same leader epoch;
//  4. the leader refused no send of p for want of in-sync replicas
//     (an error starting NOT_ENOUGH_REPLICAS) from L before the run's
//     first sample to L after its last: a leader that refused one was
//     enforcing the minimum, and its acknowledgements in the run are
//     explained by an ISR that grew back (see below);
//  5. an earlier sample of p saw the same leader and epoch with an ISR at
//     or above the minimum: the ISR fell below it within the epoch, not
//     at the election (see below).
//
// Why a correct broker gives no instance. Let C(t) be the controller's
// ISR at time t (in this project's broker, as in KRaft Kafka, the
// controller is the one writer of the ISR). A leader leads by an ISR the
// controller committed: it asks for every change and applies it once
// accepted (KIP-497), and learns of the changes the controller makes on
// its own (fencing a broker) from metadata. A broker in touch with the
// controller answers Metadata, and leads, by C as of no more than L ago.
// Suppose a correct leader acknowledged the send. It appended the record
// after ti with an ISR at the minimum, and answered before td with an ISR
// still at the minimum (else NOT_ENOUGH_REPLICAS_AFTER_APPEND): C had the
// minimum at some t' with ti-L <= t' <= td. The first sample of rule 1
// shows C as of a time before its completion, so before ti-L <= t'; the
// last one shows C as of a time after its view was read minus L, so after
// td >= t'. Both are below the minimum, so C reached the minimum and fell
// below it again between them, in one leader epoch (rule 3), unseen by
// every sample in between. The legitimate behaviours that look like an
// instance all fall short of that:
//
//   - The ISR shrank after the append and before the answer, or the
//     leader had not yet heard the controller accept a shrink it asked
//     for (the answer lost or slow), or still counted a follower the
//     controller had fenced: the leader's ISR is C as of after ti-L,
//     while the first sample's view is C as of before ti-L. Had C only
//     shrunk, that view would show it at the minimum.
//   - An expansion the monitor had not heard of yet (its broker hears
//     of it up to a heartbeat later): the last sample's view was read
//     more than L after td, so it shows the expansion.
//   - A leader change: the old leader may still think it leads with a
//     larger ISR, and a new leader starts with another ISR. Every leader
//     change bumps the leader epoch, which rule 3 holds fixed, and a
//     deposed leader's followers have moved on, so its high watermark
//     cannot pass a new record.
//   - A partition without a leader, a sample no broker answered, a
//     partition missing from the metadata, or a gap in the samples (the
//     monitor stalled): no view of that time, so rule 2 breaks the run
//     there.
//
// What that leaves is a view that was wrong. An ISR can reach the
// minimum and fall below it again between two samples: a rejoining
// follower has caught up, and its leader drops it only after
// replica.lag.time.max.ms without catching up (longer than MaxSampleGap),
// but the controller may fence it at once, if its heartbeats stopped
// reaching the controller a session timeout before while it still fetched
// from the leader. And a broker cut off from the controller (deaf to every
// change, its view frozen) may go on answering the monitor while the ISR
// grows; simulation shows this one (testdata/corpus/
// real-min-isr-stale-monitor and real-min-isr-frozen-election: the
// monitor kept asking an isolated broker). Either way the ISR was below
// the minimum from the first sample's view until it grew, and a correct
// leader refuses every acks=-1 write it holds or is sent meanwhile (rule
// 4), while min-isr-ignored, which never refuses, keeps every instance.
// No refusal shows only where no write came while the ISR was below. That
// is the rule at an election: the controller hands the new leader the old
// ISR without the old leader, below the minimum whenever it had just the
// minimum, and the old leader, if alive, rejoins within moments, while the
// producers are still finding the new leader; a view frozen in that moment
// shows a long run below the minimum with no refusal in it (rule 5 leaves
// such runs out). Within an epoch the ISR falls below the minimum only by
// a shrink, while the producers write to the leader: it refuses the writes
// it holds when it shrinks and those sent after. What is left is a view
// that went wrong at the very moment the ISR grew, after a shrink within
// the epoch that no write met, and stayed wrong for more than 2L. Sweeps
// of the simulator with every fault kind have shown no instance on a
// correct broker (docs/guarantees.md).
//
// With acks other than -1 the minimum does not apply, and with
// min.insync.replicas=1 an ISR (which holds its leader) is never below
// it: the result is "not checked", which the guarantee model permits. A
// history without monitor samples is "not checked" too, which leaves the
// verdict unknown where the promise holds.
func AckBelowMinISR(h *History) Result {
	f := h.newFinding(AckBelowMinISRName)
	cfg := h.cfg
	switch {
	case cfg.Acks >= 0:
		f.notApplicable("acks=%d: min.insync.replicas binds only acks=-1 writes", cfg.Acks)
		return f.result()
	case cfg.MinInsyncReplicas <= 1:
		f.notApplicable("min.insync.replicas=%d: an ISR always holds its leader, so it is never below", cfg.MinInsyncReplicas)
		return f.result()
	}
	lag := cfg.metadataLag()
	var views int64
	// When each partition's leader refused a send for want of in-sync
	// replicas: completion times, in order.
	refused := make([][]int64, len(h.parts))
	for i := range h.sends.len() {
		if s := h.sends.at(i); s.done >= 0 && s.typ() != outOK && strings.HasPrefix(h.ops.errText(s.done), notEnoughReplicas) {
			refused[s.part()] = append(refused[s.part()], h.at(s.done))
		}
	}
	deaf := h.controllerCut(lag)
	// The runs of each partition: stretches of samples below the minimum
	// under one leader epoch, with the window of time a send must lie in.
	runs := make([][]belowRun, len(h.parts))
	for part, p := range h.parts {
		for i := range p.samples.len() {
			if p.samples.at(i).view {
				views++
			}
		}
		shrank := shrankInEpoch(h, &p.samples, int32(cfg.MinInsyncReplicas))
		for _, r := range belowRuns(h, &p.samples, int32(cfg.MinInsyncReplicas), lag) {
			f.stat("samples-below-min", int64(r.last-r.first+1))
			f.stat("runs-below-min", 1)
			if r.from >= r.to {
				continue
			}
			f.stat("runs-long-enough", 1)
			// Rule 5: the ISR fell below the minimum within the leader's
			// epoch, not at its election.
			if !shrank[r.first] {
				f.stat("runs-from-election", 1)
				continue
			}
			// Rule 4: a leader that refused a send in the run (or within
			// the lag of it) was enforcing the minimum.
			lo, hi := h.at(p.samples.at(int32(r.first)).done)-lag, h.at(p.samples.at(int32(r.last)).done)+lag
			// Rule 6: while a fault window cut the controller off (or
			// killed it), the brokers' views were frozen however long it
			// lasted, and an ISR the controller grew just before stays
			// below the minimum in every sample (found by chaos hunt on
			// the correct broker: the monitor saw isr [1] for 2.3 s of a
			// partition of the controller from every broker while the
			// leader, told of its new ISR [1 2 3] in the answer to its
			// own request, acknowledged acks=-1 writes).
			if overlaps(deaf, lo, hi) {
				f.stat("runs-controller-cut", 1)
				continue
			}
			if k, _ := slices.BinarySearch(refused[part], lo); k < len(refused[part]) && refused[part][k] <= hi {
				f.stat("runs-with-refusals", 1)
				continue
			}
			runs[part] = append(runs[part], r)
		}
	}
	f.stat("samples", views)
	if views == 0 {
		f.noEvidence("the history has no monitor samples (a partition's leader, leader epoch and ISR) to hold the acknowledgements against")
		return f.result()
	}
	var acked int64
	for i := range h.sends.len() {
		s := h.sends.at(i)
		if s.typ() != outOK {
			continue
		}
		acked++
		if s.inv < 0 {
			continue
		}
		ti, td := h.at(s.inv), h.at(s.done)
		rs := runs[s.part()]
		// The last run whose window opens before ti.
		k, _ := slices.BinarySearchFunc(rs, ti, func(r belowRun, t int64) int { return cmpInt(r.from, t) })
		if k--; k < 0 || !(rs[k].from < ti && td < rs[k].to) {
			continue
		}
		if f.full(Unexplained) {
			f.add(Unexplained, "") // counted; its examples are full
			continue
		}
		f.add(Unexplained, h.describeBelow(s, &rs[k], ti, td, lag), h.belowOps(s, &rs[k], ti, td, lag)...)
	}
	f.stat("acknowledged", acked)
	if acked == 0 {
		f.noEvidence("no send was acknowledged")
	}
	return f.result()
}

// full says whether an instance with cause c would no longer be kept as
// an example: describing it is wasted.
func (f *finding) full(c Cause) bool {
	if f.perm.allows(c) {
		return len(f.ok.details) >= MaxExamples
	}
	return len(f.bad.details) >= MaxExamples
}

// belowRun is a maximal run of a partition's samples, first to last
// (indexes into its samples), each with a view below the minimum and the
// same leader and epoch. A send lies in it when from < ti and td < to: the
// first sample completed more than the lag before ti, and the last one's
// view was read more than the lag after td. A run too short for any send
// has from >= to.
type belowRun struct {
	first, last int
	from, to    int64
}

func belowRuns(h *History, ss *table[sample], minISR int32, lag int64) []belowRun {
	at := func(i int) *sample { return ss.at(int32(i)) }
	below := func(s *sample) bool {
		return s.view && int32(len(h.sampleISR(s))) < minISR && slices.Contains(h.sampleISR(s), s.leader)
	}
	var out []belowRun
	for i, n := 0, int(ss.len()); i < n; {
		if !below(at(i)) {
			i++
			continue
		}
		j := i
		for j+1 < n && below(at(j+1)) && at(j+1).leader == at(i).leader && at(j+1).epoch == at(i).epoch &&
			h.at(at(j+1).done)-h.at(at(j).done) <= int64(MaxSampleGap) {
			j++
		}
		// The last sample's view was read after its predecessor (in
		// the run, since j > i) completed; with j == i there is none,
		// and no send fits.
		r := belowRun{first: i, last: j, from: h.at(at(i).done) + lag, to: math.MinInt64}
		if j > i {
			r.to = h.at(at(j-1).done) - lag
		}
		out = append(out, r)
		i = j + 1
	}
	return out
}

// shrankInEpoch says, for each sample, whether one before it saw its
// leader and leader epoch with an ISR at or above the minimum: the views
// back to the last of another leader or epoch (samples without a view
// passed over). One pass, where a look back from each run's first sample
// went over the whole epoch each time.
func shrankInEpoch(h *History, ss *table[sample], minISR int32) []bool {
	out := make([]bool, ss.len())
	// The leader, epoch and ISR seen at or above the minimum of the views
	// since the last of another leader or epoch; none before the first.
	var leader, epoch int32
	seen, atMin := false, false
	for k := range ss.len() {
		s := ss.at(k)
		out[k] = seen && s.leader == leader && s.epoch == epoch && atMin
		if !s.view {
			continue
		}
		if !seen || s.leader != leader || s.epoch != epoch {
			leader, epoch, seen, atMin = s.leader, s.epoch, true, false
		}
		atMin = atMin || int32(len(h.sampleISR(s))) >= minISR
	}
	return out
}

// bracket is the samples of run r that show send [ti, td] below the
// minimum: the last one completed more than the lag before ti, and the
// first one whose predecessor completed more than the lag after td.
func (h *History) bracket(part int32, r *belowRun, ti, td, lag int64) (before, after int) {
	ss := &h.parts[part].samples
	before = r.first
	for k := r.first; k <= r.last && h.at(ss.at(int32(k)).done)+lag < ti; k++ {
		before = k
	}
	after = r.last
	for k := r.first + 1; k <= r.last; k++ {
		if h.at(ss.at(int32(k-1)).done)-lag > td {
			after = k
			break
		}
	}
	return before, after
}

func (h *History) belowOps(s *sendOp, r *belowRun, ti, td, lag int64) []int64 {
	ss := &h.parts[s.part()].samples
	b, a := h.bracket(s.part(), r, ti, td, lag)
	return []int64{h.index(s.done), h.index(ss.at(int32(b)).done), h.index(ss.at(int32(a)).done)}
}

func (h *History) describeBelow(s *sendOp, r *belowRun, ti, td, lag int64) string {
	ss := &h.parts[s.part()].samples
	b, a := h.bracket(s.part(), r, ti, td, lag)
	at := "at an unknown offset"
	if s.offset >= 0 {
		at = fmt.Sprintf("at offset %d", s.offset)
	}
	first := ss.at(int32(b))
	return fmt.Sprintf("value %q acknowledged %s of %s (op %d, invoked at %s, acknowledged at %s) under acks=-1, while every monitor sample from op %d (%s) to op %d (%s), %d samples, saw leader %d (epoch %d) with isr %v, below min.insync.replicas %d",
		h.valStr(s.vid), at, h.key(s.part()), h.index(s.done), secs(ti), secs(td),
		h.index(first.done), secs(h.at(first.done)), h.index(ss.at(int32(a)).done), secs(h.at(ss.at(int32(a)).done)), a-b+1,
		first.leader, first.epoch, h.sampleISR(first), h.cfg.MinInsyncReplicas)
}

// secs formats a history time (ns since the test started) in seconds.
func secs(t int64) string { return fmt.Sprintf("%.3fs", float64(t)/1e9) }

// controllerCut is when fault windows cut the controller off from the
// brokers or stopped it (a window whose targets name the controller),
// each from its start to its stop plus lag: the brokers' views of the
// ISR may be frozen all that time.
func (h *History) controllerCut(lag int64) [][2]int64 {
	var out [][2]int64
	for _, w := range h.faults.windows.Windows() {
		if w.Start.Done < 0 || h.ops.errText(w.Start.Done) != "" || !slices.ContainsFunc(h.ops.op(w.Start.Done).Value.FaultTargets(), func(t string) bool {
			return strings.Contains(t, "controller")
		}) {
			continue
		}
		to := int64(math.MaxInt64)
		if w.Stop.Done >= 0 {
			to = h.at(w.Stop.Done) + lag
		}
		out = append(out, [2]int64{h.at(w.Start.Done), to})
	}
	return out
}

// overlaps says whether [lo, hi] meets one of spans.
func overlaps(spans [][2]int64, lo, hi int64) bool {
	return slices.ContainsFunc(spans, func(s [2]int64) bool { return s[0] <= hi && lo <= s[1] })
}
