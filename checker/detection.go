package checker

import (
	"regexp"
	"slices"
	"strconv"

	"github.com/chaos-isr/chaos/history"
)

// Detection is where a history first shows an anomaly its configuration
// forbids (FirstDetection): how soon a planted bug, or a real one, was
// caught.
type Detection struct {
	// Anomaly is the forbidden anomaly whose instance names the
	// operation.
	Anomaly string `json:"anomaly"`
	// Op is the index (history.Op.Index) of the operation's completion.
	Op int64 `json:"op"`
	// Time is when it completed: the history's time, nanoseconds since
	// the test's workload started.
	Time int64 `json:"time"`
	// Ops counts the client operations (any process but the nemesis's
	// and the monitor's) completed up to it, itself included.
	Ops int64 `json:"ops"`
}

// FirstDetection is the first point of ops at which a forbidden instance
// of res shows: of the operations res names as part of forbidden
// instances (ForbiddenOps), the client operation whose completion comes
// first in the history (an invoke stands for its completion; one never
// completed, for itself), or a node's crash (history.Crash), which is the
// failure itself. Nemesis and monitor records are context, not the
// failure: the samples an ack-below-min-isr instance names, say, may
// precede the acknowledgement by seconds.
//
// It is when the failure first shows in the history (for a lost write,
// the acknowledgement of the write that is later gone), not when a
// checker could have known: a loss is evidenced only by the final reads.
// Results keep at most MaxExamples instances per anomaly, the first in
// each checker's order, so with more instances than that the point found
// can be later than the earliest forbidden instance, never earlier than
// one. ok is false when res has no forbidden instance whose operations
// it names and ops holds.
func FirstDetection(ops []history.Op, res *Results) (d Detection, ok bool) {
	want := map[int64]string{}
	for _, r := range res.Results {
		for _, i := range r.ForbiddenOps() {
			if _, dup := want[i]; !dup {
				want[i] = r.Name
			}
		}
	}
	if len(want) == 0 {
		return d, false
	}
	pairs, err := history.Pairs(ops)
	if err != nil {
		pairs = nil // a malformed history: each op stands for itself
	}
	best := -1
	for i, op := range ops {
		name, named := want[op.Index]
		if !named || (op.Process < 0 && op.Process != history.ClusterProcess) {
			continue
		}
		at := i
		if op.Type == history.Invoke && pairs != nil && pairs[i] >= 0 {
			at = pairs[i]
		}
		if best < 0 || at < best {
			best, d.Anomaly = at, name
		}
	}
	if best < 0 {
		return Detection{}, false
	}
	d.Op, d.Time = ops[best].Index, ops[best].Time
	for _, op := range ops[:best+1] {
		if op.Process >= 0 && op.Type != history.Invoke {
			d.Ops++
		}
	}
	return d, true
}

// opRef is how a result's details name an operation: "(op 12)" or
// "(op 12, ...)".
var opRef = regexp.MustCompile(`\(op (\d+)[,)]`)

// ForbiddenOps returns the op indexes the result names as part of its
// forbidden instances, sorted. When every instance found is forbidden,
// they are its Examples; when some are permitted, Examples mix the two,
// and the forbidden ones are those of the details that come first (one
// per forbidden instance, Details' order) that Examples hold too. At most
// MaxExamples instances are named (see Examples).
func (r Result) ForbiddenOps() []int64 {
	switch {
	case r.Forbidden == 0:
		return nil
	case r.Forbidden == r.Count:
		return slices.Clone(r.Examples)
	}
	var out []int64
	for _, d := range r.Details[:min(r.Forbidden, MaxExamples, len(r.Details))] {
		for _, m := range opRef.FindAllStringSubmatch(d, -1) {
			i, err := strconv.ParseInt(m[1], 10, 64)
			if err == nil && slices.Contains(r.Examples, i) && !slices.Contains(out, i) {
				out = append(out, i)
			}
		}
	}
	slices.Sort(out)
	return out
}
