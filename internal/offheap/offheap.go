package offheap

import (
	"fmt"
	"os"
	"reflect"
	"sync"
	"unsafe"
)

// An arena maps its file a piece at a time, each piece as large as what
// it has mapped so far, from minMap to chunk: a small arena (a small
// partition's scratch) takes little, a large one few mappings. An
// allocation of more than half a piece gets a mapping of its own.
const (
	minMap = 1 << 20
	chunk  = 64 << 20
)

// releaseStep: each time an arena has mapped releaseStep more bytes, it
// gives back the pages of what it mapped before (Release). A table being
// filled writes its newest pages and reads back few of the old: a judge
// that kept every page it had written counted its whole index in its RSS
// while it read a long history (0.5 GB of a 2-hour run's), and kept the
// kernel from reclaiming it the cheap way, as page cache no process maps.
const releaseStep = 64 << 20

// Arena allocates from a file mapped into memory. Safe for concurrent use.
type Arena struct {
	mu     sync.Mutex
	f      file
	maps   [][]byte // every mapping, to unmap at Close
	offs   []int64  // where in the file each of maps begins
	free   []byte   // what is left of the last chunk
	mapped int64
	closed bool
	err    error  // why the file stopped growing, if it did
	dir    string // where the file is
}

// Open makes an arena whose file is in dir, or in the system's temporary
// directory if dir is "" or cannot be written (a read-only store). The
// file is unlinked at once: it takes disk space while the arena is open,
// and none once it is closed or the process dies.
//
// In a file system of memory (tmpfs), whose pages can only go to swap,
// the arena gives the heap's memory, and Err says why.
func Open(dir string) (*Arena, error) {
	f, err := openFile(dir)
	if err != nil && dir != "" {
		dir = ""
		f, err = openFile(dir)
	}
	if err != nil {
		return nil, fmt.Errorf("offheap: %w", err)
	}
	a := &Arena{f: f, dir: dir}
	if err := f.suited(); err != nil {
		a.err = fmt.Errorf("offheap: %s: %w", dir, err)
	}
	return a, nil
}

// Sibling is another arena whose file is beside a's, for scratch tables
// to give back apart from a's: nil (the heap) if a is nil, gives the
// heap's memory (Err), or no file can be made.
func (a *Arena) Sibling() *Arena {
	if a == nil || a.Err() != nil {
		return nil
	}
	s, err := Open(a.dir)
	if err != nil {
		return nil
	}
	return s
}

// Make is n zeroed values of T held by a (the heap's if a is nil, closed,
// or its file cannot grow). T must hold no pointer: Make panics if it
// does, for the collector would not see them.
func Make[T any](a *Arena, n int) []T {
	if n == 0 {
		return nil
	}
	// Checked with no arena too: a pointer added to a type later fails
	// every test, not only those that use an arena.
	t := reflect.TypeFor[T]()
	if hasPointers(t) {
		panic("offheap: " + t.String() + " holds pointers")
	}
	if a == nil {
		return make([]T, n)
	}
	p := a.alloc(uintptr(n)*t.Size(), uintptr(t.Align()))
	if p == nil {
		return make([]T, n)
	}
	return unsafe.Slice((*T)(p), n)
}

