package hunt

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/nemesis"
	"github.com/chaos-isr/chaos/runner"
)

// Mutate is a scenario near parent: a new seed (another interleaving of
// the same scenario) and, more often than not, one part of it drawn
// afresh from seed: the cluster's settings, the workload, the whole
// schedule, or one window moved or replaced. Like Draw, the same
// arguments give the same spec.
func Mutate(parent runner.Spec, seed uint64, base runner.Spec, o DrawOptions) runner.Spec {
	fresh := Draw(seed, base, o)
	rng := rand.New(rand.NewPCG(seed, 0x6d757461))
	s := parent
	s.Seed = seed
	s.Windows = slices.Clone(parent.Windows)
	switch rng.IntN(6) {
	case 0: // the seed alone
	case 1:
		s.Nodes, s.Settings = fresh.Nodes, fresh.Settings
		s.Settings.Bugs = parent.Settings.Bugs
		if !o.Config {
			s.Settings.MinInsyncReplicas, s.Settings.Election = parent.Settings.MinInsyncReplicas, parent.Settings.Election
		}
	case 2:
		s.Concurrency, s.Consumers, s.Rate, s.RequestTimeout = fresh.Concurrency, fresh.Consumers, fresh.Rate, fresh.RequestTimeout
		s.Retries, s.Idempotent, s.MaxInFlight = fresh.Retries, fresh.Idempotent, fresh.MaxInFlight
	case 3:
		s.Windows, s.TimeLimit = fresh.Windows, fresh.TimeLimit
	case 4, 5:
		// One window: replaced by one of the fresh draw's at the same
		// place, or its times scaled, kept in order and in the limit.
		if len(s.Windows) == 0 {
			s.Windows, s.TimeLimit = fresh.Windows, fresh.TimeLimit
			break
		}
		w := rng.IntN(len(s.Windows))
		ev := s.Windows[w]
		if len(fresh.Windows) > 0 && rng.IntN(2) == 0 {
			ev.Fault = fresh.Windows[rng.IntN(len(fresh.Windows))].Fault
		}
		lo, hi := room(&s, w, ev.Fault)
		lo = max(lo, ev.Start/2)
		d := drawer{rng: rng}
		length := d.logUniform(windowMin, windowMax)
		start := lo + time_(rng, max(hi-lo-length, 0))
		ev.Start, ev.End = start, min(start+length, hi)
		if ev.End > ev.Start && ev.Start > 0 {
			s.Windows[w] = ev
		}
	}
	if !o.Config {
		s.Acks, s.Settings.MinInsyncReplicas, s.Settings.Election = base.Acks, base.Settings.MinInsyncReplicas, base.Settings.Election
	}
	if s.Acks != -1 {
		s.Idempotent = false // needs acks=-1 (Spec.Validate)
	}
	o.keepCluster(&s, base)
	fixOverlapLoss(&s)
	fixSettle(&s)
	fixLanes(&s)
	return s
}

// clashes says whether windows of faults a and b of s may not be open at
// once: the same lane, or one that runs alone (nemesis.CanOverlap), or
// any two in a run that loses unsynced writes (Spec.Validate refuses
// overlaps there).
func clashes(s *runner.Spec) func(a, b string) bool {
	lossy := s.Settings.LoseUnsynced || nemesis.DestroysData(s.Windows.Kinds())
	return func(a, b string) bool { return lossy || !nemesis.CanOverlap(a, b) }
}

// room is the time window w of s may take with fault: after the end of
// every window before it that it clashes with, before the start of every
// one after it, and before the schedule's tail.
func room(s *runner.Spec, w int, fault string) (lo, hi time.Duration) {
	hi = s.TimeLimit - tail
	clash := clashes(s)
	for j, ev := range s.Windows {
		switch {
		case j == w || !clash(ev.Fault, fault):
		case j < w:
			lo = max(lo, ev.End+1)
		default:
			hi = min(hi, ev.Start-1)
		}
	}
	return lo, hi
}

// fixLanes keeps a mutated schedule one the nemesis runs: in order of the
// windows' starts, a window that overlaps an earlier one it clashes with
// is dropped.
func fixLanes(s *runner.Spec) {
	slices.SortStableFunc(s.Windows, func(a, b nemesis.Event) int { return cmp.Compare(a.Start, b.Start) })
	clash := clashes(s)
	out := s.Windows[:0]
	for _, ev := range s.Windows {
		if !slices.ContainsFunc(out, func(k nemesis.Event) bool {
			return ev.Start < k.End && k.Start < ev.End && clash(k.Fault, ev.Fault)
		}) {
			out = append(out, ev)
		}
	}
	s.Windows = out
}

// fixSettle keeps every window of a mutated schedule long enough for its
// fault to take effect (nemesis.Settle at the spec's lag time): one too
// short grows into the room before the next window, or is dropped where
// there is none, since a window that closes before its fault did anything
// tests nothing.
func fixSettle(s *runner.Spec) {
	lag := time.Duration(s.Settings.ReplicaLagTimeMaxMs) * time.Millisecond
	out := s.Windows[:0]
	for i, ev := range s.Windows {
		need := nemesis.Settle(ev.Fault, lag)
		if need == 0 {
			out = append(out, ev)
			continue
		}
		_, hi := room(s, i, ev.Fault)
		if ev.Start+need+settleMargin <= hi {
			ev.End = max(ev.End, ev.Start+need+settleMargin)
			out = append(out, ev)
		}
	}
	s.Windows = out
}

// time_ is a duration uniform in [0, d].
func time_(rng *rand.Rand, d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return time.Duration(rng.Int64N(int64(d) + 1)).Round(time.Millisecond)
}

// fixOverlapLoss keeps a mutated schedule one the guarantee model judges:
// windows that lose unsynced writes or damage disks never come with
// overlapping ones (two kills at once would lose them on several nodes),
// so where both are, each composite keeps its first kind.
func fixOverlapLoss(s *runner.Spec) {
	lossy, composite := s.Settings.LoseUnsynced, false
	for _, ev := range s.Windows {
		f, ok := nemesis.Lookup(ev.Fault)
		lossy = lossy || (ok && (f.LosesUnsynced || f.Disk))
		composite = composite || len(history.FaultParts(ev.Fault)) > 1
	}
	if !lossy || !composite {
		return
	}
	for i, ev := range s.Windows {
		s.Windows[i].Fault = history.FaultParts(ev.Fault)[0]
	}
}
