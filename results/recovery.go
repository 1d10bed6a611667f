package results

import (
	"cmp"
	"errors"
	"fmt"
	"iter"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/internal/blocks"
	"github.com/chaos-isr/chaos/internal/intern"
	"github.com/chaos-isr/chaos/internal/offheap"
)

// WindowRecovery is what one fault window did and how the cluster came
// back from it, read from the history alone (the nemesis's start-FAULT
// and stop-FAULT operations, the sends, the monitor's samples), so that
// it can be computed again from any stored history. results.json keeps
// one per window (StoredResults.Recovery).
type WindowRecovery struct {
	Fault string `json:"fault"`
	// Start and Stop are when the window's start-FAULT and stop-FAULT
	// completed, since the test started: the fault in effect, and healed.
	// Stop is absent when the history ends inside the window.
	Start Duration  `json:"start"`
	Stop  *Duration `json:"stop,omitempty"`
	// Bit lists what showed that the fault reached the system (BitKill,
	// BitLeaderChange, BitISRShrink, BitSendErrors, BitStall); empty,
	// nothing seen did.
	Bit []string `json:"bit,omitempty"`
	// FirstAck is the time from the start to the first acknowledgement
	// of a send invoked at or after the start: how long writing was
	// unavailable. FullISR is the time from the stop until the monitor
	// saw every partition's ISR hold all its replicas again. Either is
	// absent when it was not observed, and its *Unobserved field says
	// why (the run ended, the next window began first, no samples).
	FirstAck           *Duration `json:"first_ack,omitempty"`
	FirstAckUnobserved string    `json:"first_ack_unobserved,omitempty"`
	FullISR            *Duration `json:"full_isr,omitempty"`
	FullISRUnobserved  string    `json:"full_isr_unobserved,omitempty"`
}

// The signs that a window's fault bit.
const (
	// BitKill: its start killed brokers (kill -9).
	BitKill = "kill"
	// BitLeaderChange: a partition's leader or leader epoch changed, or
	// it lost its leader, in the samples taken while the window was open.
	BitLeaderChange = "leader-change"
	// BitISRShrink: a partition's ISR lost a member it had before the
	// window.
	BitISRShrink = "isr-shrink"
	// BitSendErrors: a send failed or timed out while the window was
	// open (not counted in a history without acknowledged sends, where
	// every send ends unknown: acks=0).
	BitSendErrors = "send-errors"
	// BitStall: writing stalled: the first acknowledgement of a send
	// invoked after the start came StallAfter or more after it (a paused
	// leader fails nothing, it only makes its producers wait).
	BitStall = "stall"
)

// StallAfter is how long writing must wait under a fault to count as a
// stall: far above an acknowledgement's round trip on a healthy cluster
// (milliseconds), and above the monitor's default sampling interval, so
// that a stall is a wait a person would notice in the report's plots.
const StallAfter = 500 * time.Millisecond

// StoredResults is results.json as a run writes it: the checker's
// results, with their fields at the top level as before, and what the
// store adds from the same history: the recovery of each fault window.
// ReadResults reads the checker's part of it.
type StoredResults struct {
	*checker.Results
	// Recovery has one entry per fault window, in the order they
	// started; absent in a run without windows, and in results.json
	// files written before it existed.
	Recovery []WindowRecovery `json:"recovery,omitempty"`
}

// ReadStoredResults reads a run's results.json whole: the checker's
// results and the recovery (nil in a file written before it existed),
// for a reader that wants both from one read.
func ReadStoredResults(path string) (StoredResults, error) {
	s, err := readJSON[StoredResults](path)
	if err == nil && s.Results == nil {
		s.Results = &checker.Results{}
	}
	return s, err
}

// Recoveries computes each fault window's recovery from a history. The
// ops are taken in index order, as a history holds them.
//
// The windows are history's (history.Window), those whose start
// completed without an error, from that completion to their stop's. The
// samples that tell whether
// it bit are, per partition, those that completed after the start, up to
// and including the first that completed after the stop: a sample's view
// is read between its partition's previous completion and its own, so
// that first one may still show the window. What a window is compared
// with is the last sample of the partition before the start.
func Recoveries(ops []history.Op) []WindowRecovery {
	var r RecoveryReader
	for i := range ops {
		r.Add(&ops[i])
	}
	return RecoveriesOps(ops, &r)
}

