package checker

import (
	"fmt"
	"iter"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/internal/blocks"
	"github.com/chaos-isr/chaos/internal/offheap"
)

// The linearizability model.
//
// Each topic-partition is checked on its own. The state is two lower
// bounds, so a step and a hash are O(1):
//
//	leo: the log end is at least this (every offset below it is taken)
//	hw:  the high watermark is at least this
//
// Operations:
//
//	send v -> o (ok)        legal iff o >= leo; then leo = o+1, and with
//	                        acks=-1 also hw >= o+1 (the ack came after the
//	                        HW passed o)
//	send v -> ? (info, or never completed), whose record reads found at
//	                        one uncontested offset x: the same, at x,
//	                        never raising hw; it returns at +inf (etcd's
//	                        convention for unknown outcomes), so it may
//	                        linearize any time after its invoke
//	read -> hw h, records up to r (poll, end-offset, final read)
//	                        legal iff h >= hw (when the read reports h); then
//	                        hw and leo are at least max(h, r)
//
// A send linearizes when the leader appends its record (acks=1) or when
// the HW passes it (acks=-1); a read when the leader computes the HW it
// returns. In a correct log both points lie inside the operations'
// intervals, offsets are appended in order, and the HW never moves back, so
// every history of a correct log is linearizable here: what the model
// flags is an anomaly. The two kinds of step that can fail are the two
// anomalies:
//
//   - nonlinearizable-send (a send's o >= leo fails): a send that began
//     after another operation completed got an offset below what that
//     operation established: an earlier acknowledged send's offset (the
//     log end moved back), or a read that had already seen the log reach
//     past it (the offset was reused, or a read returned a record before
//     its send began); or two acknowledged sends got the same offset;
//   - stale-read (a read's h >= hw fails): a read that began after another
//     operation completed returned a HW below what that operation
//     established: an acks=-1 send acknowledged at o (so HW > o) or a read
//     that saw a higher HW.
//
// What it cannot see: record contents (which value sits at which offset is
// judged by inconsistent-offsets, duplicate and lost-write); unknown sends
// no read returned, or returned at several offsets (the only effect an
// unread one could have is a higher log end, which only forbids more, so
// "it never happened" is always a legal choice; leaving them out also
// keeps porcupine from branching on them); failed sends (they did not
// happen); replica reads (a replica's own HW may lag the leader's); and the
// HW of a read that returned records at or above it (it is no bound then).
//
// Because every step only raises two monotone bounds, a history is
// linearizable in this model iff no pair of operations contradicts it: one
// that completed before the other began yet set a bound the other breaks,
// or two sends at one offset. (A cycle of ordering constraints collapses to
// such a pair: the constraint relation is transitive and real-time order
// is an interval order. TestWitnessesMatchPorcupine checks the claim
// against porcupine on random histories.) The same holds for each kind
// alone: the model that checks only sends (or only reads) fails iff a pair
// of that kind exists. Linearizability uses that:
//
//   - a scan finds every contradicting pair in O(n log n), and each pair is
//     proof of its anomaly by itself;
//   - for each kind with no pair, porcupine checks the whole history under
//     the model of that kind and confirms it (Ok), or runs out of time
//     (unknown); it searches tightened intervals cut into segments (see
//     tighten and segments), so a legal history is searched in linear time
//     and bounded memory;
//   - porcupine also checks a window of operations around each of the
//     first few pairs, which gives the HTML visualization.

// arenaGuard stands for a scratch arena in the model porcupine searches
// with (guarded).
type arenaGuard struct{ a *offheap.Arena }

// guarded is m with its Step holding g: porcupine's goroutines, which may
// outlive a search cut short, keep g reachable for as long as they can
// still step through operations in the arena g stands for. (Partition,
// the other function that reads the operations, runs before the search
// returns.)
func guarded(m porcupine.Model, g *arenaGuard) porcupine.Model {
	step := m.Step
	m.Step = func(state, input, output any) (bool, any) {
		ok, next := step(state, input, output)
		runtime.KeepAlive(g)
		return ok, next
	}
	return m
}

// DefaultLinearizableTimeout bounds porcupine's search of each million
// operations of the model (and of a smaller history) when
// Options.LinearizableTimeout is zero. A legal history is searched in
// linear time, about 2 µs an operation on a 2-core VM, so a long run
// needs time in proportion (a two-hour soak models 8 M operations, and
// ran out of a fixed 10 s); a search that blows up is still cut off.
const DefaultLinearizableTimeout = 10 * time.Second

// defaultLinTimeout is the search's bound for a model of at most n
// operations.
func defaultLinTimeout(n int) time.Duration {
	return DefaultLinearizableTimeout * time.Duration(max(1, (n+999_999)/1_000_000))
}

type linKind uint8

const (
	linSend linKind = iota
	linRead
	// linStart opens a segment of a partition's history with the state
	// all earlier segments established (see segments).
	linStart
)

// linOp is one operation of the model; porcupine receives it as the input
// (the output is unused: the result is part of the operation). A history
// has one per acknowledged send and read, so it is kept small (40 bytes):
// what it says of itself (its value, its function, where a read read from
// and what it got) is read from the history when it is described, and its
// partition is its caller's. A partition's are held in one slice (no
// pointer, or allocation, each).
type linOp struct {
	call, ret int64
	// at is a send's offset, a read's reach (max(hw, last record + 1)),
	// and for linStart the log end to start from: one field, for a
	// partition's model is millions of operations.
	at  int64
	pos int32 // the op to cite: the completion, or the invoke of an unknown send
	// vid is a send's value; for a read, its index in the read table
	// readBits names (see read).
	vid  int32
	seg  int32 // porcupine partition: a segment or a window
	kind linKind
	// readBits: a read's table (which of History.readTables holds it)
	// and, in hwChecked, whether its HW bounds it (stale-read): its HW
	// is then its reach, at (linOps keeps a HW only then: a read that
	// returned records above its HW has none). A bit, not a second
	// offset (8 bytes) nor a bool (a ninth byte made an operation 48
	// bytes, not 40): a partition's model is millions of operations.
	readBits uint8
	commit   bool // send: acknowledged with acks=-1
	unknown  bool // send: info or never completed
}

