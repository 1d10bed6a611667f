package checker

import (
	"fmt"
	"iter"
	"slices"
)

// LostWrite finds writes that are gone: a value known to have been
// written, because its send was acknowledged (ok, with an offset) or a
// consumer read it, whose record the end of the history shows is no longer
// in the log. It is gone when the final read of its partition reached past
// its offset without it, or when every replica's log was read and none
// holds it (the log was cut below it). Count is the number of lost values.
//
// Each loss is judged by its cause: a record that was committed (acked
// under acks=-1, or read by a consumer, who reads only below the high
// watermark) is a committed truncation; one acknowledged under acks=0/1
// and never read is an uncommitted one, which acks=1 permits.
//
// An info or unfinished send nobody read may never have happened, so its
// absence proves nothing; nor does the absence of a value whose sends all
// failed (aborted-read judges that). A value the final phase did not read
// far enough to judge (no final read of its partition, or its offset
// beyond the final read while a replica was not read) is undecided, which
// makes the result unknown if its loss would be forbidden.
func LostWrite(h *History) Result {
	f := h.newFinding(LostWriteName)
	walkLost(h, f, func(w lostValue) {
		f.add(w.cause, w.describe(h), h.index(w.pos))
	})
	return f.result()
}

// lostValue is one value LostWrite judged gone.
type lostValue struct {
	vid   int32
	pos   int32 // the ack, or the first client read
	acked bool
	cause Cause
}

func (w lostValue) describe(h *History) string {
	v := h.vals.at(w.vid)
	p := h.parts[v.home()]
	how := fmt.Sprintf("acknowledged at offset %d (op %d)", v.obsOff, h.index(w.pos))
	switch {
	case !w.acked:
		how = fmt.Sprintf("read by a consumer at offset %d (op %d)", v.obsOff, h.index(w.pos))
	case v.flags&readByClient != 0:
		how = fmt.Sprintf("acknowledged at offset %d (op %d) and read by a consumer (op %d)", v.obsOff, h.index(w.pos), h.index(v.readPos))
	}
	fr := h.finals.at(p.final)
	where := fmt.Sprintf("the final read of %s (op %d), which reached offset %d", p.key, h.index(fr.done), fr.reach())
	if v.obsOff >= fr.reach() {
		where += ", nor any replica's log"
	}
	return fmt.Sprintf("value %q %s is missing from %s", h.strs.string(&v.str), how, where)
}