// RecoveriesOps is r's table of ops, the history it was fed, read again
// where r needs it (Again).
func RecoveriesOps(ops []history.Op, r *RecoveryReader) []WindowRecovery {
	again := r.Again()
	if again == nil {
		return r.Recoveries()
	}
	for i := range ops {
		again.Add(&ops[i])
	}
	return again.Recoveries()
}

// RecoveryReader computes Recoveries as a history streams past, keeping
// only what the table needs: the nemesis's operations, the monitor's
// samples, and of the sends only, for each place a window may start
// (a nemesis completion), the first acknowledgement and the first send
// error that count for it. A history whose times run with its ops (every
// history chaos writes) is read once; another may leave a window's start
// behind a send that counts for it, and must then be read again (Again).
type RecoveryReader struct {
	pairs   history.Pairer
	windows history.Windows
	n       int32
	// nemesis are the nemesis's operations by position; invoked the times
	// of the sends invoked and not yet completed.
	nemesis map[int32]*history.Op
	invoked map[int32]int64
	anyAck  bool
	// samples are the monitor's, by partition (parts, in the order first
	// seen), in arena's file if it has one (In); lists holds their ISRs
	// and replicas, each list once.
	samples []blocks.List[sample]
	arena   *offheap.Arena
	parts   []string
	partIdx map[history.Key]int
	lists   intern.Lists
	// bounds are the times of the nemesis's completions, sorted, each
	// once: where a window may start. firstAck[j] is the first
	// completion of the acknowledged sends invoked from bounds[j] up to
	// the next bound (-1: none), firstErr[j] the first send error
	// from it to the next (noErr: none); a window's first after its
	// start is then the least of those at and after it. maxInv and
	// maxErr are the latest invoke acknowledged and send error seen, so
	// that a bound come after a send it counts for is known (again);
	// tieDone is the first completion of the sends invoked at maxInv.
	bounds                  []int64
	firstAck                []int64
	firstErr                []int64
	maxInv, maxErr, tieDone int64
	anyInv, anyErr          bool
	again                   bool
	// all: the reader holds every acknowledgement and send error (acks,
	// sendErrs), in blocks, for a history read again.
	all      bool
	acks     ackList
	sendErrs blocks.List[int64]
}

// noErr is firstErr's none.
const noErr = math.MaxInt64

// Add reads the history's next operation. The reader may keep op: the
// caller must not change it afterwards.
func (r *RecoveryReader) Add(op *history.Op) {
	pos := r.n
	r.n++
	st := r.pairs.Add(op, pos)
	r.windows.Add(op, pos, st)
	if op.Process == history.NemesisProcess {
		if r.nemesis == nil {
			r.nemesis = map[int32]*history.Op{}
		}
		r.nemesis[pos] = history.Detached(op)
	}
	if st.Orphan >= 0 {
		delete(r.invoked, st.Orphan)
	}
	if op.Process == history.NemesisProcess && op.Type != history.Invoke && !r.all {
		r.bound(op.Time)
	}
	switch {
	case op.F == history.Send && op.Type == history.Invoke:
		if r.invoked == nil {
			r.invoked = map[int32]int64{}
		}
		r.invoked[pos] = op.Time
	case op.F == history.Send:
		t, paired := r.invoked[st.Invoke]
		delete(r.invoked, st.Invoke)
		if op.Type != history.OK {
			r.sendErr(op.Time)
			break
		}
		r.anyAck = true
		if st.Invoke >= 0 && paired {
			r.ack(ack{invoked: t, done: op.Time})
		}
	case op.F == history.Monitor && op.Type == history.OK && op.Value != nil && op.Value.Sample != nil:
		s := sample{at: op.Time, leader: -1, epoch: -1, isr: r.lists.ID(op.Value.ISR), replicas: r.lists.ID(op.Value.Replicas)}
		if op.Value.Leader != nil {
			s.leader = *op.Value.Leader
		}
		if op.Value.Epoch != nil {
			s.epoch = *op.Value.Epoch
		}
		s.full = fullISR(op.Value.ISR, op.Value.Replicas)
		k := op.Key()
		p, ok := r.partIdx[k]
		if !ok {
			if r.partIdx == nil {
				r.partIdx = map[history.Key]int{}
			}
			p = len(r.parts)
			r.partIdx[k] = p
			r.parts = append(r.parts, k.String())
			r.samples = append(r.samples, blocks.List[sample]{})
			r.samples[p].In(r.arena)
		}
		r.samples[p].Add(s)
	}
}

