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

// TestJudgeGOGCFor: a small live heap is let gather half of itself in
// garbage, a large one about judgeGarbage, and a huge one a tenth.
func TestJudgeGOGCFor(t *testing.T) {
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, 50}, {1 << 20, 50}, {384 << 20, 50}, {385 << 20, 49},
		{1 << 30, 18}, {1920 << 20, 10}, {8 << 30, 10},
	} {
		if got := judgeGOGCFor(tc.live); got != tc.want {
			t.Errorf("live %d MB: GOGC %d, want %d", tc.live>>20, got, tc.want)
		}
	}
}
