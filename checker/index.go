package checker

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/internal/intern"
	"github.com/chaos-isr/chaos/internal/offheap"
)

// History is a history indexed once for all checkers: operations paired,
// values interned, and every offset observation (acks and reads) tabled per
// partition. It is read-only after NewHistory, so checkers may run on it
// concurrently.
//
// Positions (int32) index Ops; results report history.Op.Index, which is
// what a user finds in history.jsonl.
type History struct {
	// ops is what is kept of the history's operations.
	ops opTable

	// cfg is the configuration the history is judged under, model what
	// the guarantee model permits there (for the faults that ran), and
	// faults the fault windows the history records.
	cfg    Config
	asked  Config // cfg as given, before the history told more
	model  map[string]Permission
	faults faultLog

	keys  []history.Key
	keyID map[history.Key]int32
	parts []*partition
	// lists are the monitor samples' ISRs and replicas, each once: a
	// sample keeps their ids (a day's run samples each partition several
	// times a second).
	lists intern.Lists

	vals  table[valueInfo]
	strs  strArena // the values' strings
	valID valueIDs

	sends    table[sendOp] // every send, in completion order (open ones last)
	polls    table[readOp] // ok polls, in completion order
	ends     table[readOp] // ok end-offset reads
	finals   table[readOp] // ok final reads
	replicas []replicaRead
	// pollGens are the polls' group generations, by index in polls: a
	// group member resumes from the group's committed offset when its
	// generation changes, so its polls are compared within one. -1 for
	// a poll of no group; nil while no poll was a member's.
	pollGens []int32
	// sessions are the producer sessions of the sends that name one
	// (several requests in flight), by index in sends; nil if none does.
	sessions map[int32]int32

	dups      []observation // value observed at a second (partition, offset)
	conflicts []observation // offset read with a second value
	dupSeen   map[observation]struct{}
	confSeen  map[observation]struct{}
	// copies are, per value seen at two offsets, where the final reads
	// hold it and where else it was seen (goneCopy's index, built once on
	// first use, by whichever checker running at once needs it first:
	// most histories never do).
	copies     map[int32]*copySightings
	copiesOnce sync.Once

	// tries are the polls and final reads that polls and finals do not
	// hold (those that did not complete ok with a value: eachTry gives
	// them all), and converges the final phase's waits for convergence:
	// the liveness checks' evidence.
	tries     []readTry
	converges []converge

	corrupt []int32 // reads that got records that do not decode
	crashes []int32 // crash operations: each completion, or an invoke the history ends after
	// violations are the invariant operations' completions (history.Invariant).
	violations []int32
	counts     map[string]*OpCounts
	problems   []string
	clientOps  int // operations of clients (not the nemesis or monitor)

	// groups are the consumer group's assigns and commits (groups.go),
	// in completion order; hasGroups says the history has group
	// operations (these, or a group member's polls); lastConverge is the
	// last converge completed so far, which tells the final phase's
	// assigns.
	groups       []groupEvent
	hasGroups    bool
	lastConverge int32

	// txn is what the transactions of the history are (txn.go): empty
	// for a history without.
	txn txnIndex

	// ids are the reads' lists of records' ids (recList); scratch is
	// the buffer a read's records are interned into before they are
	// packed.
	ids     idLists
	scratch []record
	// scratchArena holds scratch when the index is in a file (scratchRoom).
	scratchArena *offheap.Arena
	// streamed are the records of the next operation, given ahead of it
	// (Builder.AddRecords), in scratch.
	streamed streamed
	// wideFrom are the offsets reads asked from that their fromD could
	// not hold (setFrom), by readKey; nil while none is.
	wideFrom map[uint64]int64

	// arena holds the largest tables in a file (Builder.InFile), beside
	// which the checks make their own scratch arenas; nil: the heap.
	// gaveBack counts the times its pages were given back (giveBack):
	// what shows that a pass gives back as it goes, which RSS shows only
	// for a long history.
	arena    *offheap.Arena
	gaveBack int
}

// sendOp is one send: its invoke and completion positions (-1 if missing)
// and what the completion said. It is kept to 24 bytes: a history holds
// millions. Its process is the op table's (of done, else inv).
type sendOp struct {
	inv, done int32
	vid       int32
	// pt packs the send's partition (above two bits) and its outcome,
	// which is not always its completion's: a transaction's sends take
	// the transaction's.
	pt     uint32
	offset int64 // for ok with an offset, else -1
}

func newSendOp(inv, done, vid, part int32, offset int64, typ outcome) sendOp {
	return sendOp{inv: inv, done: done, vid: vid, pt: uint32(part)<<2 | uint32(typ), offset: offset}
}

func (s *sendOp) part() int32  { return int32(s.pt >> 2) }
func (s *sendOp) typ() outcome { return outcome(s.pt & 3) }

// sendProcess is the process of s: its invoke's, else its completion's
// (the two are paired by process).
func (h *History) sendProcess(s *sendOp) int32 {
	pos := s.inv
	if pos < 0 {
		pos = s.done
	}
	return int32(h.ops.process(pos))
}

// outcome is how an operation completed.
type outcome uint8

const (
	outOpen outcome = iota // the history ended before it completed
	outOK
	outFail
	outInfo
)

func outcomeOf(t history.Type) outcome {
	switch t {
	case history.OK:
		return outOK
	case history.Fail:
		return outFail
	case history.Info:
		return outInfo
	}
	return outOpen
}

// readOp is one ok read: a poll, end-offset, final read or replica read.
// A history holds one for nearly every other operation, so what few reads
// have lives beside them: a replica read's broker (replicaRead), a group
// member's poll's generation (History.pollGens).
type readOp struct {
	inv, done int32
	part      int32
	// fromD is the offset the read asked from (-1 if absent) as its
	// distance below the first record's (fromBase): a history holds
	// millions of reads, and an int64 took a fifth of each. absentFrom
	// and wideFrom mark none and one too far to fit (History.wideFrom
	// has it): History.readFrom reads it. Its process is the op table's.
	fromD int32
	hw    int64 // -1 if absent; end-offset: the offset returned
	recs  recList
}

const (
	absentFrom = math.MinInt32
	wideFrom   = math.MinInt32 + 1
)

// fromBase is what a read's fromD counts from: its records' first offset
// (or end, for spread ones), 0 for none.
func (r *readOp) fromBase() int64 {
	if r.recs.n == 0 {
		return 0
	}
	return r.recs.first
}

// setFrom sets the offset r asked from (-1: none), once its records are
// set.
func (h *History) setFrom(r *readOp, from int64) {
	d := r.fromBase() - from
	switch {
	case from == -1:
		r.fromD = absentFrom
	case d == int64(int32(d)) && d != absentFrom && d != wideFrom:
		r.fromD = int32(d)
	default:
		r.fromD = wideFrom
		if h.wideFrom == nil {
			h.wideFrom = map[uint64]int64{}
		}
		h.wideFrom[readKey(r)] = from
	}
}

// readFrom is the offset r asked from, -1 if none.
func (h *History) readFrom(r *readOp) int64 {
	switch r.fromD {
	case absentFrom:
		return -1
	case wideFrom:
		return h.wideFrom[readKey(r)]
	}
	return r.fromBase() - int64(r.fromD)
}

