package report

import (
	"cmp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/results"
)

// timeline is what the report's plots and tables read from a history,
// gathered in one pass over it. Times are nanoseconds since the test
// started, as in the history.
type timeline struct {
	ops  []history.Op
	ix   *history.Index // ops read once (pairs, fault windows)
	pair []int32        // position of each op's invoke or completion, -1
	// byIndex maps an op index to its position when indexes are not
	// simply positions (a foreign or damaged history); nil otherwise.
	byIndex map[int64]int

	end     int64 // the last op's time, at least one second
	finalAt int64 // the first final or replica read's invoke, -1

	faults []faultWindow
	// strayCmds are commands of nemesis operations that opened or closed
	// no window (a final heal with nothing open): what they did to the
	// cluster still has to be shown.
	strayCmds []faultCmd
	heals     []int64 // times of "heal" operations (every fault undone)

	clients []clientOp // completed client operations, in history order

	parts   []history.Key // partitions seen, sorted
	partIdx map[history.Key]int
	samples [][]sample // monitor samples per partition, in time order
	// sendOK holds the completion times of ok sends per partition;
	// sendSpan the first send invoke and last send completion.
	sendOK    [][]int64
	sendSpan  [][2]int64
	anySendOK bool
	// families are test.json's fault families, by kind, for the
	// bands' colours.
	families map[string]string
}

// clientOp is one completed client operation.
type clientOp struct {
	inv, done int32 // positions
	part      int   // index into timeline.parts, -1
}

// sample is one monitor observation of a partition.
type sample struct {
	t        int64
	pos      int32
	ok       bool // false: the monitor got no answer (err says why)
	leader   int32
	epoch    int32
	isr      int
	replicas int
	isrList  []int32
	hw       int64 // -1 if absent
	err      string
}

// faultWindow is one fault from its start to its end (or to a heal, or to
// the end of the history if it never stopped).
type faultWindow struct {
	Fault      string
	Targets    []string
	Start, End int64
	StartOp    int64 // op index, -1 for planned windows
	EndOp      int64 // op index, -1 if none closed it
	Open       bool  // no stop operation: it ran to a heal or to the end
	Planned    bool
	Error      string
	// Cmds are the commands the window's start and stop ran (external
	// runtime): the fault is only what they did.
	Cmds  []faultCmd
	sends [3]int // ok, info, fail sends completed inside the window
}

// faultCmd is a command a nemesis operation ran, with the operation: its
// function and index.
type faultCmd struct {
	F  string
	Op int64
	history.Command
}

const (
	kOK = iota
	kInfo
	kFail
)

func typeSlot(t history.Type) int {
	switch t {
	case history.OK:
		return kOK
	case history.Fail:
		return kFail
	}
	return kInfo
}

