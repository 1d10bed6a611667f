package history

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// ops builds a history from lines "PROCESS TYPE F [p=PARTITION]
// [fault=NAME] [err]", one per op, positions and indexes in order.
func ops(t *testing.T, lines ...string) []Op {
	t.Helper()
	var out []Op
	for i, l := range lines {
		w := strings.Fields(l)
		p, err := strconv.Atoi(w[0])
		if err != nil || len(w) < 3 {
			t.Fatalf("line %q", l)
		}
		op := Op{Index: int64(i), Time: int64(i), Process: p, Type: Type(w[1]), F: w[2]}
		for _, x := range w[3:] {
			switch k, v, _ := strings.Cut(x, "="); k {
			case "p":
				n, _ := strconv.Atoi(v)
				op.Value = &Value{Topic: "t", Partition: int32(n)}
			case "fault":
				op.Value = &Value{FaultInfo: &FaultInfo{Fault: v}}
			case "err":
				op.Error = "failed"
			}
		}
		out = append(out, op)
	}
	return out
}

// Index is a whole history read once by the rules every reader shares
// (Pairer, Windows), which every reader applies as the history streams
// past: the tests' view of what those rules make of a history.
type Index struct {
	Ops []Op
	// Pair is the position of each operation's invoke or completion, -1
	// where it has none.
	Pair []int32
	// Windows are the fault windows, in the order they opened; Heals the
	// nemesis's heals.
	Windows []Window
	Heals   []Span
	// Problems says where the history broke the pairing rule, at most
	// MaxProblems of them.
	Problems []string
}

// NewIndex reads ops once.
func NewIndex(ops []Op) *Index {
	ix := &Index{Ops: ops, Pair: make([]int32, len(ops))}
	var p Pairer
	var w Windows
	for i := range ops {
		op, pos := &ops[i], int32(i)
		ix.Pair[i] = -1
		st := p.Add(op, pos)
		if st.Problem != "" && len(ix.Problems) < MaxProblems {
			ix.Problems = append(ix.Problems, st.Problem)
		}
		if st.Invoke >= 0 {
			ix.Pair[i], ix.Pair[st.Invoke] = st.Invoke, pos
		}
		w.Add(op, pos, st)
	}
	ix.Windows, ix.Heals = w.Windows(), w.Heals()
	return ix
}

func span(s Span) string { return fmt.Sprintf("%d/%d", s.Invoke, s.Done) }

func windows(ix *Index) []string {
	var out []string
	for _, w := range ix.Windows {
		out = append(out, fmt.Sprintf("%s start=%s stop=%s heal=%s opened=%v", w.Fault, span(w.Start), span(w.Stop), span(w.Heal), w.Opened(ix.Ops)))
	}
	return out
}

