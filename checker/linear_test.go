package checker

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/internal/offheap"
)

// concurrentHistory has producers with overlapping sends, a consumer and
// end-offset reads interleaved, all consistent with one log.
func concurrentHistory() *hb {
	b := &hb{}
	b.invokeSend(0, 0, "a")
	b.invokeSend(1, 0, "b")
	b.invokeEnd(11, 0)
	b.doneSend(1, 0, "b", history.OK, 0)
	b.invokeSend(2, 0, "c")
	b.doneEnd(11, 0, 1)
	b.doneSend(0, 0, "a", history.OK, 1)
	b.poll(10, 0, 0, 2, "0=b 1=a")
	b.invokeSend(0, 0, "d")
	b.doneSend(2, 0, "c", history.Info, 0) // written at 2, as the final read shows
	b.invokeEnd(11, 0)
	b.doneSend(0, 0, "d", history.OK, 3)
	b.doneEnd(11, 0, 4)
	b.poll(10, 0, 2, 4, "2=c 3=d")
	b.final(0, 4, "0=b 1=a 2=c 3=d")
	for br := int32(1); br <= 3; br++ {
		b.replica(0, br, 4, "0=b 1=a 2=c 3=d")
	}
	return b
}

func TestLinearizableHistoryChecksOk(t *testing.T) {
	h := NewHistory(concurrentHistory().ops, strict)
	for _, r := range Linearizability(h, Options{}) {
		if r.Valid != Valid || r.Stats["porcupine-ok"] != 1 {
			t.Errorf("%s: %s stats %v details %v", r.Name, r.Valid, r.Stats, r.Details)
		}
		if r.Stats["unknown-sends-modelled"] != 1 {
			t.Errorf("%s: the read unknown send was not modelled: %v", r.Name, r.Stats)
		}
	}
}

func TestStaleEndOffsetIsIllegalAndVisualized(t *testing.T) {
	b := concurrentHistory()
	// An end-offset that begins after d (offset 3, acks=-1) was
	// acknowledged, yet returns 3: the HW it saw does not cover d.
	e := b.endOffset(12, 0, 3)
	path := filepath.Join(t.TempDir(), "linear.html")
	rs := Linearizability(NewHistory(b.ops, strict), Options{VisualizationPath: path})
	send, stale := rs[0], rs[1]
	if send.Valid != Valid || send.Stats["porcupine-ok"] != 1 {
		t.Errorf("nonlinearizable-send: %s %v %v", send.Valid, send.Details, send.Stats)
	}
	if stale.Valid != Invalid || stale.Stats["porcupine-windows-illegal"] != 1 || stale.Count != 1 {
		t.Fatalf("stale-read: %s count %d stats %v details %v", stale.Valid, stale.Count, stale.Stats, stale.Details)
	}
	if stale.Examples[len(stale.Examples)-1] != e {
		t.Errorf("examples %v do not end with the stale read op %d", stale.Examples, e)
	}
	if len(stale.Artifacts) != 1 || stale.Artifacts[0] != path {
		t.Fatalf("artifacts %v", stale.Artifacts)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) == 0 || !strings.Contains(string(data), "<html") {
		t.Fatalf("visualization is not HTML: %.200s", data)
	}
	// With acks=1 an ack says nothing about the HW: an end offset not
	// covering an acknowledged send is fine.
	b = &hb{}
	b.send(0, 0, "a", 0)
	b.endOffset(10, 0, 0)
	for _, acks := range []int{1, -1} {
		for _, r := range Linearizability(NewHistory(b.ops, Config{Acks: acks, MinInsyncReplicas: 2, ReplicationFactor: 3, MaxInFlight: 1}), Options{}) {
			if want := r.Name == NonlinearizableSendName || acks == 1; (r.Valid == Valid) != want {
				t.Errorf("acks=%d: %s %s %v", acks, r.Name, r.Valid, r.Details)
			}
		}
	}
}

