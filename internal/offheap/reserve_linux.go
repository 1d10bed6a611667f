package offheap

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// reserve gives the file blocks for [at, at+n), growing it. A file system
// without fallocate gets a larger file, whose blocks are found when the
// pages are written.
func reserve(f *os.File, at, n int64) error {
	err := unix.Fallocate(int(f.Fd()), 0, at, n)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return f.Truncate(at + n)
	}
	return err
}
