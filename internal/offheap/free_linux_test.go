package offheap

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestFree: Free drops the whole pages of a dead table from the page cache
// and the file at once (the file's blocks go, not only the mapping), and
// leaves its neighbours, which share its first and last pages, as they
// were; a slice the arena did not give is left alone.
func TestFree(t *testing.T) {
	a := openMapped(t)
	// All three in one mapping (dead is under half of it), back to back.
	before := Make[byte](a, 5000) // ends inside a page
	dead := Make[int64](a, 48<<10)
	after := Make[byte](a, 5000)
	const size = 48 << 13 // dead's bytes
	for i := range before {
		before[i], after[i] = byte(i), byte(i*3)
	}
	for i := range dead {
		dead[i] = int64(i)
	}
	blocks := func() int64 {
		var st unix.Stat_t
		if err := unix.Fstat(int(a.f.f.Fd()), &st); err != nil {
			t.Fatal(err)
		}
		return st.Blocks * 512
	}
	held, mapped := blocks(), resident(t, a)
	if mapped < size {
		t.Fatalf("%d bytes written, %d resident", size, mapped)
	}
	Free(a, dead[:0]) // the whole allocation, to its capacity
	if r := resident(t, a); r > mapped-size+2*int64(sysPage) {
		t.Fatalf("%d bytes resident after Free, %d before", r, mapped)
	}
	if gone := held - blocks(); gone < size-2*int64(sysPage) {
		t.Fatalf("the file holds %d bytes fewer after Free, not about %d", gone, size)
	}
	for i := range before {
		if before[i] != byte(i) || after[i] != byte(i*3) {
			t.Fatalf("a neighbour changed at %d: %d, %d", i, before[i], after[i])
		}
	}
	Free(a, make([]int64, 1<<12)) // the heap's
	Free(nil, before)
	a.Close()
	Free(a, after) // a closed arena's
}