// TestContradictionAmongManyConcurrentReads: forty long reads span a pair
// of sends that contradict each other (b began after a completed, yet got
// a lower offset). Searching for a linearization there means trying every
// subset of the reads, 2^40 of them; instead the pair is found by the scan,
// porcupine confirms it in a window capped to a few concurrent operations,
// and stale-read, which has no pair, is confirmed on the whole history,
// where tightening leaves nothing to guess.
func TestContradictionAmongManyConcurrentReads(t *testing.T) {
	b := &hb{}
	for i := range 40 {
		b.invokeEnd(100+i, 0)
	}
	a := b.send(0, 0, "a", 12)
	second := b.send(1, 0, "b", 11)
	for i := range 40 {
		b.doneEnd(100+i, 0, 10)
	}
	start := time.Now()
	rs := Linearizability(NewHistory(b.ops, strict), Options{})
	if took := time.Since(start); took > time.Second {
		t.Errorf("took %v", took)
	}
	send, stale := rs[0], rs[1]
	if send.Valid != Invalid || send.Stats["porcupine-windows-illegal"] != 1 || len(send.Examples) != 2 || send.Examples[0] != a || send.Examples[1] != second {
		t.Errorf("%s: %s examples %v stats %v details %v", send.Name, send.Valid, send.Examples, send.Stats, send.Details)
	}
	if stale.Valid != Valid || stale.Stats["porcupine-ok"] != 1 {
		t.Errorf("%s: %s stats %v details %v", stale.Name, stale.Valid, stale.Stats, stale.Details)
	}
}

// TestPathologicalHistoryEndsUnknown: 20,000 concurrent unknown sends,
// all read back by the final read, invoked in the reverse order of the
// offsets they got. A plain search tries the highest offset first, which
// locks out every other send, and learns it only at the very end: it would
// try every subset. Tightening sorts them, so given time the check is Ok;
// but they are all in flight together, one segment of 20,000 operations,
// and a bound far too short for that search ends both results unknown,
// promptly. Taken in the order of their tightened calls they linearize, so
// the check proves them within that bound without searching.
func TestPathologicalHistoryEndsUnknown(t *testing.T) {
	reversed := func(n int) *History {
		b := &hb{}
		var final strings.Builder
		for i := range n {
			b.invokeSend(100+i, 0, fmt.Sprintf("u%d", i))
		}
		for i := range n {
			b.doneSend(100+i, 0, fmt.Sprintf("u%d", i), history.Info, 0)
			fmt.Fprintf(&final, "%d=u%d ", i, n-1-i)
		}
		b.final(0, int64(n), final.String())
		return NewHistory(b.ops, strict)
	}
	// Sixty of them already defeat a plain search.
	var plain []porcupine.Operation
	r60 := reversed(60)
	ops := linOps(r60, 0, 0, func(string, int64) {}, nil, nil, nil)
	for i := range ops {
		plain = append(plain, porcupine.Operation{Input: &ops[i], Call: ops[i].call, Return: ops[i].ret})
	}
	if r := porcupine.CheckOperationsTimeout(linModel(nil, bothChecks), plain, 300*time.Millisecond); r != porcupine.Unknown {
		t.Errorf("a plain search of 60 reversed unknown sends: %s", r)
	}
	if r := Linearizability(reversed(60), Options{LinearizableTimeout: time.Second}); r[0].Valid != Valid {
		t.Errorf("60 reversed unknown sends: %s %v", r[0].Valid, r[0].Stats)
	}

	const n = 20_000
	h := reversed(n)
	const bound = time.Millisecond
	// searched runs the check with porcupine searching every segment.
	searched := func(opts Options) []Result {
		defer func(v bool) { tryInOrder = v }(tryInOrder)
		tryInOrder = false
		return Linearizability(h, opts)
	}
	start := time.Now()
	rs := searched(Options{LinearizableTimeout: bound})
	if took := time.Since(start); took > time.Second {
		t.Errorf("took %v with a bound of %v", took, bound)
	}
	for _, r := range rs {
		if r.Valid != Unknown || r.Stats["porcupine-unknown"] != 1 || r.Stats["unknown-sends-modelled"] != n {
			t.Errorf("searched: %s: %s stats %v details %v", r.Name, r.Valid, r.Stats, r.Details)
		}
	}
	for _, r := range Linearizability(h, Options{LinearizableTimeout: bound}) {
		if r.Valid != Valid || r.Stats["segments-in-order"] != 1 || r.Stats["porcupine-chunks"] != 0 {
			t.Errorf("in order: %s: %s stats %v details %v", r.Name, r.Valid, r.Stats, r.Details)
		}
	}
	// Given time, the search itself finds them Ok: tightening keeps it
	// from guessing.
	start = time.Now()
	for _, r := range searched(Options{}) {
		if r.Valid != Valid || r.Stats["porcupine-ok"] != 1 || r.Stats["porcupine-chunks"] == 0 {
			t.Errorf("searched, unbounded: %s: %s stats %v details %v", r.Name, r.Valid, r.Stats, r.Details)
		}
	}
	t.Logf("searched, unbounded: Ok in %v", time.Since(start))
}

