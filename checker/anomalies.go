package checker

import (
	"fmt"
	"slices"

	"github.com/chaos-isr/chaos/history"
)

// LostWrite finds acknowledged sends missing from the final read that
// reached past them: an ok send of v at offset o whose partition's final
// read has a high watermark above o and does not hold v at any offset. (If v
// is at another offset, that is a duplicate or inconsistent offset, not a
// loss.) Count is the number of lost values.
//
// Only ok sends are judged: an info or unfinished send may never have
// happened, so its absence proves nothing. A partition without a final read
// cannot be judged, and makes the result unknown unless a loss was found
// elsewhere.
func LostWrite(h *History) Result {
	f := newFinding(LostWriteName)
	unjudged := map[int32]int64{}
	walkLost(h, f.stat, func(part int32) { unjudged[part]++ }, func(s *sendOp, fr *readOp) {
		f.add(fmt.Sprintf("value %q acknowledged at offset %d (op %d) is missing from the final read of %s (op %d), which reached offset %d",
			h.vals[s.vid].str, s.offset, h.index(s.done), h.key(s.part), h.index(fr.done), fr.reach), h.index(s.done))
	})
	for _, part := range sortedParts(unjudged) {
		f.stat("no-final-read", unjudged[part])
		f.note("no final read of %s: %d acknowledged sends to it cannot be judged", h.key(part), unjudged[part])
	}
	return f.result(len(unjudged) > 0)
}