// readKey names a read in History.wideFrom: its completion and partition
// (a transaction's reads share its completion, one per partition).
func readKey(r *readOp) uint64 { return uint64(uint32(r.done))<<32 | uint64(uint32(r.part)) }

// readProcess is the process of r: its completion's (its invoke's, for a
// transaction's that has none).
func (h *History) readProcess(r *readOp) int32 {
	pos := r.done
	if pos < 0 {
		pos = r.inv
	}
	return int32(h.ops.process(pos))
}

// reach is how far the read got: its HW, or past its highest record if it
// reported no HW (or a smaller one).
func (r *readOp) reach() int64 { return max(r.hw, r.recs.end()) }

// replicaRead is a replica read and the broker whose log it read.
type replicaRead struct {
	readOp
	broker int32
}

// readTry is one poll or final read, whatever came of it: progress when it
// completed ok and either returned records or found nothing to return
// (its high watermark at or below where it read from); stalled when it
// got no records from below the high watermark it reported (an ok poll
// with none, or a final read that failed history.StuckRead), from offset
// from.
type readTry struct {
	inv, done int32 // positions, -1 if missing
	part      int32
	progress  bool
	stalled   bool
	// committed: a read_committed read, which a correct broker holds at
	// an open transaction's first offset until the transaction ends.
	committed bool
	from, hw  int64
}

// okRead sets what an ok read came to: progress if it got records or
// found nothing to get (no HW above where it read from), else a stall.
func (t *readTry) okRead(got bool) {
	t.progress = got || t.from < 0 || t.hw <= t.from
	t.stalled = !t.progress
}

// converge is the final phase's wait for convergence (history.Converge):
// ok, or the partitions it found unconverged when it gave up (nil: it did
// not say, so all of them).
type converge struct {
	inv, done int32
	ok        bool
	topic     string
	parts     []int32
}

// observation is one sighting of a value at an offset; pos is the op that
// saw it.
type observation struct {
	vid    int32
	part   int32
	offset int64
	pos    int32
}

// Value flags: how a value's sends completed, and who read it.
const (
	sentOK uint16 = 1 << iota
	sentInfo
	sentFail
	sentOpen
	readByClient  // a poll or final read returned it
	readByReplica // a replica read returned it
	inOwnFinal    // the chosen final read of its send's partition has it
	observedTwice // acks or client reads put it at two (partition, offset)s
	// sentInTxn: a transaction sent it, and its sent flags are the
	// transaction's outcome: a failed one was written all the same, and
	// hidden from read_committed readers by its abort marker.
	sentInTxn
	// readCommitted: a read_committed read returned it, so the
	// transaction that sent it, if any, committed.
	readCommitted
	// ackedAt: a send of it was acknowledged with an offset;
	// ackedAgain: more than one was (retries, which linOps tells apart).
	ackedAt
	ackedAgain
)

// fate is what the end of the history tells of a value that was written:
// whether its record is still in the log.
type fate uint8

const (
	// fateNone: the value has no known offset (an unknown send nobody
	// read, an acknowledgement without an offset), or was never sent.
	fateNone fate = iota
	// survives: the final read of its partition holds it.
	survives
	// gone: the final read covered its offset without it, or every
	// replica of the partition was read and none holds it.
	gone
	// undecided: neither; the final phase did not read far enough (or at
	// all) to tell.
	undecided
)

// valueInfo is what is known of one value: a history has one for nearly
// every send, so it is kept to 40 bytes, with no pointer (its string is in
// History.strs; where its first failed send was is found when it is
// needed: failPos).
type valueInfo struct {
	// The first observation (ack, poll or final read); -1 if none.
	obsOff  int64
	obsPart int32
	obsPos  int32
	str     strRef // in History.strs
	part    int32  // partition of its first send; -1 if never sent
	// readPos is the first poll or final read returning it; where none
	// did (readByClient is not set), the first replica read; -1 if no
	// read did.
	readPos int32
	flags   uint16
	fate    fate
}

// readBy notes a poll or final read at pos that returned the value, with
// the flags it sets (readByClient, and readCommitted if it was one): the
// first such read takes readPos, even from a replica read.
func (v *valueInfo) readBy(pos int32, seen uint16) {
	if v.flags&readByClient == 0 {
		v.readPos = pos
	}
	// Written only if it changes: a final read passes every value, most
	// already read by a poll, and a page left clean is one the kernel
	// can take back without writing it (the table is in a file,
	// Builder.InFile).
	if v.flags&seen != seen {
		v.flags |= seen
	}
}

// reader names what kind of read readPos is.
func (v *valueInfo) reader() string {
	if v.flags&readByClient == 0 {
		return "a replica read"
	}
	return "a client read"
}

func (v *valueInfo) sent() bool { return v.flags&(sentOK|sentInfo|sentFail|sentOpen) != 0 }

// onlyFailed: every send of the value definitely failed.
func (v *valueInfo) onlyFailed() bool {
	return v.flags&sentFail != 0 && v.flags&(sentOK|sentInfo|sentOpen) == 0
}

// partition holds the per-topic-partition tables.
type partition struct {
	key   history.Key
	obs   offsetTable
	final int32 // index into History.finals of the chosen final read, -1
	// exist is the set of offsets any ack or client read observed.
	exist offsetSet
	// ackConflicts counts offsets where an ack disagrees with a read or
	// another ack: reported as a statistic, since the acked value's fate
	// is judged by lost-write, duplicate and linearizability.
	ackConflicts int64
	// tried lists the brokers whose log the final phase tried to read;
	// read maps each to its last ok replica read (an index into
	// History.replicas).
	tried []int32
	read  map[int32]int
	// allRead: every replica the final phase tried was read, and at
	// least as many as the replication factor: a value none of them
	// holds is nowhere.
	allRead bool
	// samples are the monitor's samples of the partition, in the order
	// they were invoked (a completion without an invoke where it came).
	samples table[sample]
	// existRC is exist without the offsets whose records a
	// read_committed reader may never see (those of transactions that
	// aborted, or may have): built for a history with transactions and
	// read_committed reads (txnIndex.rcReads), nil otherwise.
	existRC *offsetSet
}

// sample is one monitor operation (history.Monitor): what a broker's
// metadata said of a partition's replication state.
type sample struct {
	inv, done int32 // positions, -1 if missing
	// view: the sample completed ok naming a leader (not -1), its
	// epoch and an ISR; the fields below are set only then.
	view bool
	// full: the ISR holds every replica (as many as the sample lists, or
	// the replication factor where it lists none).
	full     bool
	leader   int32
	epoch    int32
	isr      uint32 // an id of History.lists
	replicas uint32 // an id of History.lists
}

// sampleISR is the sample's ISR.
func (h *History) sampleISR(s *sample) []int32 { return h.lists.Of(s.isr) }

// sampleReplicas is the sample's replicas.
func (h *History) sampleReplicas(s *sample) []int32 { return h.lists.Of(s.replicas) }

// slot is what is known about one offset. Value ids are stored +1 so the
// zero slot means "nothing seen".
type slot struct {
	readVid, readPos int32
	ackVid           int32
	ackConflict      bool
	readConflict     bool
}

