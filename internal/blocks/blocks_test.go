package blocks

import (
	"slices"
	"testing"

	"github.com/chaos-isr/chaos/internal/offheap"
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

// TestListIn: a list whose blocks are in an arena reads back as one in
// the heap.
func TestListIn(t *testing.T) {
	a, err := offheap.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var l List[[2]int32]
	l.In(a)
	n := 5*size + 3
	for i := range n {
		l.Add([2]int32{int32(i), int32(-i)})
	}
	for i := range n {
		if v := l.At(i); v != [2]int32{int32(i), int32(-i)} {
			t.Fatalf("At(%d) = %v", i, v)
		}
	}
	if a.Mapped() == 0 {
		t.Fatal("no block is in the arena")
	}
}