// LostAck is one lost write: an acknowledged send missing from the final
// read of its partition.
type LostAck struct {
	Value     string `json:"value"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Offset is where the broker said it wrote the value.
	Offset int64 `json:"offset"`
	// Op and Time are the acknowledgement's (the ok send's) index and
	// time (ns since the test started).
	Op   int64 `json:"op"`
	Time int64 `json:"time"`
	// FinalRead is the index of the final read that lacks the value, and
	// Reach the offset it read up to.
	FinalRead int64 `json:"final_read"`
	Reach     int64 `json:"reach"`
}

// LostWrites lists every write LostWrite counts, in completion order of
// the acknowledgements, where LostWrite's Result keeps only MaxExamples:
// a report lists them all.
func LostWrites(h *History) []LostAck {
	var out []LostAck
	walkLost(h, func(string, int64) {}, func(int32) {}, func(s *sendOp, fr *readOp) {
		k := h.key(s.part)
		done := &h.Ops[s.done]
		out = append(out, LostAck{Value: h.vals[s.vid].str, Topic: k.Topic, Partition: k.Partition, Offset: s.offset,
			Op: done.Index, Time: done.Time, FinalRead: h.index(fr.done), Reach: fr.reach})
	})
	return out
}

// walkLost finds the lost writes of LostWrite (its doc says which) and
// calls lost once per lost value, unjudged per ok send of a partition
// without a final read, and stat with what it judged.
func walkLost(h *History, stat func(string, int64), unjudged func(part int32), lost func(s *sendOp, fr *readOp)) {
	seen := map[int32]bool{}
	for i := range h.sends {
		s := &h.sends[i]
		if s.typ != history.OK {
			continue
		}
		stat("acknowledged", 1)
		if s.offset < 0 {
			stat("acknowledged-without-offset", 1)
			continue
		}
		p := h.parts[s.part]
		if p.final < 0 {
			unjudged(s.part)
			continue
		}
		fr := &h.finals[p.final]
		if s.offset >= fr.reach {
			stat("beyond-final-read", 1)
			continue
		}
		stat("judged", 1)
		if h.vals[s.vid].flags&inOwnFinal != 0 || seen[s.vid] {
			continue
		}
		seen[s.vid] = true // a retried value acknowledged twice is lost once
		lost(s, fr)
	}
}

// Unseen finds acknowledged sends whose value no poll and no final read
// ever returned: lost, or the final read did not get that far. Count is the
// number of such values. It is invalid if some of them belong to a
// partition that had a final read (which should have returned them), and
// unknown if all of them belong to partitions without one.
func Unseen(h *History) Result {
	f := newFinding(UnseenName)
	unjudged := map[int32]int64{}
	unseen := map[int32]bool{}
	for i := range h.sends {
		s := &h.sends[i]
		if s.typ != history.OK {
			continue
		}
		val := &h.vals[s.vid]
		if val.flags&readByClient != 0 || unseen[s.vid] {
			continue
		}
		unseen[s.vid] = true
		p := h.parts[s.part]
		at := "at an unknown offset"
		if s.offset >= 0 {
			at = fmt.Sprintf("at offset %d", s.offset)
		}
		if p.final < 0 {
			unjudged[s.part]++
			continue
		}
		fr := &h.finals[p.final]
		f.add(fmt.Sprintf("value %q acknowledged %s of %s (op %d) was never read; the final read (op %d) reached offset %d",
			val.str, at, p.key, h.index(s.done), h.index(fr.done), fr.reach), h.index(s.done))
	}
	for _, part := range sortedParts(unjudged) {
		f.count += int(unjudged[part])
		f.stat("unseen-without-final-read", unjudged[part])
		f.note("%d acknowledged values of %s were never read, and %s had no final read", unjudged[part], h.key(part), h.key(part))
	}
	r := f.result(false)
	if r.Valid == Invalid && f.stats["unseen-without-final-read"] == int64(f.count) {
		r.Valid = Unknown
	}
	return r
}

// Duplicate finds values observed at more than one offset (or in more than
// one partition), across acks, polls and final reads. Count is the number
// of such values.
func Duplicate(h *History) Result {
	f := newFinding(DuplicateName)
	seen := map[int32]bool{}
	for _, d := range h.dups {
		val := &h.vals[d.vid]
		if seen[d.vid] {
			continue
		}
		seen[d.vid] = true
		f.add(fmt.Sprintf("value %q is at offset %d of %s (op %d) and at offset %d of %s (op %d)",
			val.str, val.obsOff, h.key(val.obsPart), h.index(val.obsPos), d.offset, h.key(d.part), h.index(d.pos)),
			h.index(val.obsPos), h.index(d.pos))
	}
	return f.result(false)
}

// InconsistentOffsets finds offsets that reads (polls and final reads)
// returned with different values: a consumed record later changed. Count
// is the number of such offsets.
//
// Acks are left out on purpose. GUARANTEES.md defines the anomaly by reads,
// and its matrix promises it absent for acks=1 under clean election, where
// an acknowledged but uncommitted record may legitimately be truncated and
// its offset reused. The acked value's fate is judged by lost-write,
// duplicate and nonlinearizable-send; the number of offsets where an ack
// disagrees with a read is reported as the statistic "ack-conflicts".
func InconsistentOffsets(h *History) Result {
	f := newFinding(InconsistentOffsetsName)
	type at struct {
		part int32
		off  int64
	}
	seen := map[at]bool{}
	for _, c := range h.conflicts {
		k := at{c.part, c.offset}
		if seen[k] {
			continue
		}
		seen[k] = true
		s := h.parts[c.part].obs.lookup(c.offset)
		first := &h.vals[s.readVid-1]
		f.add(fmt.Sprintf("offset %d of %s was read as %q (op %d) and as %q (op %d)",
			c.offset, h.key(c.part), first.str, h.index(s.readPos), h.vals[c.vid].str, h.index(c.pos)),
			h.index(s.readPos), h.index(c.pos))
	}
	var ack int64
	for _, p := range h.parts {
		ack += p.ackConflicts
	}
	if ack > 0 {
		f.stat("ack-conflicts", ack)
	}
	return f.result(false)
}

// NonmonotonicSend finds, for one process and one partition, an ok send
// that completed after an earlier ok send of that process but landed at an
// offset not above it. Count is the number of such sends.
func NonmonotonicSend(h *History) Result {
	f := newFinding(NonmonotonicSendName)
	type last struct {
		offset int64
		pos    int32
	}
	prev := map[int64]last{}
	for i := range h.sends {
		s := &h.sends[i]
		if s.typ != history.OK || s.offset < 0 {
			continue
		}
		k := int64(s.process)<<32 | int64(uint32(s.part))
		p, ok := prev[k]
		if ok && s.offset <= p.offset {
			f.add(fmt.Sprintf("process %d's send of %q landed at offset %d of %s (op %d), after its earlier send landed at offset %d (op %d)",
				s.process, h.vals[s.vid].str, s.offset, h.key(s.part), h.index(s.done), p.offset, h.index(p.pos)),
				h.index(p.pos), h.index(s.done))
			continue
		}
		prev[k] = last{s.offset, s.done}
	}
	return f.result(false)
}

// PollSkip finds a consumer (process) skipping offsets that exist: for one
// process and partition, a record at offset o when the consumer expected
// offset e < o (after its previous record, or at the poll's from) while some
// offset in [e, o) exists, that is, was observed by any ack or read of the
// partition. Gaps between a poll's from and its first record, inside one
// poll, and between consecutive polls all count. Count is the number of
// gaps.
func PollSkip(h *History) Result {
	f := newFinding(PollSkipName)
	walkPolls(h, func(r *readOp, from, to int64, n int, prev int32) {
		where := "after its previous poll"
		if prev < 0 {
			where = "from the poll's start"
		}
		f.add(fmt.Sprintf("process %d's poll of %s (op %d) skipped %d existing offsets in [%d, %d) %s",
			r.process, h.key(r.part), h.index(r.done), n, from, to, where), h.index(r.done))
	}, nil)
	return f.result(false)
}

// NonmonotonicPoll finds a consumer going backwards: for one process and
// partition, a poll returning an offset at or below one it already received,
// or a poll whose records are not in strictly increasing offset order.
// Count is the number of polls that did so.
func NonmonotonicPoll(h *History) Result {
	f := newFinding(NonmonotonicPollName)
	walkPolls(h, nil, func(r *readOp, off, after int64, internal bool, prev int32) {
		if internal {
			f.add(fmt.Sprintf("process %d's poll of %s (op %d) returned offset %d after offset %d in the same poll",
				r.process, h.key(r.part), h.index(r.done), off, after), h.index(r.done))
			return
		}
		f.add(fmt.Sprintf("process %d's poll of %s (op %d) returned offset %d, but it had already received offset %d (op %d)",
			r.process, h.key(r.part), h.index(r.done), off, after, h.index(prev)), h.index(prev), h.index(r.done))
	})
	return f.result(false)
}

// walkPolls follows each consumer's position through its ok polls, in
// completion order, and reports gaps over existing offsets (skip) and
// records at or below the position (back). Either callback may be nil. A
// poll reports at most one backwards step: one truncation or re-delivery
// makes many records go back, and one instance says it.
func walkPolls(h *History,
	skip func(r *readOp, from, to int64, n int, prev int32),
	back func(r *readOp, off, after int64, internal bool, prev int32)) {
	type cursor struct {
		next int64 // the offset expected next; -1 before the first record or from
		pos  int32 // the last poll that returned records, -1
	}
	cursors := map[int64]*cursor{}
	for i := range h.polls {
		r := &h.polls[i]
		k := int64(r.process)<<32 | int64(uint32(r.part))
		c := cursors[k]
		if c == nil {
			c = &cursor{next: r.from, pos: -1}
			cursors[k] = c
		}
		if c.next < 0 {
			c.next = r.from
		}
		wentBack := false
		for j, rec := range r.recs {
			switch {
			case j > 0 && rec.Offset <= r.recs[j-1].Offset:
				if back != nil && !wentBack {
					back(r, rec.Offset, r.recs[j-1].Offset, true, r.done)
				}
				wentBack = true
				continue
			case c.next >= 0 && rec.Offset < c.next:
				if back != nil && !wentBack {
					back(r, rec.Offset, c.next-1, false, c.pos)
				}
				wentBack = true
				continue
			case c.next >= 0 && rec.Offset > c.next && skip != nil:
				if n := h.existing(r.part, c.next, rec.Offset); n > 0 {
					skip(r, c.next, rec.Offset, n, c.pos)
				}
			}
			c.next = rec.Offset + 1
		}
		if len(r.recs) > 0 {
			c.pos = r.done
		}
	}
}

// AbortedRead finds values whose sends all definitely failed but which a
// read (poll, final read or replica read) returned. Count is the number of
// such values.
func AbortedRead(h *History) Result {
	f := newFinding(AbortedReadName)
	for vid := range h.vals {
		val := &h.vals[vid]
		if val.flags&sentFail == 0 || val.flags&(sentOK|sentInfo|sentOpen) != 0 {
			continue
		}
		pos, by := val.readPos, "a client read"
		if pos < 0 {
			pos, by = val.repPos, "a replica read"
		}
		if pos < 0 {
			continue
		}
		f.add(fmt.Sprintf("value %q, whose send failed (op %d), was returned by %s (op %d)", val.str, h.index(val.failPos), by, h.index(pos)),
			h.index(val.failPos), h.index(pos))
	}
	return f.result(false)
}

// GarbageRead finds values that a read returned but no send ever carried
// (corruption, or a record from outside the test). Count is the number of
// such values.
func GarbageRead(h *History) Result {
	f := newFinding(GarbageReadName)
	for vid := range h.vals {
		val := &h.vals[vid]
		if val.sent() {
			continue
		}
		pos, by := val.readPos, "a client read"
		if pos < 0 {
			pos, by = val.repPos, "a replica read"
		}
		f.add(fmt.Sprintf("value %q was returned by %s (op %d), but no operation sent it", val.str, by, h.index(pos)), h.index(pos))
	}
	return f.result(false)
}

// ReplicaDivergence compares the replica reads of each partition (the
// last read of each broker) pairwise: below the smaller of the two
// replicas' high watermarks, both must hold the same records. Count is the
// number of (pair, offset) differences.
func ReplicaDivergence(h *History) Result {
	f := newFinding(ReplicaDivergenceName)
	byPart := map[int32][]*readOp{}
	for i := range h.replicas {
		r := &h.replicas[i]
		rs := byPart[r.part]
		replaced := false
		for j, o := range rs {
			if o.broker == r.broker {
				rs[j], replaced = r, true
			}
		}
		if !replaced {
			byPart[r.part] = append(rs, r)
		}
	}
	f.stat("replica-reads", int64(len(h.replicas)))
	for _, part := range sortedParts(byPart) {
		rs := byPart[part]
		for i := 0; i < len(rs); i++ {
			for j := i + 1; j < len(rs); j++ {
				a, b := rs[i], rs[j]
				if a.hw < 0 || b.hw < 0 {
					f.note("replica reads op %d and op %d of %s: a high watermark is missing, not compared", h.index(a.done), h.index(b.done), h.key(part))
					continue
				}
				f.stat("pairs-compared", 1)
				n, first, va, vb := diverge(sortedRecs(a.recs), sortedRecs(b.recs), min(a.hw, b.hw))
				if n == 0 {
					continue
				}
				f.addN(n, fmt.Sprintf("replicas %d (op %d) and %d (op %d) of %s differ at %d offsets below their common high watermark %d, first at offset %d: %s vs %s",
					a.broker, h.index(a.done), b.broker, h.index(b.done), h.key(part), n, min(a.hw, b.hw), first, va, vb),
					h.index(a.done), h.index(b.done))
			}
		}
	}
	return f.result(false)
}

// diverge counts the offsets below limit where two logs sorted by offset
// differ (one lacks a record the other has, or the values differ) and
// describes the first difference.
func diverge(a, b []history.Record, limit int64) (n int, first int64, va, vb string) {
	i, j := 0, 0
	for {
		oa, ob := limit, limit
		if i < len(a) {
			oa = min(a[i].Offset, limit)
		}
		if j < len(b) {
			ob = min(b[j].Offset, limit)
		}
		if oa >= limit && ob >= limit {
			return
		}
		var x, y *history.Record
		switch {
		case oa == ob:
			x, y = &a[i], &b[j]
			i++
			j++
			if x.Value == y.Value {
				continue
			}
		case oa < ob:
			x = &a[i]
			i++
		default:
			y = &b[j]
			j++
		}
		if n == 0 {
			first, va, vb = min(oa, ob), describeRecord(x), describeRecord(y)
		}
		n++
	}
}

func describeRecord(r *history.Record) string {
	if r == nil {
		return "nothing"
	}
	return fmt.Sprintf("%q", r.Value)
}

// sortedRecs returns the records in offset order: a log read is sorted
// already, but a foreign history need not be.
func sortedRecs(recs []history.Record) []history.Record {
	less := func(x, y history.Record) int { return cmpInt(x.Offset, y.Offset) }
	if slices.IsSortedFunc(recs, less) {
		return recs
	}
	out := slices.Clone(recs)
	slices.SortStableFunc(out, less)
	return out
}

// sortedParts returns a map's partition keys in order, so details come out
// deterministically.
func sortedParts[V any](m map[int32]V) []int32 {
	ks := make([]int32, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
