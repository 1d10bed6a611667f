package checker

import (
	"fmt"
	"testing"

	"github.com/chaos-isr/chaos/history"
)

// TestOpTableManyFunctions: a history of more function names than the op
// table has room for still names each operation's function.
func TestOpTableManyFunctions(t *testing.T) {
	tab := newOpTable()
	for i := range manyFns + 10 {
		op := &history.Op{Index: int64(i), Process: 1, Type: history.OK, F: fmt.Sprintf("f%d", i)}
		tab.add(op, false)
	}
	for _, pos := range []int32{0, manyFns - 1, manyFns, manyFns + 9} {
		if got, want := tab.fn(pos), fmt.Sprintf("f%d", pos); got != want || tab.op(pos).F != want {
			t.Errorf("op %d: function %q (op says %q), want %q", pos, got, tab.op(pos).F, want)
		}
	}
}

// TestOpTableManyErrors: a history of more error texts than the op table
// has room for still gives each operation its error, outcome, time and
// process, and an op of no error has none.
func TestOpTableManyErrors(t *testing.T) {
	tab := newOpTable()
	types := []history.Type{history.Invoke, history.OK, history.Fail, history.Info}
	mk := func(i int) *history.Op {
		op := &history.Op{Index: int64(i), Time: int64(i) * 1e9, Process: i % 7, Type: types[i%4], F: history.Send}
		if i%3 != 0 {
			op.Error = fmt.Sprintf("e%d", i)
		}
		return op
	}
	n := manyErrs*3/2 + 10
	for i := range n {
		tab.add(mk(i), false)
	}
	for _, i := range []int{0, 1, 2, manyErrs, manyErrs*3/2 - 1, manyErrs * 3 / 2, n - 1} {
		want, got := mk(i), tab.op(int32(i))
		if got.Error != want.Error || tab.errText(int32(i)) != want.Error || got.Type != want.Type ||
			got.Time != want.Time || got.Process != want.Process || got.F != want.F {
			t.Errorf("op %d: %+v, want %+v", i, got, want)
		}
	}
}
