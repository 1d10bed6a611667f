package nemesis

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestScheduleText: the written form reads back to the same windows, to
// the nanosecond (a seeded schedule's times are not round), and what the
// nemesis cannot carry out is refused with the window named.
func TestScheduleText(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		s := NewSchedule([]string{"kill", "partition", "pause"}, 7*time.Second, 90*time.Second, seed)
		back, err := ParseSchedule(s.String())
		if err != nil || !reflect.DeepEqual(back, s) {
			t.Fatalf("seed %d: %s read back as %v (%v)", seed, s, back, err)
		}
	}
	s, err := ParseSchedule(" kill@5s+4s, partition@12.5s+500ms ")
	want := Schedule{{Fault: "kill", Start: 5 * time.Second, End: 9 * time.Second},
		{Fault: "partition", Start: 12500 * time.Millisecond, End: 13 * time.Second}}
	if err != nil || !reflect.DeepEqual(s, want) || s.String() != "kill@5s+4s,partition@12.5s+500ms" {
		t.Fatalf("got %v (%v), %q", s, err, s.String())
	}
	if got := s.Kinds(); !reflect.DeepEqual(got, []string{"kill", "partition"}) {
		t.Errorf("kinds %v", got)
	}
	if err := s.Check(12 * time.Second); err == nil || !strings.Contains(err.Error(), "partition@12.5s+500ms: ends after the time limit 12s") {
		t.Errorf("past the time limit: %v", err)
	}
	for _, none := range []string{"", "none"} {
		if s, err := ParseSchedule(none); s != nil || err != nil {
			t.Errorf("%q: %v %v", none, s, err)
		}
	}
	for text, why := range map[string]string{
		"kill":                     "not FAULT@START+LENGTH",
		"kill@5s":                  "not FAULT@START+LENGTH",
		"kill@5+4s":                "durations",
		"nap@5s+4s":                `"nap" is not a fault`,
		"kill@0s+4s":               "START above 0",
		"kill@5s+0s":               "LENGTH above 0",
		"kill@5s+4s,pause@8s+1s":   "pause@8s+1s: starts before kill@5s+4s ends",
		"kill@10s+1s,pause@5s+1s":  "starts before",
		"kill@5s+-1s":              "LENGTH above 0",
		"kill@5s+4s,,pause@20s+1s": "not FAULT@START+LENGTH",
	} {
		if _, err := ParseSchedule(text); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%q: %v; want %q", text, err, why)
		}
	}
}

// TestSettle: a fault in two steps needs its window to outlast the wait
// between them, a composite leaves a later part less of the window, and a
// fault in one step takes effect at once.
func TestSettle(t *testing.T) {
	lag := 2 * time.Second
	if got := Settle("slow-followers-kill-leader", lag); got != 5*time.Second {
		t.Errorf("slow-followers-kill-leader at lag %s settles in %s, want 5s (the ISR shrinks after about 2.5 lag times)", lag, got)
	}
	if got := Settle("slow-followers-kill-leader", 0); got != 2500*time.Millisecond {
		t.Errorf("at lag 0: %s, want 2.5s (delays are at least 1s)", got)
	}
	// Second of two parts: starts a third of the way in, so the window
	// needs 3/2 of the part's time.
	if got := Settle("kill+slow-followers-kill-leader", lag); got != 7500*time.Millisecond {
		t.Errorf("as the second part of two: %s, want 7.5s", got)
	}
	for _, k := range []string{"kill", "partition-leader", "pause", "no-such-fault"} {
		if got := Settle(k, lag); got != 0 {
			t.Errorf("%s settles in %s, want 0", k, got)
		}
	}
}