// offsetTable maps offsets to slots. Offsets of a partition are dense in
// practice, though they need not start at 0 (a log whose start was
// deleted), so pages of slots from a base offset serve them. The pages
// cover at most a constant times as many offsets as were observed;
// offsets beyond that (a broker leaving gaps, a corrupt or foreign
// history) go to a map, so memory follows the records, not the range of
// their offsets. An overflow offset moves into the pages when they grow
// over it, so an offset has one slot.
//
// Pages, not one slice: a slice that doubled as a long history's offsets
// were read held its old and new arrays at once, left up to half of the
// new one unused, and was copied again to give that back (a 2-hour run's
// tables: 88 MB at the end of reading for 52 MB of slots, and 52 MB more
// while they were trimmed). A page is never moved: the table grows by
// adding pages at either end.
type offsetTable struct {
	// The pages cover the offsets [lo, lo+span) as slots; pages[0][0]
	// is the slot of base, at or below lo. Offsets are taken as uint64
	// differences, exact modulo 2^64 whatever their range.
	lo, base int64
	span     uint64
	pages    [][]slot
	overflow map[int64]int32 // offset -> index into spare
	spare    []slot
	n        int64 // observations so far, bounds the covered span
	// arena holds the pages (Builder.InFile), nil: the heap.
	arena *offheap.Arena
}

// pageSlots is the slots in a page (32 KB): a page or two of slack at the
// ends of a partition's span.
const (
	pageShift = 11
	pageSlots = 1 << pageShift
)

// get returns the slot of off, creating it. The pointer is valid until
// the next get.
func (t *offsetTable) get(off int64) *slot {
	t.n++
	if s := t.lookupDense(off); s != nil {
		return s
	}
	lo, hi := t.lo, int64(uint64(t.lo)+t.span)
	switch {
	case t.span == 0:
		lo, hi = off, off+1
	case off >= hi:
		hi = off + 1
	default:
		lo = off
	}
	// hi-lo in uint64 is exact even where int64 would overflow (offsets
	// at both ends of the range); off == MaxInt64 has no hi.
	if off == math.MaxInt64 || uint64(hi)-uint64(lo) > uint64(4*t.n+1024) {
		if t.overflow == nil {
			t.overflow = map[int64]int32{}
		}
		i, ok := t.overflow[off]
		if !ok {
			i = int32(len(t.spare))
			t.spare = append(t.spare, slot{})
			t.overflow[off] = i
		}
		return &t.spare[i]
	}
	t.grow(lo, hi)
	return t.lookupDense(off)
}

// grow makes the pages cover [lo, hi), a span holding the one covered,
// adding pages below and above as needed, and moves the overflow slots it
// now covers into them.
func (t *offsetTable) grow(lo, hi int64) {
	oldLo, oldHi := t.lo, int64(uint64(t.lo)+t.span)
	if t.span == 0 {
		t.lo, t.base, oldLo, oldHi = lo, lo, lo, lo
	}
	if below := uint64(t.base) - uint64(lo); uint64(t.lo)-uint64(lo) > uint64(t.lo)-uint64(t.base) {
		// lo is below base: as many pages as reach it go before the
		// others.
		k := (below + pageSlots - 1) / pageSlots
		pages := make([][]slot, k, int(k)+len(t.pages))
		for i := range pages {
			pages[i] = offheap.Make[slot](t.arena, pageSlots)
		}
		t.pages = append(pages, t.pages...)
		t.base = int64(uint64(t.base) - k*pageSlots)
	}
	for need := (uint64(hi) - uint64(t.base) + pageSlots - 1) / pageSlots; uint64(len(t.pages)) < need; {
		t.pages = append(t.pages, offheap.Make[slot](t.arena, pageSlots))
	}
	t.lo, t.span = lo, uint64(hi)-uint64(lo)
	if len(t.overflow) == 0 {
		return
	}
	// Only the newly covered offsets can be in the map; there are at
	// most as many as the span grew by, which the density bound keeps
	// proportional to the observations.
	adopt := func(from, to int64) {
		for off := from; off < to; off++ {
			if i, ok := t.overflow[off]; ok {
				*t.lookupDense(off) = t.spare[i]
				delete(t.overflow, off)
			}
		}
	}
	adopt(lo, oldLo)
	adopt(oldHi, hi)
}

func (t *offsetTable) lookupDense(off int64) *slot {
	// Unsigned, the difference is exact modulo 2^64: off is covered iff
	// it lands below the span, and no overflow can fake that.
	if uint64(off)-uint64(t.lo) >= t.span {
		return nil
	}
	i := uint64(off) - uint64(t.base)
	return &t.pages[i>>pageShift][i&(pageSlots-1)]
}

// lookup returns the slot of off without creating it.
func (t *offsetTable) lookup(off int64) *slot {
	if s := t.lookupDense(off); s != nil {
		return s
	}
	if i, ok := t.overflow[off]; ok {
		return &t.spare[i]
	}
	return nil
}

// eachInOrder calls f with every slot and its offset, in offset order: the
// map's below the pages' span, the span's, then the map's above it (an
// offset in the map is never in the span).
func (t *offsetTable) eachInOrder(f func(off int64, s *slot)) {
	offs := slices.Sorted(maps.Keys(t.overflow))
	k := 0
	for ; k < len(offs) && offs[k] < t.lo; k++ {
		f(offs[k], &t.spare[t.overflow[offs[k]]])
	}
	for i := range t.span {
		off := int64(uint64(t.lo) + i)
		f(off, t.lookupDense(off))
	}
	for ; k < len(offs); k++ {
		f(offs[k], &t.spare[t.overflow[offs[k]]])
	}
}

// NewHistory indexes ops for judging under cfg. It never fails:
// malformations (a completion without an invoke, two open operations on
// one process) are worked around conservatively and listed by Problems.
//
// cfg's acks tell which acknowledged sends were committed (acks=-1), and
// its faults, storage settings and the history's own nemesis operations
// which fault class the guarantee model judges by (see FaultClass).
func NewHistory(ops []history.Op, cfg Config) *History {
	// Sizing the tables up front saves copying them as they grow.
	var sends, polls, ends, txns int
	for i := range ops {
		switch op := &ops[i]; {
		case op.Type == history.Invoke && op.F == history.Send:
			sends++
		case op.Type == history.OK && op.F == history.Poll:
			polls++
		case op.Type == history.OK && op.F == history.EndOffset:
			ends++
		case op.Type == history.Invoke && op.F == history.Txn:
			// Each send is a send, each poll a read (of a partition,
			// usually one).
			txns++
			if t := op.Value.Transaction(); t != nil {
				for _, m := range t.Mops {
					if m.F == history.Send {
						sends++
					} else {
						polls++
					}
				}
			}
		}
	}
	b := NewBuilder(cfg)
	// The caller holds ops as long as the History: sharing their memory
	// costs nothing, and copying it would.
	b.h.ops.src = ops
	h := b.h
	h.vals.reserve(sends)
	h.valID.size(sends)
	h.sends.reserve(sends)
	h.polls.reserve(polls)
	h.ends.reserve(ends)
	if txns > 0 {
		h.txn.ops = make([]txnOp, 0, txns)
	}
	for i := range ops {
		b.Add(&ops[i])
	}
	return b.History()
}

