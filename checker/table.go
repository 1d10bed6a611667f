package checker

import (
	"github.com/chaos-isr/chaos/internal/blocks"
	"github.com/chaos-isr/chaos/internal/offheap"
)

// table is an append-only list held in blocks (internal/blocks): a long
// history's tables grow without copying themselves. A slice grown by
// append held the old array and the new one at once (a two-hour run's
// polls alone: 150 MB and 190 MB), the largest part of a judge's peak
// while it read, and kept a quarter of the new one unused after. The
// checkers index it by int32, as they index every table.
type table[T any] struct{ l blocks.List[T] }

// add appends v and returns its index.
func (t *table[T]) add(v T) int32 { return int32(t.l.Add(v)) }

// at is the element at index i (see blocks.List.Ptr: hold none across an
// add).
func (t *table[T]) at(i int32) *T { return t.l.Ptr(int(uint32(i))) }

// len is how many elements the table holds.
func (t *table[T]) len() int32 { return int32(t.l.Len()) }

// reserve makes room for n elements in one allocation, for a table whose
// size is known before it is filled (NewHistory).
func (t *table[T]) reserve(n int) { t.l.Reserve(n) }

// in makes the table's blocks in a (Builder.InFile).
func (t *table[T]) in(a *offheap.Arena) { t.l.In(a) }
