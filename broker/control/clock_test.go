package control

import "testing"

// TestForwardClock: readings that go back move nothing, and the time runs
// on from there; readings that go forward move it by as much.
func TestForwardClock(t *testing.T) {
	var c ForwardClock
	for _, step := range []struct{ reading, want int64 }{
		{1000, 1000}, {1500, 1500}, {900, 1500}, {1000, 1600}, {61000, 61600}, {2000, 61600}, {2100, 61700},
	} {
		if got := c.Read(step.reading); got != step.want {
			t.Fatalf("reading %d: %d, want %d", step.reading, got, step.want)
		}
	}
}