// TestManyUnknownSendsDoNotBlowUp: unknown sends no read returned are left
// out of the model (their only possible effect only forbids more), so a
// thousand concurrent ones cost nothing, and an anomaly next to them is
// still found.
func TestManyUnknownSendsDoNotBlowUp(t *testing.T) {
	b := &hb{}
	for i := range 1000 {
		b.invokeSend(100+i, 0, fmt.Sprintf("u%d", i))
	}
	first := b.send(0, 0, "a", 1)
	second := b.send(1, 0, "b", 0)
	for i := range 1000 {
		b.doneSend(100+i, 0, fmt.Sprintf("u%d", i), history.Info, 0)
	}
	b.final(0, 2, "0=b 1=a")
	start := time.Now()
	rs := Linearizability(NewHistory(b.ops, strict), Options{LinearizableTimeout: 5 * time.Second})
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("took %v", took)
	}
	if r := rs[0]; r.Valid != Invalid || r.Stats["porcupine-windows-illegal"] != 1 || len(r.Examples) != 2 || r.Examples[0] != first || r.Examples[1] != second {
		t.Errorf("%s: %s examples %v stats %v", r.Name, r.Valid, r.Examples, r.Stats)
	}
}

// TestWitnessesMatchPorcupine checks the claims the checker rests on, on
// random small histories (many of them anomalous): under each model (send
// checks, read checks, both), porcupine finds a history illegal exactly
// when a pair of that kind contradicts it; and tightening the intervals and
// cutting them into segments, each judged by the order of its calls where
// that linearizes, never changes porcupine's verdict.
func TestWitnessesMatchPorcupine(t *testing.T) {
	defer func(n, c int) { segmentOps, chunkOps = n, c }(segmentOps, chunkOps)
	segmentOps, chunkOps = 2, 5
	rng := rand.New(rand.NewPCG(1, 2))
	illegal, cuts, inOrder, searched := 0, 0, 0, 0
	for trial := range 20000 {
		n := 2 + rng.IntN(7)
		commit := rng.IntN(2) == 0
		var ops []linOp
		for range n {
			call := int64(rng.IntN(20))
			op := linOp{call: call, ret: call + int64(rng.IntN(10))}
			switch rng.IntN(5) {
			case 0, 1:
				op.kind, op.at, op.commit = linSend, int64(rng.IntN(6)), commit
			case 2:
				op.kind, op.at, op.unknown, op.ret = linSend, int64(rng.IntN(6)), true, math.MaxInt64
			case 3:
				op.kind, op.at, op.readBits = linRead, int64(rng.IntN(7)), hwChecked
			default:
				op.kind, op.at = linRead, int64(rng.IntN(7)) // a poll without a HW
			}
			ops = append(ops, op)
		}
		sw, rw := witnesses(ops, 0, nil)
		for _, c := range []checks{{true, true}, {true, false}, {false, true}} {
			model := linModel(nil, c)
			var pops []porcupine.Operation
			for i := range ops {
				op := &ops[i]
				op.seg = 0
				pops = append(pops, porcupine.Operation{Input: op, Call: op.call, Return: op.ret})
			}
			legal := porcupine.CheckOperations(model, pops)
			pairs := (c.sends && len(sw) > 0) || (c.reads && len(rw) > 0)
			if legal == pairs {
				var desc []string
				for _, op := range ops {
					desc = append(desc, fmt.Sprintf("[%d,%d] %s reach %d", op.call, op.ret, op.describe(nil), op.at))
				}
				t.Fatalf("trial %d, checks %+v: porcupine legal=%v, pairs %d+%d:\n%s", trial, c, legal, len(sw), len(rw), strings.Join(desc, "\n"))
			}
			seg := 0
			// Chunks of a few segments, each searched on its own.
			chunked := true
			// A copy: searchOps tightens the times in place.
			rebuild := func() []linOp { return slices.Clone(ops) }
			_, in, tightened := searchOps(rebuild(), rebuild, c, &seg, func(*linOp) int { return 0 }, func(chunk []porcupine.Operation) bool {
				searched++
				chunked = chunked && porcupine.CheckOperations(model, chunk)
				return true
			}, nil, nil)
			inOrder += in
			if !tightened && legal {
				t.Fatalf("trial %d, checks %+v: tightening failed on a legal history", trial, c)
			}
			if chunked != legal {
				t.Fatalf("trial %d, checks %+v: tightening or segments changed the verdict (legal=%v, %d segments)", trial, c, legal, seg)
			}
			cuts += seg - 1
			if !legal && c == bothChecks {
				illegal++
			}
		}
	}
	if illegal < 2000 || cuts < 1000 || inOrder < 1000 || searched < 1000 {
		t.Fatalf("only %d illegal histories, %d cuts, %d segments judged in order, %d chunks searched: the test has no teeth", illegal, cuts, inOrder, searched)
	}
	t.Logf("%d illegal histories, %d cuts, %d segments judged in order, %d chunks searched", illegal, cuts, inOrder, searched)
}