// hwChecked is readBits' bit for a read whose HW bounds it.
const hwChecked = 0x80

// checksHW says whether op is a read whose HW bounds it (see readBits).
func (op *linOp) checksHW() bool { return op.readBits&hwChecked != 0 }

// hw is the HW a read reported, -1 if none (see checksHW); for linStart,
// the HW to start from, which its ret holds (porcupine takes a start's
// times from its porcupine.Operation, never from it).
func (op *linOp) hw() int64 {
	switch {
	case op.kind == linStart:
		return op.ret
	case op.checksHW():
		return op.at
	}
	return -1
}

// read is what a read returned, from h's read tables; nil for an
// operation that is not a read of h (a test's operations have no
// history).
func (op *linOp) read(h *History) *readOp {
	if h == nil || op.kind != linRead || op.vid < 0 {
		return nil
	}
	return h.readTables()[op.readBits&^hwChecked].at(op.vid)
}

// raises is what an operation establishes once linearized: a log end
// (leo) and a HW (hw) that everything after it must respect.
func (op *linOp) raises() (leo, hw int64) {
	switch op.kind {
	case linStart:
		return op.at, op.hw()
	case linSend:
		if op.commit {
			return op.at + 1, op.at + 1
		}
		return op.at + 1, 0
	}
	return op.at, op.at
}

// describe says what op did; h, where given, names its value and
// function (tests of the model alone have no history).
func (op *linOp) describe(h *History) string {
	value, f := fmt.Sprintf("#%d", op.vid), "read"
	if h != nil && op.kind == linSend && op.vid >= 0 && op.vid < h.vals.len() {
		value = fmt.Sprintf("%q", h.valStr(op.vid))
	}
	if h != nil && op.pos >= 0 && op.kind == linRead {
		f = h.ops.fn(op.pos)
	}
	switch {
	case op.kind == linStart:
		return fmt.Sprintf("earlier segments: log end >= %d, hw >= %d", op.at, op.hw())
	case op.kind == linSend && op.unknown:
		return fmt.Sprintf("send %s -> unknown, read at offset %d", value, op.at)
	case op.kind == linSend:
		return fmt.Sprintf("send %s -> offset %d", value, op.at)
	case f == history.EndOffset:
		return fmt.Sprintf("end-offset -> %d", op.hw())
	}
	switch rd := op.read(h); {
	case rd == nil:
		return fmt.Sprintf("%s -> reach %d, hw %d", f, op.at, op.hw())
	case h.readFrom(rd) >= 0:
		return fmt.Sprintf("%s from %d -> %d records, hw %d", f, h.readFrom(rd), rd.recs.len(), op.hw())
	default:
		return fmt.Sprintf("%s -> %d records, hw %d", f, rd.recs.len(), op.hw())
	}
}

type linState struct{ leo, hw int64 }

// checks selects the steps that can fail: sends (nonlinearizable-send),
// reads (stale-read), or both.
type checks struct{ sends, reads bool }

var bothChecks = checks{true, true}

func (c checks) step(state, input, _ any) (bool, any) {
	s, ok := c.next(state.(linState), input.(*linOp))
	return ok, s
}

// next is the state after op, and whether op may come next in state s.
func (c checks) next(s linState, op *linOp) (linState, bool) {
	switch op.kind {
	case linSend:
		if c.sends && op.at < s.leo {
			return s, false
		}
		s.leo = max(s.leo, op.at+1)
		if op.commit {
			s.hw = max(s.hw, op.at+1)
		}
	case linRead:
		if c.reads && op.checksHW() && op.at < s.hw {
			return s, false
		}
		s.hw = max(s.hw, op.at)
		s.leo = max(s.leo, op.at)
	case linStart:
		s.leo, s.hw = max(s.leo, op.at), max(s.hw, op.hw())
	}
	return s, true
}

// linearizesInOrder says whether the model, from state s, accepts the
// operations part[i] for i in idx, in that order. Given in order of their
// calls (any intervals, tightened or not, as long as no call is after its
// return: linOps and tighten see to that), such a sequence is a
// linearization: if a returned before b was called, a's call came before
// b's. So true proves that the operations linearize from s, as porcupine
// would find (it searches for any order; this tries one). Tightening
// sorts the calls in an order the model forces, so the one tried is
// nearly always a right one, and a legal segment is judged in one pass
// with no allocation, where porcupine's search allocated about a
// kilobyte an operation.
func linearizesInOrder(part []linOp, idx []int32, c checks, s linState) bool {
	for _, i := range idx {
		var ok bool
		if s, ok = c.next(s, &part[i]); !ok {
			return false
		}
	}
	return true
}

func linModel(h *History, c checks) porcupine.Model {
	return porcupine.Model{
		Partition: func(ops []porcupine.Operation) [][]porcupine.Operation {
			var out [][]porcupine.Operation
			start := 0
			for i := 1; i <= len(ops); i++ {
				if i == len(ops) || ops[i].Input.(*linOp).seg != ops[start].Input.(*linOp).seg {
					out = append(out, ops[start:i])
					start = i
				}
			}
			return out
		},
		Init: func() any { return linState{} },
		Step: c.step,
		Hash: func(state any) uint64 {
			s := state.(linState)
			return uint64(s.leo)*0x9e3779b97f4a7c15 ^ uint64(s.hw)
		},
		DescribeOperation: func(input, _ any) string { return input.(*linOp).describe(h) },
		DescribeState: func(state any) string {
			s := state.(linState)
			return fmt.Sprintf("log end >= %d, hw >= %d", s.leo, s.hw)
		},
		DescribeOperationMetadata: func(m any) string {
			if m == nil {
				return ""
			}
			return fmt.Sprintf("op %d", m)
		},
	}
}