// In has the reader keep the monitor's samples in a's file (nil: the
// heap), which must stay open until the reader's last Recoveries: a day's
// run samples each partition a million times or so. Call it before the
// first Add.
func (r *RecoveryReader) In(a *offheap.Arena) { r.arena = a }

// bound notes a nemesis completion at t: a window may start there.
func (r *RecoveryReader) bound(t int64) {
	if (r.anyInv && r.maxInv > t) || (r.anyErr && r.maxErr > t) {
		// A send that counts for a window starting at t was noted
		// before t was known as a start: it may be in the wrong place.
		r.again = true
		return
	}
	j, found := slices.BinarySearch(r.bounds, t)
	if found {
		return
	}
	r.bounds = slices.Insert(r.bounds, j, t)
	// What was noted at t itself (times can be equal) counts from t.
	ack, err := int64(-1), int64(noErr)
	if r.anyInv && r.maxInv == t {
		ack = r.tieDone
	}
	if r.anyErr && r.maxErr == t {
		err = t
	}
	r.firstAck = slices.Insert(r.firstAck, j, ack)
	r.firstErr = slices.Insert(r.firstErr, j, err)
}

// at is the place of the last bound at or before t, -1: none.
func (r *RecoveryReader) at(t int64) int {
	n := len(r.bounds)
	if n > 0 && r.bounds[n-1] <= t {
		return n - 1 // a history in time order's
	}
	j, found := slices.BinarySearch(r.bounds, t)
	if !found {
		j--
	}
	return j
}

func (r *RecoveryReader) ack(a ack) {
	if r.all {
		r.acks.Add(a)
		return
	}
	if a.done < 0 {
		// A completion before time 0 (a foreign history's) reads as
		// none to the scan of them all that has always judged it.
		r.again = true
		return
	}
	switch {
	case !r.anyInv || a.invoked > r.maxInv:
		r.maxInv, r.tieDone, r.anyInv = a.invoked, a.done, true
	case a.invoked == r.maxInv:
		r.tieDone = min(r.tieDone, a.done)
	}
	if j := r.at(a.invoked); j >= 0 && (r.firstAck[j] < 0 || a.done < r.firstAck[j]) {
		r.firstAck[j] = a.done
	}
}

func (r *RecoveryReader) sendErr(t int64) {
	if r.all {
		r.sendErrs.Add(t)
		return
	}
	if !r.anyErr {
		r.maxErr = t
	}
	r.maxErr, r.anyErr = max(r.maxErr, t), true
	if j := r.at(t); j >= 0 {
		r.firstErr[j] = min(r.firstErr[j], t)
	}
}

// Again is nil when the history read so far makes the table; else it
// must be read again, whole, into the reader Again returns, which holds
// every acknowledgement and send error. Only a history whose times do not
// run with its ops (or run before 0) needs it.
func (r *RecoveryReader) Again() *RecoveryReader {
	if !r.again {
		return nil
	}
	return &RecoveryReader{all: true, arena: r.arena}
}

// RecoveriesFile is r's table of the history at path it was fed, reading
// the history again where r needs it (Again). A history damaged on the
// way gives the table of what could be read, with the error.
func RecoveriesFile(path string, r *RecoveryReader) ([]WindowRecovery, error) {
	again := r.Again()
	if again == nil {
		return r.Recoveries(), nil
	}
	err := history.ScanReadsFile(path, func(op *history.Op) error {
		again.Add(op)
		return nil
	}, func(history.Key, bool, []history.Record) error { return nil })
	if errors.Is(err, history.ErrTornTail) {
		err = nil
	}
	return again.Recoveries(), err
}

