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
	// dense holds the open operations of processes 0 to maxDense-1 (a
	// run's workers), by process: looked up at every operation of a
	// history of millions, a map's hashing and deletes were a twentieth
	// of a check. open holds other processes'; monitor the monitor's, by
	// partition.
	dense   []opened
	nDense  int // how many of dense are open
	open    map[int]opened
	monitor map[Key]opened
}

type opened struct {
	pos   int32
	busy  bool // in dense: open
	f     string
	index int64
}

// maxDense bounds Pairer.dense: a process numbered beyond it (none
// chaos gives) is paired in the map.
const maxDense = 1 << 16

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
	if op.Process >= 0 && op.Process < maxDense {
		return p.pairDense(op, pos)
	}
	if p.open == nil {
		p.open = map[int]opened{}
	}
	return pair(p.open, op.Process, op, pos)
}

// pairDense is pair for a process of dense.
func (p *Pairer) pairDense(op *Op, pos int32) Step {
	if op.Process >= len(p.dense) {
		p.dense = append(p.dense, make([]opened, op.Process+1-len(p.dense))...)
	}
	o := &p.dense[op.Process]
	st, now, open := step(*o, o.busy, op, pos)
	switch {
	case open && !o.busy:
		p.nDense++
	case !open && o.busy:
		p.nDense--
	}
	*o = now
	o.busy = open
	return st
}

func pair[K comparable](open map[K]opened, k K, op *Op, pos int32) Step {
	was, busy := open[k]
	st, now, stays := step(was, busy, op, pos)
	switch {
	case stays:
		open[k] = now
	case busy:
		delete(open, k)
	}
	return st
}

// step applies the rule to op, whose process (or partition) has was open
// if busy: what op did, and what is open after it (if open).
func step(was opened, busy bool, op *Op, pos int32) (st Step, now opened, open bool) {
	st = Step{Invoke: -1, Orphan: -1}
	if op.Type == Invoke {
		if busy {
			st.Orphan = was.pos
			st.Problem = fmt.Sprintf("op %d: process %d invoked %s while op %d is open; op %d is treated as unknown", op.Index, op.Process, op.F, was.index, was.index)
		}
		return st, opened{pos: pos, f: op.F, index: op.Index}, true
	}
	switch {
	case !busy:
		st.Problem = fmt.Sprintf("op %d: process %d completed %s without an invoke", op.Index, op.Process, op.F)
	case was.f != op.F:
		st.Orphan = was.pos
		st.Problem = fmt.Sprintf("op %d: completes %s but process %d invoked %s (op %d); both are taken alone", op.Index, op.F, op.Process, was.f, was.index)
	default:
		st.Invoke = was.pos
	}
	return st, opened{}, false
}

// Open lists the positions of the invokes still open, in order: those
// the history ended before completing.
func (p *Pairer) Open() []int32 {
	out := make([]int32, 0, p.nDense+len(p.open)+len(p.monitor))
	for _, o := range p.dense {
		if o.busy {
			out = append(out, o.pos)
		}
	}
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