// TestVisualizationOfALongHistory: a stale read at the end of a long
// history; the visualization shows only the segment where it is, so it
// stays small enough to open.
func TestVisualizationOfALongHistory(t *testing.T) {
	ops := synth(synthConfig{ops: 40_000, producers: 5, consumers: 2, partitions: 1, endEvery: 5, seed: 9})
	b := &hb{ops: ops, t: ops[len(ops)-1].Time}
	e := b.endOffset(5000, 0, 3)
	path := filepath.Join(t.TempDir(), "linear.html")
	rs := Linearizability(NewHistory(b.ops, strict), Options{VisualizationPath: path})
	stale := rs[1]
	if stale.Valid != Invalid || stale.Count != 1 || stale.Examples[len(stale.Examples)-1] != e || stale.Stats["segments"] < 5 {
		t.Fatalf("stale-read: %s count %d examples %v stats %v", stale.Valid, stale.Count, stale.Examples, stale.Stats)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() == 0 || fi.Size() > 8<<20 {
		t.Fatalf("visualization of %d bytes", fi.Size())
	}
	t.Logf("%d segments, visualization %d KB, stats %v", stale.Stats["segments"], fi.Size()>>10, stale.Stats)
}

// TestDefaultLinTimeoutScales: the default bound grows with the model, so
// a long run's legal history is searched to the end (a fixed 10 s left a
// two-hour soak's unknown), and a small one keeps the 10 s.
func TestDefaultLinTimeoutScales(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want time.Duration
	}{{0, 10 * time.Second}, {1, 10 * time.Second}, {1_000_000, 10 * time.Second}, {1_000_001, 20 * time.Second}, {8_040_000, 90 * time.Second}} {
		if got := defaultLinTimeout(tc.n); got != tc.want {
			t.Errorf("%d operations: %v, want %v", tc.n, got, tc.want)
		}
	}
}