// linCounts are, per partition, how many operations its model may hold
// (its sends and reads): linOps makes its slice that size. A
// partition's model is built from the tables when it is needed, one
// partition at a time, a history's worth of them at once (or even a list
// of which sends and reads each partition's are) being most of what the
// check held.
func linCounts(h *History) []int {
	n := make([]int, len(h.parts))
	for i := range h.sends.len() {
		n[h.sends.at(i).part()]++
	}
	for _, rs := range h.readTables() {
		for i := range rs.len() {
			n[rs.at(i).part]++
		}
	}
	return n
}

// endsTable is the end-offset reads' place in readTables.
const endsTable = 1

// readTables are the reads the model is made of, in the order of
// linOp.readBits' tables.
func (h *History) readTables() [3]*table[readOp] {
	return [3]*table[readOp]{&h.polls, &h.ends, &h.finals}
}

// linIndex lists each partition's sends and reads by their places in
// their tables: a partition's model, built once to three times (for the
// pairs and the search together, for the search again if a pair turns
// up, for a window), is built from its own operations,
// not from a pass over every partition's each time. Its lists are in an
// arena of their own (with the index in a file; else the heap), 4 bytes
// an operation. A history of one partition has none (nil).
type linIndex struct {
	arena *offheap.Arena
	sends []blocks.List[int32]    // by partition
	reads [3][]blocks.List[int32] // by readTables' table, then partition
}

func newLinIndex(h *History) *linIndex {
	if len(h.parts) < 2 {
		return nil // a pass over all is a pass over its own
	}
	x := &linIndex{arena: h.arena.Sibling(), sends: make([]blocks.List[int32], len(h.parts))}
	for p := range x.sends {
		x.sends[p].In(x.arena)
	}
	for i := range h.sends.len() {
		x.sends[h.sends.at(i).part()].Add(int32(i))
	}
	for t, rs := range h.readTables() {
		x.reads[t] = make([]blocks.List[int32], len(h.parts))
		for p := range x.reads[t] {
			x.reads[t][p].In(x.arena)
		}
		for i := range rs.len() {
			x.reads[t][rs.at(i).part].Add(int32(i))
		}
	}
	return x
}

func (x *linIndex) close() {
	if x == nil {
		return
	}
	_ = x.arena.Close() // a failure to unmap costs memory, not a result
	*x = linIndex{}
}

// places are the places in a table of n entries that linOps visits for
// partition p: those l lists, or every one where there is no index.
func places(x *linIndex, l func(*linIndex) *blocks.List[int32], n int32) iter.Seq[int32] {
	if x != nil {
		return l(x).All()
	}
	return func(yield func(int32) bool) {
		for i := range n {
			if !yield(i) {
				return
			}
		}
	}
}

// linOps are the model's operations of partition p, sends first, each in
// history order, in buf's array when it has room for size of them; stats
// counts what was left out. x lists the partition's operations (nil: they
// are found in a pass over all).
func linOps(h *History, p, size int, stats func(string, int64), buf []linOp, scratch *offheap.Arena, x *linIndex) []linOp {
	acks := h.cfg.Acks
	part := buf[:0]
	if cap(part) < size {
		part = make([]linOp, 0, size)
	}
	modelled := map[int32]bool{}
	acked := map[int32]int64{}
	pass := h.releaser(scratch)
	for i := range places(x, func(x *linIndex) *blocks.List[int32] { return &x.sends[p] }, h.sends.len()) {
		pass.passed(1)
		s := h.sends.at(i)
		if s.part() != int32(p) {
			continue
		}
		op := linOp{kind: linSend, call: h.callTime(s.inv), ret: math.MaxInt64, pos: s.done, vid: s.vid}
		switch s.typ() {
		case outOK:
			if s.offset < 0 {
				stats("sends-without-offset", 1)
				continue
			}
			op.at, op.commit, op.ret = s.offset, acks < 0, h.at(s.done)
			// A retry acknowledged at the same offset (an idempotent
			// producer's deduplicated batch) is the same record. Only a
			// value acknowledged more than once can have one: the
			// others stay out of the map, which held one entry per send.
			if h.vals.at(s.vid).flags&ackedAgain != 0 {
				if at, ok := acked[s.vid]; ok && at == s.offset {
					continue
				}
				acked[s.vid] = s.offset
			}
		case outFail:
			continue
		default:
			// Only an unknown send whose record was read at one
			// uncontested offset is known to have happened there; any
			// other is left out, which only removes constraints. One
			// that shares its value with another send (a retry in a
			// foreign history) is represented by that send.
			val := h.vals.at(s.vid)
			if val.obsPos < 0 || val.flags&(observedTwice|sentOK) != 0 || val.obsPart != s.part() || modelled[s.vid] {
				stats("unknown-sends-left-out", 1)
				continue
			}
			if sl := h.parts[s.part()].obs.lookup(val.obsOff); sl == nil || sl.readConflict || sl.ackConflict {
				stats("unknown-sends-left-out", 1)
				continue
			}
			modelled[s.vid] = true
			op.at, op.unknown = val.obsOff, true
			if op.pos < 0 {
				op.pos = s.inv
			}
			stats("unknown-sends-modelled", 1)
		}
		op.call = min(op.call, op.ret)
		stats("sends", 1)
		part = append(part, op)
	}
	tables := h.readTables()
	for t, rs := range tables {
		for i := range places(x, func(x *linIndex) *blocks.List[int32] { return &x.reads[t][p] }, rs.len()) {
			pass.passed(1)
			r := rs.at(i)
			if r.part != int32(p) {
				continue
			}
			op := linOp{kind: linRead, at: r.reach(), call: h.callTime(r.inv), ret: h.at(r.done),
				pos: r.done, vid: i, readBits: uint8(t)}
			hw := r.hw
			if t == endsTable {
				// An end-offset read reaches the offset it returned.
				op.at = hw
			}
			if hw < 0 && op.at < 0 {
				continue
			}
			if hw >= 0 && op.at > hw {
				// Records at or above the HW the read reported: the
				// reported HW cannot be trusted as a freshness bound.
				stats("reads-beyond-their-hw", 1)
				hw = -1
			}
			if hw >= 0 && h.readsCommitted(r) {
				// A read_committed read reports the last stable offset,
				// which an open transaction holds below the HW: a bound
				// on the HW from below, never a stale one.
				hw = -1
			}
			// A HW kept is the read's reach: the reach is at least the
			// HW (reach), and a read that reached past it kept none.
			if hw >= 0 {
				op.readBits |= hwChecked
			}
			op.call = min(op.call, op.ret)
			stats("reads", 1)
			part = append(part, op)
		}
	}
	return part
}

