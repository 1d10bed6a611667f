package checker

// table is an append-only list held in blocks of tableBlock: a long
// history's tables grow without copying themselves. A slice grown by
// append held the old array and the new one at once (a two-hour run's
// polls alone: 150 MB and 190 MB), the largest part of a judge's peak
// while it read, and kept a quarter of the new one unused after. A
// small table is one block grown as a slice, up to tableBlock.
type table[T any] struct {
	blocks [][]T
	n      int32
}

const tableBlock = 1 << 14

// add appends v and returns its index.
func (t *table[T]) add(v T) int32 {
	if len(t.blocks) == 0 || len(t.blocks[len(t.blocks)-1]) == tableBlock {
		var b []T
		if len(t.blocks) > 0 {
			b = make([]T, 0, tableBlock)
		}
		t.blocks = append(t.blocks, b)
	}
	last := &t.blocks[len(t.blocks)-1]
	*last = append(*last, v)
	t.n++
	return t.n - 1
}

// at is the element at index i. An element past the first block never
// moves; the first block grows as a slice, so a pointer into it may go
// stale at the next add: hold none across one.
func (t *table[T]) at(i int32) *T {
	// Unsigned, the block and the place in it are a shift and a mask.
	u := uint32(i)
	return &t.blocks[u/tableBlock][u%tableBlock]
}

// len is how many elements the table holds.
func (t *table[T]) len() int32 { return t.n }

// reserve makes room for n elements in one allocation, for a table whose
// size is known before it is filled (NewHistory).
func (t *table[T]) reserve(n int) {
	if t.n == 0 && n > 0 {
		t.blocks = [][]T{make([]T, 0, min(n, tableBlock))}
	}
}