// TestInFileSearchCutShort: with the index in a file, a porcupine search
// cut short by its bound (whose goroutines may still read the
// partition's operations) leaves a verdict of unknown, and the history
// and its file close cleanly after it; a search that completes judges as
// the heap's index does.
func TestInFileSearchCutShort(t *testing.T) {
	ops := synth(synthConfig{ops: 20_000, producers: 4, consumers: 2, partitions: 2, endEvery: 5, seed: 3})
	cfg := Config{Acks: -1, MinInsyncReplicas: 2, Faults: []string{"kill"}}
	judge := func(timeout time.Duration) Validity {
		b := NewBuilder(cfg)
		if err := b.InFile(t.TempDir()); err != nil {
			t.Fatal(err)
		}
		for i := range ops {
			b.Add(&ops[i])
		}
		h := b.History()
		defer func() {
			if err := h.Close(); err != nil {
				t.Fatal(err)
			}
		}()
		for _, r := range Linearizability(h, Options{LinearizableTimeout: timeout}) {
			if r.Valid != Valid {
				return r.Valid
			}
		}
		return Valid
	}
	// Every segment searched, not proven in order: porcupine runs, and
	// its bound (a fraction of the search's time) cuts it short.
	defer func(v bool) { tryInOrder = v }(tryInOrder)
	tryInOrder = false
	if v := judge(2 * time.Millisecond); v != Unknown {
		t.Fatalf("a search with 2 ms judged %s, want unknown", v)
	}
	// The partition's arena, left to porcupine's goroutines, is given
	// back once they are done.
	if runtime.GOOS == "linux" {
		mapped := func() bool {
			maps, err := os.ReadFile("/proc/self/maps")
			if err != nil {
				t.Fatal(err)
			}
			return strings.Contains(string(maps), ".chaos-offheap-")
		}
		for i := 0; mapped(); i++ {
			if i == 100 {
				t.Fatal("a cut-short search's arena is still mapped after 100 collections")
			}
			runtime.GC()
			time.Sleep(10 * time.Millisecond)
		}
	}
	if v := judge(0); v != Valid {
		t.Fatalf("a legal history judged %s in a file", v)
	}
}

