package storage

import (
	"fmt"
	"sort"

	"github.com/chaos-isr/chaos/broker/batch"
	"github.com/chaos-isr/chaos/internal/blocks"
)

// entry locates one batch. Both implementations keep one per batch so that
// every query is a binary search and only Read touches the bytes.
type entry struct {
	base int64
	// runMaxTs is the largest MaxTimestamp of this and all earlier
	// batches. It is monotonic although client timestamps are not, which
	// makes OffsetForTimestamp a binary search with the same answer as a
	// scan. The batch's own is not kept: the one batch whose own the
	// search returns is the first to reach its runMaxTs, which is then
	// its own.
	runMaxTs int64
	pos      int64 // byte position in its segment file (Disk) or chunk (Memory)
	size     int32
	seg      int32 // index into Disk.segs or Memory.chunks
	epoch    int32
	// delta is the batch's LastOffsetDelta: its last offset is base+delta
	// (an entry a batch, so kept to 40 bytes: a simulated broker holds a
	// long run's entries in memory).
	delta int32
}

// last is the batch's last offset.
func (e *entry) last() int64 { return e.base + int64(e.delta) }

// index is the state both implementations derive from their batches: the
// batch entries and the leader-epoch cache. Keeping the derivation in one
// place is what lets the shared test suite vouch for both.
type index struct {
	start int64 // LogStartOffset
	// entries are in blocks, which grow without copying themselves (a
	// simulated broker holds an hours-long run's), and with a spill file
	// are in its arena, out of the heap.
	entries blocks.List[entry]
	epochs  []EpochEntry
}

// n is how many batches the log holds.
func (x *index) n() int { return x.entries.Len() }

// at is the k-th batch's entry.
func (x *index) at(k int) *entry { return x.entries.Ptr(k) }

// reset empties the index, its entries staying where they are held.
func (x *index) reset(start int64) {
	x.start = start
	x.entries.Truncate(0)
	x.epochs = nil
}

func (x *index) leo() int64 {
	if n := x.n(); n > 0 {
		return x.at(n-1).last() + 1
	}
	return x.start
}

// validate checks a whole Append payload before anything is written, so a
// refused append leaves no trace.
func (x *index) validate(b []byte) ([]batch.Header, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: empty append", ErrInvalidBatch)
	}
	next := x.leo()
	var hs []batch.Header
	var verr error
	n, err := batch.Walk(b, func(h batch.Header, raw []byte) bool {
		if h.BaseOffset != next {
			verr = fmt.Errorf("%w: base offset %d, log end offset %d", ErrInvalidBatch, h.BaseOffset, next)
			return false
		}
		if err := batch.Verify(raw, h); err != nil {
			verr = fmt.Errorf("%w: %w", ErrInvalidBatch, err)
			return false
		}
		next = h.NextOffset()
		hs = append(hs, h)
		return true
	})
	switch {
	case verr != nil:
		return nil, verr
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ErrInvalidBatch, err)
	case n != len(b):
		return nil, fmt.Errorf("%w: %d trailing bytes", ErrInvalidBatch, len(b)-n)
	}
	return hs, nil
}

// add records a batch that has been validated and stored at pos.
func (x *index) add(h batch.Header, seg int32, pos int64) {
	run := h.MaxTimestamp
	if n := x.n(); n > 0 && x.at(n-1).runMaxTs > run {
		run = x.at(n - 1).runMaxTs
	}
	x.entries.Add(entry{
		base: h.BaseOffset, delta: h.LastOffsetDelta, runMaxTs: run,
		pos: pos, size: int32(h.Size()), seg: seg, epoch: h.LeaderEpoch,
	})
	// Kafka ignores unstamped batches (epoch -1) and epochs going backwards
	// (a zombie leader's data that a follower copied); only a newer epoch
	// starts an entry.
	if h.LeaderEpoch >= 0 && (len(x.epochs) == 0 || h.LeaderEpoch > x.epochs[len(x.epochs)-1].Epoch) {
		x.epochs = append(x.epochs, EpochEntry{Epoch: h.LeaderEpoch, StartOffset: h.BaseOffset})
	}
}

// find returns the index of the batch containing offset, or n(). It
// searches from the end, where nearly every fetch is.
func (x *index) find(offset int64) int {
	return x.entries.Search(func(e *entry) bool { return e.last() >= offset })
}

// serve picks the batches Read returns: entries k to k+n-1.
func (x *index) serve(offset, upTo int64, maxBytes int) (k, n int, err error) {
	leo := x.leo()
	if offset < x.start || offset > leo {
		return 0, 0, fmt.Errorf("%w: %d not in [%d, %d]", ErrOffsetOutOfRange, offset, x.start, leo)
	}
	if offset == leo || offset >= upTo {
		return 0, 0, nil
	}
	k = x.find(offset)
	total := 0
	for i := k; i < x.n(); i++ {
		e := x.at(i)
		if e.base >= upTo || (i > k && total+int(e.size) > maxBytes) {
			break
		}
		total += int(e.size)
		n++
	}
	return k, n, nil
}

// truncateAt drops the entries from k on and the epoch entries that no
// longer have a batch.
func (x *index) truncateAt(k int) {
	x.entries.Truncate(k)
	end := x.leo()
	i := sort.Search(len(x.epochs), func(i int) bool { return x.epochs[i].StartOffset >= end })
	x.epochs = x.epochs[:i]
}

func (x *index) epochsCopy() []EpochEntry {
	return append([]EpochEntry(nil), x.epochs...)
}

func (x *index) endOffsetForEpoch(epoch int32) (int32, int64) {
	i := sort.Search(len(x.epochs), func(i int) bool { return x.epochs[i].Epoch > epoch }) - 1
	switch {
	case i < 0:
		return -1, -1
	case i == len(x.epochs)-1:
		return x.epochs[i].Epoch, x.leo()
	default:
		return x.epochs[i].Epoch, x.epochs[i+1].StartOffset
	}
}

func (x *index) offsetForTimestamp(ts int64) (int64, int64, bool) {
	i := x.entries.Search(func(e *entry) bool { return e.runMaxTs >= ts })
	if i == x.n() {
		return 0, 0, false
	}
	// The first entry whose running maximum reaches ts raised it: its
	// runMaxTs is its batch's MaxTimestamp.
	e := x.at(i)
	return e.base, e.runMaxTs, true
}

// clampHW keeps a recovered or lowered HW inside the log.
func (x *index) clampHW(hw int64) int64 {
	return min(max(hw, x.start), x.leo())
}
