package blocks

import (
	"math/rand/v2"
	"slices"
	"sort"
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

// TestTruncateAndClone: a list cut back and added to again, at random,
// in the heap and in an arena, reads as a slice given the same steps; a
// clone is the list as it was, and goes its own way after; an arena
// list's blocks, emptied by a cut, are filled again, not made anew.
func TestTruncateAndClone(t *testing.T) {
	a, err := offheap.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, arena := range []*offheap.Arena{nil, a} {
		rng := rand.New(rand.NewPCG(1, 2))
		var l List[int64]
		l.In(arena)
		var want []int64
		check := func(step int, l *List[int64], want []int64) {
			t.Helper()
			if l.Len() != len(want) {
				t.Fatalf("step %d: Len %d, want %d", step, l.Len(), len(want))
			}
			for i, w := range want {
				if l.At(i) != w {
					t.Fatalf("step %d: At(%d) = %d, want %d", step, i, l.At(i), w)
				}
			}
			if got := slices.Collect(l.All()); !slices.Equal(got, want) {
				t.Fatalf("step %d: All differs", step)
			}
		}
		for step := range 60 {
			switch rng.IntN(4) {
			case 0:
				n := rng.IntN(len(want) + 2)
				if rng.IntN(8) == 0 {
					n = (n / size) * size // at a block's edge
				}
				l.Truncate(n)
				want = want[:min(n, len(want))]
			case 1:
				c, cw := l.Clone(arena), slices.Clone(want)
				check(step, &c, cw)
				// What the list does after does not reach the clone.
				l.Truncate(len(want) / 2)
				want = want[:len(want)/2]
				for range size / 2 {
					v := rng.Int64()
					l.Add(v)
					want = append(want, v)
				}
				check(step, &c, cw)
				c.Add(-1)
				check(step, &c, append(cw, -1))
			default:
				for range rng.IntN(3 * size) {
					v := rng.Int64()
					l.Add(v)
					want = append(want, v)
				}
			}
			check(step, &l, want)
		}
		if arena != nil {
			mapped := arena.Mapped()
			l.Truncate(0)
			for i := range 2 * size {
				l.Add(int64(i))
			}
			if arena.Mapped() != mapped {
				t.Fatalf("refilling emptied blocks mapped %d bytes more", arena.Mapped()-mapped)
			}
		}
	}
}

// TestSearch: Search finds what sort.Search finds, for every threshold of
// lists of every length across a block's edge, and reads a bounded
// number of entries for one near the end.
func TestSearch(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 17, size - 1, size, size + 1, 2*size + 5} {
		var l List[int]
		for i := range n {
			l.Add(2 * i)
		}
		for _, x := range []int{-1, 0, 1, 2, 3, n / 2, n - 1, n, 2*n - 3, 2*n - 2, 2*n - 1, 2 * n, 3 * n} {
			reads := 0
			got := l.Search(func(v *int) bool { reads++; return *v >= x })
			want := sort.Search(n, func(i int) bool { return 2*i >= x })
			if got != want {
				t.Fatalf("n %d, x %d: Search %d, sort.Search %d", n, x, got, want)
			}
			if x >= 2*n-3 && reads > 6 {
				t.Fatalf("n %d, x %d: %d entries read for one at the end", n, x, reads)
			}
		}
	}
}
