package nemesis

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// A schedule written out: one window per comma, FAULT@START+LENGTH, times
// as Go durations since the workload started, e.g.
// "kill@5s+4s,partition@12.5s+5s". It is how a schedule is given by hand
// (chaos sim --schedule) and how a shrunk run's replay command carries
// the windows that remain, so String and ParseSchedule are exact inverses:
// a window's times survive the round trip to the nanosecond.

// String is the schedule in the written form; "none" for no window.
func (s Schedule) String() string {
	if len(s) == 0 {
		return "none"
	}
	parts := make([]string, len(s))
	for i, ev := range s {
		parts[i] = ev.String()
	}
	return strings.Join(parts, ",")
}

// String is one window in the written form, FAULT@START+LENGTH.
func (e Event) String() string { return fmt.Sprintf("%s@%s+%s", e.Fault, e.Start, e.End-e.Start) }

// ParseSchedule reads a schedule in the written form ("none" or "": no
// window) and checks it as Check does, but for the time limit, which the
// caller knows.
func ParseSchedule(text string) (Schedule, error) {
	text = strings.TrimSpace(text)
	if text == "" || text == "none" {
		return nil, nil
	}
	var s Schedule
	for _, part := range strings.Split(text, ",") {
		part = strings.TrimSpace(part)
		fault, times, ok1 := strings.Cut(part, "@")
		start, length, ok2 := strings.Cut(times, "+")
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("%q is not FAULT@START+LENGTH, e.g. kill@5s+4s", part)
		}
		st, err1 := time.ParseDuration(start)
		ln, err2 := time.ParseDuration(length)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%q: START and LENGTH are durations such as 5s or 1.5s", part)
		}
		s = append(s, Event{Fault: fault, Start: st, End: st + ln})
	}
	return s, s.Check(0)
}

// Check refuses a schedule the nemesis cannot carry out: an unknown
// fault, a window that does not start after the workload does or has no
// length, windows out of order or overlapping (the nemesis runs one at a
// time), or, when limit is above 0, a window that ends after the
// workload's time limit (it would never close on time, and a schedule
// of windows that never open claims faults that never ran).
func (s Schedule) Check(limit time.Duration) error {
	var errs []error
	for i, ev := range s {
		if err := CheckTrigger(ev.Fault); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", ev, err))
		} else if _, ok := Lookup(ev.Fault); !ok {
			errs = append(errs, fmt.Errorf("%s: %q is not a fault; known: %s", ev, ev.Fault, strings.Join(Names(), ", ")))
		}
		switch {
		case ev.Start <= 0:
			errs = append(errs, fmt.Errorf("%s: a window starts after the workload does (START above 0)", ev))
		case ev.End <= ev.Start:
			errs = append(errs, fmt.Errorf("%s: a window needs a LENGTH above 0", ev))
		case i > 0 && ev.Start < s[i-1].End:
			errs = append(errs, fmt.Errorf("%s: starts before %s ends; windows come one after another, in order", ev, s[i-1]))
		case limit > 0 && ev.End > limit:
			errs = append(errs, fmt.Errorf("%s: ends after the time limit %s", ev, limit))
		}
	}
	return errors.Join(errs...)
}

// Kinds are the schedule's fault kinds, each once, in the order they
// first open: the faults a run of the schedule asks for.
func (s Schedule) Kinds() []string {
	var out []string
	for _, ev := range s {
		if !slices.Contains(out, ev.Fault) {
			out = append(out, ev.Fault)
		}
	}
	return out
}