// TestIndex: the pairing rule and the fault windows every reader shares,
// on well-formed histories and on the breaks a torn or foreign one has.
func TestIndex(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ops      []string
		pair     []int32
		problems int
		windows  []string
		heals    int
	}{
		{name: "well formed",
			ops:  []string{"0 invoke send", "1 invoke poll", "0 ok send", "1 info poll", "0 invoke send"},
			pair: []int32{2, 3, 0, 1, -1}},
		{name: "a second invoke leaves the first open",
			ops:  []string{"0 invoke send", "0 invoke poll", "0 ok poll"},
			pair: []int32{-1, 2, 1}, problems: 1},
		{name: "a completion of another function stands alone",
			ops:  []string{"0 invoke send", "0 ok poll", "0 ok send"},
			pair: []int32{-1, -1, -1}, problems: 2},
		{name: "the monitor pairs per partition",
			ops:  []string{"-2 invoke monitor p=0", "-2 invoke monitor p=1", "-2 ok monitor p=1", "-2 ok monitor p=0"},
			pair: []int32{3, 2, 1, 0}},
		{name: "windows start, stop and fail",
			ops: []string{"-1 invoke start-kill", "-1 info start-kill", "-1 invoke start-pause", "-1 info start-pause err",
				"-1 invoke stop-kill", "-1 info stop-kill", "-1 invoke stop-pause", "-1 info stop-pause"},
			pair: []int32{1, 0, 3, 2, 5, 4, 7, 6},
			windows: []string{"kill start=0/1 stop=4/5 heal=-1/-1 opened=true",
				"pause start=2/3 stop=6/7 heal=-1/-1 opened=false"}},
		{name: "the value names the fault; a stop ends the oldest of its fault",
			ops: []string{"-1 invoke start-x fault=kill", "-1 invoke start-kill", "-1 invoke stop-kill"},
			// Two invokes of the nemesis at once: the first is left open.
			pair: []int32{-1, -1, -1}, problems: 2,
			windows: []string{"kill start=0/-1 stop=2/-1 heal=-1/-1 opened=false",
				"kill start=1/-1 stop=-1/-1 heal=-1/-1 opened=false"}},
		{name: "a heal ends every window open; a bare start is a fault",
			ops:  []string{"-1 invoke start", "-1 info start", "-1 info start-pause", "-1 invoke heal", "-1 info heal", "-1 info stop-pause"},
			pair: []int32{1, 0, -1, 4, 3, -1}, problems: 2,
			windows: []string{"fault start=0/1 stop=-1/-1 heal=3/4 opened=true",
				"pause start=-1/2 stop=-1/-1 heal=3/4 opened=true"},
			heals: 1},
		{name: "a torn start is not opened",
			ops:     []string{"-1 invoke start-kill"},
			pair:    []int32{-1},
			windows: []string{"kill start=0/-1 stop=-1/-1 heal=-1/-1 opened=false"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ix := NewIndex(ops(t, tc.ops...))
			if fmt.Sprint(ix.Pair) != fmt.Sprint(tc.pair) {
				t.Errorf("pairs %v, want %v", ix.Pair, tc.pair)
			}
			if len(ix.Problems) != tc.problems {
				t.Errorf("problems %q, want %d", ix.Problems, tc.problems)
			}
			if got := windows(ix); strings.Join(got, "\n") != strings.Join(tc.windows, "\n") {
				t.Errorf("windows\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.windows, "\n"))
			}
			if len(ix.Heals) != tc.heals {
				t.Errorf("heals %v, want %d", ix.Heals, tc.heals)
			}
		})
	}
}

// TestPairerOpen: the invokes a history ends with, in order.
func TestPairerOpen(t *testing.T) {
	h := ops(t, "2 invoke send", "0 invoke poll", "1 invoke send", "1 ok send")
	var p Pairer
	for i := range h {
		p.Add(&h[i], int32(i))
	}
	if got := fmt.Sprint(p.Open()); got != "[0 1]" {
		t.Fatalf("open %s", got)
	}
}

// TestPairerDenseAndMapAgree: a run's processes (paired in a table by
// number) pair as processes numbered past it or below 0 (paired in a
// map) do, on random histories that break the rule too; and Open agrees.
func TestPairerDenseAndMapAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	fs := []string{Send, Poll}
	types := []Type{Invoke, Invoke, OK, Info, Fail}
	for range 300 {
		var dense, sparse Pairer
		for i := range 200 {
			p := rng.IntN(6)
			op := Op{Index: int64(i), Process: p, Type: types[rng.IntN(len(types))], F: fs[rng.IntN(2)]}
			far := op
			far.Process = maxDense + 7*p
			if p%2 == 1 {
				far.Process = -10 - p
			}
			a, b := dense.Add(&op, int32(i)), sparse.Add(&far, int32(i))
			if a.Invoke != b.Invoke || a.Orphan != b.Orphan || (a.Problem == "") != (b.Problem == "") {
				t.Fatalf("op %d: process %d %+v, process %d %+v", i, op.Process, a, far.Process, b)
			}
		}
		if a, b := dense.Open(), sparse.Open(); !slices.Equal(a, b) {
			t.Fatalf("open %v and %v", a, b)
		}
	}
}
