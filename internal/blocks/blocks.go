// Package blocks is an append-only list held in fixed blocks: a table of
// millions of entries (one for each operation of a long run) grows
// without copying itself. A slice grown by append holds its old array
// and the new one at once while it copies, and up to a quarter of the
// new one unused after: for the tables a judge or a report fills as it
// reads a history, that was a large part of their peak.
package blocks

import (
	"iter"

	"github.com/chaos-isr/chaos/internal/offheap"
)

// size is the entries of a block. A list smaller than a block is one
// block grown as a slice.
const size = 1 << 14

// List is an append-only list. The zero List is empty.
type List[T any] struct {
	blocks [][]T
	n      int
	arena  *offheap.Arena
}

// In makes the list's blocks in a (see package offheap: T must hold no
// pointer), every one full-size: an arena gives nothing back, so a first
// block grown as a slice would leave each smaller array in it. Call it
// while the list is empty.
func (l *List[T]) In(a *offheap.Arena) { l.arena = a }

// Add appends v and returns its index.
func (l *List[T]) Add(v T) int {
	if len(l.blocks) == 0 || len(l.blocks[len(l.blocks)-1]) == size {
		var b []T
		if len(l.blocks) > 0 || l.arena != nil {
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
