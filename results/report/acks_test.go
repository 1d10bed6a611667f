package report

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The unavailability plot's gaps as they were found from every
// acknowledgement's time, held and sorted: what ackLane must agree with.

// gaps returns the intervals of at least minGap within [from, to] that
// contain none of the sorted times ts: where nothing succeeded.
func gaps(ts []int64, from, to, minGap int64) []window {
	var out []window
	prev := from
	for _, t := range ts {
		if t < from {
			continue
		}
		if t > to {
			break
		}
		if t-prev >= minGap {
			out = append(out, window{prev, t})
		}
		prev = t
	}
	if to-prev >= minGap {
		out = append(out, window{prev, to})
	}
	return out
}

// gapThreshold is how long no acknowledgement must last to count as
// unavailability: ten times the typical gap between acknowledgements, at
// least a second, so a slow but steady workload is not called down.
func gapThreshold(ts []int64) int64 {
	if len(ts) < 3 {
		return int64(time.Second)
	}
	d := make([]int64, 0, len(ts)-1)
	for i := 1; i < len(ts); i++ {
		d = append(d, ts[i]-ts[i-1])
	}
	slices.Sort(d)
	return max(int64(time.Second), 10*d[len(d)/2])
}

// TestAckLane: the gaps a lane finds as acknowledgements stream past, in
// time order or not, are those found from all their times held and
// sorted, at the lane's threshold; the threshold is the held times' (at
// its floor, a second) or, in time order, within 1/32 below it.
func TestAckLane(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	sec := int64(time.Second)
	var floors, medians, shuffled int
	for round := range 3000 {
		// Gaps mostly short, some long; in some rounds all slow, so the
		// median sets the threshold.
		typical := sec / 1000
		if round%4 == 0 {
			typical = sec / 3
		}
		var ts []int64
		at := rng.Int64N(3 * sec)
		for range rng.IntN(60) {
			at += rng.Int64N(typical)
			if rng.IntN(10) == 0 {
				at += rng.Int64N(5 * sec)
			}
			ts = append(ts, at)
			if rng.IntN(8) == 0 {
				ts = append(ts, at) // the same time twice
			}
		}
		in := slices.Clone(ts)
		if round%3 == 0 {
			rng.Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
			shuffled++
		}
		var l ackLane
		for _, t := range in {
			l.add(t)
		}
		from, to := rng.Int64N(2*sec), at+rng.Int64N(2*sec)-sec
		if rng.IntN(5) == 0 {
			to = from - 1
		}
		sorted := slices.Clone(ts)
		slices.Sort(sorted)
		thr, want := l.threshold(), gapThreshold(sorted)
		switch {
		case want == sec && thr == sec:
			floors++
		case round%3 != 0:
			if thr > want || thr < want-want/32-10 {
				t.Fatalf("round %d: threshold %d, want %d (within 1/32 below)", round, thr, want)
			}
			medians++
		}
		if len(ts) == 0 {
			continue
		}
		got, exp := l.unavailable(from, to), gaps(sorted, from, to, thr)
		if !slices.Equal(got, exp) {
			t.Fatalf("round %d: times %v in %d-%d at %d: gaps %v, want %v", round, in, from, to, thr, got, exp)
		}
	}
	// A steady lane with one outage, part of it out of order: the
	// outage is found, whatever share of the acknowledgements is moved.
	for _, share := range []int{0, 1, 10, 50, 100} {
		var ts []int64
		for i := range 10_000 {
			at := int64(i) * sec / 100
			if i >= 5_000 {
				at += 5 * sec
			}
			ts = append(ts, at)
		}
		for i := range ts {
			if rng.IntN(100) < share {
				j := rng.IntN(len(ts))
				ts[i], ts[j] = ts[j], ts[i]
			}
		}
		var l ackLane
		for _, t := range ts {
			l.add(t)
		}
		out := 50*sec - sec/100
		if got := l.unavailable(0, ts[len(ts)-1]+105*sec); l.threshold() != sec || len(got) != 2 || got[0] != (window{out, out + 5*sec + sec/100}) {
			t.Errorf("%d%% moved: threshold %d, gaps %v, want the outage at %d", share, l.threshold(), got, out)
		}
	}
	if floors < 500 || medians < 300 || shuffled < 500 {
		t.Fatalf("too few cases: %d at the floor, %d by the median, %d shuffled", floors, medians, shuffled)
	}
}
