// Package blocks is a list held in fixed blocks, appended to and cut
// back at its end: a table of millions of entries (one for each
// operation of a long run, or each batch of a simulated broker's log)
// grows without copying itself. A slice grown by append holds its old array
// and the new one at once while it copies, and up to a quarter of the
// new one unused after: for the tables a judge or a report fills as it
// reads a history, that was a large part of their peak.
package blocks

import (
	"iter"
	"sort"

	"github.com/chaos-isr/chaos/internal/offheap"
)

// size is the entries of a block. A list smaller than a block is one
// block grown as a slice.
const size = 1 << 14

// List is a list appended to at its end (Add) and cut back there
// (Truncate). The zero List is empty.
type List[T any] struct {
	blocks [][]T
	n      int
	arena  *offheap.Arena
	// spare are full-size blocks a Truncate emptied, for the next Adds:
	// an arena gives nothing back.
	spare [][]T
}

// In makes the list's blocks in a (see package offheap: T must hold no
// pointer), every one full-size: an arena gives nothing back, so a first
// block grown as a slice would leave each smaller array in it. Call it
// while the list is empty.
//
// An arena that gives the heap's memory (Err: a file system of memory, no
// file) is the heap: the first block then grows as a slice, as the list
// needs it, rather than being made full-size there.
func (l *List[T]) In(a *offheap.Arena) {
	if a.Err() == nil {
		l.arena = a
	}
}

// Add appends v and returns its index.
func (l *List[T]) Add(v T) int {
	if len(l.blocks) == 0 || len(l.blocks[len(l.blocks)-1]) == size {
		var b []T
		if k := len(l.spare); k > 0 {
			b, l.spare = l.spare[k-1], l.spare[:k-1]
		} else if len(l.blocks) > 0 || l.arena != nil {
			b = offheap.Make[T](l.arena, size)[:0]
		}
		l.blocks = append(l.blocks, b)
	}
	last := &l.blocks[len(l.blocks)-1]
	*last = append(*last, v)
	l.n++
	return l.n - 1
}

// Len is the number of entries.
func (l *List[T]) Len() int { return l.n }

// At is the i-th entry.
func (l *List[T]) At(i int) T { return *l.Ptr(i) }

// Ptr is the i-th entry's address. An entry past the first block never
// moves; the first block grows as a slice, so an address in it may go
// stale at the next Add: hold none across one.
func (l *List[T]) Ptr(i int) *T {
	// Unsigned, the block and the place in it are a shift and a mask.
	u := uint(i)
	return &l.blocks[u/size][u%size]
}

// Search is sort.Search over the list: the least index whose entry f says
// true of, Len if none, where f is false and then true along the list.
// It gallops back from the end: a search for an entry near the end (a
// log's next fetch) reads entries near the end only, where a bisection
// of the whole list read its middles, which move as the list grows: a
// list in an arena then kept every page of itself mapped.
func (l *List[T]) Search(f func(*T) bool) int {
	hi := l.n // f is true at hi, or hi is the end
	lo := 0   // f is false below lo
	for step := 1; ; step *= 2 {
		i := hi - step
		if i < 0 {
			break
		}
		if !f(l.Ptr(i)) {
			lo = i + 1
			break
		}
		hi = i
	}
	return lo + sort.Search(hi-lo, func(j int) bool { return f(l.Ptr(lo + j)) })
}

// Truncate cuts the list to its first n entries (n at least its length
// changes nothing). An address of a dropped entry must not be used.
func (l *List[T]) Truncate(n int) {
	n = max(n, 0)
	if n >= l.n {
		return
	}
	keep := (n + size - 1) / size // the blocks entries below n are in
	for i := len(l.blocks) - 1; i >= keep; i-- {
		if cap(l.blocks[i]) == size {
			l.spare = append(l.spare, l.blocks[i][:0])
		}
		l.blocks[i] = nil
	}
	l.blocks = l.blocks[:keep]
	if keep > 0 {
		l.blocks[keep-1] = l.blocks[keep-1][:n-(keep-1)*size]
	}
	l.n = n
}

// Clone is a copy of the list whose blocks are in a (nil: the heap):
// neither's Adds and Truncates reach the other.
func (l *List[T]) Clone(a *offheap.Arena) List[T] {
	c := List[T]{arena: a}
	for v := range l.All() {
		c.Add(v)
	}
	return c
}

// Reserve makes room for n entries in one allocation, for an empty list
// whose size is known before it is filled.
func (l *List[T]) Reserve(n int) {
	if l.n == 0 && n > 0 && l.arena == nil {
		l.blocks = [][]T{make([]T, 0, min(n, size))}
	}
}

// All is the entries in order.
func (l *List[T]) All() iter.Seq[T] {
	return func(yield func(T) bool) {
		for _, b := range l.blocks {
			for _, v := range b {
				if !yield(v) {
					return
				}
			}
		}
	}
}
