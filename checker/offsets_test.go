package checker

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestOffsetSetCounts: the runs count what a sorted slice of the offsets
// counts, for runs, gaps, scattered offsets and both ends of int64.
func TestOffsetSetCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 2000 {
		var offs []int64
		switch trial % 4 {
		case 0: // a log: one run, maybe a gap or two
			n := rng.Int64N(50)
			for o := rng.Int64N(5); o < n; o++ {
				if rng.IntN(10) > 0 {
					offs = append(offs, o)
				}
			}
		case 1: // scattered
			for range rng.IntN(30) {
				offs = append(offs, rng.Int64N(1000)-500)
			}
		case 2: // at the ends of int64
			for range rng.IntN(6) {
				offs = append(offs, math.MaxInt64-rng.Int64N(4), math.MinInt64+rng.Int64N(4))
			}
		default:
			for range rng.IntN(20) {
				offs = append(offs, rng.Int64N(20))
			}
		}
		slices.Sort(offs)
		offs = slices.Compact(offs)
		var s offsetSet
		for _, o := range offs {
			s.add(o)
		}
		if s.len() != int64(len(offs)) {
			t.Fatalf("trial %d: len %d, want %d", trial, s.len(), len(offs))
		}
		var back []int64
		s.all(func(o int64) { back = append(back, o) })
		if !slices.Equal(back, offs) {
			t.Fatalf("trial %d: all gives %v, want %v", trial, back, offs)
		}
		probe := []int64{math.MinInt64, math.MinInt64 + 1, -1, 0, 1, math.MaxInt64 - 1, math.MaxInt64}
		for _, o := range offs {
			probe = append(probe, o-1, o, o+1)
		}
		for range 20 {
			from, to := probe[rng.IntN(len(probe))], probe[rng.IntN(len(probe))]
			want := 0
			for _, o := range offs {
				if from <= o && o < to {
					want++
				}
			}
			if got := s.count(from, to); got != want {
				t.Fatalf("trial %d: count [%d, %d) of %v = %d, want %d", trial, from, to, offs, got, want)
			}
		}
	}
}