// Recoveries is the table of the history read so far (see Again).
func (r *RecoveryReader) Recoveries() []WindowRecovery {
	var (
		out    []WindowRecovery
		starts []int64 // each window's start
		stops  []int64 // -1: no stop
		killed []bool
	)
	// A window runs from its start's completion to its stop's: a start
	// that failed may not have taken effect, and is left out.
	for _, w := range r.windows.Windows() {
		if w.Start.Done < 0 || r.nemesis[w.Start.Done].Error != "" {
			continue
		}
		start := r.nemesis[w.Start.Done]
		wr := WindowRecovery{Fault: w.Fault, Start: Duration(ms(start.Time))}
		stop := int64(-1)
		if w.Stop.Done >= 0 {
			stop = r.nemesis[w.Stop.Done].Time
			d := Duration(ms(stop))
			wr.Stop = &d
		}
		out = append(out, wr)
		starts, stops = append(starts, start.Time), append(stops, stop)
		killed = append(killed, start.Value != nil && start.Value.FaultInfo != nil && len(start.Value.KilledBrokers) > 0)
	}
	// By partition (two may print alike in a foreign history: a topic
	// "a-" and "a").
	byPart := make([]*partSamples, len(r.parts))
	for i := range r.parts {
		byPart[i] = newPartSamples(&r.samples[i], &r.lists, r.arena)
	}
	// Each from what was kept at the bounds as the sends streamed past
	// (or, read again, in one pass over them), not a pass for each
	// window: a day's run has thousands of windows and tens of millions
	// of sends.
	firsts, errIn := r.firstAcks(starts), r.errsIn()
	for i := range out {
		w := &out[i]
		next := int64(-1) // the next window's start
		for _, s := range starts[i+1:] {
			if s >= starts[i] {
				next = s
				break
			}
		}
		if killed[i] {
			w.Bit = append(w.Bit, BitKill)
		}
		leader, shrink := false, false
		for _, ps := range byPart {
			l, s := bit(ps, starts[i], stops[i])
			leader, shrink = leader || l, shrink || s
		}
		if leader {
			w.Bit = append(w.Bit, BitLeaderChange)
		}
		if shrink {
			w.Bit = append(w.Bit, BitISRShrink)
		}
		if r.anyAck && errIn(starts[i], stops[i]) {
			w.Bit = append(w.Bit, BitSendErrors)
		}
		w.FirstAck, w.FirstAckUnobserved = firstAck(firsts[i], r.anyAck, starts[i], next)
		if w.FirstAck != nil && time.Duration(*w.FirstAck) >= StallAfter {
			w.Bit = append(w.Bit, BitStall)
		}
		w.FullISR, w.FullISRUnobserved = fullISRAfter(byPart, r.parts, stops[i], next)
	}
	return out
}

// firstAcks is, for each of starts, the first completion of an
// acknowledged send invoked at or after it (-1: none).
func (r *RecoveryReader) firstAcks(starts []int64) []int64 {
	if r.all {
		return firstAcks(&r.acks, starts)
	}
	// The least of what was noted at and after each bound.
	first := suffixFirst(slices.Clone(r.firstAck))
	out := make([]int64, len(starts))
	for i, s := range starts {
		out[i] = -1
		if j, found := slices.BinarySearch(r.bounds, s); found { // a start is a bound
			out[i] = first[j]
		}
	}
	return out
}

// suffixFirst sets each of ts (-1: none) to the first of it and those
// after it: what was noted at a place counts for every place before it.
func suffixFirst(ts []int64) []int64 {
	for j := len(ts) - 2; j >= 0; j-- {
		if n := ts[j+1]; n >= 0 && (ts[j] < 0 || n < ts[j]) {
			ts[j] = n
		}
	}
	return ts
}

// errsIn says whether a send error came from a window's start to its stop
// (-1: the end).
func (r *RecoveryReader) errsIn() func(start, stop int64) bool {
	if r.all {
		errs := sortTimes(&r.sendErrs)
		return errs.in
	}
	first := slices.Clone(r.firstErr)
	for j := len(first) - 2; j >= 0; j-- {
		first[j] = min(first[j], first[j+1])
	}
	return func(start, stop int64) bool {
		j, found := slices.BinarySearch(r.bounds, start)
		return found && first[j] != noErr && (stop < 0 || first[j] <= stop)
	}
}

// sample is a monitor sample as the table needs it, in 32 bytes: its
// ISR and replicas are ids of lists (RecoveryReader.lists), and full says
// whether the ISR held every replica.
type sample struct {
	at            int64
	leader, epoch int32
	isr, replicas uint32
	full          bool
}

type ack struct{ invoked, done int64 }

