package report

import (
	"math"
	"math/bits"
	"slices"
	"sort"
	"time"
)

// minUnavailable is the least time without an acknowledgement that the
// unavailability plot calls a gap (the threshold's floor).
const minUnavailable = int64(time.Second)

// ackLane is what the unavailability plot needs of one lane's
// acknowledgements, gathered as they stream past: the gaps of at least
// minUnavailable between successive ones, and how long the gaps are
// typically. A run of hours acknowledges millions of sends; the lane
// keeps none of their times.
type ackLane struct {
	n           int   // acknowledgements
	first, last int64 // the earliest and the latest
	// long are the gaps of at least minUnavailable between successive
	// acknowledgements, in time order.
	long []window
	// typical counts the gaps between successive acknowledgements by
	// length, for their median.
	typical gapCounts
}

// add notes an acknowledgement at t.
func (l *ackLane) add(t int64) {
	l.n++
	switch {
	case l.n == 1:
		l.first, l.last = t, t
	case t >= l.last:
		l.gap(window{l.last, t}, len(l.long))
		l.last = t
	case t <= l.first:
		l.gap(window{t, l.first}, 0)
		l.first = t
	default:
		// Out of time order (a foreign history's): t splits the gap it
		// falls in. Its neighbours are known only where that gap is
		// long; in a short one, the two gaps it makes are counted as
		// the gap as it was and one of 0, so the typical gap is then an
		// estimate, below the gaps' longest short one. (The gap to the
		// latest acknowledgement, which may be minutes, raised it past
		// every outage.)
		i := sort.Search(len(l.long), func(k int) bool { return l.long[k].end > t })
		if i == len(l.long) || l.long[i].start >= t {
			l.typical.add(0)
			return
		}
		w := l.long[i]
		l.long = slices.Delete(l.long, i, i+1)
		l.typical.remove(w.end - w.start)
		l.gap(window{t, w.end}, i)
		l.gap(window{w.start, t}, i)
	}
}

// gap counts a gap between successive acknowledgements, keeping it at i
// in long if it is long.
func (l *ackLane) gap(w window, i int) {
	l.typical.add(w.end - w.start)
	if w.end-w.start >= minUnavailable {
		l.long = slices.Insert(l.long, i, w)
	}
}

// unavailable are the intervals within [from, to], at least the lane's
// threshold long, in which no send was acknowledged: the gaps between the
// acknowledgements in it, from from to the first and from the last to to.
func (l *ackLane) unavailable(from, to int64) []window {
	thr := l.threshold()
	var out []window
	// Every gap of the acknowledgements, with one before the first and
	// one after the last, cut to [from, to]: its gaps there.
	clip := func(w window) {
		w.start, w.end = max(w.start, from), min(w.end, to)
		if w.end-w.start >= thr {
			out = append(out, w)
		}
	}
	clip(window{math.MinInt64, l.first})
	for _, w := range l.long {
		clip(w)
	}
	clip(window{l.last, math.MaxInt64})
	return out
}

// threshold is how long no acknowledgement must last to count as
// unavailability: ten times the typical (median) gap between
// acknowledgements, at least minUnavailable, so that a slow but steady
// workload is not called down. The median is that of gapCounts: within
// 1/32 of the gap's length.
func (l *ackLane) threshold() int64 {
	if l.n < 3 {
		return minUnavailable
	}
	return max(minUnavailable, 10*l.typical.nth((l.n-1)/2))
}

// gapCounts counts lengths (ns) in buckets of 1/32 of a power of two
// (exact below 64 ns): a median within about 3%, in a few KB however many
// lengths are counted.
type gapCounts struct{ n []uint64 }

func gapBucket(d int64) int {
	if d < 64 {
		return int(max(d, 0))
	}
	e := bits.Len64(uint64(d)) - 6 // d>>e is in [32, 64)
	return e*32 + int(d>>e)
}

// bucketLength is the least length in bucket b.
func bucketLength(b int) int64 {
	if b < 64 {
		return int64(b)
	}
	return int64(b%32+32) << (b/32 - 1)
}

func (c *gapCounts) add(d int64) {
	b := gapBucket(d)
	if b >= len(c.n) {
		c.n = slices.Grow(c.n, b+1-len(c.n))[:b+1]
	}
	c.n[b]++
}

func (c *gapCounts) remove(d int64) {
	if b := gapBucket(d); b < len(c.n) && c.n[b] > 0 {
		c.n[b]--
	}
}

// nth is the k-th least length counted (from 0), to its bucket's least.
func (c *gapCounts) nth(k int) int64 {
	seen := uint64(0)
	for b, n := range c.n {
		if seen += n; seen > uint64(k) {
			return bucketLength(b)
		}
	}
	return 0
}
