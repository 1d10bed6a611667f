package runner

import (
	"fmt"
	"io"
	"time"

	"github.com/chaos-isr/chaos/internal/cli"
	"github.com/chaos-isr/chaos/nemesis"
)

// DefaultNemesisInterval is chaos run's nemesis interval when its kinds
// fit it: a quiet period and a window of about 10 s each.
const DefaultNemesisInterval = 10 * time.Second

// A run names its fault kinds, and the verdict speaks of them: a schedule
// with no room for one of them would test less than it says. So when no
// interval is given one is chosen that has room for every kind, and one
// given that has not is refused, unless the user allows it
// (AllowPartialSchedule). Both go by nemesis.CoverTimeLimit, which holds
// whatever the seed: the seed, often drawn only when the run starts, does
// not decide whether the flags are accepted.

// ChooseNemesisInterval gives s, whose nemesis interval was not given,
// the longest interval up to DefaultNemesisInterval that has room for a
// window of each kind of its faults in its time limit (nemesis.FitInterval),
// marked as chosen when it is not the default. It reports false when even
// nemesis.MinChosenInterval has no room for every kind: s then has that
// interval, for a run that allows a partial schedule.
func (s *Spec) ChooseNemesisInterval() bool {
	if len(s.Faults) == 0 || len(s.Windows) > 0 {
		return true
	}
	iv, ok := nemesis.FitInterval(len(s.Faults), s.TimeLimit, DefaultNemesisInterval)
	s.NemesisInterval, s.NemesisIntervalChosen = iv, iv != DefaultNemesisInterval
	return ok
}

// ScheduleShort says whether s's nemesis interval leaves a kind of its
// faults without a window for some seed, though the schedule has room
// for one window (without room for any, Validate refuses the spec): the
// time limit a window of each kind needs at that interval, then.
func (s Spec) ScheduleShort() (need time.Duration, short bool) {
	if len(s.Faults) == 0 || len(s.Windows) > 0 || s.NemesisInterval <= 0 || s.TimeLimit < nemesis.MinTimeLimit(s.NemesisInterval) {
		return 0, false
	}
	need = nemesis.CoverTimeLimit(len(s.Faults), s.NemesisInterval)
	return need, s.TimeLimit < need
}

// FitSchedule is chaos run's and chaos sim's rule for the flags'
// schedule, in the flags' words: without --nemesis-interval
// (intervalGiven false) it chooses one (ChooseNemesisInterval); a given
// one, or a time limit too short for even the shortest chosen, that
// leaves a kind of --nemesis without a window is refused with the
// smallest --time-limit that has room for every kind, unless
// --allow-partial-schedule.
func FitSchedule(s *Spec, intervalGiven bool) error {
	if len(s.Faults) == 0 || len(s.Windows) > 0 {
		return nil
	}
	k := len(s.Faults)
	if !intervalGiven {
		if s.ChooseNemesisInterval() || s.AllowPartialSchedule {
			return nil
		}
		return cli.Error("time-limit", s.TimeLimit,
			fmt.Sprintf("too short for a window of each of the %s at the shortest nemesis interval chosen, %s", kindsOf(s.Faults), nemesis.MinChosenInterval),
			fmt.Sprintf("--time-limit %s or more has room for them; or name fewer kinds, give a shorter --nemesis-interval yourself, or add --allow-partial-schedule to run the kinds that fit",
				nemesis.CoverTimeLimit(k, nemesis.MinChosenInterval)))
	}
	need, short := s.ScheduleShort()
	if !short || s.AllowPartialSchedule {
		return nil
	}
	accepted := fmt.Sprintf("--time-limit %s or more has room for them at this interval", need)
	if iv, ok := nemesis.FitInterval(k, s.TimeLimit, s.NemesisInterval); ok {
		accepted += fmt.Sprintf(", and --nemesis-interval %s or less in %s (leave it out to have one chosen)", iv, s.TimeLimit)
	}
	return cli.Error("nemesis-interval", s.NemesisInterval,
		fmt.Sprintf("too long for a window of each of the %s in --time-limit %s, whatever the seed", kindsOf(s.Faults), s.TimeLimit),
		accepted+"; or add --allow-partial-schedule to run the kinds that fit")
}

// kindsOf names a fault list by its size, for the schedule's messages.
func kindsOf(faults []string) string {
	if len(faults) == 1 {
		return "1 kind of --nemesis"
	}
	return fmt.Sprintf("%d kinds of --nemesis", len(faults))
}

// IntervalNote says, for the run's header, the nemesis interval chosen
// for it and why; "" when it was given, or is the default.
func (s Spec) IntervalNote() string {
	if !s.NemesisIntervalChosen || len(s.Faults) == 0 || len(s.Windows) > 0 {
		return ""
	}
	if _, short := s.ScheduleShort(); short {
		// --allow-partial-schedule: CoverageNote says which kinds miss.
		return fmt.Sprintf("nemesis interval %s, the shortest chosen: %s has no room for a window of each of the %d kinds (--allow-partial-schedule)",
			s.NemesisInterval, s.TimeLimit, len(s.Faults))
	}
	if len(s.Faults) == 1 {
		return fmt.Sprintf("nemesis interval %s, chosen so that %s gets a window in %s (--nemesis-interval sets one)", s.NemesisInterval, s.Faults[0], s.TimeLimit)
	}
	return fmt.Sprintf("nemesis interval %s, chosen so that each of the %d kinds gets a window in %s (--nemesis-interval sets one)",
		s.NemesisInterval, len(s.Faults), s.TimeLimit)
}

// SayInterval prints the spec's IntervalNote, if any, in a run's header.
func SayInterval(out io.Writer, s Spec) {
	if n := s.IntervalNote(); n != "" {
		fmt.Fprintln(out, n)
	}
}
