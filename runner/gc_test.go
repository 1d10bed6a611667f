package runner

import (
	"math"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

// gcPercent reads GOGC without setting it: the pacer may set it at any
// moment.
func gcPercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

// TestCollectTighter: a judge collects at 1.5x the live heap while it
// runs, judges that overlap keep it so until the last ends, and then the
// target is what it was; GOGC set by the user is left alone.
func TestCollectTighter(t *testing.T) {
	t.Setenv("GOGC", "")
	defer debug.SetGCPercent(debug.SetGCPercent(123))
	a := CollectTighter()
	b := CollectTighter()
	if p := gcPercent(); p != 50 {
		t.Fatalf("judging: GOGC %d, want 50", p)
	}
	a()
	if p := gcPercent(); p != 50 {
		t.Fatalf("one of two judges ended: GOGC %d, want 50", p)
	}
	b()
	if p := gcPercent(); p != 123 {
		t.Fatalf("after the judges: GOGC %d, want 123 as before", p)
	}
	t.Setenv("GOGC", "200")
	CollectTighter()()
	if p := gcPercent(); p != 123 {
		t.Fatalf("with GOGC set: GOGC %d, want it left at 123", p)
	}
}

// TestGOGCFor: a small live heap is let gather its cap's share of itself
// in garbage (half for a judge, all of it for a simulation), a judge's at
// least judgeGarbageFloor (at most four times itself), a large one about
// judgeGarbage (a simulation alone simGarbage), and a huge one a
// twentieth.
func TestGOGCFor(t *testing.T) {
	for _, tc := range []struct {
		live uint64
		cap  int
		want int
	}{
		{0, 50, 50}, {1 << 20, 50, 400}, {8 << 20, 50, 400}, {32 << 20, 50, 100}, {40 << 20, 50, 80}, {64 << 20, 50, 50}, {128 << 20, 50, 50}, {129 << 20, 50, 49},
		{256 << 20, 50, 25}, {640 << 20, 50, 10}, {1 << 30, 50, 6}, {8 << 30, 50, 5},
		{0, 100, 100}, {1 << 20, 100, 100}, {192 << 20, 100, 100}, {256 << 20, 100, 75}, {1 << 30, 100, 18}, {2 << 30, 100, 9}, {8 << 30, 100, 5},
	} {
		if got := gogcFor(tc.live, tc.cap); got != tc.want {
			t.Errorf("live %d MB, cap %d: GOGC %d, want %d", tc.live>>20, tc.cap, got, tc.want)
		}
	}
}

// TestCollectNested: a judge inside a simulation collects at the judge's
// target, and when it ends the simulation's holds again; when both have
// ended the target is what it was.
func TestCollectNested(t *testing.T) {
	t.Setenv("GOGC", "")
	defer debug.SetGCPercent(debug.SetGCPercent(123))
	sim := CollectForSimulation()
	if p := gcPercent(); p != 100 {
		t.Fatalf("simulating: GOGC %d, want 100", p)
	}
	judge := CollectTighter()
	waitGOGCFor(t, judgeGOGC)
	judge()
	judge() // twice is once
	waitGOGCFor(t, simGOGC)
	sim()
	if p := gcPercent(); p != 123 {
		t.Fatalf("after both: GOGC %d, want 123 as before", p)
	}
}

// waitGOGCFor waits for the pacer to set GOGC to what gogcFor gives the
// live heap under cap (a small heap's judge gathers judgeGarbageFloor,
// more than its cap's share).
func waitGOGCFor(t *testing.T, cap int) {
	t.Helper()
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	deadline := time.Now().Add(5 * time.Second)
	for {
		metrics.Read(live)
		want := gogcFor(live[0].Value.Uint64(), cap)
		if gcPercent() == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GOGC %d, want %d", gcPercent(), want)
		}
		time.Sleep(paceEvery / 5)
	}
}