// witness is a pair of operations that contradicts the model on its own:
// before completed before after began, yet after is below what before
// established (bound); or, with bound -1, two sends at one offset. It
// holds copies: a pointer would keep its partition's operations.
type witness struct {
	before, after linOp
	bound         int64
	part          int32
}

// witnesses scans partition part's operations for contradicting pairs, in
// O(n log n): two sends at one offset (each must precede the other), and
// ops in call order, each compared with the maxima of what the operations
// that returned before its call established.
//
// Its scratch tables are in a (nil: the heap).
func witnesses(ops []linOp, part int32, a *offheap.Arena) (sends, reads []witness) {
	// Indexes, not pointers: half the memory, for a partition of
	// millions.
	nsends := 0
	for i := range ops {
		if ops[i].kind == linSend {
			nsends++
		}
	}
	byOffset := offheap.Make[int32](a, nsends)[:0]
	for i := range ops {
		if ops[i].kind == linSend {
			byOffset = append(byOffset, int32(i))
		}
	}
	slices.SortStableFunc(byOffset, func(a, b int32) int { return cmpInt(ops[a].at, ops[b].at) })
	for i := 1; i < len(byOffset); i++ {
		if a, b := &ops[byOffset[i-1]], &ops[byOffset[i]]; a.at == b.at {
			sends = append(sends, witness{before: *a, after: *b, bound: -1, part: part})
		}
	}
	// Each scratch table leaves the arena's file once used (Free): the
	// pages of a partition's dead tables were as many again as its
	// model's, written out by a kernel short of memory before it could
	// take them back.
	offheap.Free(a, byOffset)
	byOffset = nil
	byCall, byRet := offheap.Make[int32](a, len(ops)), offheap.Make[int32](a, len(ops))
	defer offheap.Free(a, byCall)
	defer offheap.Free(a, byRet)
	for i := range ops {
		byCall[i], byRet[i] = int32(i), int32(i)
	}
	slices.SortStableFunc(byCall, func(a, b int32) int { return cmpInt(ops[a].call, ops[b].call) })
	slices.SortStableFunc(byRet, func(a, b int32) int { return cmpInt(ops[a].ret, ops[b].ret) })
	var maxLeo, maxHW int64
	leoBy, hwBy := int32(-1), int32(-1)
	j := 0
	for _, yi := range byCall {
		y := &ops[yi]
		for ; j < len(byRet) && ops[byRet[j]].ret < y.call; j++ {
			leo, hw := ops[byRet[j]].raises()
			if leo > maxLeo {
				maxLeo, leoBy = leo, byRet[j]
			}
			if hw > maxHW {
				maxHW, hwBy = hw, byRet[j]
			}
		}
		switch {
		case y.kind == linSend && leoBy >= 0 && y.at < maxLeo:
			sends = append(sends, witness{before: ops[leoBy], after: *y, bound: maxLeo, part: part})
		case y.kind == linRead && hwBy >= 0 && y.checksHW() && y.at < maxHW:
			reads = append(reads, witness{before: ops[hwBy], after: *y, bound: maxHW, part: part})
		}
	}
	return sends, reads
}

