package runner

import (
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
// in garbage (half for a judge, all of it for a simulation), a large one
// about heldGarbage, and a huge one a tenth.
func TestGOGCFor(t *testing.T) {
	for _, tc := range []struct {
		live uint64
		cap  int
		want int
	}{
		{0, 50, 50}, {1 << 20, 50, 50}, {384 << 20, 50, 50}, {385 << 20, 50, 49},
		{1 << 30, 50, 18}, {1920 << 20, 50, 10}, {8 << 30, 50, 10},
		{0, 100, 100}, {192 << 20, 100, 100}, {256 << 20, 100, 75}, {1 << 30, 100, 18},
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
	waitGOGC(t, 50)
	judge()
	judge() // twice is once
	waitGOGC(t, 100)
	sim()
	if p := gcPercent(); p != 123 {
		t.Fatalf("after both: GOGC %d, want 123 as before", p)
	}
}

// waitGOGC waits for the pacer to set GOGC to want (it looks every
// paceEvery).
func waitGOGC(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for gcPercent() != want {
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
