package offheap

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unsafe"
)

type entry struct {
	a int64
	b int32
	c uint16
}

// TestMake: what an arena gives is zeroed, keeps what is written to it
// across chunks and after later allocations, is aligned for its type, and
// comes from the file, not the heap; a large allocation gets a mapping of
// its own.
func TestMake(t *testing.T) {
	dir := t.TempDir()
	a, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var lists [][]entry
	n := 0
	for i := range 200 {
		l := Make[entry](a, 40_000+i)
		if uintptr(unsafe.Pointer(&l[0]))%unsafe.Alignof(l[0]) != 0 {
			t.Fatalf("allocation %d is not aligned", i)
		}
		for j := range l {
			if l[j] != (entry{}) {
				t.Fatalf("allocation %d is not zeroed at %d", i, j)
			}
			l[j] = entry{a: int64(i)<<32 | int64(j), b: int32(j), c: uint16(i)}
		}
		// Odd sizes misalign what follows, unless alloc aligns.
		Make[byte](a, i%7+1)[0] = 0xff
		lists = append(lists, l)
		n += len(l) * int(unsafe.Sizeof(entry{}))
	}
	big := Make[int64](a, chunk/8+1)
	big[len(big)-1] = 7
	for i, l := range lists {
		for j := range l {
			if want := (entry{a: int64(i)<<32 | int64(j), b: int32(j), c: uint16(i)}); l[j] != want {
				t.Fatalf("allocation %d at %d is %+v, want %+v", i, j, l[j], want)
			}
		}
	}
	if m := a.Mapped(); m < int64(n)+chunk || m > int64(n)+3*chunk {
		t.Fatalf("%d bytes allocated mapped %d", n, m)
	}
	if a.Err() != nil {
		t.Fatal(a.Err())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("the arena's file is in %s: %v", dir, ents)
	}
}

// TestMakeRefusesPointers: the collector does not scan an arena, so a
// type with a pointer cannot live there.
func TestMakeRefusesPointers(t *testing.T) {
	a, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for name, f := range map[string]func(){
		"slice":  func() { Make[[]int32](a, 1) },
		"string": func() { Make[struct{ s string }](a, 1) },
		"array":  func() { Make[[2]*int](a, 1) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: Make did not refuse it", name)
				}
			}()
			f()
		}()
	}
	Make[[4]struct{ a, b int32 }](a, 1)[0][3].b = 1
}

// TestFallsBackToTheHeap: a nil arena, a closed one and one whose file
// cannot grow give the heap's memory, which works the same.
func TestFallsBackToTheHeap(t *testing.T) {
	a, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	Make[int64](a, 10)[9] = 1
	b, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.f.close() // as a file that cannot grow
	for name, ar := range map[string]*Arena{"nil": nil, "closed": a, "full": b} {
		if name == "closed" {
			a.Close()
		}
		l := Make[int64](ar, 1000)
		l[999] = 5
		if l[999] != 5 || len(l) != 1000 {
			t.Fatalf("%s: %d values", name, len(l))
		}
	}
	if b.Err() == nil {
		t.Fatal("an arena whose file could not grow has no error")
	}
	if a.Mapped() != minMap {
		t.Fatalf("a closed arena mapped %d", a.Mapped())
	}
}

// TestConcurrentMake: allocations made at once never overlap.
func TestConcurrentMake(t *testing.T) {
	a, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var wg sync.WaitGroup
	lists := make([][][]int32, 4)
	for g := range lists {
		wg.Go(func() {
			for i := range 300 {
				l := Make[int32](a, 10_000+i)
				for j := range l {
					l[j] = int32(g*1000 + i)
				}
				lists[g] = append(lists[g], l)
			}
		})
	}
	wg.Wait()
	for g := range lists {
		for i, l := range lists[g] {
			for _, v := range l {
				if v != int32(g*1000+i) {
					t.Fatalf("goroutine %d's allocation %d was overwritten: %d", g, i, v)
				}
			}
		}
	}
}

// TestSmallArenaMapsLittle: an arena maps in pieces that grow with it, so
// a small one (a small partition's scratch) reserves a MB, not a chunk.
func TestSmallArenaMapsLittle(t *testing.T) {
	a := openMapped(t)
	Make[byte](a, 100)[99] = 1
	if a.Mapped() != minMap {
		t.Fatalf("100 bytes mapped %d", a.Mapped())
	}
	for range 8 {
		Make[byte](a, minMap/2)
	}
	if m := a.Mapped(); m > 8*minMap {
		t.Fatalf("4 MB mapped %d", m)
	}
}