// tighten narrows the operations' intervals to where the model (with the
// given checks) lets them linearize, which keeps porcupine's depth-first
// search from guessing.
//
// Left alone, the search tries operations in call order and learns of a
// bad guess (a read that saw offset 10 linearized before the send that
// wrote offset 5) only at the next return it cannot pass; in between it
// tries every interleaving of the operations concurrent with the guess,
// which is exponential in a busy partition: a few thousand operations of a
// correct log took longer than 20 s. But the model fixes much of the
// order: Y must precede X whenever what X raises exceeds Y's threshold (a
// send before a send at a higher offset, a send before a read that reached
// past it; with read checks, a read before a read that saw a higher HW and,
// with acks=-1, a read before a send at or above its HW). In every
// linearization Y comes after all its forced predecessors, so it cannot
// linearize before their calls; and it cannot linearize after the return
// of a forced successor. Moving each call up to just after its
// predecessors' calls and each return down to its successors' returns adds
// only real-time edges that every linearization already satisfies, so it
// changes no verdict; and it sorts the calls in a forced order, so the
// search's first choice is always a right one and a legal history is
// checked without backtracking.
//
// Times are replaced by ranks (a return ranks after the calls at its time,
// as porcupine's closed intervals need), scaled by tightenScale so that the +1 per
// forced step never crosses into the next rank. The operations' call and
// ret become the tightened times: the model's operations of a partition
// of millions are what the check holds, and a copy of their times was a
// third as much again. It reports false if the partition is too large
// for that (the times are left as they were) or an interval empties
// (which only an illegal history can cause): the times are then neither
// tightened nor the original ones, and the operations must be built
// again.
//
// Its scratch tables are in a (nil: the heap).
func tighten(ops []linOp, c checks, a *offheap.Arena) bool {
	scale := tightenScale
	if !tightenable(len(ops)) {
		return false
	}
	// Ranks of the distinct times: the calls sorted, the returns sorted,
	// and the two merged, each endpoint's time read and then replaced by
	// its rank in that order. Sorted apart, each list is nearly in order
	// already (operations are listed in the order of their calls, and
	// return near it), and its times are read without telling a call
	// from a return: half the time of sorting the endpoints together. An
	// index each, where a copy of the times took twice as much.
	ends := offheap.Make[int32](a, 2*len(ops))[:0]
	for i := range ops {
		ends = append(ends, int32(i))
	}
	calls := ends[:len(ops)]
	for i := range ops {
		if ops[i].ret != math.MaxInt64 {
			ends = append(ends, int32(i))
		}
	}
	rets := ends[len(ops):]
	slices.SortFunc(calls, func(a, b int32) int { return cmpInt(ops[a].call, ops[b].call) })
	slices.SortFunc(rets, func(a, b int32) int { return cmpInt(ops[a].ret, ops[b].ret) })
	rank, last := int64(-1), int64(0)
	for k := 0; len(calls) > 0 || len(rets) > 0; k++ {
		// Only times not yet replaced are compared: the heads'.
		var t *int64
		ret := len(calls) == 0 || len(rets) > 0 && ops[rets[0]].ret < ops[calls[0]].call
		if ret {
			t, rets = &ops[rets[0]].ret, rets[1:]
		} else {
			t, calls = &ops[calls[0]].call, calls[1:]
		}
		if k == 0 || *t != last {
			rank++
		}
		last = *t
		if ret {
			*t = (2*rank + 1) * scale
		} else {
			*t = 2 * rank * scale
		}
	}
	offheap.Free(a, ends) // see witnesses
	ends = nil
	// Forced order is the order of points on the log: a send sits between
	// its offset and the next, a read at what it reached (the HW it
	// checks, if it checks one: see checksHW). Which pairs are forced
	// depends on the thresholds in play: a send's (with send checks)
	// forces everything above it; a read's (with read checks and a HW)
	// forces reads above it and acks=-1 sends above it.
	readThreshold := func(op *linOp) bool { return c.reads && op.kind == linRead && op.checksHW() }
	point := func(op *linOp) int64 {
		if op.kind == linSend {
			return 2*op.at + 1
		}
		return 2 * op.at
	}
	order := offheap.Make[int32](a, len(ops))
	defer offheap.Free(a, order)
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int { return cmpInt(point(&ops[a]), point(&ops[b])) })
	// Where each run of equal points starts in order (and its end): in
	// a, as the other tables, for a day-long run's partition of 28 M
	// operations held 135 MB of it in the heap.
	groups := offheap.Make[int32](a, len(order)+1)[:0]
	defer offheap.Free(a, groups)
	for i := range order {
		if i == 0 || point(&ops[order[i]]) != point(&ops[order[i-1]]) {
			groups = append(groups, int32(i))
		}
	}
	groups = append(groups, int32(len(order)))

	const none = math.MinInt64
	maxSend, maxRead := int64(none), int64(none)
	for k := 0; k+1 < len(groups); k++ {
		g := order[groups[k]:groups[k+1]]
		for _, i := range g {
			op := &ops[i]
			if maxSend != none {
				ops[i].call = max(ops[i].call, maxSend+1)
			}
			if maxRead != none && (op.kind == linRead || op.commit) {
				ops[i].call = max(ops[i].call, maxRead+1)
			}
		}
		for _, i := range g {
			switch op := &ops[i]; {
			case op.kind == linSend && c.sends:
				maxSend = max(maxSend, ops[i].call)
			case readThreshold(op):
				maxRead = max(maxRead, ops[i].call)
			}
		}
	}
	minSend, minCommit, minRead := int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MaxInt64)
	for k := len(groups) - 2; k >= 0; k-- {
		g := order[groups[k]:groups[k+1]]
		for _, i := range g {
			switch op := &ops[i]; {
			case op.kind == linSend && c.sends:
				ops[i].ret = min(ops[i].ret, minSend, minRead)
			case readThreshold(op):
				ops[i].ret = min(ops[i].ret, minCommit, minRead)
			}
		}
		for _, i := range g {
			switch op := &ops[i]; {
			case op.kind == linSend:
				minSend = min(minSend, ops[i].ret)
				if op.commit {
					minCommit = min(minCommit, ops[i].ret)
				}
			default:
				minRead = min(minRead, ops[i].ret)
			}
		}
	}
	for i := range ops {
		if ops[i].call > ops[i].ret {
			return false
		}
	}
	return true
}

// tightenScale is what tighten scales ranks by: its +1 steps stay within
// a rank for partitions of fewer than half as many operations, 536 M (a
// day-long soak's partition is about 50 M: at 1<<24, a partition past 8.4
// M was left untightened, and its unknown sends, which never return, left
// no instant to cut it at: its verdict was unknown). A variable, so that
// a test can take a partition to the bound.
var tightenScale int64 = maxTightenScale

// maxTightenScale is tightenScale's most: the latest time tighten gives,
// below (4n+1)*scale for n operations (at most 2n distinct times, each
// rank two scales apart), must stay below an int64's most, with room for
// the segments' starts (which come one before a call).
const maxTightenScale = 1 << 30

// A compile-time check of that room, twice over: an int64 constant that
// overflows does not compile.
const _ int64 = (4*(maxTightenScale/2) + 1) * maxTightenScale * 2

// tightenable says whether tighten can take n operations.
func tightenable(n int) bool { return int64(n) < tightenScale/2 }

// Segment sizes. Porcupine's cache keeps a bitset of all the operations
// it searches per step taken, n*n/8 bytes for n operations: 12 MB for
// 10,000, 8 GB for 250,000. A partition is therefore searched in segments
// of about segmentOps operations, split at instants when no operation is
// in flight: everything before such an instant precedes everything after
// it in every linearization, and since the state is a pair of maxima, the
// state after the earlier part is the same whatever its order. Each later
// segment starts with a linStart operation carrying that state, so the
// split changes no verdict. A segment that grows past maxSegmentOps
// without a quiet instant is not searched, since the search could exhaust
// memory before its time bound: unless its operations linearize in the
// order of their calls, its verdict is unknown.
var (
	segmentOps = 2000 // a variable so that tests can cut small histories
	// tryInOrder: judge a segment by the order of its calls before
	// searching it (linearizesInOrder); a variable so that a test can
	// make porcupine search what that would prove.
	tryInOrder    = true
	maxSegmentOps = 50_000
	chunkOps      = 20_000
	// searchAsBuilt: search each partition as it is built for the pairs,
	// while none is found (Linearizability); a variable so that a test
	// can hold that to searching after every pair is known.
	searchAsBuilt = true
)

