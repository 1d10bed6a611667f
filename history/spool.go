package history

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Spool holds a long read's records on disk while the read goes on, in
// the words its history line will hold them (writeLong's): a whole read
// of a day-long run's partition is tens of millions of records, which
// held in memory until the read completed were most of a simulation's
// peak (6 GB of a 24-hour one's). The op that completes the read carries
// the spool (Value.Spool) in place of its records, and the writer copies
// it into the line. Not safe for concurrent use: one read fills it.
type Spool struct {
	f   *os.File
	bw  *bufio.Writer
	buf []byte
	n   int
	err error
}

// NewSpool is an empty spool beside the history's file (its directory,
// else the system's temporary one). Its file is unlinked at once: it
// takes disk space until the spool is written or closed, and none after,
// or once the process dies.
func (w *Writer) NewSpool() (*Spool, error) {
	w.mu.Lock()
	dir := filepath.Dir(w.f.Name())
	w.mu.Unlock()
	f, err := os.CreateTemp(dir, ".chaos-spool-*")
	if err != nil {
		if f, err = os.CreateTemp("", "chaos-spool-*"); err != nil {
			return nil, fmt.Errorf("history: a spool for a long read: %w", err)
		}
	}
	if err := os.Remove(f.Name()); err != nil {
		f.Close()
		return nil, fmt.Errorf("history: a spool for a long read: %w", err)
	}
	return &Spool{f: f, bw: bufio.NewWriterSize(f, 256<<10)}, nil
}

// Add appends rs; an error (the disk) stays the spool's (Err).
func (s *Spool) Add(rs ...Record) error {
	if s.err != nil {
		return s.err
	}
	for _, r := range rs {
		var err error
		if s.buf, err = appendRecord(s.buf[:0], r, s.n == 0); err != nil {
			s.err = err
			return err
		}
		if _, err := s.bw.Write(s.buf); err != nil {
			s.err = fmt.Errorf("history: spooling a long read: %w", err)
			return s.err
		}
		s.n++
	}
	return nil
}

// Len is how many records the spool holds.
func (s *Spool) Len() int { return s.n }

// Err is why the spool stopped taking records, nil if it has not.
func (s *Spool) Err() error { return s.err }

// Close gives back the spool's file. Closing it twice is harmless.
func (s *Spool) Close() error {
	if s == nil || s.f == nil {
		return nil
	}
	err := s.f.Close()
	s.f = nil
	return err
}

// copyTo writes the spool's records (as a records array holds them,
// without its brackets) to dst.
func (s *Spool) copyTo(dst io.Writer) error {
	switch {
	case s.err != nil:
		return s.err
	case s.f == nil:
		return errors.New("history: the spool of a long read was closed before it was written")
	}
	if err := s.bw.Flush(); err != nil {
		return fmt.Errorf("history: spooling a long read: %w", err)
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("history: reading back a long read's spool: %w", err)
	}
	if _, err := io.Copy(dst, s.f); err != nil {
		return fmt.Errorf("history: copying a long read's spool: %w", err)
	}
	return nil
}
