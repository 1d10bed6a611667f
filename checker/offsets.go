package checker

import "slices"

// offsetSet is a sorted set of offsets held as runs of consecutive ones,
// each with how many offsets the runs before it hold: the offsets a
// partition's acks and reads observed are nearly always one run, where a
// sorted slice of them took 8 bytes an offset (27 MB for a two-hour run).
// A set of scattered offsets (a foreign history's) costs 24 bytes each.
type offsetSet struct {
	first, last []int64 // run i is [first[i], last[i]]
	before      []int64
	n           int64
}

// add adds off, which must be above every offset added before it (so
// never after MaxInt64, whose successor would wrap).
func (s *offsetSet) add(off int64) {
	if k := len(s.last) - 1; k >= 0 && off == s.last[k]+1 {
		s.last[k] = off
	} else {
		s.first, s.last, s.before = append(s.first, off), append(s.last, off), append(s.before, s.n)
	}
	s.n++
}

// len is how many offsets the set holds.
func (s *offsetSet) len() int64 { return s.n }

// below counts the offsets below x.
func (s *offsetSet) below(x int64) int64 {
	// The runs that start below x; the last of them may reach past it.
	i, _ := slices.BinarySearch(s.first, x)
	if i == 0 {
		return 0
	}
	i--
	return s.before[i] + min(x-1, s.last[i]) - s.first[i] + 1
}

// count counts the offsets in [from, to).
func (s *offsetSet) count(from, to int64) int {
	if to <= from {
		return 0
	}
	return int(s.below(to) - s.below(from))
}

// all calls f with each offset, in order.
func (s *offsetSet) all(f func(off int64)) {
	for i, first := range s.first {
		for off := first; ; off++ {
			f(off)
			if off == s.last[i] {
				break
			}
		}
	}
}
