package gcpace

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestFor(t *testing.T) {
	const mb = 1 << 20
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, 400},
		{10 * mb, 400},        // small: the cap
		{64 * mb, 200},        // 128 MB of garbage is 200%
		{512 * mb, 25},        // large: about the garbage asked for
		{100 * 1024 * mb, 10}, // huge: the floor
	} {
		if got := For(tc.live, 400, 10, 128*mb); got != tc.want {
			t.Errorf("For(%d MB) = %d, want %d", tc.live/mb, got, tc.want)
		}
	}
}

// TestHoldFollowsTheLiveHeap: with a large live heap the pacer lowers
// GOGC so that the garbage stays near what was asked, and stop sets it
// back.
func TestHoldFollowsTheLiveHeap(t *testing.T) {
	t.Setenv("GOGC", "")
	defer func(d time.Duration) { every = d }(every)
	every = time.Millisecond
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	held := make([]byte, 256<<20) // pointer-free, as an index is
	for i := range held {
		held[i] = byte(i)
	}
	stop := Hold(400, 10, 32<<20)
	var got int
	for range 2000 {
		runtime.GC() // the live heap metric is the last collection's
		time.Sleep(time.Millisecond)
		if got = debug.SetGCPercent(-1); got >= 0 {
			debug.SetGCPercent(got)
		}
		if got < 400 {
			break
		}
	}
	if got < 10 || got > 20 {
		t.Errorf("with 256 MB live and 32 MB of garbage asked for, GOGC %d (want about 12)", got)
	}
	stop()
	if p := debug.SetGCPercent(100); p != 400 {
		t.Errorf("after stop, GOGC %d, want 400 back", p)
	}
	runtime.KeepAlive(held)
}
