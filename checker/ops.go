package checker

import (
	"math"
	"strings"

	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/internal/blocks"
	"github.com/chaos-isr/chaos/internal/offheap"
)

// opTable is what the checkers keep of each operation once it has been
// indexed: a few fixed fields of every operation, and the whole of the few
// that a checker reads further (the nemesis's, the monitor's, the
// cluster's, transactions, group operations, and client operations that
// did not complete ok or read nothing). A history is judged from it
// without holding the operations it was read from: most operations are
// sends and reads, whose records and values the index tables keep in
// their own form, so memory follows what must be remembered, not the
// history's size in JSON.
type opTable struct {
	// meta holds every operation's fixed fields in blocks of metaBlock:
	// the table of a long history grows without copying itself, or
	// holding room it does not use.
	meta [][]opMeta
	// procs are, beside meta, each operation's process as an index into
	// its group's list of the processes it has (procsAt[group] is where
	// that list starts in groupProcs): a group of timeGroup operations
	// has a few processes, so a byte an operation names one where an
	// int32 did (a quarter of the table). The lists are in blocks, in
	// the arena where there is one: a day-long run's were 27 MB of the
	// judge's heap.
	procs      [][]uint8
	groupProcs blocks.List[int32]
	procsAt    blocks.List[int32]
	// bases are the times opMeta.dt counts from, one for each timeGroup
	// positions: the time of the group's first operation; wide are the
	// times of the operations too far from theirs (dt is wideTime).
	bases []int64
	wide  map[int32]int64
	fns   []string
	fnID  map[string]uint16
	errs  []string
	errID map[string]int32
	kept  map[int32]*history.Op
	// indexes are the operations' indexes where they are not their
	// positions (a foreign or damaged history); nil while none is.
	indexes map[int32]int64
	// src, when set, are the operations themselves, which the caller
	// holds (NewHistory): the table reads them, and keeps nothing.
	src []history.Op
	n   int32 // operations added
	// arena holds meta's and procs' blocks (Builder.InFile), nil: the
	// heap.
	arena *offheap.Arena
}

// opMeta is one operation's fixed fields but its process
// (opTable.procs), 8 bytes: its index is its position, unless
// opTable.indexes says otherwise. A long history's table is among the
// largest things the index holds. dt is its time less its group's base
// (opTable.bases): a group's operations are a fraction of a second apart
// in a run, well within an int32 of nanoseconds. word packs the op's
// function and error, which index opTable's string tables (error 0 is no
// error), and its outcome (outOpen stands for an invoke).
type opMeta struct {
	dt   int32
	word uint32
}

const (
	timeGroup = 256
	// wideTime marks an operation whose time is in opTable.wide.
	wideTime = math.MinInt32
)

const (
	fnBits  = 16
	errBits = 14
	// manyFns and manyErrs mark an operation whose function or error did
	// not fit its table (a history of 65,535 function names, or 16,383
	// error texts): it is kept whole.
	manyFns  = 1<<fnBits - 1
	manyErrs = 1<<errBits - 1
)

func packMeta(fn uint16, err int32, typ outcome) uint32 {
	return uint32(fn) | uint32(err)<<fnBits | uint32(typ)<<(fnBits+errBits)
}

func (m *opMeta) fn() uint16   { return uint16(m.word) }
func (m *opMeta) err() int32   { return int32(m.word >> fnBits & manyErrs) }
func (m *opMeta) typ() outcome { return outcome(m.word >> (fnBits + errBits)) }

const metaBlock = 1 << 16

// at is the fixed fields of the operation at pos.
func (t *opTable) at(pos int32) *opMeta { return &t.meta[pos/metaBlock][pos%metaBlock] }

// opType is the history's type of an operation that completed so, or
// invoke.
func (o outcome) opType() history.Type {
	switch o {
	case outOK:
		return history.OK
	case outFail:
		return history.Fail
	case outInfo:
		return history.Info
	}
	return history.Invoke
}

func newOpTable() opTable {
	return opTable{fnID: map[string]uint16{}, errs: []string{""}, errID: map[string]int32{"": 0}, kept: map[int32]*history.Op{}}
}

// add records op at the next position, keeping it whole if keep says so.
func (t *opTable) add(op *history.Op, keep bool) int32 {
	pos := t.n
	t.n++
	t.addProcess(pos, op)
	if t.src != nil {
		return pos
	}
	fn, ok := t.fnID[op.F]
	if !ok && len(t.fns) < manyFns {
		fn = uint16(len(t.fns))
		// Copies of their own, here and below: a decoder's string may
		// share memory with the rest of its line.
		f := strings.Clone(op.F)
		t.fnID[f] = fn
		t.fns = append(t.fns, f)
	} else if !ok {
		fn, keep = manyFns, true // past the table's room the op says itself
	}
	e, ok := t.errID[op.Error]
	if !ok && len(t.errs) < manyErrs {
		e = int32(len(t.errs))
		msg := strings.Clone(op.Error)
		t.errID[msg] = e
		t.errs = append(t.errs, msg)
	} else if !ok {
		e, keep = manyErrs, true
	}
	if op.Index != int64(pos) {
		if t.indexes == nil {
			t.indexes = map[int32]int64{}
		}
		t.indexes[pos] = op.Index
	}
	if pos%metaBlock == 0 {
		t.meta = append(t.meta, offheap.Make[opMeta](t.arena, metaBlock)[:0])
	}
	if pos%timeGroup == 0 {
		t.bases = append(t.bases, op.Time)
	}
	// Modulo 2^64 the difference is exact, and adding it back gives the
	// time whatever the two are.
	d := op.Time - t.bases[pos/timeGroup]
	dt := int32(d)
	if int64(dt) != d || dt == wideTime {
		if t.wide == nil {
			t.wide = map[int32]int64{}
		}
		dt, t.wide[pos] = wideTime, op.Time
	}
	last := &t.meta[len(t.meta)-1]
	*last = append(*last, opMeta{dt: dt, word: packMeta(fn, e, outcomeOf(op.Type))})
	if keep {
		t.kept[pos] = op
	}
	return pos
}

