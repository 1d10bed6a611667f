package storage

import (
	"os"

	"golang.org/x/sys/unix"
)

// punchHole frees the file's blocks from at for n bytes, keeping its size.
func punchHole(f *os.File, at, n int64) error {
	return unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, at, n)
}
