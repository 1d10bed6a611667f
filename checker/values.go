package checker

import (
	"encoding/binary"
	"hash/maphash"
	"iter"
	"math"

	"github.com/chaos-isr/chaos/internal/blocks"
	"github.com/chaos-isr/chaos/internal/offheap"
)

// valueIDs finds a value's id (its index in History.vals) by its string:
// an open-addressing table of ids, at most half full, whose strings are
// the values' own. A history writes a new value with nearly every send,
// and a map would hold each string's header a second time, with its
// overhead: about 45 bytes a value, where this takes 12 to 24. Each slot
// has two bytes of its string's hash beside it, so that a probe past
// another value compares those, not the string (a value's string is far
// away in memory: most of a lookup's time went to reading the ones
// passed). With one byte, about one new value in a hundred still read
// another's string, at a random place in the values' table: in a memory
// cgroup too small to hold that table, a read from the disk each: the
// most time of any line of a 2-hour run's check in 300 MB.
type valueIDs struct {
	// spent: the history has been read, and the table dropped.
	spent bool
	// arena, if not nil, holds the table (Builder.InFile): one of its
	// own, closed when the table is dropped. It is probed at random as
	// the history is read, so in the heap it grew with the history (80
	// MB of a 2-hour run's), and the kernel could not reclaim it: under
	// memory pressure, a check that needs it is slowed, not killed.
	arena *offheap.Arena
	seed  maphash.Seed
	slots []int32  // id+1; 0 is empty
	tags  []uint16 // the top two bytes of the slot's string's hash
	n     int
}

// size makes an empty table room for n values without growing (each
// growth hashes every string again).
func (t *valueIDs) size(n int) {
	t.seed = maphash.MakeSeed()
	m := 1024
	for m < 2*n {
		m *= 2
	}
	t.slots, t.tags = offheap.Make[int32](t.arena, m), offheap.Make[uint16](t.arena, m)
	t.populate()
}

// populate maps the table's pages at once: it is written at random, and
// a file's page faulted in one at a time made a 30-minute run's check 5%
// slower than with the table in the heap.
func (t *valueIDs) populate() {
	offheap.Populate(t.arena, t.slots)
	offheap.Populate(t.arena, t.tags)
}

// drop drops the table once the history has been read: what it holds is
// given back (the file of its arena, or to the collector).
func (t *valueIDs) drop() {
	_ = t.arena.Close() // a failure to unmap costs memory, not a result
	*t = valueIDs{spent: true}
}

// slot is where s is in the table, or the empty slot where it belongs,
// and the tag s has there.
func (t *valueIDs) slot(s string, vals *table[valueInfo], strs *strArena) (int, uint16) {
	if t.spent {
		// A new id for a value already known would be a wrong answer.
		panic("checker: a value looked up by its string after the history was read")
	}
	if t.slots == nil {
		t.size(0)
	}
	mask := uint64(len(t.slots) - 1)
	h := maphash.String(t.seed, s)
	tag := uint16(h >> 48)
	for i := h & mask; ; i = (i + 1) & mask {
		if id := t.slots[i]; id == 0 || t.tags[i] == tag && string(strs.bytes(&vals.at(id-1).str)) == s {
			return int(i), tag
		}
	}
}

// put records id, whose string is not in the table, at slot i with its
// tag (from slot), growing the table to keep it at most half full.
func (t *valueIDs) put(i int, tag uint16, id int32, vals *table[valueInfo], strs *strArena) {
	t.slots[i], t.tags[i] = id+1, tag
	t.n++
	if 2*t.n <= len(t.slots) {
		return
	}
	old, oldTags := t.slots, t.tags
	t.slots, t.tags = offheap.Make[int32](t.arena, 2*len(old)), offheap.Make[uint16](t.arena, 2*len(old))
	t.populate()
	mask := uint64(len(t.slots) - 1)
	// Every value is in the table (valueOf puts each it adds): they are
	// placed again in the order of the values' table, which reads it
	// through once. In the old table's order, each read was of a random
	// page of it: in a memory cgroup too small to hold it (a 2-hour run's
	// is 0.14 GB), a growth spent minutes faulting pages back in.
	for id := range int32(vals.len()) {
		h := maphash.Bytes(t.seed, strs.bytes(&vals.at(id).str))
		j := h & mask
		for t.slots[j] != 0 {
			j = (j + 1) & mask
		}
		t.slots[j], t.tags[j] = id+1, uint16(h>>48)
	}
	// The old table is garbage: its pages leave the file at once,
	// where given back (Release) they stayed dirty in the page cache,
	// and the new table's were given back with them.
	offheap.Free(t.arena, old)
	offheap.Free(t.arena, oldTags)
}

