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
