package history

import (
	"fmt"
	"slices"
)

// Pairer pairs invokes with completions as a history streams past, by
// the rule every reader of a history shares: a process has one operation
// open at a time, and its next completion, of the same function,
// completes it. The monitor samples partitions each on its own, so its
// operations pair per partition.
//
// It never fails. What breaks the rule is worked around, the same way for
// every reader, and described in the Step: a second invoke leaves the
// first without a completion (unknown, like info), and a completion of
// another function, or of nothing, stands alone.
type Pairer struct {
	// open is keyed by process; the monitor's by partition, in a map of
	// its own, so that the common case hashes an int.
	open    map[int]opened
	monitor map[Key]opened
}

type opened struct {
	pos   int32
	f     string
	index int64
}

// Step is what one operation did to the pairing.
type Step struct {
	// Invoke is the position of the invoke the operation completes, -1 if
	// it completes none (it is an invoke, or stands alone).
	Invoke int32
	// Orphan is the position of an invoke the operation left without a
	// completion, -1 if none: the history broke the rule there.
	Orphan int32
	// Problem says how the history broke the rule, "" if it did not.
	Problem string
}

// Add pairs op, at position pos of its history.
func (p *Pairer) Add(op *Op, pos int32) Step {
	if op.Process == MonitorProcess {
		if p.monitor == nil {
			p.monitor = map[Key]opened{}
		}
		return pair(p.monitor, op.Key(), op, pos)
	}
	if p.open == nil {
		p.open = map[int]opened{}
	}
	return pair(p.open, op.Process, op, pos)
}

func pair[K comparable](open map[K]opened, k K, op *Op, pos int32) Step {
	st := Step{Invoke: -1, Orphan: -1}
	was, busy := open[k]
	if op.Type == Invoke {
		if busy {
			st.Orphan = was.pos
			st.Problem = fmt.Sprintf("op %d: process %d invoked %s while op %d is open; op %d is treated as unknown", op.Index, op.Process, op.F, was.index, was.index)
		}
		open[k] = opened{pos: pos, f: op.F, index: op.Index}
		return st
	}
	switch {
	case !busy:
		st.Problem = fmt.Sprintf("op %d: process %d completed %s without an invoke", op.Index, op.Process, op.F)
	case was.f != op.F:
		delete(open, k)
		st.Orphan = was.pos
		st.Problem = fmt.Sprintf("op %d: completes %s but process %d invoked %s (op %d); both are taken alone", op.Index, op.F, op.Process, was.f, was.index)
	default:
		delete(open, k)
		st.Invoke = was.pos
	}
	return st
}

// Open lists the positions of the invokes still open, in order: those
// the history ended before completing.
func (p *Pairer) Open() []int32 {
	out := make([]int32, 0, len(p.open)+len(p.monitor))
	for _, o := range p.open {
		out = append(out, o.pos)
	}
	for _, o := range p.monitor {
		out = append(out, o.pos)
	}
	slices.Sort(out)
	return out
}

// Pairs maps each invoke's position in ops to the position of its
// completion, or -1 if the history ended first; completions map to their
// invoke. Unlike a Pairer it fails where the history breaks the rule: it
// is for tests that hold a history to it.
func Pairs(ops []Op) ([]int, error) {
	pair := make([]int, len(ops))
	var p Pairer
	for i := range ops {
		pair[i] = -1
		st := p.Add(&ops[i], int32(i))
		if st.Problem != "" {
			return nil, fmt.Errorf("%s", st.Problem)
		}
		if st.Invoke >= 0 {
			pair[i], pair[st.Invoke] = int(st.Invoke), i
		}
	}
	return pair, nil
}

// MaxProblems bounds the problems a reader lists: a history broken
// throughout says so in its first hundred.
const MaxProblems = 100