// recList is a read's records, held compactly: most reads return
// consecutive offsets, kept as the first offset and each record's value id
// (4 bytes a record, where a record is 16); a read whose offsets are not
// consecutive keeps each offset beside its value id. Most polls return a
// single record, which the list holds itself: a list of one needs no
// memory of its own, where a slice of one cost its header and an
// allocation. A longer list's ids are in the history's idLists, so a list
// holds no pointer: a long history's reads are a table the collector
// need not scan (a pointer to a list's ids made it scan every poll, at
// every collection).
type recList struct {
	// first is the first record's offset; for spread records (offsets
	// not consecutive), the highest offset past a record (see end).
	first int64
	// n is the number of records, negated for spread ones.
	n int32
	// one is the value id of a list of one consecutive record; for a
	// longer list (or spread records) the index in idLists of its ids:
	// the ids of consecutive records in order, or (offset's high half,
	// low half, value id) for each spread record.
	one int32
}

// idLists are the ids of the reads' lists of more than one record, back
// to back in one table (no slice, so no pointer, each: a table that can
// live in a file, Builder.InFile), and where each list begins in it.
type idLists struct {
	ids    blocks.List[int32]
	starts table[int64]
}

// begin starts a list, whose ids are added to ls.ids next, and returns
// its number.
func (ls *idLists) begin() int32 { return ls.starts.add(int64(ls.ids.Len())) }

// id is the i-th id of list k.
func (ls *idLists) id(k int32, i int) int32 { return ls.ids.At(int(*ls.starts.at(k)) + i) }

// recSrc is where a read's record list finds its ids: the history's lists
// and the offset table of the read's partition (History.recsOf).
type recSrc struct {
	ids *idLists
	obs *offsetTable
}

// recsOf is where the record lists of partition part's reads find their
// ids.
func (h *History) recsOf(part int32) recSrc { return recSrc{&h.ids, &h.parts[part].obs} }

// readRecs is r's records in order.
func (h *History) readRecs(r *readOp) iter.Seq[record] { return r.recs.all(h.recsOf(r.part)) }

// implied is recList.one for consecutive records whose values are each
// the first read at their offsets (the offset table's readVid): the table
// holds their ids, and the list holds none. Nearly every read is one (the
// first to read an offset sets it; the others agree with it, or there is
// an anomaly), so a long run's final and replica reads, a record of every
// offset, are lists of no ids.
const implied = -1

// pack is rs as a recList, its ids added to ls unless obs, the offset
// table of their partition (nil for none), already holds them.
func (ls *idLists) pack(rs []record, obs *offsetTable) recList {
	switch {
	case len(rs) == 0:
		return recList{}
	case len(rs) == 1 && rs[0].Offset != spread:
		return recList{first: rs[0].Offset, n: 1, one: rs[0].vid}
	}
	// Offsets that run past MaxInt64 (and wrap) are not consecutive: end
	// would wrap with them.
	consecutive := rs[0].Offset != spread && rs[0].Offset <= math.MaxInt64-int64(len(rs)-1)
	for i := 1; i < len(rs) && consecutive; i++ {
		consecutive = rs[i].Offset == rs[0].Offset+int64(i)
	}
	if consecutive && obs != nil && impliedBy(rs, obs) {
		return recList{first: rs[0].Offset, n: int32(len(rs)), one: implied}
	}
	if consecutive {
		k := ls.begin()
		for _, r := range rs {
			ls.ids.Add(r.vid)
		}
		return recList{first: rs[0].Offset, n: int32(len(rs)), one: k}
	}
	end := int64(math.MinInt64)
	for _, r := range rs {
		end = max(end, r.Offset+1)
	}
	k := ls.begin()
	for _, r := range rs {
		ls.ids.Add(int32(uint64(r.Offset) >> 32))
		ls.ids.Add(int32(uint32(r.Offset)))
		ls.ids.Add(r.vid)
	}
	return recList{first: end, n: -int32(len(rs)), one: k}
}

// impliedBy says whether each record's value is the first read at its
// offset in obs. A first read, once set, is never changed: the list reads
// the same from the table ever after.
func impliedBy(rs []record, obs *offsetTable) bool {
	for _, r := range rs {
		if s := obs.lookup(r.Offset); s == nil || s.readVid != r.vid+1 {
			return false
		}
	}
	return true
}

// spread marks an offset that a list of consecutive records cannot start
// at: a record there is kept as a spread one.
const spread = math.MinInt64

func (l recList) len() int { return int(max(l.n, -l.n)) }

// spread says the records' offsets are not consecutive.
func (l recList) spread() bool { return l.n < 0 }