// ackList holds acknowledgements in 12 bytes each, not 16: a send's
// invoke time and its latency (an acknowledgement for each send of a
// long run).
type ackList struct {
	invoked blocks.List[int64]
	// lat is each one's latency, or wideLat where it does not fit (4.3 s
	// or more, or a completion before its invoke): wide has its
	// completion, by index.
	lat  blocks.List[uint32]
	wide map[int]int64
}

const wideLat = math.MaxUint32

func (l *ackList) Add(a ack) {
	i := l.invoked.Add(a.invoked)
	if d := a.done - a.invoked; d >= 0 && d < wideLat {
		l.lat.Add(uint32(d))
		return
	}
	l.lat.Add(wideLat)
	if l.wide == nil {
		l.wide = map[int]int64{}
	}
	l.wide[i] = a.done
}

// All is the acknowledgements in the order added.
func (l *ackList) All() iter.Seq[ack] {
	return func(yield func(ack) bool) {
		i := 0
		for inv := range l.invoked.All() {
			a := ack{invoked: inv}
			if d := l.lat.At(i); d != wideLat {
				a.done = inv + int64(d)
			} else {
				a.done = l.wide[i]
			}
			if !yield(a) {
				return
			}
			i++
		}
	}
}

// ms is a history time rounded to the millisecond: finer says nothing of
// a recovery and makes every number hard to read.
func ms(t int64) time.Duration { return time.Duration(t).Round(time.Millisecond) }

// bit says whether a partition's samples show, while a window started at
// start and stopped at stop (-1: never) was open, a leader change and an
// ISR that lost a member it had before.
func bit(ps *partSamples, start, stop int64) (leader, shrink bool) {
	var base *sample
	ss, lists := ps.ss, ps.lists
	j0 := ps.from(start)
	if j0 > 0 {
		base = ss.Ptr(j0 - 1)
	}
	for j := j0; j < ss.Len(); j++ {
		s := ss.Ptr(j)
		if s.at < start {
			base = s
			continue
		}
		if base == nil {
			// No view from before the window: its first is the baseline
			// of leadership, and the replicas that of the ISR.
			base = &sample{leader: s.leader, epoch: s.epoch, isr: s.replicas}
		}
		if s.leader < 0 || s.leader != base.leader || s.epoch != base.epoch {
			leader = true
		}
		if s.isr != base.isr {
			isr := lists.Of(s.isr)
			for _, b := range lists.Of(base.isr) {
				if !slices.Contains(isr, b) {
					shrink = true
				}
			}
		}
		if stop >= 0 && s.at > stop {
			break // the first after the stop was the last that may show it
		}
	}
	return leader, shrink
}

// partSamples are a partition's monitor samples, in the order read, and
// what lets a window find its own among them: scanned from the first for
// every window, a day's run took minutes.
type partSamples struct {
	ss    *blocks.List[sample]
	lists *intern.Lists // the samples' ISRs and replicas
	// inOrder: in time order (a monitor's are, but for a foreign
	// history's need not be); nextFull then holds, for each sample, the
	// index of the first at or after it whose ISR is full (ss.Len():
	// none).
	inOrder  bool
	nextFull []int32
}

// newPartSamples makes a partition's nextFull in a (nil: the heap).
func newPartSamples(ss *blocks.List[sample], lists *intern.Lists, a *offheap.Arena) *partSamples {
	ps := &partSamples{ss: ss, lists: lists, inOrder: true}
	last := int64(math.MinInt64)
	for s := range ss.All() {
		if s.at < last {
			ps.inOrder = false
			break
		}
		last = s.at
	}
	if ps.inOrder {
		n := ss.Len()
		ps.nextFull = offheap.Make[int32](a, n)
		next := int32(n)
		for j := n - 1; j >= 0; j-- {
			if ss.Ptr(j).full {
				next = int32(j)
			}
			ps.nextFull[j] = next
		}
	}
	return ps
}

// fullISR says whether an ISR holds every replica of replicas.
func fullISR(isr, replicas []int32) bool {
	return len(replicas) > 0 && !slices.ContainsFunc(replicas, func(r int32) bool { return !slices.Contains(isr, r) })
}

// from is where a scan for the samples at or after t may start: the first
// of them where the samples are in time order, else the first.
func (ps *partSamples) from(t int64) int {
	if !ps.inOrder {
		return 0
	}
	return ps.ss.Search(func(s *sample) bool { return s.at >= t })
}

