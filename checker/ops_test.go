package checker

import (
	"fmt"
	"math"
	"math/rand/v2"
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

// TestOpTableTimes: every operation's time reads back as given, whether
// it is near its group's first (kept in 4 bytes) or not (kept whole):
// jumps, times going back, both ends of int64, and a difference of
// exactly the marker for a wide time.
func TestOpTableTimes(t *testing.T) {
	times := []int64{}
	now := int64(1_700_000_000_000_000_000) // a wall clock in ns, as a foreign history may have
	for i := range 3 * timeGroup {
		now += int64(i%5) * 1_000_000
		times = append(times, now)
	}
	for i := range 2 * timeGroup {
		times = append(times, math.MinInt64+int64(i)) // the far end of int64, still a few ns apart
	}
	steady := len(times)
	// The group's base is the first of these: the third is exactly wideTime from it.
	times = append(times, now+math.MaxInt32, now-math.MaxInt32, now+math.MaxInt32+math.MinInt32, now+3e9, now-3e9,
		math.MaxInt64, math.MinInt64, 0, -1, now)
	tab := newOpTable()
	for i, tm := range times {
		tab.add(&history.Op{Index: int64(i), Time: tm, Process: 1, Type: history.OK, F: history.Send}, false)
		if i == steady-1 && len(tab.wide) != 0 {
			t.Fatalf("times a few ms apart took %d wide times", len(tab.wide))
		}
	}
	for i, want := range times {
		if got := tab.time(int32(i)); got != want || tab.op(int32(i)).Time != want {
			t.Errorf("op %d: time %d (op says %d), want %d", i, got, tab.op(int32(i)).Time, want)
		}
	}
	if len(tab.wide) == 0 || len(tab.wide) > len(times)-steady {
		t.Errorf("%d wide times, want the few that do not fit", len(tab.wide))
	}
}

// TestOpTableProcesses: every operation gives back its process, whether
// its group has one process or a different one on each of its operations,
// for processes of either sign and far apart; also where the table reads
// the operations the caller holds (src), whose processes it tables all
// the same.
func TestOpTableProcesses(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 29))
	var ops []history.Op
	for i := range 5 * metaBlock {
		var p int
		switch g := i / timeGroup % 4; g {
		case 0:
			p = 7 // one process a group
		case 1:
			p = i // a new one on every operation: 256 in a group
		case 2:
			p = rng.IntN(12) - 2 // the monitor, the nemesis and clients
		default:
			p = int(rng.Int32()) - math.MaxInt32/2
		}
		ops = append(ops, history.Op{Index: int64(i), Process: p, Type: history.OK, F: history.Send})
	}
	for _, held := range []bool{false, true} {
		tab := newOpTable()
		if held {
			tab.src = ops
		}
		for i := range ops {
			tab.add(&ops[i], false)
		}
		for i := range ops {
			p := ops[i].Process
			if got := tab.process(int32(i)); got != p {
				t.Fatalf("held %v: op %d: process %d, want %d", held, i, got, p)
			}
			// Held, op is the caller's own operation: only the table's
			// own copy is worth a look.
			if got := tab.op(int32(i)).Process; !held && got != p {
				t.Fatalf("op %d: op's process %d, want %d", i, got, p)
			}
		}
	}
}
