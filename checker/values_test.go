package checker

import (
	"fmt"
	"math"
	"slices"
	"testing"
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
			if id := h.valueOf(s); id != int32(i) {
				t.Fatalf("round %d: %q got id %d, want %d", round, s, id, i)
			}
		}
	}
	if h.vals.len() != n || len(h.valID.slots) < 2*n {
		t.Fatalf("%d values, %d slots", h.vals.len(), len(h.valID.slots))
	}
	if id := h.valueOf(""); id != n || h.vals.at(n).str != "" {
		t.Fatalf("the empty value got id %d", id)
	}
}

// TestRecList: records packed are the records given, in order, whether
// their offsets are consecutive (the compact form) or not, at either end
// of the offsets' range; and end is one past the highest, as a read's
// reach sums it.
func TestRecList(t *testing.T) {
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
		l := pack(rs)
		end := int64(math.MinInt64)
		for _, r := range rs {
			end = max(end, r.Offset+1)
		}
		if l.end() != end {
			t.Fatalf("%v: end %d, want %d", rs, l.end(), end)
		}
		if got := l.slice(); l.len() != len(rs) || (len(rs) > 0 && !slices.Equal(got, rs)) {
			t.Fatalf("%v packed reads back as %v", rs, got)
		}
		i := 0
		for r := range l.all() {
			if r != rs[i] {
				t.Fatalf("%v: record %d is %v", rs, i, r)
			}
			i++
		}
	}
	if l := pack([]record{{Offset: 3, vid: 1}, {Offset: 4, vid: 2}}); len(*l.more) != 2 {
		t.Fatalf("consecutive records take %d ids, want 2", len(*l.more))
	}
	if l := pack([]record{{Offset: 3, vid: 1}}); l.more != nil {
		t.Fatalf("a record alone takes ids of its own: %v", *l.more)
	}
}