// newTimeline analyses ops. It never fails: a malformed history (a
// completion without an invoke, a torn tail) loses only what cannot be
// paired. sched is the planned schedule, used only when the history has
// no nemesis operations.
func newTimeline(ops []history.Op, sched results.Schedule) *timeline {
	tl := &timeline{ops: ops, finalAt: -1, partIdx: map[history.Key]int{}}
	for i := range ops {
		if ops[i].Index != int64(i) {
			tl.byIndex = make(map[int64]int, len(ops))
			for j := range ops {
				if _, dup := tl.byIndex[ops[j].Index]; !dup {
					tl.byIndex[ops[j].Index] = j
				}
			}
			break
		}
	}
	// Partitions first, so their indexes follow their sorted order.
	for i := range ops {
		if v := ops[i].Value; v != nil && v.Topic != "" {
			k := history.Key{Topic: v.Topic, Partition: v.Partition}
			if _, ok := tl.partIdx[k]; !ok {
				tl.partIdx[k] = -1
				tl.parts = append(tl.parts, k)
			}
		}
	}
	slices.SortFunc(tl.parts, func(a, b history.Key) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	for i, k := range tl.parts {
		tl.partIdx[k] = i
	}
	n := len(tl.parts)
	tl.samples = make([][]sample, n)
	tl.sendOK = make([][]int64, n)
	tl.sendSpan = make([][2]int64, n)
	for i := range tl.sendSpan {
		tl.sendSpan[i] = [2]int64{-1, -1}
	}

	ix := history.NewIndex(ops)
	tl.ix, tl.pair = ix, ix.Pair
	for i := range ops {
		op := &ops[i]
		tl.end = max(tl.end, op.Time)
		var inv int32 = -1
		if op.Type != history.Invoke {
			inv = ix.Pair[i]
		}
		part := tl.partOf(op, inv)
		switch {
		case op.Process == history.NemesisProcess:
			// Read below, as history's windows.
		case op.Process == history.MonitorProcess && op.F == history.Monitor:
			if op.Type != history.Invoke && part >= 0 {
				tl.samples[part] = append(tl.samples[part], monitorSample(op, int32(i)))
			}
		case op.Process >= 0:
			if op.Type == history.Invoke {
				if (op.F == history.FinalRead || op.F == history.ReplicaRead) && tl.finalAt < 0 {
					tl.finalAt = op.Time
				}
				if op.F == history.Send && part >= 0 {
					if s := &tl.sendSpan[part]; s[0] < 0 {
						s[0] = op.Time
					}
				}
				continue
			}
			if inv < 0 {
				continue
			}
			tl.clients = append(tl.clients, clientOp{inv: inv, done: int32(i), part: part})
			if op.F == history.Send && part >= 0 {
				tl.sendSpan[part][1] = op.Time
				if op.Type == history.OK {
					tl.sendOK[part] = append(tl.sendOK[part], op.Time)
					tl.anySendOK = true
				}
			}
		}
	}
	tl.readWindows(ix)
	tl.end = max(tl.end, int64(time.Second))
	// A heal closed every window open before it, so a window still open
	// lasted to the end of the history.
	for i := range tl.faults {
		if f := &tl.faults[i]; f.Open {
			f.End = tl.end
		}
	}
	if len(tl.faults) == 0 && len(sched) > 0 {
		for _, ev := range sched {
			tl.faults = append(tl.faults, faultWindow{Fault: ev.Fault, Start: int64(ev.Start), End: int64(ev.End), StartOp: -1, EndOp: -1, Planned: true})
			tl.end = max(tl.end, int64(ev.End))
		}
	}
	for _, ps := range tl.samples {
		slices.SortStableFunc(ps, func(a, b sample) int { return cmp.Compare(a.t, b.t) })
	}
	for _, ts := range tl.sendOK {
		slices.Sort(ts)
	}
	tl.countFaultSends()
	return tl
}

// partOf is the partition an op names, or its invoke names (a completion
// may leave the value out), or -1.
func (tl *timeline) partOf(op *history.Op, inv int32) int {
	v := op.Value
	if (v == nil || v.Topic == "") && inv >= 0 {
		v = tl.ops[inv].Value
	}
	if v == nil || v.Topic == "" {
		return -1
	}
	return tl.partIdx[history.Key{Topic: v.Topic, Partition: v.Partition}]
}

// readWindows draws history's fault windows: each from its start (the
// invoke, where the nemesis records one) to its stop or the heal that
// ended it. The completions of a window's operations add what they say
// (targets, an error, the commands they ran); a heal's go with the last
// window it ended. Commands of operations that belong to no window (a
// final heal with nothing open) are kept apart: what they did to the
// cluster still has to be shown.
func (tl *timeline) readWindows(ix *history.Index) {
	ops := tl.ops
	owner := map[int32]int{} // a completion's position -> its window
	for k, w := range ix.Windows {
		start := &ops[w.Start.At()]
		f := faultWindow{Fault: w.Fault, Start: start.Time, End: -1, StartOp: start.Index, EndOp: -1, Open: true}
		f.Targets = start.Value.FaultTargets()
		if e := w.Ended(); e.At() >= 0 {
			end := &ops[e.At()]
			f.End, f.EndOp, f.Open = end.Time, end.Index, false
		}
		tl.faults = append(tl.faults, f)
		for _, done := range []int32{w.Start.Done, w.Stop.Done, w.Heal.Done} {
			if done >= 0 {
				owner[done] = k
			}
		}
	}
	for _, h := range ix.Heals {
		tl.heals = append(tl.heals, ops[h.At()].Time)
	}
	for i := range ops {
		op := &ops[i]
		if op.Process != history.NemesisProcess || op.Type == history.Invoke {
			continue
		}
		var cmds []faultCmd
		if op.Value != nil && op.Value.FaultInfo != nil {
			for _, c := range op.Value.Commands {
				cmds = append(cmds, faultCmd{F: op.F, Op: op.Index, Command: c})
			}
		}
		k, ok := owner[int32(i)]
		if !ok {
			tl.strayCmds = append(tl.strayCmds, cmds...)
			continue
		}
		f, w := &tl.faults[k], &ix.Windows[k]
		if t := op.Value.FaultTargets(); w.Start.Done == int32(i) && len(t) > 0 {
			f.Targets = t
		}
		if op.Error != "" {
			f.Error = strings.TrimSpace(f.Error + " " + op.Error)
		}
		f.Cmds = append(f.Cmds, cmds...)
	}
}

func monitorSample(op *history.Op, pos int32) sample {
	s := sample{t: op.Time, pos: pos, leader: -1, epoch: -1, hw: -1, err: op.Error}
	v := op.Value
	if op.Type != history.OK || v == nil {
		if s.err == "" {
			s.err = "no answer (" + string(op.Type) + ")"
		}
		return s
	}
	s.ok = true
	if v.HW != nil {
		s.hw = *v.HW
	}
	m := v.Sample
	if m == nil {
		return s
	}
	if m.Leader != nil {
		s.leader = *m.Leader
	}
	if m.Epoch != nil {
		s.epoch = *m.Epoch
	}
	s.isr, s.replicas, s.isrList = len(m.ISR), len(m.Replicas), m.ISR
	return s
}

// countFaultSends counts the sends completed inside each fault window, so
// the faults table shows what each fault did to availability. Each window
// counts by binary search in the sorted completion times: a long run has
// thousands of windows and hundreds of thousands of sends.
func (tl *timeline) countFaultSends() {
	if len(tl.faults) == 0 {
		return
	}
	var done [3][]int64 // completion times by outcome slot
	for _, c := range tl.clients {
		if op := &tl.ops[c.done]; op.F == history.Send {
			done[typeSlot(op.Type)] = append(done[typeSlot(op.Type)], op.Time)
		}
	}
	for _, ts := range done {
		slices.Sort(ts)
	}
	for i := range tl.faults {
		f := &tl.faults[i]
		for k, ts := range done {
			from, _ := slices.BinarySearch(ts, f.Start)
			to := sort.Search(len(ts), func(j int) bool { return ts[j] > f.End })
			f.sends[k] = max(to-from, 0)
		}
	}
}

// pos is the position of the op with the given index, or -1.
func (tl *timeline) pos(index int64) int {
	if tl.byIndex != nil {
		if p, ok := tl.byIndex[index]; ok {
			return p
		}
		return -1
	}
	if index < 0 || index >= int64(len(tl.ops)) {
		return -1
	}
	return int(index)
}

// window is an interval of time.
type window struct{ start, end int64 }

// gaps returns the intervals of at least minGap within [from, to] that
// contain none of the sorted times ts: where nothing succeeded.
func gaps(ts []int64, from, to, minGap int64) []window {
	var out []window
	prev := from
	for _, t := range ts {
		if t < from {
			continue
		}
		if t > to {
			break
		}
		if t-prev >= minGap {
			out = append(out, window{prev, t})
		}
		prev = t
	}
	if to-prev >= minGap {
		out = append(out, window{prev, to})
	}
	return out
}

// mergeWindows joins windows less than a column of the time axis apart:
// drawn, they would touch anyway, and a flapping partition of a day-long
// run would otherwise draw thousands of rectangles. At most xBuckets
// windows remain.
func mergeWindows(ws []window, xs xScale) []window {
	gap := xs.t1 / xBuckets
	var out []window
	for _, w := range ws {
		if n := len(out); n > 0 && w.start-out[n-1].end < gap {
			out[n-1].end = max(out[n-1].end, w.end)
			continue
		}
		out = append(out, w)
	}
	return out
}

// gapThreshold is how long no acknowledgement must last to count as
// unavailability: ten times the typical gap between acknowledgements, at
// least a second, so a slow but steady workload is not called down.
func gapThreshold(ts []int64) int64 {
	if len(ts) < 3 {
		return int64(time.Second)
	}
	d := make([]int64, 0, len(ts)-1)
	for i := 1; i < len(ts); i++ {
		d = append(d, ts[i]-ts[i-1])
	}
	slices.Sort(d)
	return max(int64(time.Second), 10*d[len(d)/2])
}

// noLeader returns the intervals in which the monitor saw a partition
// without a leader, and those in which it got no answer at all.
func noLeader(ss []sample, end int64) (leaderless, blind []window) {
	var cur, curBlind *window
	for _, s := range ss {
		switch {
		case !s.ok:
			if cur != nil {
				cur.end = s.t
				leaderless, cur = append(leaderless, *cur), nil
			}
			if curBlind == nil {
				curBlind = &window{s.t, s.t}
			}
		case s.leader < 0:
			if curBlind != nil {
				curBlind.end = s.t
				blind, curBlind = append(blind, *curBlind), nil
			}
			if cur == nil {
				cur = &window{s.t, s.t}
			}
		default:
			if cur != nil {
				cur.end = s.t
				leaderless, cur = append(leaderless, *cur), nil
			}
			if curBlind != nil {
				curBlind.end = s.t
				blind, curBlind = append(blind, *curBlind), nil
			}
		}
	}
	// A state still holding at the last sample is known only until then.
	last := end
	if len(ss) > 0 {
		last = ss[len(ss)-1].t
	}
	if cur != nil {
		cur.end = last
		leaderless = append(leaderless, *cur)
	}
	if curBlind != nil {
		curBlind.end = last
		blind = append(blind, *curBlind)
	}
	return leaderless, blind
}