// TestCollectEndsWhilePacing: ending the last judge while the pacer is
// mid-tick never hangs (a restore waits for the pacer under the lock, so
// the pacer must not take it).
func TestCollectEndsWhilePacing(t *testing.T) {
	t.Setenv("GOGC", "")
	defer debug.SetGCPercent(debug.SetGCPercent(123))
	defer func(d time.Duration) { paceEvery = d }(paceEvery)
	paceEvery = 20 * time.Microsecond
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 2000 {
			restore := CollectTighter()
			if i%2 == 0 {
				time.Sleep(time.Duration(i%7) * 10 * time.Microsecond)
			}
			restore()
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("a judge's end hung while the pacer ran")
	}
	if p := gcPercent(); p != 123 {
		t.Fatalf("after the judges: GOGC %d, want 123", p)
	}
}

// TestCollectLimitsMemory: while a judge runs, the pacer holds the memory
// limit a little above the collection target (so the memory a collection
// freed goes back to the OS), and when it ends the limit is what it was;
// a simulation alone keeps its limit; a GOMEMLIMIT set by the user is
// left alone.
func TestCollectLimitsMemory(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(5 << 30))
	restore := CollectTighter()
	deadline := time.Now().Add(5 * time.Second)
	for debug.SetMemoryLimit(-1) == 5<<30 {
		if time.Now().After(deadline) {
			restore()
			t.Fatal("the pacer never set a memory limit")
		}
		time.Sleep(paceEvery / 5)
	}
	got := debug.SetMemoryLimit(-1)
	restore()
	if got < limitSlack || got > 1<<30 {
		t.Fatalf("memory limit %d MB while judging this test's heap", got>>20)
	}
	if l := debug.SetMemoryLimit(-1); l != 5<<30 {
		t.Fatalf("after the judge: memory limit %d, want 5 GB as before", l)
	}
	// A simulation alone keeps the limit; a judge inside one sets it,
	// and when the judge ends the limit is the simulation's again.
	sim := CollectForSimulation()
	time.Sleep(4 * paceEvery)
	if l := debug.SetMemoryLimit(-1); l != 5<<30 {
		sim()
		t.Fatalf("simulating: memory limit %d, want it left at 5 GB", l)
	}
	judge := CollectTighter()
	for deadline := time.Now().Add(5 * time.Second); debug.SetMemoryLimit(-1) == 5<<30; time.Sleep(paceEvery / 5) {
		if time.Now().After(deadline) {
			judge()
			sim()
			t.Fatal("a judge inside a simulation set no memory limit")
		}
	}
	judge()
	for deadline := time.Now().Add(5 * time.Second); debug.SetMemoryLimit(-1) != 5<<30; time.Sleep(paceEvery / 5) {
		if time.Now().After(deadline) {
			sim()
			t.Fatalf("the judge inside a simulation ended: memory limit %d, want 5 GB again", debug.SetMemoryLimit(-1))
		}
	}
	sim()
	t.Setenv("GOMEMLIMIT", "5GiB")
	restore = CollectTighter()
	time.Sleep(4 * paceEvery)
	l := debug.SetMemoryLimit(-1)
	restore()
	if l != 5<<30 {
		t.Fatalf("with GOMEMLIMIT set: memory limit %d, want it left at 5 GB", l)
	}
}

// TestLimitFor: the limit is the collection target (the live heap and
// gogc percent of it) and limitSlack more, and never wraps.
func TestLimitFor(t *testing.T) {
	for _, tc := range []struct {
		live uint64
		gogc int
		want int64
	}{
		{0, 50, limitSlack}, {100 << 20, 50, 150<<20 + limitSlack}, {1 << 30, 10, 1<<30 + 1<<30/100*10 + limitSlack},
		{math.MaxUint64 / 2, 100, math.MaxInt64},
	} {
		if got := limitFor(tc.live, tc.gogc); got != tc.want {
			t.Errorf("live %d, gogc %d: limit %d, want %d", tc.live, tc.gogc, got, tc.want)
		}
	}
}
