package runner

import (
	"runtime/debug"
	"testing"
)

func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
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