// Builder indexes a history as it streams past, one operation at a time,
// so that a history on disk is judged without holding it whole: what it
// keeps is the index (see History), and of each operation its fixed
// fields. NewHistory is a Builder fed a slice.
type Builder struct {
	h *History
	// Clients, the monitor and the cluster's crashes are paired each by
	// history's rule on its own, as each is read for itself.
	clients, monitor, crashes history.Pairer
	// open are the client invokes not yet completed, by position: their
	// completion reads them.
	open map[int32]*history.Op
}

// NewBuilder starts indexing a history for judging under cfg (see
// NewHistory).
func NewBuilder(cfg Config) *Builder {
	return &Builder{h: &History{
		ops:    newOpTable(),
		cfg:    cfg,
		asked:  cfg,
		keyID:  map[history.Key]int32{},
		counts: map[string]*OpCounts{},

		lastConverge: -1,
	}, open: map[int32]*history.Op{}}
}

// InFile makes the index hold its largest tables (of operations, values,
// sends, reads and offsets: nearly all of it) in a file in dir, not in the
// heap, and the checks their largest scratch tables likewise (package
// offheap): page cache the kernel holds while it has room and writes out
// when it has not, so a history of hours is judged in the memory the
// machine has, and the judge's heap stays flat however long the history.
// The file is unlinked at once, and its space given back by
// History.Close. Where dir cannot be written, the file is in the system's
// temporary directory. It must be called before the first Add.
func (b *Builder) InFile(dir string) error {
	h := b.h
	if h.ops.n > 0 || h.arena != nil {
		return errors.New("checker: InFile after the history's first operation")
	}
	a, err := offheap.Open(dir)
	if err != nil {
		return err
	}
	h.arena = a
	for _, t := range []*table[readOp]{&h.polls, &h.ends, &h.finals} {
		t.in(a)
	}
	h.vals.in(a)
	h.sends.in(a)
	h.ids.ids.In(a)
	h.ids.starts.in(a)
	h.ops.arena = a
	h.ops.groupProcs.In(a)
	h.ops.procsAt.In(a)
	h.strs.arena = a
	h.valID.arena = a.Sibling()
	runtime.AddCleanup(h, func(a *offheap.Arena) { a.Close() }, h.valID.arena)
	// A History a caller drops without closing it gives its file back
	// when it is collected: nothing outside it holds what the arena
	// holds.
	runtime.AddCleanup(h, func(a *offheap.Arena) { a.Close() }, a)
	return nil
}

// releaser gives back the index's pages, and a pass's scratch arena's,
// every releaseEvery entries, records or operations passed.
// Linearizability finds a partition's operations by reading every send
// and read, and steps its model through them: what it read stays mapped,
// counted in the process's RSS, unless given back (a 2-hour run's
// partition: 0.42 GB mapped without it, 0.19 GB with it). What is touched
// again is mapped again, from the page cache, at the cost of a fault.
// Given back while another check reads it, the index would cost that
// check faults, not results: the checks take turns (CheckHistory).
//
// Reading the history gives back only as its file grows (offheap): it
// writes as it reads, and a page written again after it was given back
// costs a write fault of the file system's. Given back every so many
// records too, even only in a long run's final reads (which pass every
// value and offset), a 30-minute run was judged 15-35% slower.
type releaser struct {
	h       *History
	scratch *offheap.Arena // nil: none
	n       int
}

// releaseEvery: what a pass of so many entries reaches, with what it
// writes, is about 40 MB. A variable, so that a test can give back at
// every few entries.
var releaseEvery = 1 << 18

// releaser is a pass's, with scratch's pages too (nil: none); nil, which
// gives back nothing, unless the index is held in a file (HeldInFile).
func (h *History) releaser(scratch *offheap.Arena) *releaser {
	if !h.HeldInFile() {
		return nil
	}
	return &releaser{h: h, scratch: scratch}
}

// passed counts n more entries passed.
func (r *releaser) passed(n int) {
	if r == nil {
		return
	}
	if r.n += n; r.n >= releaseEvery {
		r.n = 0
		r.h.giveBack()
		r.scratch.Release()
	}
}

// HeldInFile says whether the index holds its tables in a file
// (Builder.InFile), all of them: false if it was not made so, or its file
// stopped growing (InFileErr), and the heap holds the rest. Only then do
// the checks take turns, and give back the index's pages.
func (h *History) HeldInFile() bool { return h.arena != nil && h.arena.Err() == nil }

// giveBack gives back the pages of an index held in a file, between the
// checks' passes or within one (releaser).
func (h *History) giveBack() {
	if h.HeldInFile() {
		h.arena.Release()
		h.gaveBack++
	}
}

// InFileErr says why an index made with Builder.InFile holds its tables
// (from some point on) in the heap after all: a full disk, a file system
// of memory, no mmap. nil if it does not, or was not made so.
func (h *History) InFileErr() error { return h.arena.Err() }

// Close gives back the file an index made with Builder.InFile holds its
// tables in. The History must not be used after: its tables are gone.
// For one held in the heap it does nothing.
func (h *History) Close() error { return h.arena.Close() }

// AddRecords gives the builder records of the next operation it will be
// given, ahead of it, as history.ScanReads gives a long read's: that
// operation's records are then these (with its own, if any, after them).
// key is the partition the records are hinted to be of (hinted: see
// ScanReads); rs nil drops those given so far. The builder holds each
// record as an offset and the id of its value, as it holds a read's, not
// the value: a long run's final reads are interned as they stream past.
func (b *Builder) AddRecords(key history.Key, hinted bool, rs []history.Record) {
	h := b.h
	st := &h.streamed
	if rs == nil {
		st.reset()
		return
	}
	if st.n == 0 {
		h.scratch = h.scratch[:0]
	}
	h.scratchRoom(len(rs))
	var obs *offsetTable
	if id, ok := h.keyID[key]; ok && hinted {
		obs = &h.parts[id].obs
	}
	for _, r := range rs {
		vid := int32(-1)
		if obs != nil {
			vid = h.seenAt(obs, r)
		}
		if vid < 0 {
			// Interned when its operation comes (resolve): only a
			// client's ok read interns its records, and in the order
			// they are read, which gives new values their ids.
			st.strs = append(st.strs, r.Value...)
			st.ends = append(st.ends, len(st.strs))
			vid = -1 - int32(len(st.ends))
		}
		h.scratch = append(h.scratch, record{Offset: r.Offset, vid: vid})
	}
	st.n = len(h.scratch)
}

// scratchRoom makes room in scratch for n more records: in a file of its
// own when the index is in one (a long run's final read is a million
// records, 16 MB of scratch), from the heap otherwise.
func (h *History) scratchRoom(n int) {
	if len(h.scratch)+n <= cap(h.scratch) || !h.HeldInFile() {
		return
	}
	if h.scratchArena == nil {
		if h.scratchArena = h.arena.Sibling(); h.scratchArena == nil {
			return
		}
		runtime.AddCleanup(h, func(a *offheap.Arena) { a.Close() }, h.scratchArena)
	}
	grown := offheap.Make[record](h.scratchArena, max(2*cap(h.scratch), len(h.scratch)+n, 1<<16))
	h.scratch = grown[:copy(grown, h.scratch)]
	// What the old scratch held is garbage; the new maps again as it is
	// written.
	h.scratchArena.Release()
}