// LostAck is one lost write: a value known to have been written (an
// acknowledged send, or a record a consumer read) whose record is gone.
type LostAck struct {
	Value     string `json:"value"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Offset is where the broker said it wrote the value, or where a
	// consumer read it.
	Offset int64 `json:"offset"`
	// Op and Time are the acknowledgement's (or the first read's) index
	// and time (ns since the test started).
	Op   int64 `json:"op"`
	Time int64 `json:"time"`
	// Acked: the send was acknowledged; else only a consumer saw it.
	Acked bool `json:"acked"`
	// Cause is how the guarantee model judges the loss.
	Cause Cause `json:"cause"`
	// FinalRead is the index of the final read that lacks the value, and
	// Reach the offset it read up to.
	FinalRead int64 `json:"final_read"`
	Reach     int64 `json:"reach"`
}

// LostWrites lists every write LostWrite counts, in history order of their
// acknowledgements (or first reads), where LostWrite's Result keeps only
// MaxExamples: a report lists them all.
func LostWrites(h *History) []LostAck {
	var out []LostAck
	walkLost(h, h.newFinding(LostWriteName), func(w lostValue) {
		v := h.vals.at(w.vid)
		p := h.parts[v.home()]
		fr := h.finals.at(p.final)
		op := h.ops.op(w.pos)
		out = append(out, LostAck{Value: h.strs.string(&v.str), Topic: p.key.Topic, Partition: p.key.Partition, Offset: v.obsOff,
			Op: op.Index, Time: op.Time, Acked: w.acked, Cause: w.cause, FinalRead: h.index(fr.done), Reach: fr.reach()})
	})
	slices.SortStableFunc(out, func(a, b LostAck) int { return cmpInt(a.Op, b.Op) })
	return out
}

// walkLost finds the lost values of LostWrite (its doc says which) and
// calls lost once per lost value, in history order of the ack or read that
// made it known; it tells f what it judged and left undecided.
func walkLost(h *History, f *finding, lost func(w lostValue)) {
	// A bit a value: a bool was 39 MB of a day-long run's heap.
	judged := make([]uint64, (h.vals.len()+63)/64)
	isJudged := func(vid int32) bool { return judged[vid/64]&(1<<(vid%64)) != 0 }
	// Counted here and told f once: a map's update for each value was
	// 2% of the checks' time.
	var n int64
	consider := func(vid int32, pos int32, acked bool) {
		if isJudged(vid) {
			return
		}
		judged[vid/64] |= 1 << (vid % 64)
		v := h.vals.at(vid)
		n++
		switch v.fate {
		case gone:
			lost(lostValue{vid: vid, pos: pos, acked: acked, cause: h.truncation(vid)})
		case undecided:
			f.undecide(h.truncation(vid), "undecided", 1)
			if h.parts[v.home()].final < 0 {
				f.stat("no-final-read", 1)
			}
		}
	}
	var acked, read int64
	for i := range h.sends.len() {
		s := h.sends.at(i)
		if s.typ() != outOK {
			continue
		}
		acked++
		if s.offset < 0 {
			f.stat("acknowledged-without-offset", 1)
			continue
		}
		consider(s.vid, s.done, true)
	}
	for vid := range h.vals.len() {
		v := h.vals.at(vid)
		if v.flags&readByClient == 0 || isJudged(vid) || !v.sent() || v.onlyFailed() {
			continue
		}
		read++
		consider(int32(vid), v.readPos, false)
	}
	if n > 0 {
		f.stat("judged", n)
	}
	f.stat("acknowledged", acked)
	f.stat("read-not-acknowledged", read)
	if acked == 0 && h.polls.len() == 0 {
		f.noEvidence("nothing was acknowledged and no consumer read anything")
	}
	if n := f.stats["undecided"]; n > 0 {
		f.note("%d written values could not be judged: the final phase did not read far enough (or at all) to tell whether they are still in the log", n)
	}
}

// Unseen finds acknowledged sends whose value no poll and no final read
// ever returned, and which the end of the history does not show to be in
// the log: lost (gone), or beyond what the final phase read (undecided,
// which makes the result unknown where the loss would be forbidden). Count
// is the number of unseen values that are gone.
func Unseen(h *History) Result {
	f := h.newFinding(UnseenName)
	// The values no client read, which are few but where they are lost:
	// a slice of every value's was 39 MB of a day-long run's heap.
	seen := map[int32]bool{}
	var acked int64
	for i := range h.sends.len() {
		s := h.sends.at(i)
		if s.typ() != outOK {
			continue
		}
		acked++
		val := h.vals.at(s.vid)
		if val.flags&readByClient != 0 || seen[s.vid] {
			continue
		}
		seen[s.vid] = true
		at := "at an unknown offset"
		if s.offset >= 0 {
			at = fmt.Sprintf("at offset %d", s.offset)
		}
		switch val.fate {
		case gone:
			// The fate is its home partition's (one a retry sent
			// elsewhere too has its first send's), whose final read
			// decided it.
			fr := h.finals.at(h.parts[val.home()].final)
			which := "the final read"
			if val.home() != s.part() {
				which = fmt.Sprintf("the final read of %s, where it was first sent,", h.key(val.home()))
			}
			f.add(h.truncation(s.vid), fmt.Sprintf("value %q acknowledged %s of %s (op %d) was never read; %s (op %d) reached offset %d",
				h.strs.string(&val.str), at, h.key(s.part()), h.index(s.done), which, h.index(fr.done), fr.reach()), h.index(s.done))
		case undecided, fateNone:
			f.undecide(h.truncation(s.vid), "unseen-undecided", 1)
		}
	}
	switch {
	case acked == 0 && h.cfg.Acks == 0:
		f.notApplicable("acks=0: no send is acknowledged, so none can be unseen; records that were read and then lost are lost-write's")
	case acked == 0:
		f.noEvidence("no send was acknowledged")
	default:
		if n := f.stats["unseen-undecided"]; n > 0 {
			f.note("%d acknowledged values were never read, and the final phase did not read far enough (or at all) to tell whether they are lost", n)
		}
	}
	return f.result()
}

// Duplicate finds values observed at more than one offset (or in more than
// one partition), across acks, polls and final reads. Count is the number
// of such values. No truncation moves a record to another offset, so only
// client retries explain one.
func Duplicate(h *History) Result {
	f := h.newFinding(DuplicateName)
	seen := map[int32]bool{}
	for _, d := range h.dups {
		val := h.vals.at(d.vid)
		if seen[d.vid] {
			continue
		}
		seen[d.vid] = true
		f.add(Unexplained, fmt.Sprintf("value %q is at offset %d of %s (op %d) and at offset %d of %s (op %d)",
			h.strs.string(&val.str), val.obsOff, h.key(val.obsPart), h.index(val.obsPos), d.offset, h.key(d.part), h.index(d.pos)),
			h.index(val.obsPos), h.index(d.pos))
	}
	if !h.anyObserved() {
		f.noEvidence("no send was acknowledged with an offset and no read returned a record")
	}
	return f.result()
}

// anyObserved: some ack or client read put a value at an offset.
func (h *History) anyObserved() bool {
	for _, p := range h.parts {
		if p.exist.len() > 0 {
			return true
		}
	}
	return false
}

// clientRecords: some poll or final read returned a record.
func (h *History) clientRecords() bool {
	for _, rs := range []*table[readOp]{&h.polls, &h.finals} {
		for i := range rs.len() {
			if rs.at(i).recs.len() > 0 {
				return true
			}
		}
	}
	return false
}

// explainFor is explainAs for an instance of f: where a value a retry may
// have written twice makes two readings possible, the one f permits.
func (h *History) explainFor(f *finding, vids ...int32) (Cause, bool) {
	c, decided := h.explainAs(false, vids...)
	if f.perm.allows(c) || !h.retriesDuplicate() {
		return c, decided
	}
	if c2, d2 := h.explainAs(true, vids...); f.perm.allows(c2) {
		return c2, d2
	}
	return c, decided
}

// explainAs tells what explains an instance that involves the records of
// vids, any of which a truncation could have removed: the mildest cause
// among those that are gone; Unexplained when two or more of them are
// still in the log (no truncation removed what the instance needs
// removed), or when all are. decided is false when the history cannot
// tell (a record's fate is undecided and none is gone); c is then the
// cause it would have.
//
// Under retries without idempotence a value may have been written twice:
// a copy that survives does not tell whether the record the instance is
// about is that copy or another, truncated. Both readings are then
// possible, and the instance is judged by the one f's configuration
// permits, if either is (explainFor).
//
// With twiceGone, a survivor observed at two offsets counts as gone (the
// reading that a retry's copy survives and the record the instance is
// about was truncated).
func (h *History) explainAs(twiceGone bool, vids ...int32) (c Cause, decided bool) {
	survivors := 0
	var goneC, openC Cause
	milder := func(a, b Cause) Cause {
		if a == "" || (a == CommittedTruncation && b == UncommittedTruncation) {
			return b
		}
		return a
	}
	for _, vid := range vids {
		switch v := h.vals.at(vid); v.fate {
		case survives:
			if twiceGone && v.flags&observedTwice != 0 {
				// A retry wrote the value twice: the copy in the final
				// read survives, but the record the instance is about may
				// be the other one, truncated (a committed record
				// truncated under unclean election, then its retry
				// written again lower down).
				goneC = milder(goneC, h.goneCopy(vid))
				continue
			}
			survivors++
		case gone:
			goneC = milder(goneC, h.truncation(vid))
		default:
			openC = milder(openC, h.truncation(vid))
		}
	}
	switch {
	case survivors >= 2:
		return Unexplained, true
	case goneC != "":
		return goneC, true
	case openC == "":
		return Unexplained, true
	}
	return openC, false
}

// goneCopy is the cause of the truncation of a value's copy other than
// the one that survives (explainAs's reading that a retry wrote it twice):
// under acks=0 and 1, committed only if a client read returned the value
// at an offset other than where it survives (under acks=-1 as any
// truncation of the value: truncation). The survivor's
// own sightings (the final read holds it) say nothing of the other copy:
// an acks=1 retry whose first attempt was written and read, and whose
// second was acknowledged at another offset and then truncated, lost only
// an uncommitted copy.
func (h *History) goneCopy(vid int32) Cause {
	if h.cfg.Acks < 0 {
		// Every ack commits, and an offset's slot keeps only its first
		// ack: any sighting may have been the gone copy's.
		return h.truncation(vid)
	}
	c := h.copiesOf(vid)
	if c == nil || c.survivor.part < 0 {
		return h.truncation(vid)
	}
	for _, o := range c.read {
		if o != c.survivor {
			return CommittedTruncation // a client read it there
		}
	}
	return UncommittedTruncation
}

// copySightings are where a value seen at two offsets is: the offset a
// final read holds it at (part -1 if none does), and the offsets a client
// read returned it at.
type copySightings struct {
	survivor observation
	read     []observation
}

// copiesOf indexes, on first use, the values seen at two offsets: one pass
// over the final reads, the duplicates and the conflicts, rather than one
// per instance judged.
func (h *History) copiesOf(vid int32) *copySightings {
	h.copiesOnce.Do(func() {
		h.copies = map[int32]*copySightings{}
		at := func(v int32) *copySightings {
			c := h.copies[v]
			if c == nil {
				c = &copySightings{survivor: observation{part: -1}}
				h.copies[v] = c
			}
			return c
		}
		for _, p := range h.parts {
			if p.final < 0 {
				continue
			}
			for rec := range h.readRecs(h.finals.at(p.final)) {
				if v := rec.vid; h.vals.at(v).flags&observedTwice != 0 && at(v).survivor.part < 0 {
					at(v).survivor = observation{part: h.finals.at(p.final).part, offset: rec.Offset}
				}
			}
		}
		read := func(v, part int32, off int64) {
			if s := h.parts[part].obs.lookup(off); s != nil && s.readVid == v+1 {
				at(v).read = append(at(v).read, observation{part: part, offset: off})
			}
		}
		for v := range h.vals.len() {
			if val := h.vals.at(v); val.flags&observedTwice != 0 && val.obsPos >= 0 {
				read(int32(v), val.obsPart, val.obsOff)
			}
		}
		for _, o := range h.dups {
			read(o.vid, o.part, o.offset)
		}
		for _, o := range h.conflicts {
			at(o.vid).read = append(at(o.vid).read, observation{part: o.part, offset: o.offset})
		}
	})
	return h.copies[vid]
}

// retriesDuplicate: a value may be written twice, at two offsets, as the
// guarantee model permits duplicates (retries without idempotence, or an
// idempotent producer's retry of a batch truncated with its producer
// state).
func (h *History) retriesDuplicate() bool { return h.model[DuplicateName].allows(Unexplained) }

// addExplained adds an instance whose cause explain gave: an undecided one
// is counted under the cause it would have, and leaves the result open if
// that cause is permitted but an unexplained instance would not be.
func (f *finding) addExplained(c Cause, decided bool, detail string, ops ...int64) {
	f.add(c, detail, ops...)
	if !decided {
		f.stat("cause-undecided", 1)
		if f.perm.allows(c) && !f.perm.allows(Unexplained) {
			f.undecided++
		}
	}
}

// InconsistentOffsets finds offsets that reads (polls and final reads)
// returned with different values: a consumed record later changed. Count
// is the number of such offsets. Consumers read only committed records,
// so an instance is a committed record truncated and its offset reused,
// unless two of the values read there are still in the log (then no
// truncation explains it).
//
// Acks are left out on purpose. The anomaly is defined by reads, and the
// guarantee model promises it absent for acks=1 under clean election,
// where an acknowledged but uncommitted record may legitimately be
// truncated and its offset reused. The acked value's fate is judged by
// lost-write, duplicate and nonlinearizable-send; the number of offsets
// where an ack disagrees with a read is reported as the statistic
// "ack-conflicts".
func InconsistentOffsets(h *History) Result {
	f := h.newFinding(InconsistentOffsetsName)
	type at struct {
		part int32
		off  int64
	}
	// Every value read at each conflicting offset, the first read first.
	var order []at
	values := map[at][]int32{}
	// firstPos: the op that first read the offset; second: the op that
	// first read a second value there (the first conflict listed at it).
	firstPos, second := map[at]int32{}, map[at]int32{}
	for _, c := range h.conflicts {
		k := at{c.part, c.offset}
		if _, ok := values[k]; !ok {
			s := h.parts[c.part].obs.lookup(c.offset)
			values[k] = []int32{s.readVid - 1}
			firstPos[k], second[k] = s.readPos, c.pos
			order = append(order, k)
		}
		if !slices.Contains(values[k], c.vid) {
			values[k] = append(values[k], c.vid)
		}
	}
	for _, k := range order {
		vids := values[k]
		c, decided := h.explainFor(f, vids...)
		f.addExplained(c, decided, fmt.Sprintf("offset %d of %s was read as %q (op %d) and as %q (op %d)",
			k.off, h.key(k.part), h.valStr(vids[0]), h.index(firstPos[k]), h.valStr(vids[1]), h.index(second[k])),
			h.index(firstPos[k]), h.index(second[k]))
	}
	var ack int64
	for _, p := range h.parts {
		ack += p.ackConflicts
	}
	if ack > 0 {
		f.stat("ack-conflicts", ack)
	}
	if !h.clientRecords() {
		f.noEvidence("no poll or final read returned a record")
	}
	return f.result()
}

// NonmonotonicSend finds, for one producer and one partition, an ok send
// that came after an earlier ok send of that producer but landed at an
// offset not above it. Count is the number of such sends. A producer is a
// process, whose sends completed one after another; or, where the sends
// name one, a producer session with several requests in flight, whose
// sends are in the order they were invoked (the order of their sequence
// numbers). With one request in flight, or an idempotent producer, only a
// truncation explains one: the earlier record (or the later) was
// truncated and the log end moved back; if both are still in the log,
// nothing does.
func NonmonotonicSend(h *History) Result {
	f := h.newFinding(NonmonotonicSendName)
	type last struct {
		offset int64
		pos    int32
		vid    int32
	}
	// A producer is a process's (or a session's) sends to a partition,
	// its id and the partition in one word: a map of a struct key
	// hashed each with the general hash, 4% of the checks' time.
	type producer = uint64
	of := func(id, part int32) producer { return uint64(uint32(id))<<32 | uint64(uint32(part)) }
	byProcess, bySession := map[producer]last{}, map[producer]last{}
	pairs := int64(0)
	for i := range h.sendsInProducerOrder() {
		s := h.sends.at(i)
		if s.typ() != outOK || s.offset < 0 {
			continue
		}
		k, prev := of(h.sendProcess(s), s.part()), byProcess
		id, session := h.sessions[i]
		if session {
			k, prev = of(id, s.part()), bySession
		}
		p, ok := prev[k]
		if ok && p.pos == s.done && h.isTxn(s.done) {
			// Two sends of one transaction: their order is
			// int-nonmonotonic-send's to judge; the next operation's
			// sends are held against the later one, as Jepsen's
			// checker holds them against an operation's last send.
			prev[k] = last{s.offset, s.done, s.vid}
			continue
		}
		if ok {
			pairs++
		}
		if ok && s.offset <= p.offset {
			// Named only here: a history has millions of sends.
			who := fmt.Sprintf("process %d", h.sendProcess(s))
			if session {
				who = fmt.Sprintf("producer %d (process %d)", id, h.sendProcess(s))
			}
			c, decided := h.explainFor(f, p.vid, s.vid)
			f.addExplained(c, decided, fmt.Sprintf("%s's send of %q landed at offset %d of %s (op %d), after its earlier send of %q landed at offset %d (op %d)",
				who, h.valStr(s.vid), s.offset, h.key(s.part()), h.index(s.done), h.valStr(p.vid), p.offset, h.index(p.pos)),
				h.index(p.pos), h.index(s.done))
			continue
		}
		prev[k] = last{s.offset, s.done, s.vid}
	}
	switch {
	case pairs == 0 && h.cfg.Acks == 0:
		f.notApplicable("acks=0: no send is acknowledged with an offset, so a producer's sends have no order to compare")
	case pairs == 0:
		f.noEvidence("no process had two acknowledged sends to one partition")
	}
	return f.result()
}

// sendsInProducerOrder yields the sends' indexes in the order each
// producer made them: completion order, but a session's sends in
// invocation order. The order across producers does not matter. Only a
// session's are listed (to sort them): a list of every send was 4 bytes a
// send of the heap (160 MB at 24 hours).
func (h *History) sendsInProducerOrder() iter.Seq[int32] {
	return func(yield func(int32) bool) {
		var sess []int32
		for i := range h.sends.len() {
			if _, ok := h.sessions[i]; ok {
				sess = append(sess, i)
				continue
			}
			if !yield(i) {
				return
			}
		}
		at := func(i int32) int32 {
			if s := h.sends.at(i); s.inv >= 0 {
				return s.inv
			}
			return h.sends.at(i).done
		}
		slices.SortStableFunc(sess, func(a, b int32) int { return int(at(a)) - int(at(b)) })
		for _, i := range sess {
			if !yield(i) {
				return
			}
		}
	}
}

// PollSkip finds a consumer (process) skipping offsets that exist: for one
// process and partition, a record at offset o when the consumer expected
// offset e < o (after its previous record, or at the poll's from) while some
// offset in [e, o) exists, that is, was observed by any ack or read of the
// partition. Gaps between a poll's from and its first record, inside one
// poll, and between consecutive polls all count. Count is the number of
// gaps.
func PollSkip(h *History) Result {
	f := h.newFinding(PollSkipName)
	walkPolls(h, func(r *readOp, from, to int64, n int, prev int32) {
		where := "after its previous poll"
		if prev < 0 {
			where = "from the poll's start"
		}
		f.add(CommittedTruncation, fmt.Sprintf("process %d's poll of %s (op %d) skipped %d existing offsets in [%d, %d) %s",
			h.readProcess(r), h.key(r.part), h.index(r.done), n, from, to, where), h.index(r.done))
	}, nil)
	if !h.pollRecords() {
		f.noEvidence("no poll returned a record")
	}
	return f.result()
}

// pollRecords: some poll returned a record.
func (h *History) pollRecords() bool {
	for i := range h.polls.len() {
		if h.polls.at(i).recs.len() > 0 {
			return true
		}
	}
	return false
}

// NonmonotonicPoll finds a consumer going backwards: for one process and
// partition, a poll returning an offset at or below one it already received,
// or a poll whose records are not in strictly increasing offset order.
// Count is the number of polls that did so.
func NonmonotonicPoll(h *History) Result {
	f := h.newFinding(NonmonotonicPollName)
	walkPolls(h, nil, func(r *readOp, off, after int64, internal bool, prev int32) {
		if internal {
			f.add(CommittedTruncation, fmt.Sprintf("process %d's poll of %s (op %d) returned offset %d after offset %d in the same poll",
				h.readProcess(r), h.key(r.part), h.index(r.done), off, after), h.index(r.done))
			return
		}
		f.add(CommittedTruncation, fmt.Sprintf("process %d's poll of %s (op %d) returned offset %d, but it had already received offset %d (op %d)",
			h.readProcess(r), h.key(r.part), h.index(r.done), off, after, h.index(prev)), h.index(prev), h.index(r.done))
	})
	if !h.pollRecords() {
		f.noEvidence("no poll returned a record")
	}
	return f.result()
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
		gen  int32 // the group generation of its polls, -1 for none
	}
	cursors := map[int64]*cursor{}
	for i := range h.polls.len() {
		r := h.polls.at(i)
		k := int64(h.readProcess(r))<<32 | int64(uint32(r.part))
		c := cursors[k]
		gen := h.pollGen(i)
		if c == nil || c.gen != gen {
			// A group member in a new generation resumes from the group's
			// committed offset, not from where it was: a skip or a step
			// back across a rebalance is the group's (Jepsen permits
			// them), and its polls are compared from there.
			c = &cursor{next: h.readFrom(r), pos: -1, gen: gen}
			cursors[k] = c
		}
		if c.next < 0 {
			c.next = h.readFrom(r)
		}
		// A transaction's reads of the partition are one read here: how
		// they follow each other is the int-* checks' to judge, and only
		// where they begin is held against the consumer's position.
		n, txn := r.recs.len(), h.isTxn(r.done)
		if txn && n > 1 {
			n = 1
		}
		wentBack := false
		for j := range n {
			rec := r.recs.at(h.recsOf(r.part), j)
			switch {
			case j > 0 && rec.Offset <= r.recs.at(h.recsOf(r.part), j-1).Offset:
				if back != nil && !wentBack {
					back(r, rec.Offset, r.recs.at(h.recsOf(r.part), j-1).Offset, true, r.done)
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
				if n := h.existingFor(r, c.next, rec.Offset); n > 0 {
					skip(r, c.next, rec.Offset, n, c.pos)
				}
			}
			c.next = rec.Offset + 1
		}
		if txn && r.recs.len() > 1 {
			c.next = max(c.next, r.recs.at(h.recsOf(r.part), r.recs.len()-1).Offset+1)
		}
		if r.recs.len() > 0 {
			c.pos = r.done
		}
	}
}

// AbortedRead finds values whose sends all definitely failed but which a
// read (poll, final read or replica read) returned. Count is the number of
// such values.
//
// A value of a transaction that aborted is another matter (Jepsen's G1a):
// its record was written, and its abort marker hides it from
// read_committed readers only. A replica read holds it by right, and a
// read_uncommitted reader asked for it; a read_committed reader's read of
// it is the anomaly (abortedTxnReads), its transaction's own polls
// excepted, which are precommitted-read's.
func AbortedRead(h *History) Result {
	f := h.newFinding(AbortedReadName)
	var read []int32
	for vid := range h.vals.len() {
		if val := h.vals.at(vid); val.onlyFailed() && val.flags&sentInTxn == 0 && val.readPos >= 0 {
			read = append(read, int32(vid))
		}
	}
	failed := h.failPos(read)
	for _, vid := range read {
		val := h.vals.at(vid)
		f.add(Unexplained, fmt.Sprintf("value %q, whose send failed (op %d), was returned by %s (op %d)", h.strs.string(&val.str), h.index(failed[vid]), val.reader(), h.index(val.readPos)),
			h.index(failed[vid]), h.index(val.readPos))
	}
	if len(h.txn.ops) > 0 {
		h.abortedTxnReads(f)
	}
	if !h.anyRecords() {
		f.noEvidence("no read returned a record")
	}
	return f.result()
}

// failPos is, for each of vids, where its first failed send completed (a
// transaction's send: where its transaction did), -1 for none: what few
// instances cite is found here rather than kept for every value.
func (h *History) failPos(vids []int32) map[int32]int32 {
	out := make(map[int32]int32, len(vids))
	for _, vid := range vids {
		out[vid] = -1
	}
	if len(vids) == 0 {
		return out
	}
	for i := range h.sends.len() {
		s := h.sends.at(i)
		if p, ok := out[s.vid]; ok && p < 0 && s.typ() == outFail {
			out[s.vid] = max(s.done, s.inv)
		}
	}
	return out
}

// anyRecords: some client or replica read returned a record.
func (h *History) anyRecords() bool {
	if h.clientRecords() {
		return true
	}
	for i := range h.replicas {
		if h.replicas[i].recs.len() > 0 {
			return true
		}
	}
	return false
}

// GarbageRead finds values that a read returned but no send ever carried
// (corruption, or a record from outside the test), and reads that got
// records that do not decode (history.CorruptRecords). Count is the number
// of such values and reads.
func GarbageRead(h *History) Result {
	f := h.newFinding(GarbageReadName)
	for vid := range h.vals.len() {
		val := h.vals.at(vid)
		if val.sent() {
			continue
		}
		f.add(Unexplained, fmt.Sprintf("value %q was returned by %s (op %d), but no operation sent it", h.strs.string(&val.str), val.reader(), h.index(val.readPos)), h.index(val.readPos))
	}
	for _, pos := range h.corrupt {
		f.add(Unexplained, fmt.Sprintf("%s (op %d) got records that do not decode: %s", h.ops.fn(pos), h.index(pos), h.ops.errText(pos)), h.index(pos))
	}
	if !h.anyRecords() && len(h.corrupt) == 0 {
		f.noEvidence("no read returned a record")
	}
	return f.result()
}

// ReplicaDivergence compares the replica reads of each partition (the
// last read of each broker) pairwise: below the smaller of the two
// replicas' high watermarks, both must hold the same records. Count is the
// number of (pair, offset) differences. A partition of which fewer than
// two replicas were read (with a replication factor above one), or whose
// replicas could not all be read, is not compared: unknown, never "none".
func ReplicaDivergence(h *History) Result {
	f := h.newFinding(ReplicaDivergenceName)
	byPart := map[int32][]*replicaRead{}
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
	rf := h.cfg.ReplicationFactor
	if len(h.replicas) == 0 && rf != 1 {
		f.noEvidence("the history has no replica reads")
		return f.result()
	}
	for part, p := range h.parts {
		if rf == 1 || !h.written(int32(part)) {
			continue
		}
		switch rs := byPart[int32(part)]; {
		case len(rs) < 2:
			f.stat("partitions-not-compared", 1)
			f.missing("%s: %d replica logs read, fewer than two: not compared", p.key, len(rs))
		case len(p.tried) < rf:
			f.stat("partitions-partly-read", 1)
			f.missing("%s: %d replica logs read, of a replication factor of %d: the others not compared", p.key, len(rs), rf)
		case !p.allRead:
			f.stat("partitions-partly-read", 1)
			f.missing("%s: %d of the %d replica logs the final phase tried were read: the others not compared", p.key, len(rs), len(p.tried))
		}
	}
	for _, part := range sortedParts(byPart) {
		rs := byPart[part]
		for i := 0; i < len(rs); i++ {
			for j := i + 1; j < len(rs); j++ {
				a, b := rs[i], rs[j]
				if a.hw < 0 || b.hw < 0 {
					f.missing("replica reads op %d and op %d of %s: a high watermark is missing, not compared", h.index(a.done), h.index(b.done), h.key(part))
					continue
				}
				f.stat("pairs-compared", 1)
				n, first, va, vb := h.diverge(inOrder(h.recsOf(a.part), a.recs), inOrder(h.recsOf(b.part), b.recs), min(a.hw, b.hw))
				if n == 0 {
					continue
				}
				f.addN(n, CommittedTruncation, fmt.Sprintf("replicas %d (op %d) and %d (op %d) of %s differ at %d offsets below their common high watermark %d, first at offset %d: %s vs %s",
					a.broker, h.index(a.done), b.broker, h.index(b.done), h.key(part), n, min(a.hw, b.hw), first, va, vb),
					h.index(a.done), h.index(b.done))
			}
		}
	}
	return f.result()
}

// written: some client operation sent to or read the partition.
func (h *History) written(part int32) bool {
	return h.parts[part].exist.len() > 0 || h.parts[part].final >= 0
}

// diverge counts the offsets below limit where two logs sorted by offset
// differ (one lacks a record the other has, or the values differ) and
// describes the first difference.
func (h *History) diverge(a, b sortedRecs, limit int64) (n int, first int64, va, vb string) {
	i, j := 0, 0
	for {
		oa, ob := limit, limit
		if i < a.len() {
			oa = min(a.at(i).Offset, limit)
		}
		if j < b.len() {
			ob = min(b.at(j).Offset, limit)
		}
		if oa >= limit && ob >= limit {
			return
		}
		var x, y *record
		switch {
		case oa == ob:
			ra, rb := a.at(i), b.at(j)
			x, y = &ra, &rb
			i++
			j++
			if x.vid == y.vid {
				continue
			}
		case oa < ob:
			ra := a.at(i)
			x = &ra
			i++
		default:
			rb := b.at(j)
			y = &rb
			j++
		}
		if n == 0 {
			first, va, vb = min(oa, ob), h.describeRecord(x), h.describeRecord(y)
		}
		n++
	}
}

func (h *History) describeRecord(r *record) string {
	if r == nil {
		return "nothing"
	}
	return fmt.Sprintf("%q", h.str(*r))
}

// sortedRecs are a read's records in offset order: the list itself where
// it is in order (a log read is: its offsets are consecutive), else a
// sorted copy (a foreign history's need not be). A replica read of a long
// run holds every record of its log, and each is compared with the
// others: copying them for each pair was most of what the check
// allocated.
type sortedRecs struct {
	list   recList
	src    recSrc   // the list's
	sorted []record // nil: list is in order
}

func inOrder(src recSrc, l recList) sortedRecs {
	if !l.spread() {
		return sortedRecs{list: l, src: src}
	}
	less := func(x, y record) int { return cmpInt(x.Offset, y.Offset) }
	recs := l.slice(src)
	if slices.IsSortedFunc(recs, less) {
		// In order already: the list serves, and the copy is dropped.
		return sortedRecs{list: l, src: src}
	}
	slices.SortStableFunc(recs, less)
	return sortedRecs{sorted: recs}
}

func (s sortedRecs) len() int {
	if s.sorted != nil {
		return len(s.sorted)
	}
	return s.list.len()
}

func (s sortedRecs) at(i int) record {
	if s.sorted != nil {
		return s.sorted[i]
	}
	return s.list.at(s.src, i)
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