// addProcess records op's process, at pos. Also for operations the
// caller holds (src): the checkers look up the processes of millions of
// sends and reads, and an operation's is a cache miss away where the
// table's are a byte each, side by side.
func (t *opTable) addProcess(pos int32, op *history.Op) {
	if pos%metaBlock == 0 {
		t.procs = append(t.procs, offheap.Make[uint8](t.arena, metaBlock)[:0])
	}
	if pos%timeGroup == 0 {
		t.procsAt.Add(int32(t.groupProcs.Len()))
	}
	// A group has at most timeGroup (256) processes: its index fits.
	start, pi := int(t.procsAt.At(t.procsAt.Len()-1)), -1
	for i := start; i < t.groupProcs.Len(); i++ {
		if t.groupProcs.At(i) == int32(op.Process) {
			pi = i - start
			break
		}
	}
	if pi < 0 {
		pi = t.groupProcs.Len() - start
		t.groupProcs.Add(int32(op.Process))
	}
	procs := &t.procs[len(t.procs)-1]
	*procs = append(*procs, uint8(pi))
}

// op returns the operation at pos: the whole of it if it was kept, else
// its fixed fields without a value.
func (t *opTable) op(pos int32) *history.Op {
	if t.src != nil {
		return &t.src[pos]
	}
	if op, ok := t.kept[pos]; ok {
		return op
	}
	m := t.at(pos)
	return &history.Op{Index: t.index(pos), Time: t.time(pos), Process: t.process(pos), Type: m.typ().opType(), F: t.fn(pos), Error: t.errText(pos)}
}

// whole is the operation at pos if it was kept whole, else nil (also for
// a position of none).
func (t *opTable) whole(pos int32) *history.Op {
	if t.src != nil && pos >= 0 {
		return &t.src[pos]
	}
	return t.kept[pos]
}

func (t *opTable) fn(pos int32) string {
	if t.src != nil {
		return t.src[pos].F
	}
	m := t.at(pos)
	if m.fn() == manyFns {
		return t.kept[pos].F
	}
	return t.fns[m.fn()]
}

func (t *opTable) errText(pos int32) string {
	if t.src != nil {
		return t.src[pos].Error
	}
	m := t.at(pos)
	if m.err() == manyErrs {
		return t.kept[pos].Error
	}
	return t.errs[m.err()]
}

func (t *opTable) time(pos int32) int64 {
	if t.src != nil {
		return t.src[pos].Time
	}
	if dt := t.at(pos).dt; dt != wideTime {
		return t.bases[pos/timeGroup] + int64(dt)
	}
	return t.wide[pos]
}

func (t *opTable) index(pos int32) int64 {
	if t.src != nil {
		return t.src[pos].Index
	}
	if i, ok := t.indexes[pos]; ok {
		return i
	}
	return int64(pos)
}

func (t *opTable) process(pos int32) int {
	return int(t.groupProcs.At(int(t.procsAt.At(int(pos/timeGroup)) + int32(t.procs[pos/metaBlock][pos%metaBlock]))))
}

// keepWhole says whether a checker reads more of op than its fixed fields
// and the index tables: every operation but the monitor's samples and
// the sends and reads of clients that completed ok (or are invokes) and
// carry no group or transaction information. A read that got nothing is kept, since the
// liveness checks describe it by its high watermark; streamed says its
// records were given ahead of it (Builder.AddRecords).
func keepWhole(op *history.Op, streamed bool) bool {
	if op.Process == history.MonitorProcess && op.F == history.Monitor {
		// The partition's samples hold what the checkers read of it.
		return false
	}
	if op.Process < 0 {
		return true
	}
	switch op.F {
	case history.Send, history.Poll, history.EndOffset, history.FinalRead, history.ReplicaRead:
	default:
		return true
	}
	v := op.Value
	switch {
	case op.Type == history.Fail || op.Type == history.Info:
		return true
	case v == nil:
		return false
	case v.Sample != nil || v.FaultInfo != nil || v.CrashInfo != nil || v.GroupInfo != nil || v.TxnInfo != nil:
		return true
	case op.Type == history.OK && op.F != history.Send && op.F != history.EndOffset && len(v.Records) == 0 && !streamed:
		return true
	}
	return false
}

// stripped is op as kept whole: a client's read without its records,
// which the read tables hold (a group member's polls are kept for their
// group, and would otherwise hold every record twice). op itself is not
// changed.
func stripped(op *history.Op) *history.Op {
	if op.Process < 0 || op.Value == nil || len(op.Value.Records) == 0 {
		return op
	}
	v := *op.Value
	v.Records = nil
	c := *op
	c.Value = &v
	return &c
}