// streamed are records given ahead of their operation (AddRecords), in
// History.scratch: each with its value's id if the value seen at its
// offset is its own (seenAt), else -1-k for the k-th (from 1) of strs.
type streamed struct {
	n    int
	strs []byte
	ends []int
}

func (st *streamed) reset() {
	st.n = 0
	st.strs, st.ends = st.strs[:0], st.ends[:0]
}

// str is the value of the k-th (from 1) record not seen at its offset.
func (st *streamed) str(k int) []byte {
	from := 0
	if k > 1 {
		from = st.ends[k-2]
	}
	return st.strs[from:st.ends[k-1]]
}

// streamedFor says whether op takes streamed records as the index keeps
// them: a client's ok read, which addRead interns. Any other operation
// (a transaction's, a foreign line's) gets them back as records
// (unstream).
func streamedFor(op *history.Op) bool {
	if op.Type != history.OK || op.Process < 0 || op.Value == nil {
		return false
	}
	switch op.F {
	case history.Poll, history.EndOffset, history.FinalRead, history.ReplicaRead:
		return true
	}
	return false
}

// unstream gives the streamed records back to op as records, before its
// own.
func (h *History) unstream(op *history.Op) {
	st := &h.streamed
	rs := make([]history.Record, 0, st.n+len(op.Value.Records))
	for _, r := range h.scratch[:st.n] {
		v := ""
		if r.vid >= 0 {
			v = h.valStr(r.vid)
		} else {
			v = string(st.str(int(-1 - r.vid)))
		}
		rs = append(rs, history.Record{Offset: r.Offset, Value: v})
	}
	op.Value.Records = append(rs, op.Value.Records...)
	st.reset()
}

// streamedRecords are the streamed records of the operation being
// indexed (a client's ok read), their values interned, in order, and its
// own records after them; nil if none were streamed.
func (h *History) streamedRecords(part int32, own []history.Record) []record {
	st := &h.streamed
	if st.n == 0 {
		return nil
	}
	recs := h.scratch[:st.n]
	for i := range recs {
		if recs[i].vid < 0 {
			recs[i].vid = h.valueOf(string(st.str(int(-1 - recs[i].vid))))
		}
	}
	return h.records(recs, part, own)
}

// Add indexes the history's next operation. The builder may keep op: the
// caller must not change it afterwards.
func (b *Builder) Add(op *history.Op) {
	h := b.h
	if h.streamed.n > 0 {
		switch {
		case op.Value == nil:
			// Its value null at last: no records, as read whole.
			h.streamed.reset()
		case !streamedFor(op):
			h.unstream(op)
		}
		defer h.streamed.reset()
	}
	// Over a slice the table keeps nothing: the caller holds every op.
	keep := h.ops.src == nil && keepWhole(op, h.streamed.n > 0)
	kept := op
	if keep {
		// Without its records (the read tables have them), and a copy of
		// its own: a kept op must not hold on to its decoder's buffers.
		kept = history.Detached(stripped(op))
	}
	pos := h.ops.add(kept, keep)
	if op.F == history.Txn {
		h.txn.any = true
	}
	c := h.counts[op.F]
	if c == nil {
		c = &OpCounts{}
		h.counts[h.own(op.F)] = c
	}
	switch op.Type {
	case history.Invoke:
		c.Invoke++
	case history.OK:
		c.OK++
	case history.Fail:
		c.Fail++
	case history.Info:
		c.Info++
	}
	switch op.Process {
	case history.NemesisProcess:
		h.faults.add(op, pos)
		return
	case history.MonitorProcess:
		if op.F == history.Monitor && op.Value != nil {
			h.addSample(op, pos, b.monitor.Add(op, pos))
		}
		return
	case history.ClusterProcess:
		if op.F == history.Invariant && op.Type != history.Invoke {
			h.violations = append(h.violations, pos)
		}
		if op.F == history.Crash {
			h.addCrash(op, pos, b.crashes.Add(op, pos))
		}
		return
	}
	h.clientOps++
	st := b.clients.Add(op, pos)
	if st.Problem != "" {
		h.problem(st.Problem)
	}
	if st.Orphan >= 0 {
		h.complete(st.Orphan, -1, b.open[st.Orphan], nil)
		delete(b.open, st.Orphan)
	}
	if op.Type == history.Invoke {
		b.open[pos] = op
		return
	}
	var inv *history.Op
	if st.Invoke >= 0 {
		inv = b.open[st.Invoke]
		delete(b.open, st.Invoke)
	}
	h.complete(st.Invoke, pos, inv, op)
}

// History finishes the index; the builder is spent.
func (b *Builder) History() *History {
	h := b.h
	// Invokes the history ended before completing are unknown, like info.
	for _, j := range b.clients.Open() {
		h.complete(j, -1, b.open[j], nil)
	}
	b.open = nil
	// A crash's invoke and completion are recorded at once: an invoke the
	// history ends with is a crash all the same, its completion torn off.
	for _, j := range b.crashes.Open() {
		h.crashes = append(h.crashes, j)
		h.faults.crash(h.ops.op(j))
	}
	h.faults.finish(h.ops.op)
	h.finish()
	// Records a torn last line streamed before it was found torn.
	h.streamed = streamed{}
	// The buffer is as large as the largest read: a long run's final
	// reads hold every record of their partition.
	h.scratch = nil
	_ = h.scratchArena.Close() // a failure to unmap costs memory, not a result
	h.scratchArena = nil
	// Values are found by their strings only as the history is read
	// (the checkers go by id): the table is 10 to 20 bytes a value.
	h.valID.drop()
	return h
}

// addSample indexes one monitor operation, paired as st says: an invoke
// opens its partition's next sample, a completion fills the one it
// completes (or stands alone). A sample the history ended before
// completing, or that a second invoke left open, stays without a view.
func (h *History) addSample(op *history.Op, pos int32, st history.Step) {
	p := h.parts[h.keyOf(op.Key())]
	if op.Type == history.Invoke {
		p.samples.add(sample{inv: pos, done: -1})
		return
	}
	// The sample a completion completes is its partition's last: a
	// second invoke would have left it open and begun another.
	if n := p.samples.len(); st.Invoke < 0 || n == 0 || p.samples.at(n-1).inv != st.Invoke {
		p.samples.add(sample{inv: -1, done: -1})
	}
	s := p.samples.at(p.samples.len() - 1)
	s.done = pos
	v := op.Value
	if op.Type != history.OK || v.Sample == nil || v.Leader == nil || *v.Leader < 0 || v.Epoch == nil || len(v.ISR) == 0 {
		return
	}
	s.view, s.leader, s.epoch, s.isr, s.replicas = true, *v.Leader, *v.Epoch, h.lists.ID(v.ISR), h.lists.ID(v.Replicas)
	want := len(v.Replicas)
	if want == 0 {
		want = h.cfg.ReplicationFactor
	}
	s.full = want > 0 && len(v.ISR) >= want
}

// addCrash indexes one crash operation (the cluster's own), paired as st
// says: each completion is a crash, and so is an invoke a second one
// left open, since both are recorded at once and a torn history may keep
// the first alone.
func (h *History) addCrash(op *history.Op, pos int32, st history.Step) {
	if st.Orphan >= 0 {
		h.crashes = append(h.crashes, st.Orphan)
		h.faults.crash(h.ops.op(st.Orphan))
	}
	if op.Type != history.Invoke {
		h.crashes = append(h.crashes, pos)
		h.faults.crash(op)
	}
}

