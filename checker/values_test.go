package checker

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// TestValueIDs: every value gets one id, in the order first seen, through
// the table's growth, and is found again by its string (never an equal
// hash's other value).
func TestValueIDs(t *testing.T) {
	h := NewBuilder(strict).h
	const n = 50_000
	for round := range 2 {
		for i := range n {
			s := fmt.Sprintf("%d-%d", i%7, i)
			if id := h.valueOf(s); id != int32(i) || h.valStr(id) != s {
				t.Fatalf("round %d: %q got id %d (%q), want %d", round, s, id, h.valStr(id), i)
			}
		}
	}
	if h.vals.len() != n || len(h.valID.slots) < 2*n {
		t.Fatalf("%d values, %d slots", h.vals.len(), len(h.valID.slots))
	}
	if id := h.valueOf(""); id != n || h.valStr(n) != "" {
		t.Fatalf("the empty value got id %d", id)
	}
}

// TestStrArena: strings come back as they went in, whether they fill a
// chunk to its end, start the next, or are long enough for a chunk of
// their own between the strings of a chunk being filled; and the bytes of
// one never run into the next.
func TestStrArena(t *testing.T) {
	var a strArena
	var want []string
	var refs []strRef
	add := func(s string) {
		want, refs = append(want, s), append(refs, a.add(s))
	}
	// Up to inlineMax bytes, whatever they are (the tag's bit set in
	// each), a string is held in its reference, and takes no chunk.
	for n := range inlineMax + 2 {
		s := strings.Repeat("\xff", n)
		r := a.add(s)
		if got := a.string(&r); got != s || (len(a.chunks) > 0) != (n > inlineMax) {
			t.Fatalf("%d bytes: %q back, %d chunks", n, got, len(a.chunks))
		}
	}
	for i := 0; len(a.chunks) < 4; i++ {
		switch i % 997 {
		case 3:
			add(strings.Repeat("L", arenaChunk/4+i%5)) // a chunk of its own
		case 5:
			add("")
		default:
			add(strings.Repeat(string(rune('a'+i%26)), 1+i%4000))
		}
	}
	for i := range refs {
		r := &refs[i]
		if got := a.string(r); got != want[i] {
			t.Fatalf("string %d: %d bytes back, want %d", i, len(got), len(want[i]))
		}
		if b := a.bytes(r); cap(b) != len(b) {
			t.Fatalf("string %d: room past its end (%d > %d): an append would overwrite the next", i, cap(b), len(b))
		}
	}
}