// at is the i-th record, its ids in src (where the list was packed).
func (l recList) at(src recSrc, i int) record {
	switch {
	case l.n < 0:
		return record{Offset: join(src.ids.id(l.one, 3*i), src.ids.id(l.one, 3*i+1)), vid: src.ids.id(l.one, 3*i+2)}
	case l.n == 1:
		return record{Offset: l.first, vid: l.one}
	case l.one == implied:
		off := l.first + int64(i)
		return record{Offset: off, vid: src.obs.lookup(off).readVid - 1}
	}
	return record{Offset: l.first + int64(i), vid: src.ids.id(l.one, i)}
}

func join(hi, lo int32) int64 { return int64(uint64(uint32(hi))<<32 | uint64(uint32(lo))) }

// end is the highest of the records' offsets plus one, as int64 sums it
// (an offset of MaxInt64 adds MinInt64), and MinInt64 for no records: a
// read's reach is its high watermark or this, whichever is higher.
func (l recList) end() int64 {
	switch {
	case l.n == 0:
		return math.MinInt64
	case l.n < 0:
		return l.first
	}
	last := l.first + int64(l.n) - 1
	switch {
	case last != math.MaxInt64:
		return last + 1
	case l.n > 1:
		return last // the record before it, plus one
	}
	return math.MinInt64
}

// all is the records in order.
func (l recList) all(src recSrc) iter.Seq[record] {
	return func(yield func(record) bool) {
		for i := range l.len() {
			if !yield(l.at(src, i)) {
				return
			}
		}
	}
}

// slice is the records as a slice of their own.
func (l recList) slice(src recSrc) []record {
	out := make([]record, l.len())
	for i := range out {
		out[i] = l.at(src, i)
	}
	return out
}

// strArena holds the values' strings back to back in chunks, each written
// once and never moved: a history holds a value for nearly every send, and
// a string of its own cost its header and an allocation (16 bytes and more
// for a value of eight), with a pointer in every valueInfo for the
// collector to follow. A short string is held in its strRef instead.
type strArena struct {
	chunks [][]byte
	fill   int // the chunk being filled is chunks[fill-1]; 0 while none is
	// arena holds the chunks (Builder.InFile), nil: the heap.
	arena *offheap.Arena
}

// strRef is a string of up to inlineMax bytes, held in the reference
// itself, or where a longer one is in its arena. Most values are short (a
// workload's are its process and a sequence number, "3-81234"): held
// inline, they take no room in the arena (25 MB of a 2-hour run's index),
// and comparing one reads only its valueInfo, already read to find it.
//
// The last byte tells the two apart: inlineTag with the length for a
// string held inline, in the bytes before it; else the string is in
// chunk bytes [0,4), at [4,8), n long [8,12), little-endian, with n below
// 2^31 so that its top byte has no inlineTag.
type strRef [12]byte

const (
	inlineMax = 11
	inlineTag = 0x80
)

// arenaChunk is the size of a chunk; a string longer than a quarter of it
// gets a chunk of its own.
const arenaChunk = 1 << 20

// add copies s into a reference, or the arena.
func (a *strArena) add(s string) strRef {
	var r strRef
	n := len(s)
	if n <= inlineMax {
		copy(r[:], s)
		r[inlineMax] = inlineTag | uint8(n)
		return r
	}
	if n > math.MaxInt32 {
		panic("checker: a value of more than 2 GB")
	}
	var k, at int
	if n > arenaChunk/4 {
		a.chunks = append(a.chunks, []byte(s))
		k = len(a.chunks) - 1
	} else {
		if a.fill == 0 || len(a.chunks[a.fill-1])+n > arenaChunk {
			a.chunks = append(a.chunks, offheap.Make[byte](a.arena, arenaChunk)[:0])
			a.fill = len(a.chunks)
		}
		k = a.fill - 1
		at = len(a.chunks[k])
		a.chunks[k] = append(a.chunks[k], s...)
	}
	binary.LittleEndian.PutUint32(r[0:], uint32(k))
	binary.LittleEndian.PutUint32(r[4:], uint32(at))
	binary.LittleEndian.PutUint32(r[8:], uint32(n))
	return r
}

// bytes is the string r refers to, not to be changed; r must stay where
// it is while they are used (an inline string's bytes are r's).
func (a *strArena) bytes(r *strRef) []byte {
	if l := r[inlineMax]; l&inlineTag != 0 {
		n := l &^ inlineTag
		return r[:n:n]
	}
	k := binary.LittleEndian.Uint32(r[0:])
	at := binary.LittleEndian.Uint32(r[4:])
	n := binary.LittleEndian.Uint32(r[8:])
	return a.chunks[k][at : at+n : at+n]
}

// string is the string at r, a copy of its own: one that outlives the
// history (in a result) holds no chunk.
func (a *strArena) string(r *strRef) string { return string(a.bytes(r)) }