// TestGuardedKeepsTheArena: a scratch arena left to porcupine's
// goroutines (guarded) stays mapped while one of them can still step,
// and is given back once none can.
func TestGuardedKeepsTheArena(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/maps")
	}
	mapped := func() bool {
		maps, err := os.ReadFile("/proc/self/maps")
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(string(maps), ".chaos-offheap-")
	}
	a, err := offheap.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ops := offheap.Make[linOp](a, 10)
	if a.Err() != nil || !mapped() {
		t.Skipf("no arena here: %v", a.Err())
	}
	g := &arenaGuard{a}
	runtime.AddCleanup(g, func(a *offheap.Arena) { a.Close() }, a)
	m := guarded(porcupine.Model{Step: func(state, input, _ any) (bool, any) {
		return input.(*linOp).at == 7, state
	}}, g)
	release, done := make(chan struct{}), make(chan bool)
	go func(m porcupine.Model, op *linOp) {
		<-release
		ok, _ := m.Step(nil, op, nil)
		done <- ok
	}(m, &ops[3])
	ops[3].at = 7
	g, m, ops = nil, porcupine.Model{}, nil
	for range 10 {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
	}
	if !mapped() {
		t.Fatal("the arena was given back while a goroutine could still step")
	}
	close(release)
	if !<-done {
		t.Fatal("the step read the wrong operation")
	}
	for i := 0; mapped(); i++ {
		if i == 100 {
			t.Fatal("the arena is still mapped after 100 collections")
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

// TestSearchAsBuiltAgrees: searching each partition as it is built, until
// a pair turns up, judges as searching once every pair is known: for a
// legal history of three partitions, for one whose last partition alone
// has a stale read (found after the others were searched, so they are
// searched again for sends alone), and for one with a partition whose
// model is empty.
func TestSearchAsBuiltAgrees(t *testing.T) {
	legal := synth(synthConfig{ops: 6_000, producers: 4, consumers: 2, partitions: 3, endEvery: 5, seed: 11})
	last := legal[len(legal)-1]
	stale := append(slices.Clone(legal),
		history.Op{Index: last.Index + 1, Time: last.Time + 1, Process: 999, Type: history.Invoke, F: history.EndOffset, Value: &history.Value{Topic: topic, Partition: 2}},
		history.Op{Index: last.Index + 2, Time: last.Time + 2, Process: 999, Type: history.OK, F: history.EndOffset, Value: &history.Value{Topic: topic, Partition: 2, Offset: history.Int64(0)}})
	// A partition whose model is empty (its one send failed) is searched
	// all the same: one segment, in order.
	empty := append(slices.Clone(legal),
		history.Op{Index: last.Index + 1, Time: last.Time + 1, Process: 998, Type: history.Invoke, F: history.Send, Value: &history.Value{Topic: topic, Partition: 7, Value: "x"}},
		history.Op{Index: last.Index + 2, Time: last.Time + 2, Process: 998, Type: history.Fail, F: history.Send, Value: &history.Value{Topic: topic, Partition: 7, Value: "x"}, Error: "NOT_LEADER_FOR_PARTITION"})
	defer func(v bool) { searchAsBuilt = v }(searchAsBuilt)
	for name, ops := range map[string][]history.Op{"legal": legal, "stale": stale, "empty partition": empty} {
		judge := func(asBuilt bool) []Result {
			searchAsBuilt = asBuilt
			return Linearizability(NewHistory(ops, strict), Options{})
		}
		want, got := judge(false), judge(true)
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("%s: searched after the pairs:\n%+v\nsearched as built:\n%+v", name, want, got)
		}
		sends, reads := got[0], got[1]
		if sends.Valid != Valid || sends.Stats["porcupine-ok"] != 1 || sends.Stats["segments"] == 0 {
			t.Errorf("%s: nonlinearizable-send %s %v", name, sends.Valid, sends.Stats)
		}
		if wantReads := map[string]Validity{"legal": Valid, "stale": Invalid, "empty partition": Valid}[name]; reads.Valid != wantReads {
			t.Errorf("%s: stale-read %s, want %s: %v", name, reads.Valid, wantReads, reads.Details)
		}
	}
}

// TestTightenAtItsBound: tighten takes a partition of up to half its scale
// in operations, at the limit a chain of that many forced steps inside
// one instant (concurrent sends, each forced after the one below it),
// which lands each call one after the last, within the instant's rank; a
// partition of one more is refused, its times left as they were.
func TestTightenAtItsBound(t *testing.T) {
	defer func(s int64) { tightenScale = s }(tightenScale)
	tightenScale = 64
	chain := func(n int) []linOp {
		var ops []linOp
		for i := range n {
			// Listed from the highest offset: the forced order is not
			// the listed one.
			ops = append(ops, linOp{kind: linSend, call: 5, ret: 9, at: int64(n - 1 - i), commit: true})
		}
		return ops
	}
	ops := chain(31)
	if !tighten(ops, bothChecks, nil) {
		t.Fatalf("a chain of 31 not tightened at scale 64")
	}
	for i := range ops {
		// The offsets are n-1-i: the send at offset k is the k-th step.
		op := &ops[i]
		if op.call != op.at || op.ret != 3*tightenScale {
			t.Fatalf("the send at offset %d: [%d, %d], want [%d, %d]", op.at, op.call, op.ret, op.at, 3*tightenScale)
		}
	}
	if !linearizesInOrder(ops, slices.Collect(func(yield func(int32) bool) {
		for i := len(ops) - 1; i >= 0 && yield(int32(i)); i-- {
		}
	}), bothChecks, linState{}) {
		t.Fatalf("the tightened chain does not linearize in the order of its calls")
	}
	ops = chain(32)
	if tighten(ops, bothChecks, nil) || ops[0].call != 5 || ops[0].ret != 9 {
		t.Fatalf("a chain of 32 at scale 64 tightened, or its times changed: [%d, %d]", ops[0].call, ops[0].ret)
	}
}