// searchOps turns one partition's operations into porcupine's for the
// given checks: tightened, cut into segments numbered from *seg on (it sets
// each operation's seg), each later segment opened by a linStart. A
// segment whose operations linearize in the order of their calls
// (linearizesInOrder) needs no search; the others go to search in chunks
// of whole segments, of about chunkOps operations, until search returns
// false: each chunk is searched on its own (it starts from the state the
// earlier ones established), so memory follows a chunk, not the history.
// It returns how many operations were left out (segments over
// maxSegmentOps that do not linearize in order), how many segments
// linearized in order, and whether the partition could be tightened
// (rebuild gives its operations again, as they were before tighten
// changed their times, for when it could not). The operations carry no
// metadata: only a visualization reads it, and a chunk is never drawn.
//
// Its scratch tables are in a (nil: the heap).
func searchOps(part []linOp, rebuild func() []linOp, c checks, seg *int, client func(*linOp) int, search func([]porcupine.Operation) bool, a *offheap.Arena, pass *releaser) (skipped, inOrder int, tightened bool) {
	if tightened = tighten(part, c, a); !tightened && tightenable(len(part)) {
		// An interval emptied part-way: the times are neither.
		part = rebuild()
	}
	var leo, hw int64
	// One chunk's worth, reused: porcupine keeps nothing of a chunk once
	// it has searched it, and a history's chunks built afresh were most
	// of what the search allocated.
	var ops []porcupine.Operation
	segs, order := segments(part, a)
	defer offheap.Free(a, order) // see witnesses
	for k, idx := range segs {
		pass.passed(len(idx))
		switch {
		case tryInOrder && linearizesInOrder(part, idx, c, linState{leo: leo, hw: hw}):
			// The state the earlier segments established is the
			// maxima of what they raised, whatever their order: the
			// order found here is as good as any.
			inOrder++
			*seg++
		case len(idx) > maxSegmentOps:
			skipped += len(idx)
		default:
			if ops == nil {
				ops = make([]porcupine.Operation, 0, min(len(part)+1, chunkOps+segmentOps+1))
			}
			if k > 0 {
				first := part[idx[0]].call
				start := &linOp{kind: linStart, seg: int32(*seg), at: leo, ret: hw, pos: part[idx[0]].pos, vid: -1}
				ops = append(ops, porcupine.Operation{ClientId: client(start), Input: start, Call: first - 1, Return: first - 1})
			}
			for _, i := range idx {
				op := &part[i]
				op.seg = int32(*seg)
				ops = append(ops, porcupine.Operation{ClientId: client(op), Input: op, Call: op.call, Return: op.ret})
			}
			*seg++
		}
		for _, i := range idx {
			l, w := part[i].raises()
			leo, hw = max(leo, l), max(hw, w)
		}
		if len(ops) >= chunkOps {
			if !search(ops) {
				return skipped, inOrder, tightened
			}
			ops = ops[:0]
		}
	}
	if len(ops) > 0 {
		search(ops)
	}
	return skipped, inOrder, tightened
}

// segments splits operations into segments of at least segmentOps
// operations where possible, by their intervals, in call order, in a
// (nil: the heap): each is a part of order, which holds them all.
func segments(ops []linOp, a *offheap.Arena) (segs [][]int32, order []int32) {
	order = offheap.Make[int32](a, len(ops))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int { return cmpInt(ops[a].call, ops[b].call) })
	start := 0
	reach := int64(math.MinInt64)
	for i, j := range order {
		if i-start >= segmentOps && ops[j].call > reach {
			segs = append(segs, order[start:i])
			start = i
		}
		reach = max(reach, ops[j].ret)
	}
	return append(segs, order[start:]), order
}

// maxWindows bounds how many contradicting pairs porcupine re-checks (and
// the visualization shows).
const maxWindows = 4

