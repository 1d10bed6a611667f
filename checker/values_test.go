package checker

import (
	"fmt"
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
	if len(h.vals) != n || len(h.valID.slots) < 2*n {
		t.Fatalf("%d values, %d slots", len(h.vals), len(h.valID.slots))
	}
	if id := h.valueOf(""); id != n || h.vals[n].str != "" {
		t.Fatalf("the empty value got id %d", id)
	}
}