// sortedTimes are times in order.
type sortedTimes []int64

func sortTimes(l *blocks.List[int64]) sortedTimes {
	ts := slices.Collect(l.All())
	slices.Sort(ts)
	return ts
}

// in says whether a time is from start to stop (-1: the end).
func (ts sortedTimes) in(start, stop int64) bool {
	i, _ := slices.BinarySearch(ts, start)
	return i < len(ts) && (stop < 0 || ts[i] <= stop)
}

// firstAcks is, for each of starts, the first completion of an
// acknowledged send invoked at or after it (-1: none).
func firstAcks(acks *ackList, starts []int64) []int64 {
	for a := range acks.All() {
		if a.done < 0 {
			// A completion before time 0 (a foreign history's) reads
			// as none to the scan that has always judged it, which
			// depends on the order: each start is scanned for, as it
			// was.
			return scanFirstAcks(acks, starts)
		}
	}
	// By start: an acknowledgement counts for every start up to its
	// send's invoke, so it is noted at the last of them, and each start
	// takes the first of what was noted at it and after it.
	order := make([]int, len(starts))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(starts[a], starts[b]) })
	sorted := make([]int64, len(starts))
	for k, i := range order {
		sorted[k] = starts[i]
	}
	first := slices.Repeat([]int64{-1}, len(starts))
	for a := range acks.All() {
		j := sort.Search(len(sorted), func(k int) bool { return sorted[k] > a.invoked }) - 1
		if j >= 0 && (first[j] < 0 || a.done < first[j]) {
			first[j] = a.done
		}
	}
	suffixFirst(first)
	out := make([]int64, len(starts))
	for k, i := range order {
		out[i] = first[k]
	}
	return out
}

// scanFirstAcks is firstAcks by a scan of the acknowledgements for each
// start.
func scanFirstAcks(acks *ackList, starts []int64) []int64 {
	out := make([]int64, len(starts))
	for i, start := range starts {
		first := int64(-1)
		for a := range acks.All() {
			if a.invoked >= start && (first < 0 || a.done < first) {
				first = a.done
			}
		}
		out[i] = first
	}
	return out
}

// firstAck is the time from start to first, the first acknowledgement of
// a send invoked at or after it (firstAcks; -1: none); a send invoked
// before the fault says nothing of writing under it. Past next (the next
// window's start, -1: none), an acknowledgement says as much of that
// window.
func firstAck(first int64, anyAck bool, start, next int64) (*Duration, string) {
	switch {
	case !anyAck:
		return nil, "no send of the run was acknowledged (under acks=0 none is)"
	case first < 0:
		return nil, "no send invoked after the start was acknowledged before the workload ended"
	case next >= 0 && first > next:
		return nil, "no send was acknowledged before the next window started"
	}
	d := Duration(ms(first - start))
	return &d, ""
}

// fullISRAfter is the time from stop until every partition has been seen with
// all its replicas in its ISR: the latest of the partitions' first such
// samples after stop.
// byPart[i] are the samples of the partition named parts[i].
func fullISRAfter(byPart []*partSamples, parts []string, stop, next int64) (*Duration, string) {
	switch {
	case stop < 0:
		return nil, "the history ends inside the window: it was never healed"
	case len(parts) == 0:
		return nil, "the history holds no monitor sample"
	}
	last := stop
	for i, p := range parts {
		seen, full := false, int64(-1)
		ps := byPart[i]
		if ps.inOrder {
			j := ps.from(stop)
			seen = j < ps.ss.Len()
			if seen && int(ps.nextFull[j]) < ps.ss.Len() {
				full = ps.ss.Ptr(int(ps.nextFull[j])).at
			}
		} else {
			for s := range ps.ss.All() {
				if s.at < stop {
					continue
				}
				seen = true
				if s.full {
					full = s.at
					break
				}
			}
		}
		switch {
		case !seen:
			return nil, fmt.Sprintf("no sample of %s after the heal", p)
		case full < 0:
			return nil, fmt.Sprintf("%s's ISR was not full again before the history ended", p)
		case next >= 0 && full > next:
			return nil, fmt.Sprintf("%s's ISR was not full again before the next window started", p)
		}
		last = max(last, full)
	}
	d := Duration(ms(last - stop))
	return &d, ""
}
