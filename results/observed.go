package results

import "github.com/chaos-isr/chaos/checker"

// What a run observed, before what its verdict says of it: a valid
// verdict is the same whether the faults lost a thousand permitted
// writes or never touched the cluster, and a campaign's matrix must tell
// those apart at a glance. Observe picks one class per run; a cell shows
// the first of its runs' classes in ObservedOrder.
const (
	// ObservedBroken: an anomaly the configuration forbids was found
	// (the verdict is invalid).
	ObservedBroken = "broken"
	// ObservedPermitted: anomalies the configuration permits appeared
	// (acknowledged writes lost under acks=1, say), none forbidden.
	ObservedPermitted = "permitted"
	// ObservedUnacked: under acks=0, no anomaly the configuration
	// forbids. Nothing is acknowledged there, so no promise can be kept
	// or broken by a loss: what was observed is the records consumers
	// read and then lost, and the duplicates (ExpectedInstances), however
	// many, with faults that bit or permitted anomalies. It is never
	// "kept": a green cell under acks=0 would read as safer than acks=1.
	ObservedUnacked = "unacked"
	// ObservedKept: no anomaly, under faults that bit: some window
	// killed brokers, moved a leader, shrank an ISR, failed sends or
	// stalled writing (WindowRecovery.Bit). A record without the windows' recovery
	// (written before it existed) counts a window that started as one
	// that bit.
	ObservedKept = "kept"
	// ObservedToothless: no anomaly, and windows started but none was
	// seen to bite.
	ObservedToothless = "toothless"
	// ObservedNoFaults: no anomaly, and no fault window started (none
	// was asked for, or every start failed).
	ObservedNoFaults = "no-faults"
	// ObservedNone: nothing was observed: the run has no verdict (an
	// error, an interrupt, not run yet).
	ObservedNone = "none"
)

// ObservedOrder ranks the classes for a cell of several runs: what
// matters most first, so that one broken run colours its cell red and a
// permitted loss is never hidden behind runs that saw none.
var ObservedOrder = []string{ObservedBroken, ObservedPermitted, ObservedUnacked, ObservedKept, ObservedToothless, ObservedNoFaults, ObservedNone}

// ObservedText says what each class means, in a few words, for the
// pages and the terminal.
var ObservedText = map[string]string{
	ObservedBroken:    "promise broken",
	ObservedPermitted: "permitted anomalies seen",
	ObservedUnacked:   "nothing acknowledged (acks=0): what was read, then lost",
	ObservedKept:      "promise kept under faults that bit",
	ObservedToothless: "faults never bit",
	ObservedNoFaults:  "no fault started",
	ObservedNone:      "nothing observed",
}

// Observe classifies a judged run by its results and its windows'
// recovery (nil for a record that predates it).
func Observe(res *checker.Results, rec []WindowRecovery) string {
	if res == nil {
		return ObservedNone
	}
	ran := 0
	for _, n := range res.FaultWindows {
		ran += n
	}
	bit := 0
	for _, w := range rec {
		if len(w.Bit) > 0 {
			bit++
		}
	}
	return ForAcks(res.Config.Acks, ObserveCounts(len(res.Unexpected) > 0, len(res.Expected) > 0, ran, bit, rec != nil))
}

// ForAcks is a class as acks has it: under acks=0, where nothing is
// acknowledged, what would be kept or permitted is unacked.
func ForAcks(acks int, class string) string {
	if acks == 0 && (class == ObservedKept || class == ObservedPermitted) {
		return ObservedUnacked
	}
	return class
}

// ObserveCounts is Observe from counts: whether forbidden and permitted
// anomalies were found, the windows that ran, and of them the windows
// that bit, known only when the recovery was recorded (bitKnown).
func ObserveCounts(forbidden, permitted bool, ran, bit int, bitKnown bool) string {
	switch {
	case forbidden:
		return ObservedBroken
	case permitted:
		return ObservedPermitted
	case ran == 0:
		return ObservedNoFaults
	case !bitKnown || bit > 0:
		return ObservedKept
	}
	return ObservedToothless
}

// ExpectedInstances counts the instances of each permitted anomaly the
// results found (of lost-write, the acknowledged writes lost, or under
// acks=0 the records read and then lost); nil when none was.
func ExpectedInstances(res *checker.Results) map[string]int {
	var out map[string]int
	for _, r := range res.Results {
		if r.Valid == checker.Invalid && r.Expected && r.Count > 0 {
			if out == nil {
				out = map[string]int{}
			}
			out[r.Name] = r.Count
		}
	}
	return out
}

// UnexpectedInstances counts the forbidden instances of each anomaly the
// results found forbidden; nil when none was.
func UnexpectedInstances(res *checker.Results) map[string]int {
	var out map[string]int
	for _, r := range res.Results {
		if r.Forbidden > 0 {
			if out == nil {
				out = map[string]int{}
			}
			out[r.Name] = r.Forbidden
		}
	}
	return out
}
