//go:build unix

package offheap

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

const pageSize = 1 << 16 // a multiple of every unix page size Go runs on

// file is an arena's unlinked file and how much of it is in use.
type file struct {
	f    *os.File
	size int64
}

func openFile(dir string) (file, error) {
	f, err := os.CreateTemp(dir, ".chaos-offheap-*")
	if err != nil {
		return file{}, err
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return file{}, err
	}
	return file{f: f}, nil
}

// grow adds n bytes to the file and maps them. The space is reserved
// before it is mapped: a write to a mapped hole the disk has no room for
// kills the process (SIGBUS), where a reservation that fails is an error
// the arena falls back from.
func (f *file) grow(n int64) ([]byte, error) {
	if f.f == nil {
		return nil, os.ErrClosed
	}
	if err := reserve(f.f, f.size, n); err != nil {
		return nil, err
	}
	m, err := unix.Mmap(int(f.f.Fd()), f.size, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, err
	}
	f.size += n
	return m, nil
}

func (f *file) close() error {
	if f.f == nil {
		return nil
	}
	err := f.f.Close()
	f.f = nil
	return err
}

func unmap(m []byte) error { return unix.Munmap(m) }

// suited says why the file's file system does not suit an arena.
func (f *file) suited() error { return suited(f.f) }

// drop gives back m's pages to the file: they stay in the page cache, and
// a later touch maps them again.
func drop(m []byte) error { return unix.Madvise(m, unix.MADV_DONTNEED) }

// populate maps m's pages, writable, at once (MADV_POPULATE_WRITE, Linux
// 5.14): a table written at random pays a fault a page otherwise. An
// older kernel refuses, and the pages fault in as they are touched.
func populate(m []byte) {
	if len(m) == 0 {
		return
	}
	// madvise wants whole pages: those m is in, all of them within the
	// mapping m came from (a mapping is whole pages).
	p := unsafe.Pointer(unsafe.SliceData(m))
	start := uintptr(p)
	from, to := start&^(sysPage-1), roundUp(start+uintptr(len(m)))
	_ = unix.Madvise(unsafe.Slice((*byte)(unsafe.Add(p, -int(start-from))), to-from), populateWrite)
}
