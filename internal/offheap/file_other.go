//go:build !unix

package offheap

import "errors"

const pageSize = 1 << 16

// file: without mmap, an arena has none, and gives the heap's memory.
type file struct{}

func openFile(string) (file, error) {
	return file{}, errors.New("memory-mapped files are not supported here")
}

func (*file) suited() error { return nil }

func (*file) grow(int64) ([]byte, error) {
	return nil, errors.New("memory-mapped files are not supported here")
}

func (*file) close() error { return nil }

func unmap([]byte) error { return nil }

func drop([]byte) error { return nil }

func populate([]byte) {}

func (*file) punch([]byte, int64) error { return nil }
