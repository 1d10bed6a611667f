package blocks

import (
	"slices"
	"testing"
)

// TestList: what is added reads back in order, by index and in turn,
// across block boundaries; a full block is never copied by a later Add.
func TestList(t *testing.T) {
	for _, n := range []int{0, 1, size - 1, size, size + 1, 3*size + 7} {
		var l List[int]
		var want []int
		var first *int
		for i := range n {
			l.Add(i * 3)
			want = append(want, i*3)
			if i == size {
				first = &l.blocks[0][0]
			}
		}
		if l.Len() != n {
			t.Fatalf("%d added, Len %d", n, l.Len())
		}
		for i := range n {
			if l.At(i) != want[i] {
				t.Fatalf("At(%d) = %d, want %d", i, l.At(i), want[i])
			}
		}
		if got := slices.Collect(l.All()); !slices.Equal(got, want) {
			t.Fatalf("All gave %d entries, want %d", len(got), n)
		}
		if first != nil && first != &l.blocks[0][0] {
			t.Fatal("the first block moved once it was full")
		}
	}
}
