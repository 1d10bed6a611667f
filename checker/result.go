package checker

import (
	"fmt"
	"slices"
)

// Validity is a checker's verdict. It is a string in JSON ("true",
// "false", "unknown") like Jepsen's :valid?, so reports and other tools read
// it without a schema.
type Validity string

// The three verdicts.
const (
	Valid   Validity = "true"
	Invalid Validity = "false"
	Unknown Validity = "unknown"
)

// ExitCode maps a verdict to the process exit code of DESIGN.md: 0 valid,
// 1 invalid, 2 unknown. Anything else is not a verdict and maps to 3, the
// first of the codes left for errors.
func ExitCode(v Validity) int {
	switch v {
	case Valid:
		return 0
	case Invalid:
		return 1
	case Unknown:
		return 2
	}
	return 3
}

// Anomaly names, as GUARANTEES.md spells them.
const (
	LostWriteName           = "lost-write"
	UnseenName              = "unseen"
	DuplicateName           = "duplicate"
	InconsistentOffsetsName = "inconsistent-offsets"
	NonmonotonicSendName    = "nonmonotonic-send"
	PollSkipName            = "poll-skip"
	NonmonotonicPollName    = "nonmonotonic-poll"
	AbortedReadName         = "aborted-read"
	GarbageReadName         = "garbage-read"
	ReplicaDivergenceName   = "replica-divergence"
	NonlinearizableSendName = "nonlinearizable-send"
	StaleReadName           = "stale-read"
)

// Names lists every anomaly in the fixed order Results reports them:
// loss first (what users care about most), then offset and order
// anomalies, then the invariants, then linearizability.
func Names() []string {
	return []string{
		LostWriteName, UnseenName, DuplicateName, InconsistentOffsetsName,
		NonmonotonicSendName, PollSkipName, NonmonotonicPollName,
		AbortedReadName, GarbageReadName, ReplicaDivergenceName,
		NonlinearizableSendName, StaleReadName,
	}
}

// Result is what one checker found.
type Result struct {
	Name  string   `json:"name"`
	Valid Validity `json:"valid"`
	// Count is how many instances of the anomaly were found (values,
	// offsets or operation pairs, as the checker's doc says).
	Count int `json:"count"`
	// Examples are op indexes (history.Op.Index) of a few instances,
	// sorted, at most MaxExamples of the first instances found.
	Examples []int64 `json:"examples,omitempty"`
	// Details describe the first few instances for a human, and say why a
	// checker is unknown.
	Details []string `json:"details,omitempty"`
	// Expected is set by the guarantee model: the configuration permits
	// this anomaly, so finding it does not make the run invalid. Why says
	// why it is permitted or promised absent.
	Expected bool   `json:"expected"`
	Why      string `json:"why,omitempty"`
	// Stats are checker-specific counts (what was judged, what could not
	// be).
	Stats map[string]int64 `json:"stats,omitempty"`
	// Artifacts are files the checker wrote, e.g. porcupine's
	// visualization of a history that is not linearizable.
	Artifacts []string `json:"artifacts,omitempty"`
}

// Found reports whether the checker found at least one instance.
func (r Result) Found() bool { return r.Valid == Invalid }

// MaxExamples bounds Result.Examples and Result.Details: a report needs a
// few concrete instances, not a million.
const MaxExamples = 10

// finding accumulates a result's instances. Instances are added in history
// order, so the examples kept are the first ones, which is where a human
// starts reading.
type finding struct {
	name     string
	count    int
	examples []int64
	details  []string
	stats    map[string]int64
}

func newFinding(name string) *finding { return &finding{name: name} }

// add records one instance with the op indexes that show it.
func (f *finding) add(detail string, ops ...int64) { f.addN(1, detail, ops...) }

// addN records n instances described by one detail.
func (f *finding) addN(n int, detail string, ops ...int64) {
	f.count += n
	if len(f.details) >= MaxExamples {
		return
	}
	f.details = append(f.details, detail)
	for _, o := range ops {
		if !slices.Contains(f.examples, o) {
			f.examples = append(f.examples, o)
		}
	}
}

// note adds a detail that is not an instance (why a checker is unknown).
func (f *finding) note(format string, args ...any) {
	if len(f.details) < 2*MaxExamples {
		f.details = append(f.details, fmt.Sprintf(format, args...))
	}
}

func (f *finding) stat(name string, v int64) {
	if f.stats == nil {
		f.stats = map[string]int64{}
	}
	f.stats[name] += v
}

// result turns the finding into a Result: invalid if any instance was
// found, else unknown if the checker could not judge everything, else
// valid.
func (f *finding) result(unknown bool) Result {
	r := Result{Name: f.name, Count: f.count, Details: f.details, Stats: f.stats}
	switch {
	case f.count > 0:
		r.Valid = Invalid
	case unknown:
		r.Valid = Unknown
	default:
		r.Valid = Valid
	}
	r.Examples = append([]int64(nil), f.examples...)
	slices.Sort(r.Examples)
	if len(r.Examples) > MaxExamples {
		r.Examples = r.Examples[:MaxExamples]
	}
	return r
}

// OpCounts counts the completions of one function. Open counts invokes the
// history ended before completing: like info, their outcome is unknown.
type OpCounts struct {
	Invoke int64 `json:"invoke"`
	OK     int64 `json:"ok"`
	Fail   int64 `json:"fail"`
	Info   int64 `json:"info"`
	Open   int64 `json:"open"`
}

// Results is the verdict on a whole history.
type Results struct {
	// Valid is invalid iff some anomaly the configuration does not permit
	// was found; else unknown iff some checker of a non-permitted anomaly
	// could not judge; else valid. Permitted anomalies never change it.
	Valid      Validity `json:"valid"`
	Config     Config   `json:"config"`
	FaultClass string   `json:"fault_class"`
	// Ops counts operations by function (send, poll, ..., nemesis
	// functions).
	Ops map[string]OpCounts `json:"ops"`
	// Results holds one Result per anomaly, in the order of Names.
	Results []Result `json:"results"`
	// Unexpected and Expected name the anomalies found that the
	// configuration does not, respectively does, permit.
	Unexpected []string `json:"unexpected,omitempty"`
	Expected   []string `json:"expected,omitempty"`
	// Problems are malformations of the history itself (a completion
	// without an invoke, ...), which the checkers worked around.
	Problems []string `json:"problems,omitempty"`
}

// ExitCode is the process exit code for the verdict.
func (r Results) ExitCode() int { return ExitCode(r.Valid) }

// Get returns the result of the named anomaly.
func (r Results) Get(name string) (Result, bool) {
	for _, x := range r.Results {
		if x.Name == name {
			return x, true
		}
	}
	return Result{}, false
}

// verdict combines results whose Expected flags are set.
func verdict(rs []Result) Validity {
	v := Valid
	for _, r := range rs {
		if r.Expected {
			continue
		}
		switch r.Valid {
		case Invalid:
			return Invalid
		case Unknown:
			v = Unknown
		}
	}
	return v
}