// TestMemoryFileSystem: an arena in tmpfs, whose pages could only go to
// swap, gives the heap's memory and says why.
func TestMemoryFileSystem(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("tmpfs is Linux's")
	}
	dir, err := os.MkdirTemp("/dev/shm", "offheap-test-")
	if err != nil {
		t.Skipf("no /dev/shm: %v", err)
	}
	defer os.RemoveAll(dir)
	a, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if a.Err() == nil {
		t.Skip("/dev/shm is not a file system of memory here")
	}
	l := Make[int64](a, 1000)
	l[999] = 3
	if a.Mapped() != 0 || l[999] != 3 {
		t.Fatalf("an arena in tmpfs mapped %d", a.Mapped())
	}
}

// TestOpenFallsBackAndSiblings: a directory that cannot take the file
// sends it to the system's temporary directory; a sibling is beside its
// arena, and an arena that gives the heap's memory has none.
func TestOpenFallsBackAndSiblings(t *testing.T) {
	a, err := Open(filepath.Join(t.TempDir(), "missing"))
	if err != nil {
		t.Fatalf("a directory that cannot take the file: %v", err)
	}
	defer a.Close()
	if a.dir != "" {
		t.Fatalf("the file went to %q, not the temporary directory", a.dir)
	}
	if a.Err() != nil {
		t.Skipf("no arena here: %v", a.Err())
	}
	s := a.Sibling()
	if s == nil {
		t.Fatal("no sibling")
	}
	defer s.Close()
	Make[int64](s, 10)[9] = 1
	if s.Mapped() == 0 || s.dir != a.dir {
		t.Fatalf("the sibling mapped %d in %q", s.Mapped(), s.dir)
	}
	var none *Arena
	if none.Sibling() != nil {
		t.Fatal("a nil arena has a sibling")
	}
}

// openMapped is an arena in a test's directory, closed when the test
// ends; the test is skipped where an arena gives the heap's memory.
func openMapped(t *testing.T) *Arena {
	t.Helper()
	a, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if a.Err() != nil {
		t.Skipf("no arena here: %v", a.Err())
	}
	return a
}

// resident is how many bytes of a's mappings are in the process's
// resident set (/proc/self/smaps).
func resident(t *testing.T, a *Arena) int64 {
	t.Helper()
	starts := map[uint64]bool{}
	a.mu.Lock()
	for _, m := range a.maps {
		starts[uint64(uintptr(unsafe.Pointer(unsafe.SliceData(m))))] = true
	}
	a.mu.Unlock()
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		if lo, _, ok := strings.Cut(strings.Fields(line + " x")[0], "-"); ok && !strings.HasSuffix(lo, ":") {
			start, err := strconv.ParseUint(lo, 16, 64)
			in = err == nil && starts[start]
			continue
		}
		if kb, ok := strings.CutPrefix(line, "Rss:"); ok && in {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(kb, "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			sum += n << 10
		}
	}
	return sum
}

// TestRelease: Release gives the arena's pages back to its file (the
// process no longer holds them) and loses nothing written; an arena
// that grows gives back what it mapped before every releaseStep, so a
// table being filled holds its newest pages, not all of them.
func TestRelease(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/smaps")
	}
	a := openMapped(t)
	l := Make[int64](a, 4<<20) // 32 MB: below releaseStep
	for i := range l {
		l[i] = int64(i) * 7
	}
	if r := resident(t, a); r < 30<<20 {
		t.Fatalf("32 MB written, %d resident", r)
	}
	a.Release()
	if r := resident(t, a); r > 1<<20 {
		t.Fatalf("%d bytes resident after Release", r)
	}
	for i := range l {
		if l[i] != int64(i)*7 {
			t.Fatalf("at %d: %d after Release", i, l[i])
		}
	}

	g := openMapped(t)
	var pieces [][]byte
	for i := 0; g.Mapped() < 3*releaseStep; i++ {
		p := Make[byte](g, 1<<19)
		for j := range p {
			p[j] = byte(i + j)
		}
		pieces = append(pieces, p)
	}
	// The loop stops as the arena maps past 3*releaseStep: what it
	// mapped before is given back, and a piece of the new is written.
	if r := resident(t, g); r > releaseStep/2 {
		t.Fatalf("%d MB written, %d MB resident (at most %d)", g.Mapped()>>20, r>>20, releaseStep/2>>20)
	}
	for i, p := range pieces {
		for j := range p {
			if p[j] != byte(i+j) {
				t.Fatalf("piece %d at %d: %d", i, j, p[j])
			}
		}
	}
}
