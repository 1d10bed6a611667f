package storage

import (
	"fmt"
	"os"
	"runtime"
	"sync"

	"github.com/chaos-isr/chaos/internal/offheap"
)

// Spill is a file that Memory logs move their full chunks to
// (MemoryFactory.Spill). A simulation of hours holds every record its
// brokers ever wrote: about 0.9 GB of batches for a 2-hour default test,
// the largest part of its memory. With a spill file only each log's last
// chunk is held, and a read of an older one is a read of the file, which
// returns the same bytes, so a simulation's history is unchanged.
//
// The file is unlinked as soon as it is made: nothing is left behind,
// even by a process that is killed, and the space is the file system's
// again at Close. A region no log refers to any more (a log's chunks
// dropped by a Truncate, or flattened by a disk fault, which rewrites a
// log whole) gives its space back at once where the file system can punch
// holes (Linux): a long simulation with disk faults would otherwise write
// a log's worth for every fault.
type Spill struct {
	mu     sync.Mutex // simulations in parallel each have their own, but tests may share one
	f      *os.File
	end    int64
	name   string // still to remove at Close, where the unlink failed
	closed bool
	err    error // the first read that failed
	freed  int64 // bytes given back
	// index holds the logs' indexes (an entry a batch, 40 bytes: 0.5 GB
	// of a 2-hour simulation's heap), mapped from a file beside this
	// one: page cache, not heap. It outlives Close (a log may still be
	// asked for its offsets), and closes once the Spill is collected,
	// which no log refers to any more then. Nil where no arena could be
	// made: the heap holds them, as it does where the arena's memory is
	// the heap's (blocks.List.In). A log's copy (a snapshot's, a
	// restore's) is in the heap.
	index *offheap.Arena
	// readBack is how many bytes were read back from the file since the
	// index's pages were last given back (releaseEvery).
	readBack int64
}

// releaseEvery: each time the logs have read this many bytes back from
// the file, the index's pages are given back (offheap.Arena.Release).
// A log read whole (the final phase reads every replica so) walks its
// index from its first batch, and a mapping keeps every page it has
// touched: a 24-hour simulation's final phase mapped 4.9 GB of index,
// page cache the kernel could take back, counted in its RSS all the same.
// Pages given back stay in the file and the page cache, and what is read
// again is mapped again.
var releaseEvery int64 = 64 << 20 // a variable, so that a test can make it small

// region is where one chunk was written. Logs (and their snapshots) refer
// to it while they hold the chunk; once none does, its space is freed.
type region struct {
	s     *Spill
	at, n int64
}

func (r *region) read(pos int64, n int) ([]byte, error) { return r.s.read(r.at+pos, n) }

// NewSpill makes a spill file in dir (a run's own directory: a temporary
// directory may be memory, which would defeat it).
func NewSpill(dir string) (*Spill, error) {
	f, err := os.CreateTemp(dir, ".logs-*.spill")
	if err != nil {
		return nil, fmt.Errorf("storage: spill file: %w", err)
	}
	s := &Spill{f: f}
	if os.Remove(f.Name()) != nil {
		s.name = f.Name()
	}
	if a, err := offheap.Open(dir); err == nil {
		s.index = a
		runtime.AddCleanup(s, func(a *offheap.Arena) { a.Close() }, a)
	}
	return s, nil
}

// put writes b at the file's end and returns its region.
func (s *Spill) put(b []byte) (*region, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	r := &region{s: s, at: s.end, n: int64(len(b))}
	if _, err := s.f.WriteAt(b, r.at); err != nil {
		return nil, err
	}
	s.end += r.n
	runtime.AddCleanup(r, s.free, [2]int64{r.at, r.n})
	return r, nil
}

// free gives back the space of a region nothing refers to any more.
func (s *Spill) free(at [2]int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed && punchHole(s.f, at[0], at[1]) == nil {
		s.freed += at[1]
	}
}

// Arena is where the logs' indexes are held (nil: the heap), for other
// tables a simulation keeps for each batch: it lives as long as the
// Spill is referred to.
func (s *Spill) Arena() *offheap.Arena {
	if s == nil {
		return nil
	}
	return s.index
}

// Held is how many bytes of the file are still in use: what was written,
// less the regions given back.
func (s *Spill) Held() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.end - s.freed
}

// read returns a copy of the n bytes at at. Where the file fails it
// returns the error and n bytes all the same (see Err).
func (s *Spill) read(at int64, n int) ([]byte, error) {
	buf := make([]byte, n)
	if _, err := s.f.ReadAt(buf, at); err != nil {
		err = fmt.Errorf("storage: reading the spill file: %w", err)
		s.mu.Lock()
		if s.err == nil {
			s.err = err
		}
		s.mu.Unlock()
		return buf, err
	}
	s.mu.Lock()
	s.readBack += int64(n)
	release := s.readBack >= releaseEvery
	if release {
		s.readBack = 0
	}
	s.mu.Unlock()
	if release {
		s.index.Release()
	}
	return buf, nil
}

// Err is the first read of the file that failed, nil if none did. A log
// that failed to read its own bytes has served an error, or (where a disk
// fault flattened it) zeros, so what its broker did after is not the
// system's doing: a simulation whose spill file failed has no verdict.
func (s *Spill) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Size is how many bytes the file holds.
func (s *Spill) Size() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.end
}

// Close closes the file, which frees its space. A log whose chunks it
// holds can no longer read them.
func (s *Spill) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.f.Close()
	if s.name != "" {
		if rerr := os.Remove(s.name); err == nil {
			err = rerr
		}
	}
	return err
}
