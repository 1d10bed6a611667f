package offheap

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// reserve gives the file blocks for [at, at+n), growing it. A file system
// without fallocate is refused, not given a sparse file: a write to a
// mapped hole the disk has no room for kills the process (SIGBUS).
func reserve(f *os.File, at, n int64) error {
	for {
		// tmpfs and others are interrupted by a signal mid-way, and
		// SA_RESTART does not restart fallocate.
		err := unix.Fallocate(int(f.Fd()), 0, at, n)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
			return fmt.Errorf("the file system cannot reserve space (fallocate): %w", err)
		}
		return err
	}
}

// suited says why f's file system does not suit an arena: one of memory
// (tmpfs, ramfs), whose pages can only go to swap, saves nothing over the
// heap and reserves its pages up front.
func suited(f *os.File) error {
	var s unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &s); err != nil {
		return err
	}
	if s.Type == unix.TMPFS_MAGIC || s.Type == unix.RAMFS_MAGIC {
		return errors.New("a file system of memory (tmpfs)")
	}
	return nil
}

// punch drops m, the mapped bytes of the file at off (whole pages), from
// the page cache and the file: a hole, whose pages need no writing out.
// Where the file system cannot, they are given back as Release does.
func (f *file) punch(m []byte, off int64) error {
	for {
		err := unix.Fallocate(int(f.f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, off, int64(len(m)))
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return drop(m)
		}
		return nil
	}
}

// populateWrite is the advice that maps pages writable at once (Linux
// 5.14).
const populateWrite = unix.MADV_POPULATE_WRITE
