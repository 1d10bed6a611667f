package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/nemesis"
)

// TestProgressShowsFaults: a run's progress lines (every 5 s when not on a
// terminal) name the fault window open at the time.
func TestProgressShowsFaults(t *testing.T) {
	const limit, interval = 16 * time.Second, 6 * time.Second
	// A seed whose schedule has a window open, with a second's margin, at
	// one of the 5 s marks.
	seed := uint64(0)
	for s := uint64(1); s < 100 && seed == 0; s++ {
		for _, ev := range nemesis.NewSchedule([]string{"pause"}, interval, limit, s) {
			for mark := 5 * time.Second; mark < limit; mark += 5 * time.Second {
				if ev.Start+time.Second < mark && mark+time.Second < ev.End {
					seed = s
				}
			}
		}
	}
	out, code := runChaos(t, "run", "--store", t.TempDir(), "--time-limit", limit.String(), "--nemesis", "pause",
		"--nemesis-interval", interval.String(), "--seed", strconv.FormatUint(seed, 10))
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "[") && strings.Contains(l, "ops/s") && strings.Contains(l, "| pause broker-") && strings.Contains(l, "s left") {
			return
		}
	}
	t.Fatalf("no progress line names the pause (seed %d):\n%s", seed, out)
}