func (h *History) problem(p string) {
	if len(h.problems) < history.MaxProblems {
		h.problems = append(h.problems, p)
	}
}

// own is s as the History keeps it: a copy, unless the caller holds the
// operations (NewHistory), whose strings then outlive the History anyway.
func (h *History) own(s string) string {
	if h.ops.src != nil {
		return s
	}
	return strings.Clone(s)
}

// Recorded says whether the history holds an operation of function f.
func (h *History) Recorded(f string) bool { return h.counts[f] != nil }

// NotSupported marks the check name as one the history gives no evidence
// for (Config.Unsupported), with the reason: found out only once the
// history was read, as when nothing says its recorder watched for
// crashes.
func (h *History) NotSupported(name, why string) {
	h.asked.Unsupported = maps.Clone(h.asked.Unsupported)
	if h.asked.Unsupported == nil {
		h.asked.Unsupported = map[string]string{}
	}
	h.asked.Unsupported[name] = why
}

// Problems lists malformations found in the history (at most 100).
func (h *History) Problems() []string { return h.problems }

func (h *History) keyOf(k history.Key) int32 {
	if id, ok := h.keyID[k]; ok {
		return id
	}
	k.Topic = h.own(k.Topic)
	id := int32(len(h.keys))
	h.keyID[k] = id
	h.keys = append(h.keys, k)
	p := &partition{key: k, final: -1, obs: offsetTable{arena: h.arena}}
	// A day's run samples each partition a million times or so.
	p.samples.in(h.arena)
	h.parts = append(h.parts, p)
	return id
}

func (h *History) valueOf(s string) int32 {
	i, tag := h.valID.slot(s, &h.vals, &h.strs)
	if id := h.valID.slots[i]; id != 0 {
		return id - 1
	}
	id := int32(h.vals.len())
	h.vals.add(valueInfo{str: h.strs.add(s), part: -1, readPos: -1, obsPart: -1, obsPos: -1})
	h.valID.put(i, tag, id, &h.vals, &h.strs)
	return id
}

// record is a record as the index keeps it: its offset, and its value
// interned (History.vals), so that a value read a hundred times is held
// once.
type record struct {
	Offset int64
	vid    int32
}

// records interns rs, records of partition part, appending them to dst.
// Most records are read again where they were seen before (polls that
// overlap, the final and replica reads), so the value already seen at a
// record's offset is tried before the table of every value.
func (h *History) records(dst []record, part int32, rs []history.Record) []record {
	if len(rs) == 0 {
		return dst
	}
	out := slices.Grow(dst, len(rs))
	obs := &h.parts[part].obs
	for _, r := range rs {
		vid := h.seenAt(obs, r)
		if vid < 0 {
			vid = h.valueOf(r.Value)
		}
		out = append(out, record{Offset: r.Offset, vid: vid})
	}
	return out
}

// seenAt is the id of r's value if it is the value seen at r's offset in
// obs (read first or acknowledged there), else -1. It changes nothing.
func (h *History) seenAt(obs *offsetTable, r history.Record) int32 {
	if s := obs.lookup(r.Offset); s != nil {
		switch {
		case s.readVid != 0 && string(h.valBytes(s.readVid-1)) == r.Value:
			return s.readVid - 1
		case s.ackVid != 0 && string(h.valBytes(s.ackVid-1)) == r.Value:
			return s.ackVid - 1
		}
	}
	return -1
}

// str is the value of a record.
func (h *History) str(r record) string { return h.valStr(r.vid) }

// valStr is value vid's string (a copy: see strArena.string).
func (h *History) valStr(vid int32) string { return h.strs.string(&h.vals.at(vid).str) }

// valBytes is value vid's string where it is held, to compare and not
// to keep or change.
func (h *History) valBytes(vid int32) []byte { return h.strs.bytes(&h.vals.at(vid).str) }

// complete indexes one operation given its invoke and completion positions
// (either may be -1, not both) and the operations there.
func (h *History) complete(inv, done int32, invOp, doneOp *history.Op) {
	if doneOp == nil {
		if invOp.Type == history.Invoke {
			if c := h.counts[invOp.F]; c != nil {
				c.Open++
			}
		}
		switch invOp.F {
		case history.Send:
			h.addSend(invOp, nil, inv, -1)
		case history.Txn:
			h.addTxn(invOp, nil, inv, -1)
		}
		return
	}
	switch doneOp.F {
	case history.Send:
		h.addSend(invOp, doneOp, inv, done)
	case history.Txn:
		h.addTxn(invOp, doneOp, inv, done)
	case history.Converge:
		h.lastConverge = done
		c := converge{inv: inv, done: done, ok: doneOp.Type == history.OK}
		if v := doneOp.Value; v != nil {
			c.topic, c.parts = v.Topic, v.Unconverged
		}
		h.converges = append(h.converges, c)
	case history.Assign, history.Commit:
		h.addGroupOp(doneOp, inv, done)
	case history.Poll, history.EndOffset, history.FinalRead, history.ReplicaRead:
		if doneOp.F == history.Poll && doneOp.Value != nil && doneOp.Value.GroupInfo != nil {
			h.hasGroups = true
		}
		if (doneOp.F == history.Poll || doneOp.F == history.FinalRead) && !h.triedByRead(invOp, doneOp) {
			h.addTry(invOp, doneOp, inv, done)
		}
		if doneOp.F == history.ReplicaRead {
			h.tryReplica(invOp, doneOp)
		}
		if doneOp.Type != history.OK && strings.HasPrefix(doneOp.Error, history.CorruptRecords) {
			h.corrupt = append(h.corrupt, done)
		}
		if doneOp.Type == history.OK && doneOp.Value != nil {
			h.addRead(invOp, doneOp, inv, done)
		}
	}
}

// addTry tables a poll or final read for the liveness checks.
func (h *History) addTry(invOp, doneOp *history.Op, inv, done int32) {
	v := doneOp.Value
	if v == nil && invOp != nil {
		v = invOp.Value
	}
	if v == nil || v.Topic == "" {
		return
	}
	t := readTry{inv: inv, done: done, part: h.keyOf(history.Key{Topic: v.Topic, Partition: v.Partition}), from: -1, hw: -1,
		committed: v.ReadCommitted() || invOp != nil && invOp.Value.ReadCommitted()}
	from := v.From
	if from == nil && invOp != nil && invOp.Value != nil {
		from = invOp.Value.From
	}
	if from != nil && v.HW != nil {
		t.from, t.hw = *from, *v.HW
	}
	switch {
	case doneOp.Type == history.OK:
		t.okRead(len(v.Records) > 0 || h.streamed.n > 0)
	case strings.HasPrefix(doneOp.Error, history.StuckRead):
		t.stalled = t.from >= 0 && t.hw > t.from
	}
	h.tries = append(h.tries, t)
}

// triedByRead: a poll or final read is tabled as a read that eachTry can
// tell the try of (an ok one with a value), unless the read's table cannot
// say it: a HW below zero that the read gave (the read table keeps -1 for
// none) with where it read from.
func (h *History) triedByRead(invOp, doneOp *history.Op) bool {
	v := doneOp.Value
	if doneOp.Type != history.OK || v == nil {
		return false
	}
	from := v.From
	if from == nil && invOp != nil && invOp.Value != nil {
		from = invOp.Value.From
	}
	return v.HW == nil || *v.HW >= 0 || from == nil || *from < 0
}

