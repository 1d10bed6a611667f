package nemesis

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chaos-isr/chaos/results"
)

// A schedule written out: one window per comma, FAULT@START+LENGTH, times
// as Go durations since the workload started, e.g.
// "kill@5s+4s,partition@12.5s+5s". It is how a schedule is given by hand
// (chaos sim --schedule) and how a shrunk run's replay command carries
// the windows that remain, so String and ParseSchedule are exact inverses:
// a window's times survive the round trip to the nanosecond.

// String is the schedule in the written form; "none" for no window.
func (s Schedule) String() string { return results.Schedule(s).String() }

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

// Lanes: a window of network faults may hold while process faults come
// and go beside it (Jepsen's combined nemesis runs its partitions and its
// kills side by side), which is how a replica is left with stale metadata
// while leadership moves away and back (KAFKA-6880's zombie). Each lane
// runs one window at a time and heals only what it did: the network lane
// heals the links, the process lane restarts and resumes nodes. A kind
// that does both (a composite of a network and a process kind,
// slow-followers-kill-leader) runs alone, as does one that loses unsynced
// writes (the guarantee model judges that loss per window).
const (
	LaneProcess = iota // kills, pauses, stops
	LaneNetwork        // cuts, delays and resets links, nothing else
	laneAlone          // both, or loses unsynced writes: overlaps nothing
)

// Lane is the lane fault's windows run in (LaneProcess for an unknown
// fault, which Check refuses anyway).
func Lane(fault string) int {
	f, ok := Lookup(fault)
	if !ok {
		return LaneProcess
	}
	parts := f.Parts
	if parts == nil {
		parts = []*Fault{f}
	}
	lane := kindLane(parts[0])
	for _, p := range parts[1:] {
		if kindLane(p) != lane {
			return laneAlone
		}
	}
	return lane
}

// kindLane is the lane of one kind (not a composite).
func kindLane(f *Fault) int {
	switch {
	case f.LosesUnsynced, f.Network && f.Kills(3) > 0:
		return laneAlone
	case f.Network:
		return LaneNetwork
	}
	return LaneProcess
}

// CanOverlap says whether windows of faults a and b may be open at once:
// they run in different lanes, neither alone.
func CanOverlap(a, b string) bool {
	la, lb := Lane(a), Lane(b)
	return la != lb && la != laneAlone && lb != laneAlone
}

// Overlaps says whether any two of s's windows are open at once.
func (s Schedule) Overlaps() bool {
	for i := 1; i < len(s); i++ {
		for j := range i {
			if s[i].Start < s[j].End && s[j].Start < s[i].End {
				return true
			}
		}
	}
	return false
}

// Lanes splits s into the schedules its lanes run, each in order and one
// window at a time: s itself when no two windows overlap (one lane, as a
// nemesis always ran), else the process lane's windows, then the network
// lane's.
func (s Schedule) Lanes() []Schedule {
	if !s.Overlaps() {
		return []Schedule{s}
	}
	var proc, net Schedule
	for _, ev := range s {
		if Lane(ev.Fault) == LaneNetwork {
			net = append(net, ev)
		} else {
			proc = append(proc, ev)
		}
	}
	return []Schedule{proc, net}
}

// Check refuses a schedule the nemesis cannot carry out: an unknown
// fault, a window that does not start after the workload does or has no
// length, windows out of order (by their starts), windows of one lane
// that overlap (a lane runs one at a time; a kind that runs alone
// overlaps nothing), or, when limit is above 0, a window that ends after
// the workload's time limit (it would never close on time, and a schedule
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
		case i > 0 && ev.Start < s[i-1].Start:
			errs = append(errs, fmt.Errorf("%s: starts before %s; windows are written in the order they start", ev, s[i-1]))
		case limit > 0 && ev.End > limit:
			errs = append(errs, fmt.Errorf("%s: ends after the time limit %s", ev, limit))
		}
		for _, prev := range s[:i] {
			if ev.Start >= prev.End || prev.Start >= ev.End || CanOverlap(prev.Fault, ev.Fault) {
				continue
			}
			if a := Lane(prev.Fault); a == Lane(ev.Fault) && a != laneAlone {
				errs = append(errs, fmt.Errorf("%s: starts before %s ends; windows of %s faults come one after another (a network window may overlap process ones)", ev, prev, laneName(a)))
			} else {
				errs = append(errs, fmt.Errorf("%s: overlaps %s, and %s runs alone (it both cuts links and kills or pauses, or loses unsynced writes)", ev, prev, aloneOf(prev, ev)))
			}
			break
		}
	}
	return errors.Join(errs...)
}

func aloneOf(a, b Event) string {
	if Lane(a.Fault) == laneAlone {
		return a.Fault
	}
	return b.Fault
}

func laneName(l int) string {
	if l == LaneNetwork {
		return "network"
	}
	return "process"
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
