package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/nemesis"
)

// TestFaultStatus: how the progress line names the open fault window.
func TestFaultStatus(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		w    nemesis.Window
		open bool
		want string
	}{
		{nemesis.Window{}, false, ""},
		{nemesis.Window{Fault: "partition-leader", Started: true, End: now.Add(3200 * time.Millisecond),
			Targets: []string{"broker-3", "|", "controller+broker-1+broker-2", "leader of partition 1"}}, true,
			"partition-leader broker-3, 4s left"},
		{nemesis.Window{Fault: "kill-majority", Started: true, End: now.Add(time.Second), Targets: []string{"broker-1", "broker-3"}}, true,
			"kill-majority broker-1 broker-3, 1s left"},
		{nemesis.Window{Fault: "latency", Started: true, End: now.Add(time.Second), Targets: []string{"all links", "50ms each way", "via netem"}}, true,
			"latency all links 50ms each way, 1s left"},
		{nemesis.Window{Fault: "slow-followers-kill-leader", End: now.Add(5 * time.Second)}, true,
			"starting slow-followers-kill-leader, 5s left"},
		{nemesis.Window{Fault: "kill-leader", Started: true, Err: "partition 0 has no leader", End: now.Add(5 * time.Second)}, true,
			"kill-leader (failed: partition 0 has no leader), 5s left"},
		{nemesis.Window{Fault: "kill", Started: true, Targets: []string{"broker-2"}, End: now.Add(-time.Second)}, true,
			"kill broker-2, healing"},
	} {
		if got := faultStatus(tc.w, tc.open, now); got != tc.want {
			t.Errorf("faultStatus(%+v) = %q, want %q", tc.w, got, tc.want)
		}
	}
}

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