// eachTry calls f with every poll and final read, whatever came of it, in
// completion order: the ok ones from the read tables (unless tries has
// one, see triedByRead), the others from tries. The try f gets is valid
// until it returns.
func (h *History) eachTry(f func(t *readTry)) {
	var t readTry
	// A read of no topic was never a try, and a transaction's poll is
	// its transaction's.
	try := func(r *readOp) bool {
		if h.keys[r.part].Topic == "" || h.isTxn(r.done) {
			return false
		}
		t = readTry{inv: r.inv, done: r.done, part: r.part, from: -1, hw: -1}
		if from := h.readFrom(r); from >= 0 && r.hw >= 0 {
			t.from, t.hw = from, r.hw
		}
		t.okRead(r.recs.len() > 0)
		// Only a stall asks (the op table's lookup).
		t.committed = t.stalled && h.readsCommitted(r)
		return true
	}
	var p, fi int32
	for i := 0; ; {
		// The next to complete of the three.
		next, which := int32(math.MaxInt32), -1
		if p < h.polls.len() && h.polls.at(p).done < next {
			next, which = h.polls.at(p).done, 0
		}
		if fi < h.finals.len() && h.finals.at(fi).done < next {
			next, which = h.finals.at(fi).done, 1
		}
		if i < len(h.tries) && h.tries[i].done <= next {
			// At the same position as a read, it is that read's.
			if h.tries[i].done == next {
				switch which {
				case 0:
					p++
				case 1:
					fi++
				}
			}
			which = 2
		}
		switch which {
		case -1:
			return
		case 0:
			if try(h.polls.at(p)) {
				f(&t)
			}
			p++
		case 1:
			if try(h.finals.at(fi)) {
				f(&t)
			}
			fi++
		case 2:
			t = h.tries[i]
			f(&t)
			i++
		}
	}
}

// tryReplica notes that the final phase tried to read a replica's log,
// whatever came of it: a replica it could not read may hold anything.
func (h *History) tryReplica(invOp, doneOp *history.Op) {
	v := doneOp.Value
	if v == nil && invOp != nil {
		v = invOp.Value
	}
	if v == nil {
		return
	}
	b := v.Broker
	if b == nil && invOp != nil && invOp.Value != nil {
		b = invOp.Value.Broker
	}
	if b == nil {
		return
	}
	p := h.parts[h.keyOf(history.Key{Topic: v.Topic, Partition: v.Partition})]
	if !slices.Contains(p.tried, *b) {
		p.tried = append(p.tried, *b)
	}
}

func (h *History) addSend(invOp, doneOp *history.Op, inv, done int32) {
	var v *history.Value
	typ := history.Type("")
	if doneOp != nil {
		v, typ = doneOp.Value, doneOp.Type
	}
	if invOp != nil {
		if v == nil || v.Value == "" {
			v = invOp.Value
		}
	}
	if v == nil || v.Value == "" {
		if done >= 0 {
			h.problem(fmt.Sprintf("op %d: a send without a value", h.index(done)))
		}
		return
	}
	part := h.keyOf(history.Key{Topic: v.Topic, Partition: v.Partition})
	s := newSendOp(inv, done, h.valueOf(v.Value), part, -1, outcomeOf(typ))
	if p := sessionOf(invOp, doneOp); p != nil {
		if h.sessions == nil {
			h.sessions = map[int32]int32{}
		}
		h.sessions[int32(h.sends.len())] = *p
	}
	val := h.vals.at(s.vid)
	if val.part < 0 {
		val.part = part
	}
	switch typ {
	case history.OK:
		val.flags |= sentOK
		if v.Offset != nil {
			s.offset = *v.Offset
			h.observe(s.vid, part, s.offset, done, true)
		}
	case history.Fail:
		val.flags |= sentFail
	case history.Info:
		val.flags |= sentInfo
	default:
		val.flags |= sentOpen
	}
	h.addSendOp(s)
}

// addSendOp tables s, noting on its value whether it was acknowledged at
// an offset, and whether an earlier send of it had been.
func (h *History) addSendOp(s sendOp) {
	if s.typ() == outOK && s.offset >= 0 {
		val := h.vals.at(s.vid)
		if val.flags&ackedAt != 0 {
			val.flags |= ackedAgain
		}
		val.flags |= ackedAt
	}
	h.sends.add(s)
}

// sessionOf is the producer session a send names, nil if none.
func sessionOf(ops ...*history.Op) *int32 {
	for _, op := range ops {
		if op != nil && op.Value != nil && op.Value.Producer != nil {
			return op.Value.Producer
		}
	}
	return nil
}

func (h *History) addRead(invOp, doneOp *history.Op, inv, done int32) {
	v := doneOp.Value
	r := readOp{inv: inv, done: done, hw: -1}
	r.part = h.keyOf(history.Key{Topic: v.Topic, Partition: v.Partition})
	// The records are interned into a buffer the next read reuses, and
	// kept packed (once they are observed: the offsets' first reads are
	// then most reads' ids).
	recs := h.streamedRecords(r.part, v.Records)
	if recs == nil {
		recs = h.records(h.scratch[:0], r.part, v.Records)
	}
	h.scratch = recs
	if doneOp.F != history.EndOffset && doneOp.F != history.ReplicaRead {
		// A client read: what it returned was seen.
		seen := readByClient
		if v.ReadCommitted() || (invOp != nil && invOp.Value.ReadCommitted()) {
			seen |= readCommitted
			h.txn.rcReads = true
		}
		for _, rec := range recs {
			vid := rec.vid
			h.vals.at(vid).readBy(done, seen)
			h.observe(vid, r.part, rec.Offset, done, false)
		}
	}
	r.recs = h.ids.pack(recs, &h.parts[r.part].obs)
	from := int64(-1)
	if v.From != nil {
		from = *v.From
	} else if invOp != nil && invOp.Value != nil && invOp.Value.From != nil {
		from = *invOp.Value.From
	}
	h.setFrom(&r, from)
	if v.HW != nil {
		r.hw = *v.HW
	}
	switch doneOp.F {
	case history.Poll:
		gen := int32(-1)
		if v.GroupInfo != nil {
			gen = v.Generation
		}
		h.addPoll(r, gen)
	case history.EndOffset:
		if v.Offset == nil {
			return
		}
		// Its reach is the offset it returned, whatever records a
		// foreign history gives it (linOps).
		r.hw = *v.Offset
		h.ends.add(r)
		return
	case history.FinalRead:
		h.finals.add(r)
	case history.ReplicaRead:
		// A replica's log is judged by replica-divergence only: it may
		// hold an unacknowledged tail that no client could read.
		for _, rec := range recs {
			// Written only if it changes, as in readBy: each replica's
			// read passes every value.
			if val := h.vals.at(rec.vid); val.flags&readByReplica == 0 || val.readPos < 0 {
				val.flags |= readByReplica
				if val.readPos < 0 {
					val.readPos = done
				}
			}
		}
		rr := replicaRead{readOp: r, broker: -1}
		if v.Broker != nil {
			rr.broker = *v.Broker
		} else if invOp != nil && invOp.Value != nil && invOp.Value.Broker != nil {
			rr.broker = *invOp.Value.Broker
		}
		p := h.parts[r.part]
		if p.read == nil {
			p.read = map[int32]int{}
		}
		p.read[rr.broker] = len(h.replicas)
		h.replicas = append(h.replicas, rr)
	}
}