// alloc is size bytes aligned to align from the arena's mappings, nil if
// it has none to give.
func (a *Arena) alloc(size, align uintptr) unsafe.Pointer {
	if size == 0 {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed || a.err != nil {
		return nil
	}
	pad := func() uintptr {
		if len(a.free) == 0 {
			return 0
		}
		return -uintptr(unsafe.Pointer(unsafe.SliceData(a.free))) & (align - 1)
	}
	if uintptr(len(a.free)) < pad()+size {
		piece := min(max(a.mapped, minMap), chunk)
		if need := int64(size+pageSize-1) &^ (pageSize - 1); need > piece/2 {
			// A large allocation has its mapping to itself, and the
			// piece being used stays.
			m := a.grow(need)
			if m == nil {
				return nil
			}
			return unsafe.Pointer(unsafe.SliceData(m))
		}
		m := a.grow(piece)
		if m == nil {
			return nil
		}
		a.free = m
	}
	a.free = a.free[pad():]
	p := unsafe.Pointer(unsafe.SliceData(a.free))
	a.free = a.free[size:]
	return p
}

// grow maps n more bytes of the file, nil (and a.err set) if it cannot.
func (a *Arena) grow(n int64) []byte {
	m, err := a.f.grow(n)
	if err != nil {
		a.err = err
		return nil
	}
	if a.mapped/releaseStep != (a.mapped+n)/releaseStep {
		a.release()
	}
	a.maps, a.offs = append(a.maps, m), append(a.offs, a.mapped)
	a.mapped += n
	return m
}

// Mapped is how many bytes of file the arena has mapped.
func (a *Arena) Mapped() int64 {
	if a == nil {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.mapped
}

// Err is why the arena's file stopped growing (its later allocations are
// the heap's), nil if it has not.
func (a *Arena) Err() error {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

// Release gives back the pages of the arena's mappings, for a caller
// done with a pass over its tables: they stay in the file, as page cache
// while the kernel has room for them, and what is touched again is mapped
// again: what was written reads back the same, and the process's RSS no
// longer counts them.
func (a *Arena) Release() {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.release()
}

// release drops every mapping's pages; a.mu is held. A failure (none is
// expected of a mapping the arena made) leaves the pages mapped: a cost
// in memory, not a loss.
func (a *Arena) release() {
	for _, m := range a.maps {
		_ = drop(m)
	}
}

// Free gives back the pages wholly inside s (to its capacity), which a
// gave and which no one will touch again: a scratch table dead before its
// arena is closed. On Linux they leave the page cache at once, a hole
// punched in the file, where pages only given back (Release) are dirty
// garbage the kernel must write to disk before it can reuse their memory;
// elsewhere they are given back as Release does. s from the heap (a nil
// arena, or one whose file could not grow) is left to the collector. The
// pages s shares with its neighbours stay.
func Free[T any](a *Arena, s []T) {
	if a == nil || cap(s) == 0 {
		return
	}
	var t T
	a.freeBytes(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), uintptr(cap(s))*unsafe.Sizeof(t)))
}

func (a *Arena) freeBytes(b []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	for i, m := range a.maps {
		start := uintptr(unsafe.Pointer(unsafe.SliceData(m)))
		if p < start || p+uintptr(len(b)) > start+uintptr(len(m)) {
			continue
		}
		// Mappings begin on a page: the whole pages of b are at these
		// offsets of m.
		from, to := roundUp(p-start), (p-start+uintptr(len(b)))&^(sysPage-1)
		if from < to {
			// A failure leaves the pages as they were: a cost in
			// memory, not a loss.
			_ = a.f.punch(m[from:to], a.offs[i]+int64(from))
		}
		return
	}
}

// roundUp is n rounded up to a whole system page.
func roundUp(n uintptr) uintptr { return (n + sysPage - 1) &^ (sysPage - 1) }

// sysPage is the system's page size.
var sysPage = uintptr(os.Getpagesize())

// Close unmaps what the arena gave and gives its file's space back.
// Nothing it gave may be used after: the caller's tables must be
// unreachable, or dropped. Later allocations are the heap's.
func (a *Arena) Close() error {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil
	}
	a.closed = true
	var first error
	for _, m := range a.maps {
		if err := unmap(m); err != nil && first == nil {
			first = err
		}
	}
	a.maps, a.offs, a.free = nil, nil, nil
	if err := a.f.close(); err != nil && first == nil {
		first = err
	}
	return first
}

// hasPointers says whether a value of t holds a pointer the collector
// must see.
func hasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Array:
		return t.Len() > 0 && hasPointers(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if hasPointers(t.Field(i).Type) {
				return true
			}
		}
		return false
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return false
	}
	return true
}

// Populate maps the pages of s, which a (not nil) gave, at once, for a
// table about to be written at random: a file's page costs more to fault
// in than the heap's. s from the heap (a nil arena) is left alone.
func Populate[T any](a *Arena, s []T) {
	if a == nil || len(s) == 0 || a.Err() != nil {
		return
	}
	var t T
	populate(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), uintptr(len(s))*unsafe.Sizeof(t)))
}