// TestRecList: records packed are the records given, in order, whether
// their offsets are consecutive (the compact form) or not, at either end
// of the offsets' range; and end is one past the highest, as a read's
// reach sums it.
func TestRecList(t *testing.T) {
	var ls idLists
	for _, rs := range [][]record{
		nil,
		{{Offset: 5, vid: 1}},
		{{Offset: 5, vid: 1}, {Offset: 6, vid: 9}, {Offset: 7, vid: 2}},
		{{Offset: 7, vid: 1}, {Offset: 5, vid: 9}},
		{{Offset: 1 << 40, vid: 3}, {Offset: -1, vid: 4}, {Offset: math.MaxInt64, vid: 5}},
		{{Offset: math.MinInt64, vid: 1}, {Offset: math.MinInt64 + 1, vid: 2}},
		{{Offset: math.MaxInt64 - 1, vid: 1}, {Offset: math.MaxInt64, vid: 2}},
		{{Offset: math.MaxInt64, vid: 1}},
		{{Offset: math.MinInt64, vid: 1}},
		{{Offset: 9, vid: 1}, {Offset: 2, vid: 2}, {Offset: 4, vid: 3}},
	} {
		l := ls.pack(rs, nil)
		end := int64(math.MinInt64)
		for _, r := range rs {
			end = max(end, r.Offset+1)
		}
		if l.end() != end {
			t.Fatalf("%v: end %d, want %d", rs, l.end(), end)
		}
		if got := l.slice(recSrc{ids: &ls}); l.len() != len(rs) || (len(rs) > 0 && !slices.Equal(got, rs)) {
			t.Fatalf("%v packed reads back as %v", rs, got)
		}
		i := 0
		for r := range l.all(recSrc{ids: &ls}) {
			if r != rs[i] {
				t.Fatalf("%v: record %d is %v", rs, i, r)
			}
			i++
		}
	}
	ids := ls.ids.Len()
	if ls.pack([]record{{Offset: 3, vid: 1}, {Offset: 4, vid: 2}}, nil); ls.ids.Len()-ids != 2 {
		t.Fatalf("consecutive records take %d ids, want 2", ls.ids.Len()-ids)
	}
	n := ls.starts.len()
	if ls.pack([]record{{Offset: 3, vid: 1}}, nil); ls.starts.len() != n || ls.ids.Len() != ids+2 {
		t.Fatal("a record alone takes ids of its own")
	}

	// Records that are each the first read at their offset take no ids:
	// the offset table holds them. One that is not (a second value read
	// at an offset, or an offset nobody read first) takes its list's.
	var obs offsetTable
	for off, vid := range map[int64]int32{10: 4, 11: 7, 12: 2} {
		obs.get(off).readVid = vid + 1
	}
	src := recSrc{ids: &ls, obs: &obs}
	for _, c := range []struct {
		rs      []record
		implied bool
	}{
		{[]record{{Offset: 10, vid: 4}, {Offset: 11, vid: 7}, {Offset: 12, vid: 2}}, true},
		{[]record{{Offset: 11, vid: 7}, {Offset: 12, vid: 2}}, true},
		{[]record{{Offset: 11, vid: 7}, {Offset: 12, vid: 3}}, false},
		{[]record{{Offset: 12, vid: 2}, {Offset: 13, vid: 5}}, false},
		{[]record{{Offset: 12, vid: 2}, {Offset: 10, vid: 4}}, false},
	} {
		n := ls.starts.len()
		l := ls.pack(c.rs, &obs)
		if got := l.one == implied; got != c.implied || (ls.starts.len() == n) != c.implied {
			t.Fatalf("%v: implied %v, %d lists added; want implied %v", c.rs, got, ls.starts.len()-n, c.implied)
		}
		if got := l.slice(src); !slices.Equal(got, c.rs) {
			t.Fatalf("%v packed reads back as %v", c.rs, got)
		}
	}
}

// TestReadFrom: the offset a read asked from reads back as it was set,
// near its records or far from them, with none, one or spread records, at
// either end of the offsets' range; a read that asked from none says -1.
func TestReadFrom(t *testing.T) {
	h := &History{}
	lists := []recList{
		{},
		{first: 5, n: 1, one: 2},
		{first: 1 << 40, n: 3, one: implied},
		{first: math.MaxInt64, n: -2},
		{first: math.MinInt64, n: 4, one: 1},
	}
	froms := []int64{-1, 0, 1, 5, 6, 1<<40 - 1, 1 << 40, math.MaxInt64, math.MinInt64, math.MinInt64 + 1, 1 << 31, -1 << 31, -2}
	for i, l := range lists {
		// The two that fromD's marks would stand for.
		base := (&readOp{recs: l}).fromBase()
		for j, from := range append(froms, base-absentFrom, base-wideFrom) {
			r := readOp{done: int32(100*i + j), part: int32(i), recs: l}
			h.setFrom(&r, from)
			if got := h.readFrom(&r); got != from {
				t.Fatalf("records %+v, from %d: reads back %d", l, from, got)
			}
		}
	}
}

// TestIndexSizes holds the index's largest tables' entries to their
// sizes: a history holds millions of each, and a field more is tens of
// MB on a long run's judge.
func TestIndexSizes(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"sendOp", unsafe.Sizeof(sendOp{}), 24},
		{"readOp", unsafe.Sizeof(readOp{}), 40},
		{"recList", unsafe.Sizeof(recList{}), 16},
		{"valueInfo", unsafe.Sizeof(valueInfo{}), 40},
		{"slot", unsafe.Sizeof(slot{}), 16},
		{"opMeta", unsafe.Sizeof(opMeta{}), 8},
		{"linOp", unsafe.Sizeof(linOp{}), 40},
	} {
		if c.got != c.want {
			t.Errorf("%s is %d bytes, want %d", c.name, c.got, c.want)
		}
	}
}