// addPoll tables an ok poll of a group's member in generation gen (-1:
// of no group).
func (h *History) addPoll(r readOp, gen int32) {
	if gen != -1 && h.pollGens == nil {
		h.pollGens = slices.Repeat([]int32{-1}, int(h.polls.len()))
	}
	if h.pollGens != nil {
		h.pollGens = append(h.pollGens, gen)
	}
	h.polls.add(r)
}

// pollGen is the group generation of the i-th poll, -1 for none.
func (h *History) pollGen(i int32) int32 {
	if h.pollGens == nil {
		return -1
	}
	return h.pollGens[i]
}

// observe tables one sighting of value vid at (part, off), by an ack or a
// client read, and notes duplicates and conflicts as they appear.
func (h *History) observe(vid, part int32, off int64, pos int32, ack bool) {
	val := h.vals.at(vid)
	switch {
	case val.obsPos < 0:
		val.obsPart, val.obsOff, val.obsPos = part, off, pos
	case val.obsPart != part || val.obsOff != off:
		val.flags |= observedTwice
		o := observation{vid: vid, part: part, offset: off}
		if _, seen := h.dupSeen[o]; !seen {
			if h.dupSeen == nil {
				h.dupSeen = map[observation]struct{}{}
			}
			h.dupSeen[o] = struct{}{}
			o.pos = pos
			h.dups = append(h.dups, o)
		}
	}
	p := h.parts[part]
	s := p.obs.get(off)
	if ack {
		switch {
		case s.ackVid == 0:
			s.ackVid = vid + 1
		case s.ackVid != vid+1 && !s.ackConflict:
			s.ackConflict = true
			p.ackConflicts++
		}
		if s.readVid != 0 && s.readVid != vid+1 && !s.ackConflict {
			s.ackConflict = true
			p.ackConflicts++
		}
		return
	}
	switch {
	case s.readVid == 0:
		s.readVid, s.readPos = vid+1, pos
		if s.ackVid != 0 && s.ackVid != vid+1 && !s.ackConflict {
			s.ackConflict = true
			p.ackConflicts++
		}
	case s.readVid != vid+1:
		s.readConflict = true
		o := observation{vid: vid, part: part, offset: off}
		if _, seen := h.confSeen[o]; !seen {
			if h.confSeen == nil {
				h.confSeen = map[observation]struct{}{}
			}
			h.confSeen[o] = struct{}{}
			o.pos = pos
			h.conflicts = append(h.conflicts, o)
		}
	}
}

// finish runs the passes that need the whole history: choosing each
// partition's final read, marking the values it holds, listing the
// offsets that exist, telling each value's fate, and applying the
// guarantee model to the faults that ran.
func (h *History) finish() {
	// The last ok final read of a partition is its final read: an earlier
	// one was a retry that a later, fuller read superseded.
	for i := range h.finals.len() {
		h.parts[h.finals.at(i).part].final = i
	}
	for part, p := range h.parts {
		if p.final < 0 {
			continue
		}
		for rec := range h.readRecs(h.finals.at(p.final)) {
			val := h.vals.at(rec.vid)
			if val.home() == int32(part) {
				val.flags |= inOwnFinal
			}
		}
	}
	for _, p := range h.parts {
		p.obs.eachInOrder(func(off int64, s *slot) {
			if s.readVid != 0 || s.ackVid != 0 {
				p.exist.add(off)
			}
		})
		p.allRead = len(p.tried) > 0 && len(p.tried) >= h.cfg.ReplicationFactor
		for _, b := range p.tried {
			if _, ok := p.read[b]; !ok {
				p.allRead = false
			}
		}
	}
	if len(h.txn.ops) > 0 {
		h.cfg.Transactions = true
	}
	if h.cfg.Transactions {
		h.finishTxns()
	}
	for vid := range h.vals.len() {
		h.vals.at(vid).fate = h.fateOf(h.vals.at(vid))
	}
	h.model = permitted(h.cfg, FaultClass(h.cfg, h.faults.ran(h.cfg)))
}

// FaultClass is the class of the faults the history shows ran, under its
// configuration (see FaultClass).
func (h *History) FaultClass() string { return FaultClass(h.cfg, h.faults.ran(h.cfg)) }

// home is the partition a value belongs to: where it was sent, or, for a
// value nobody sent, where it was first seen.
func (v *valueInfo) home() int32 {
	if v.part >= 0 {
		return v.part
	}
	return v.obsPart
}

// fateOf tells whether a value that was written (acknowledged, or read by
// a client) is still in the log at the end.
func (h *History) fateOf(v *valueInfo) fate {
	if v.obsPos < 0 || !v.sent() {
		return fateNone
	}
	if v.flags&inOwnFinal != 0 {
		return survives
	}
	p := h.parts[v.home()]
	switch {
	case p.final < 0:
		return undecided
	case v.flags&sentInTxn != 0 && h.hiddenFromFinal(v, p):
		// The read_committed final read hides what an aborted
		// transaction wrote: the replicas' logs, which hold every
		// record, tell.
		switch {
		case v.flags&readByReplica != 0:
			return survives
		case p.allRead:
			return gone
		}
		return undecided
	case v.obsPart == v.home() && v.obsOff < h.finals.at(p.final).reach():
		return gone
	case p.allRead && v.flags&readByReplica == 0:
		return gone
	}
	return undecided
}

// committed: the value is known to have been committed, by an
// acknowledgement under acks=-1 or by a client read (consumers read only
// below the high watermark).
func (h *History) committed(v *valueInfo) bool {
	return v.flags&readByClient != 0 || (v.flags&sentOK != 0 && h.cfg.Acks < 0)
}

// truncation is the cause a value's truncation would have.
func (h *History) truncation(vid int32) Cause {
	if h.committed(h.vals.at(vid)) {
		return CommittedTruncation
	}
	return UncommittedTruncation
}

// existing counts the offsets in [from, to) of partition part that some
// ack or read observed.
func (h *History) existing(part int32, from, to int64) int {
	return h.parts[part].exist.count(from, to)
}

// existingFor is existing as the reader r can see the log: a
// read_committed reader skips what aborted transactions wrote (and their
// markers, which no read returns), so only the offsets of records it may
// see count.
func (h *History) existingFor(r *readOp, from, to int64) int {
	if p := h.parts[r.part]; p.existRC != nil && h.readsCommitted(r) {
		return p.existRC.count(from, to)
	}
	return h.existing(r.part, from, to)
}

// index returns the user-visible index of the op at pos.
func (h *History) index(pos int32) int64 {
	if pos < 0 {
		return -1
	}
	return h.ops.index(pos)
}

// callTime is when the operation was invoked; an operation seen only by its
// completion may have started at the beginning of the test.
func (h *History) callTime(inv int32) int64 {
	if inv < 0 {
		return math.MinInt64 / 2
	}
	return h.ops.time(inv)
}

func (h *History) key(part int32) history.Key { return h.keys[part] }