// window returns the operations of part around a contradicting pair, as
// copies in porcupine partition seg: the pair, and the operations in
// flight when the earlier one returned or the later one was invoked (the
// concurrency that could have explained the pair, and does not). The pair
// alone is already illegal, so the window is too. Unknown sends (in flight
// forever) and operations past maxWindowOps are left out: the window is
// searched without tightening, and each concurrent operation can double
// the search.
func window(part []linOp, w witness, seg int) []*linOp {
	const maxWindowOps = 14
	at := []int64{w.after.call, min(w.before.ret, w.after.ret)}
	out := []*linOp{&w.before, &w.after}
	for i := range part {
		op := &part[i]
		if len(out) >= maxWindowOps {
			break
		}
		// The pair's operations are matched by the op they cite: the
		// partition's operations may have been built again since.
		if op.pos == w.before.pos || op.pos == w.after.pos || op.ret == math.MaxInt64 {
			continue
		}
		for _, t := range at {
			if op.call <= t && t <= op.ret {
				out = append(out, op)
				break
			}
		}
	}
	for i, op := range out {
		c := *op
		c.seg = int32(seg)
		out[i] = &c
	}
	return out
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// cause tells what explains a pair of nonlinearizable-send (see
// explain): a truncation of the earlier send's record or the later one's
// (the log end moved back); for a read and a later send, a truncation of
// the committed record the read saw at the send's offset, unless the read
// returned the send's own value before the send began (nothing explains
// that).
func (h *History) cause(f *finding, w witness) (Cause, bool) {
	if w.before.kind == linSend {
		return h.explainFor(f, w.before.vid, w.after.vid)
	}
	r := w.before.read(h)
	if r == nil {
		return Unexplained, true
	}
	for rec := range h.readRecs(r) {
		switch vid := rec.vid; {
		case vid == w.after.vid:
			return Unexplained, true
		case rec.Offset == w.after.at:
			return h.explainFor(f, vid, w.after.vid)
		}
	}
	// The read saw the log (or its high watermark) reach past the
	// offset, so a committed record was there and is gone; or the later
	// send's own record is gone: it landed on a log that was then
	// truncated (a leader cut off, or paused, that still took writes at
	// its old log end), which explains the pair as well, and is only an
	// uncommitted truncation where its acknowledgement did not commit it.
	if c, decided := h.explainFor(f, w.after.vid); c == UncommittedTruncation {
		return c, decided
	}
	return CommittedTruncation, true
}

// Linearizability checks every partition against the model above and
// returns two results: nonlinearizable-send and stale-read. The
// configuration's acks say whether an acknowledged send raises the HW
// (acks=-1). Count is the number of contradicting pairs, each judged by
// what explains it (see cause). The search is bounded by
// opts.LinearizableTimeout (and a tenth of it more for the windows); a
// kind porcupine could not confirm in time is unknown, unless a pair
// proves it. When a pair is found and opts.VisualizationPath is set,
// porcupine's HTML visualization of the windows around the first pairs is
// written there and listed in both results' Artifacts.
func Linearizability(h *History, opts Options) []Result {
	sendF, readF := h.newFinding(NonlinearizableSendName), h.newFinding(StaleReadName)
	stats := func(k string, v int64) { sendF.stat(k, v); readF.stat(k, v) }
	sizes := linCounts(h)
	clients := map[int]int{}
	client := func(op *linOp) int {
		p := h.ops.process(op.pos)
		c, ok := clients[p]
		if !ok {
			c = len(clients)
			clients[p] = c
		}
		return c
	}
	meta := func(op *linOp) any { return h.index(op.pos) }

	// Each partition's operations are built for the pairs and searched
	// at once while no pair is found (a legal history's, built once),
	// again for porcupine if a pair changes what is searched, and again
	// for a window: never all at once.
	nostats := func(string, int64) {}
	nops := 0
	var sendW, readW []witness
	// build gives partition p's operations in buf, the array every
	// partition's are built in, in turn: one built afresh while the last
	// was still being collected was as much again (the check's peak),
	// though nothing held both. What is built replaces what buf held.
	//
	// With the index in a file (Builder.InFile) each partition's model
	// and its scratch tables are in a file of their own (offheap.Arena.Sibling),
	// given back once the partition is judged: a partition's model is
	// about 70 bytes an operation, most of what the check holds.
	var buf []linOp
	var cur *offheap.Arena // the scratch arena buf is in, nil: the heap
	x := newLinIndex(h)
	defer x.close()
	build := func(p int, stats func(string, int64)) []linOp {
		buf = linOps(h, p, sizes[p], stats, buf, cur, x)
		return buf
	}
	// begin opens partition p's scratch arena, with buf in it; end gives
	// it back. The index's pages the last partition read are given back
	// too: each partition's pass reads the tables through.
	begin := func(p int) *offheap.Arena {
		h.giveBack()
		a := h.arena.Sibling()
		if a != nil {
			buf = offheap.Make[linOp](a, sizes[p])[:0]
		}
		cur = a
		return a
	}
	end := func(a *offheap.Arena) {
		cur = nil
		if a != nil {
			buf = nil
			a.Close()
		}
	}
	// The bound of a search as built is of what the model may hold
	// (linCounts): it begins before the last partition is built. A
	// search again, after the pairs, is bounded by what it holds.
	bound := func(n int) time.Duration {
		if opts.LinearizableTimeout > 0 {
			return opts.LinearizableTimeout
		}
		return defaultLinTimeout(n)
	}
	// searchPart searches partition p's operations, built in its scratch
	// arena, with the given checks, into st, and returns what guards the
	// arena from the search's goroutines. Only the search's own time
	// counts against st's bound, not the builds between.
	searchPart := func(st *linSearch, c checks, base porcupine.Model, p int, part []linOp, scratch *offheap.Arena) *arenaGuard {
		began := time.Now()
		defer func() { st.spent += time.Since(began) }()
		model := base
		var g *arenaGuard
		if scratch != nil {
			g = &arenaGuard{scratch}
			model = guarded(base, g)
		}
		search := func(ops []porcupine.Operation) bool {
			left := st.bound - st.spent - time.Since(began)
			if left <= 0 {
				st.full = porcupine.Unknown
				return false
			}
			st.chunks++
			switch r := porcupine.CheckOperationsTimeout(model, ops, left); r {
			case porcupine.Illegal, porcupine.Unknown:
				st.full, st.cut = r, true
				return false
			}
			return true
		}
		rebuild := func() []linOp { return build(p, nostats) }
		n := len(part) // part itself is not held past the search
		skip, inOrder, tightened := searchOps(part, rebuild, c, &st.seg, client, search, scratch, h.releaser(scratch))
		st.parts++
		st.inOrder += inOrder
		if !tightened && n > 0 {
			st.notTightened++
		}
		if skip > 0 {
			st.skips = append(st.skips, partSkip{int32(p), skip})
		}
		return g
	}
	// finish gives back partition p's scratch arena, unless the search
	// was cut short there: porcupine's goroutines may still be stepping
	// through its operations, and it is given back once they are done,
	// when the model they hold, and g with it, is collected. Later
	// partitions are built in an array of their own.
	finish := func(scratch *offheap.Arena, cut bool, g *arenaGuard) {
		if !cut {
			end(scratch)
			return
		}
		if scratch != nil {
			runtime.AddCleanup(g, func(a *offheap.Arena) { a.Close() }, scratch)
		}
		buf, cur = nil, nil
	}

	early := linSearch{full: porcupine.Ok, bound: bound(sum(sizes))}
	base := linModel(h, bothChecks)
	for p := range h.parts {
		if opts.linPart != nil {
			opts.linPart(p, len(h.parts))
		}
		scratch := begin(p)
		part := build(p, stats)
		nops += len(part)
		if len(part) > 0 {
			stats("partitions", 1)
			sw, rw := witnesses(part, int32(p), scratch)
			sendW, readW = append(sendW, sw...), append(readW, rw...)
		}
		var g *arenaGuard
		cut := false
		if searchAsBuilt && len(sendW) == 0 && len(readW) == 0 && early.full == porcupine.Ok {
			g = searchPart(&early, bothChecks, base, p, part, scratch)
			cut = early.cut
		}
		finish(scratch, cut, g)
	}
	if nops == 0 {
		sendF.noEvidence("no send was acknowledged and no read reported an offset")
		readF.noEvidence("no read reported an offset")
		return []Result{sendF.result(), readF.result()}
	}
	slices.SortStableFunc(sendW, func(a, b witness) int { return cmpInt(a.after.call, b.after.call) })
	slices.SortStableFunc(readW, func(a, b witness) int { return cmpInt(a.after.call, b.after.call) })
	for _, w := range sendW {
		c, decided := h.cause(sendF, w)
		if w.bound < 0 {
			sendF.addExplained(c, decided, fmt.Sprintf("%s: %s (op %d) and %s (op %d) both took offset %d",
				h.key(w.part), w.before.describe(h), h.index(w.before.pos), w.after.describe(h), h.index(w.after.pos), w.after.at),
				h.index(w.before.pos), h.index(w.after.pos))
			continue
		}
		sendF.addExplained(c, decided, fmt.Sprintf("%s: %s (op %d) began after %s (op %d) completed, which had taken the log to offset %d",
			h.key(w.part), w.after.describe(h), h.index(w.after.pos), w.before.describe(h), h.index(w.before.pos), w.bound),
			h.index(w.before.pos), h.index(w.after.pos))
	}
	for _, w := range readW {
		readF.add(Unexplained, fmt.Sprintf("%s: %s (op %d) began after %s (op %d) completed, which had taken the high watermark to %d",
			h.key(w.part), w.after.describe(h), h.index(w.after.pos), w.before.describe(h), h.index(w.before.pos), w.bound),
			h.index(w.before.pos), h.index(w.after.pos))
	}

	// Confirm each kind without a pair on the whole history, chunk by
	// chunk: any illegal chunk makes the history illegal, and one
	// without a verdict in the time left makes it unknown. Without a
	// pair, it was searched as it was built.
	c := checks{sends: len(sendW) == 0, reads: len(readW) == 0}
	full := porcupine.CheckResult("")
	// st is the search whose verdict stands; without one, the windows
	// have the bound a search of the model would have had.
	st := linSearch{bound: bound(nops)}
	if c.sends || c.reads {
		st = early
		if !searchAsBuilt || c != bothChecks {
			st = linSearch{full: porcupine.Ok, bound: bound(nops)}
			base := linModel(h, c)
			for p := range h.parts {
				if st.full != porcupine.Ok {
					break
				}
				scratch := begin(p)
				g := searchPart(&st, c, base, p, build(p, nostats), scratch)
				finish(scratch, st.cut, g)
			}
		}
		full = st.full
		if st.chunks > 0 {
			stats("porcupine-chunks", int64(st.chunks))
		}
		if st.parts > 0 {
			stats("segments-in-order", int64(st.inOrder))
		}
		if st.notTightened > 0 {
			stats("partitions-not-tightened", int64(st.notTightened))
		}
		f := readF
		if c.sends {
			f = sendF
		}
		for _, sk := range st.skips {
			f.note("%s: %d operations without a quiet instant to split them at; porcupine left them out", h.key(sk.part), sk.n)
		}
		stats("segments", int64(st.seg))
		if full == porcupine.Ok && len(st.skips) > 0 {
			full = porcupine.Unknown
		}
		stats("porcupine-"+strings.ToLower(string(full)), 1)
	}
	conclude := func(f *finding, checked bool) Result {
		switch {
		case !checked:
		case full == porcupine.Unknown:
			f.missing("porcupine found no verdict within %v", st.bound)
		case full == porcupine.Illegal:
			// No pair of this kind, yet no linearization: the claim
			// above would be wrong. Report it rather than hide it.
			f.add(Unexplained, "porcupine found no linearization, but no pair of operations explains it: a bug in the checker's model")
		}
		return f.result()
	}

	// Re-check the first pairs with porcupine, in windows small enough to
	// search and to look at.
	var artifacts []string
	if full != porcupine.Ok {
		// A search that ended without a verdict, or with one against,
		// may leave porcupine's goroutines still stepping through the
		// operations in buf: the windows are built in an array of their
		// own.
		buf = nil
	}
	if ws := firstN(slices.Concat(firstN(sendW, maxWindows/2), readW, sendW[min(len(sendW), maxWindows/2):]), maxWindows); len(ws) > 0 {
		var ops []porcupine.Operation
		built, part := -1, []linOp(nil)
		for i, w := range ws {
			if int(w.part) != built {
				// window copies what it takes: buf is free again.
				built, part = int(w.part), build(int(w.part), nostats)
			}
			for _, op := range window(part, w, i) {
				ops = append(ops, porcupine.Operation{ClientId: client(op), Input: op, Call: op.call, Return: op.ret, Metadata: meta(op)})
			}
		}
		model := linModel(h, bothChecks)
		res, info := porcupine.CheckOperationsVerbose(model, ops, max(st.bound-st.spent, st.bound/10))
		stats("porcupine-windows", int64(len(ws)))
		stats("porcupine-windows-"+strings.ToLower(string(res)), 1)
		if res != porcupine.Illegal {
			sendF.note("porcupine did not confirm the pairs in time (%s)", res)
		}
		if opts.VisualizationPath != "" {
			if err := porcupine.VisualizePath(model, info, opts.VisualizationPath); err != nil {
				sendF.note("writing the visualization failed: %v", err)
			} else {
				artifacts = append(artifacts, opts.VisualizationPath)
			}
		}
	}
	out := []Result{conclude(sendF, c.sends), conclude(readF, c.reads)}
	for i := range out {
		out[i].Artifacts = artifacts
	}
	return out
}

func firstN[T any](s []T, n int) []T { return s[:min(len(s), n)] }

// linSearch is how a search of partitions went: its verdict so far (full),
// whether porcupine was cut short (cut), and what it counted.
type linSearch struct {
	full porcupine.CheckResult
	cut  bool
	// bound is the time the search may take, spent what it has taken.
	bound, spent                              time.Duration
	seg, parts, inOrder, notTightened, chunks int
	// skips are the partitions with operations porcupine left out.
	skips []partSkip
}

// partSkip is a partition's operations porcupine left out: n of them,
// without a quiet instant to split them at.
type partSkip struct {
	part int32
	n    int
}

func sum(ns []int) int {
	t := 0
	for _, n := range ns {
		t += n
	}
	return t
}
