package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/results"
)

// excerpt chooses the operations the history view shows. A short history
// is shown whole; a long one would make the page huge, so the view keeps
// what the rest of the report points at, in this order until
// maxHistoryRows: the anomalies' example operations with their pairs and
// a few neighbours, the nemesis operations, the final phase's reads, the
// acknowledgements of lost writes, and the first operations of the run.
// Links go only to operations the view has, so none dangles.
type excerpt struct {
	tl *timeline
	// in and marked are the positions shown and marked: sets, not a flag
	// for each op (a long run's history is millions of them).
	in     map[int]bool
	marked map[int]bool
	size   int // the ops in the history
	n      int
	all    bool
}

func newExcerpt(tl *timeline, res *checker.Results, lost []checker.LostAck) *excerpt {
	e := &excerpt{tl: tl, in: map[int]bool{}, marked: map[int]bool{}, size: tl.len()}
	if tl.len() <= maxHistoryRows {
		e.all = true
		for i := range e.size {
			e.in[i] = true
		}
		e.n = tl.len()
	}
	if res != nil {
		for _, r := range res.Results {
			for _, idx := range r.Examples {
				e.add(tl.pos(idx), 3, true)
			}
		}
		// The details name more ops than the examples keep.
		for _, r := range res.Results {
			for _, d := range r.Details {
				for _, m := range opRef.FindAllStringSubmatch(d, -1) {
					if idx, err := strconv.ParseInt(m[1], 10, 64); err == nil {
						e.add(tl.pos(idx), 1, false)
					}
				}
			}
		}
	}
	for _, l := range lost {
		if p := tl.pos(l.Op); p >= 0 {
			e.marked[p] = true
		}
	}
	for i := range tl.all() {
		if tl.op(i).process == history.NemesisProcess {
			e.add(i, 0, false)
		}
	}
	for i := range tl.all() {
		if f := tl.f(tl.op(i)); tl.op(i).process >= 0 && (f == history.FinalRead || f == history.ReplicaRead) {
			e.add(i, 0, false)
		}
	}
	for _, l := range lost {
		e.add(tl.pos(l.Op), 0, true)
	}
	for i := range min(tl.len(), 40) {
		e.add(i, 0, false)
	}
	return e
}

// add includes the op at pos, its invoke or completion and ctx ops on
// either side, if there is room.
func (e *excerpt) add(pos, ctx int, mark bool) {
	if pos < 0 || pos >= e.size {
		return
	}
	if mark {
		e.marked[pos] = true
	}
	take := func(p int) {
		if p >= 0 && p < e.size && !e.in[p] && e.n < maxHistoryRows {
			e.in[p] = true
			e.n++
		}
	}
	take(pos)
	take(int(e.tl.pair(pos)))
	for d := 1; d <= ctx; d++ {
		take(pos - d)
		take(pos + d)
	}
}

// positions are the positions of the ops the view shows.
func (e *excerpt) positions() []int32 {
	out := make([]int32, 0, e.n)
	for i := range e.in {
		out = append(out, int32(i))
	}
	slices.Sort(out)
	return out
}

// has reports whether the view shows the op with this index.
func (e *excerpt) has(index int64) bool {
	p := e.tl.pos(index)
	return p >= 0 && e.in[p]
}

// rows is the view, with a row saying how many ops are left out wherever
// some are.
func (e *excerpt) rows() ([]historyRow, string) {
	out := make([]historyRow, 0, e.n+e.n/4)
	next := 0 // the position after the last row's
	for _, p := range e.positions() {
		i := int(p)
		if gap := i - next; gap > 0 {
			out = append(out, historyRow{Gap: gap})
		}
		next = i + 1
		r := e.row(i, e.marked[i])
		// A foreign history may repeat an index; the first op with it
		// gets the id, which is where tl.pos sends links.
		if e.tl.pos(r.Index) == i {
			r.ID = "op-" + strconv.FormatInt(r.Index, 10)
		}
		out = append(out, r)
	}
	if gap := e.size - next; gap > 0 {
		out = append(out, historyRow{Gap: gap})
	}
	note := fmt.Sprintf("All %d operations.", e.size)
	if !e.all {
		note = fmt.Sprintf("An excerpt: %d of %d operations, the ones this report points at (anomalies with their neighbours, faults, final reads, lost writes) and the first ones. The whole history is in %s.", e.n, e.size, results.HistoryFile)
	}
	return out, note
}

