//go:build unix && !linux

package offheap

import "os"

// reserve grows the file to at+n; without fallocate the blocks are found
// when the pages are written.
func reserve(f *os.File, at, n int64) error { return f.Truncate(at + n) }
