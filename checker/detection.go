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
	r := NewDetector(res)
	if r == nil {
		return d, false
	}
	for i := range ops {
		r.Add(&ops[i])
	}
	return r.Detection()
}

// Detector is FirstDetection of a history read as it streams past: Add
// each operation, in order, then ask Detection.
type Detector struct {
	want    map[int64]string
	pairs   history.Pairer
	pos     int32
	clients int64 // client completions so far
	// malformed: the history broke the pairing rule somewhere, so each
	// op stands for itself (own), not for its completion (paired).
	malformed   bool
	own, paired candidate
	// open are named invokes not yet completed, by position.
	open map[int32]candidate
}

// candidate is a named op: where it is detected (at), its own position
// (order among candidates detected at one place), and what Detection
// reports of it.
type candidate struct {
	at, pos int32
	d       Detection
}

func (c candidate) before(o candidate) bool {
	return o.at < 0 || c.at < o.at || (c.at == o.at && c.pos < o.pos)
}

// NewDetector returns a Detector for res, or nil when res has no
// forbidden instance to look for.
func NewDetector(res *Results) *Detector {
	want := map[int64]string{}
	for _, r := range res.Results {
		for _, i := range r.ForbiddenOps() {
			if _, dup := want[i]; !dup {
				want[i] = r.Name
			}
		}
	}
	if len(want) == 0 {
		return nil
	}
	none := candidate{at: -1}
	return &Detector{want: want, own: none, paired: none, open: map[int32]candidate{}}
}

// Add reads the history's next operation.
func (r *Detector) Add(op *history.Op) {
	pos := r.pos
	r.pos++
	st := r.pairs.Add(op, pos)
	if st.Problem != "" {
		r.malformed = true
	}
	if op.Process >= 0 && op.Type != history.Invoke {
		r.clients++
	}
	here := Detection{Op: op.Index, Time: op.Time, Ops: r.clients}
	if st.Invoke >= 0 {
		if c, ok := r.open[st.Invoke]; ok {
			delete(r.open, st.Invoke)
			c.at, c.d.Op, c.d.Time, c.d.Ops = pos, here.Op, here.Time, here.Ops
			r.offer(&r.paired, c)
		}
	}
	name, named := r.want[op.Index]
	if !named || (op.Process < 0 && op.Process != history.ClusterProcess) {
		return
	}
	c := candidate{at: pos, pos: pos, d: here}
	c.d.Anomaly = name
	r.offer(&r.own, c)
	if op.Type == history.Invoke {
		r.open[pos] = c
		return
	}
	r.offer(&r.paired, c)
}

func (r *Detector) offer(best *candidate, c candidate) {
	if c.before(*best) {
		*best = c
	}
}

// Detection is the first detection point of the history read so far (see
// FirstDetection).
func (r *Detector) Detection() (Detection, bool) {
	best := r.paired
	if r.malformed {
		best = r.own
	} else {
		// An invoke never completed stands for itself.
		for _, c := range r.open {
			r.offer(&best, c)
		}
	}
	if best.at < 0 {
		return Detection{}, false
	}
	return best.d, true
}

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