// row renders the op at pos. It has no element id: only the history
// view's copy of an op has one, so ids stay unique.
func (e *excerpt) row(pos int, mark bool) historyRow {
	o := e.tl.op(pos)
	index := e.tl.index(pos)
	r := historyRow{Index: index, InView: e.has(index), Time: secs(e.tl.time(pos)), Type: string(o.Type()), F: e.tl.f(o),
		Error: clip(e.tl.errText(o), 200), Pair: -1, Mark: mark}
	switch o.process {
	case history.NemesisProcess:
		r.Process = "nemesis"
	case history.MonitorProcess:
		r.Process = "monitor"
	default:
		r.Process = "p" + strconv.Itoa(int(o.process))
	}
	if q := e.tl.pair(pos); q >= 0 {
		r.Pair = e.tl.index(int(q))
		r.PairLink = e.has(r.Pair)
	}
	op := e.tl.full(int32(pos))
	if op == nil {
		return r
	}
	if v := op.Value; v != nil {
		if v.Topic != "" {
			r.Part = fmt.Sprintf("%s-%d", v.Topic, v.Partition)
		}
		n := len(v.Records)
		if c, ok := e.tl.records[int32(pos)]; ok {
			n = c
		}
		r.Detail = clip(describeValue(op.F, v, n), 300)
	}
	return r
}

// shownRecords is how many records a row lists; a read of more is
// summarised by its count and first and last offsets.
const shownRecords = 4

// describeValue says what an op's value holds, briefly: a read of a whole
// partition is summarised, never listed. nrec is how many records it read:
// v holds only the first and the last of more than shownRecords.
func describeValue(f string, v *history.Value, nrec int) string {
	var parts []string
	if v.Value != "" {
		parts = append(parts, strconv.Quote(clip(v.Value, 80)))
	}
	if v.Offset != nil {
		parts = append(parts, fmt.Sprintf("offset %d", *v.Offset))
	}
	if v.From != nil {
		parts = append(parts, fmt.Sprintf("from %d", *v.From))
	}
	if v.Broker != nil {
		parts = append(parts, fmt.Sprintf("broker %d", *v.Broker))
	}
	if n := nrec; n > 0 {
		lo, hi := v.Records[0].Offset, v.Records[len(v.Records)-1].Offset
		s := fmt.Sprintf("%d records, offsets %d–%d", n, lo, hi)
		if n <= shownRecords {
			var rs []string
			for _, rec := range v.Records {
				rs = append(rs, fmt.Sprintf("%d=%q", rec.Offset, clip(rec.Value, 40)))
			}
			s = fmt.Sprintf("%d records: %s", n, strings.Join(rs, " "))
		}
		parts = append(parts, s)
	} else if f == history.Poll || f == history.FinalRead || f == history.ReplicaRead {
		if v.HW != nil {
			parts = append(parts, "no records")
		}
	}
	if m := v.Sample; m != nil {
		if m.Leader != nil {
			parts = append(parts, "leader "+leaderName(*m.Leader))
		}
		if m.Epoch != nil {
			parts = append(parts, fmt.Sprintf("epoch %d", *m.Epoch))
		}
		if m.ISR != nil {
			parts = append(parts, fmt.Sprintf("ISR %v", m.ISR))
		}
		if m.Replicas != nil {
			parts = append(parts, fmt.Sprintf("replicas %v", m.Replicas))
		}
	}
	if v.HW != nil {
		parts = append(parts, fmt.Sprintf("hw %d", *v.HW))
	}
	if f := v.FaultName(); f != "" {
		parts = append(parts, "fault "+f)
	}
	if t := v.FaultTargets(); len(t) > 0 {
		parts = append(parts, "on "+strings.Join(t, ", "))
	}
	return strings.Join(parts, ", ")
}
