//go:build unix && !linux

package offheap

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// reserve: only Linux's fallocate is used to reserve a file's space; a
// sparse file instead would kill the process (SIGBUS) when a write to a
// mapped hole finds the disk full. The arena gives the heap's memory.
func reserve(*os.File, int64, int64) error {
	return errors.New("reserving a file's space is supported on Linux only")
}

func suited(*os.File) error { return nil }

// punch gives back m's pages as Release does: only Linux's fallocate is
// used to punch a hole.
func (f *file) punch(m []byte, _ int64) error { return drop(m) }

// populateWrite: no other system has the advice; WILLNEED reads ahead
// instead, a hint the kernel may take.
const populateWrite = unix.MADV_WILLNEED
