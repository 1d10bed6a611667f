package report

import (
	"cmp"
	"errors"
	"iter"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/internal/blocks"
	"github.com/chaos-isr/chaos/internal/intern"
	"github.com/chaos-isr/chaos/internal/offheap"
	"github.com/chaos-isr/chaos/results"
)

// timeline is what the report's plots and tables read from a history,
// gathered in one pass over it as it streams past: the history is never
// held whole. Of each operation it keeps a few fixed fields (op); what
// the plots draw of values and samples is taken as they pass; the few
// operations the page shows in full are read again (fetch). Times are
// nanoseconds since the test started, as in the history.
type timeline struct {
	// ops are the operations in blocks of opBlock: a long history's
	// table grows without copying itself (hundreds of MB, twice over, at
	// each growth) or holding room it does not use.
	ops  [][]op
	nops int
	// pairs are, beside ops in blocks of opBlock, the position of each
	// op's invoke or completion, -1.
	pairs [][]int32
	// bases are the times op.dt counts from, one for each timeGroup
	// positions (the time of the group's first op); wide are the times
	// of the ops too far from theirs.
	bases []int64
	wide  map[int32]int64
	lists intern.Lists      // samples' ISRs
	fns   []string          // op.fn's names
	errs  []string          // op.err's texts; errs[0] is none
	ids   map[string]uint32 // fns' and errs' ids, by text
	// byIndex maps an op index to its position when indexes are not
	// simply positions (a foreign or damaged history), and indexes a
	// position to its index where the two differ; nil otherwise.
	byIndex map[int64]int
	indexes map[int32]int64
	// kept are the operations kept whole: the nemesis's (their windows'
	// targets and commands) and crashes; detail the ones fetched for the
	// page to show in full.
	kept    map[int32]*history.Op
	nemesis []int32 // positions of the nemesis's completions
	crashes []int32 // positions of crash completions
	detail  map[int32]*history.Op
	// records are how many records the fetched ops that read more than
	// shownRecords read: detail holds only their first and last.
	records map[int32]int
	// src is the history, when the caller holds it whole.
	src []history.Op

	end     int64 // the last op's time, at least one second
	finalAt int64 // the first final or replica read's invoke, -1

	faults []faultWindow
	// strayCmds are commands of nemesis operations that opened or closed
	// no window (a final heal with nothing open): what they did to the
	// cluster still has to be shown.
	strayCmds []faultCmd
	heals     []int64 // times of "heal" operations (every fault undone)

	// nclients counts the completed client operations (op.client).
	nclients int

	parts   []history.Key // partitions seen, sorted
	partIdx map[history.Key]int
	// samples are the monitor's per partition, in time order: in the
	// arena's file when it has one, for a day's run samples each
	// partition a million times or so.
	samples []blocks.List[sample]
	// readHW are the HWs polls and end-offset reads reported, per
	// partition: the HW plot's source in a history without monitor
	// samples (dropped when it has them).
	readHW  [][]pt
	sampled bool // a monitor sample has been read (readHW is then not kept)
	// acked are the acknowledgements of sends per partition, and of all
	// of them, as the unavailability plot needs them; sendSpan the first
	// send invoke and last send completion per partition.
	acked     []ackLane
	ackedAll  ackLane
	sendSpan  [][2]int64
	anySendOK bool
	// families are test.json's fault families, by kind, for the
	// bands' colours.
	families map[string]string

	// recovery is the fault windows' recovery table; checked is the
	// checkers' index of the history, built only when the report needs
	// what results.json does not hold (see load).
	recovery []results.WindowRecovery
	checked  *checker.History

	// arena holds ops' and pairs' blocks (timelineReader.inFile), nil:
	// the heap.
	arena *offheap.Arena
	// sampleArena holds samples' blocks, nil: the heap.
	sampleArena *offheap.Arena
}

// op is what the timeline keeps of one operation: 32 bytes, where the
// operation itself, with its value, takes hundreds.
type op struct {
	// dt is the op's time less its group's base (timeline.bases), or
	// wideTime for one too far from it (timeline.wide): a long run's
	// table is millions of ops, and an int64 each was a fifth of it.
	dt      int32
	process int32
	part    int32  // index into timeline.parts of its (or its invoke's) partition, -1
	err     uint32 // index into timeline.errs
	fn      uint16 // index into timeline.fns
	typ     uint8  // index into opTypes
	// client: a client operation's completion, paired with its invoke
	// (clients lists them).
	client bool
}

// opTypes are op.typ's types.
var opTypes = [...]history.Type{history.Invoke, history.OK, history.Fail, history.Info}

// Type is how the op ended (history.Info for a type no other names).
func (o *op) Type() history.Type { return opTypes[o.typ] }

const opBlock = 1 << 16

// op is the operation at position i.
func (tl *timeline) op(i int) *op { return &tl.ops[i/opBlock][i%opBlock] }

// len is the number of operations.
func (tl *timeline) len() int { return tl.nops }

// giveBack gives back the pages of the table of operations held in a file
// (timelineReader.inFile), as the report's passes over it go (span): each
// reads the table through (0.5 GB at 2 hours), and what it read stayed
// mapped, counted in the report's RSS, until the end (a 2-hour run's
// report: 0.34 GB of its 0.42). What is read again is mapped again from
// the page cache, or the disk if the kernel took it back.
func (tl *timeline) giveBack() { tl.arena.Release() }

// f is the op's function.
func (tl *timeline) f(o *op) string { return tl.fns[o.fn] }

// errText is the op's error, empty for none.
func (tl *timeline) errText(o *op) string { return tl.errs[o.err] }

// clientOp is one completed client operation.
type clientOp struct {
	inv, done int32 // positions
	part      int   // index into timeline.parts, -1
}

// clients are the completed client operations, in history order: found
// in the op table, not listed beside it (a long run has millions).
func (tl *timeline) clients() iter.Seq[clientOp] { return tl.clientsIn(0, math.MaxInt32) }

// clientsIn is clients of the positions lo to hi.
func (tl *timeline) clientsIn(lo, hi int32) iter.Seq[clientOp] {
	return func(yield func(clientOp) bool) {
		for i := range tl.span(max(int(lo), 0), min(tl.nops, int(hi)+1)) {
			if o := tl.op(i); o.client && !yield(clientOp{inv: tl.pair(i), done: int32(i), part: int(o.part)}) {
				return
			}
		}
	}
}

// all is every position of the table, in order (see span).
func (tl *timeline) all() iter.Seq[int] { return tl.span(0, tl.nops) }

// span is the positions lo to hi (not included), in order, with the
// table's pages given back every passEvery of them (giveBack): a pass
// that reads the table through maps a few MB of it at a time, not all of
// it (a 2-hour run's report counted 0.34 GB in its RSS for one pass).
func (tl *timeline) span(lo, hi int) iter.Seq[int] {
	return func(yield func(int) bool) {
		for i := lo; i < hi; i++ {
			if (i-lo)%passEvery == passEvery-1 {
				tl.giveBack()
			}
			if !yield(i) {
				return
			}
		}
	}
}

// passEvery: the table's pages of so many positions are about 36 MB.
const passEvery = 1 << 20

const (
	timeGroup = 256
	wideTime  = math.MinInt32
)

// time is the time of the op at pos.
func (tl *timeline) time(pos int) int64 {
	if dt := tl.op(pos).dt; dt != wideTime {
		return tl.bases[pos/timeGroup] + int64(dt)
	}
	return tl.wide[int32(pos)]
}

// pair is the position of the invoke or completion of the op at pos, -1.
func (tl *timeline) pair(pos int) int32 { return tl.pairs[pos/opBlock][pos%opBlock] }

// sample is one monitor observation of a partition, in 48 bytes: a
// day's run samples each partition several times a second, and its ISRs
// and errors are a handful, held once each in the timeline (isrList, err).
type sample struct {
	t        int64
	hw       int64 // -1 if absent
	pos      int32
	leader   int32
	epoch    int32
	isr      int32  // the ISR's size
	replicas int32  // how many replicas
	isrList  uint32 // the ISR, an id of timeline.lists
	err      uint32 // why the monitor got no answer, an id of timeline.errs
	ok       bool   // false: the monitor got no answer (err says why)
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

// timelineReader builds a timeline from a history's operations as they
// stream past. It never fails: a malformed history (a completion without
// an invoke, a torn tail) loses only what cannot be paired.
type timelineReader struct {
	tl      *timeline
	pairs   history.Pairer
	windows history.Windows
	rec     results.RecoveryReader
	// path is the history's file, where the recovery table reads it
	// again when it needs to (results.RecoveryReader.Again); else the
	// ops are held (timeline.src).
	path string
	// check is the checkers' index being built, when the report needs it.
	check *checker.Builder
}

func newTimelineReader() *timelineReader {
	tl := &timeline{finalAt: -1, partIdx: map[history.Key]int{}, errs: []string{""}, ids: map[string]uint32{}, kept: map[int32]*history.Op{}}
	return &timelineReader{tl: tl}
}

// inFile has the reader keep the timeline's table of operations, and the
// checkers' index if it builds one, in a file in dir (package offheap:
// the system's temporary directory where dir cannot be written, the heap
// where neither can). The file is given back when the timeline is
// collected. It must be called before the first operation is added.
func (r *timelineReader) inFile(dir string) {
	if r.check != nil {
		r.check.InFile(dir)
	}
	a, err := offheap.Open(dir)
	if err != nil {
		return
	}
	r.tl.arena = a
	runtime.AddCleanup(r.tl, func(a *offheap.Arena) { a.Close() }, a)
	// The samples in a file of their own: among the ops' blocks they
	// made every pass over those slower (5% at 30 minutes).
	if s := a.Sibling(); s != nil {
		r.tl.sampleArena = s
		runtime.AddCleanup(r.tl, func(a *offheap.Arena) { a.Close() }, s)
		r.rec.In(s)
	}
}

// id is the id of a function name or error text in list, adding it.
func (tl *timeline) id(list *[]string, s string) uint32 {
	if s == "" && list == &tl.errs {
		return 0
	}
	key := s
	if list == &tl.errs {
		key = "\x00" + s // an error may read like a function name
	}
	if i, ok := tl.ids[key]; ok {
		return i
	}
	i := uint32(len(*list))
	*list = append(*list, strings.Clone(s))
	tl.ids[key] = i
	return i
}

// fnID is the id of a function name. A history of more names than an
// id holds (none chaos writes) has the rest share one that says so.
func (tl *timeline) fnID(f string) uint16 {
	const other = math.MaxUint16 - 1
	if i, ok := tl.ids[f]; ok {
		return uint16(i)
	}
	if len(tl.fns) < other {
		return uint16(tl.id(&tl.fns, f))
	}
	if len(tl.fns) == other {
		tl.fns = append(tl.fns, "(one of too many functions to name)")
	}
	return other
}

// part is the index of a partition, in the order first seen (sorted by
// finish).
func (tl *timeline) part(v *history.Value) int32 {
	if v == nil || v.Topic == "" {
		return -1
	}
	k := history.Key{Topic: v.Topic, Partition: v.Partition}
	i, ok := tl.partIdx[k]
	if !ok {
		i = len(tl.parts)
		k.Topic = strings.Clone(k.Topic)
		tl.partIdx[k] = i
		tl.parts = append(tl.parts, k)
		tl.samples = append(tl.samples, blocks.List[sample]{})
		tl.samples[i].In(tl.sampleArena)
		tl.readHW = append(tl.readHW, nil)
		tl.acked = append(tl.acked, ackLane{})
		tl.sendSpan = append(tl.sendSpan, [2]int64{-1, -1})
	}
	return int32(i)
}

// add reads the history's next operation; it keeps op only where it is
// kept whole, so op may be reused afterwards unless it was.
// scan reads the history at path into the timeline. A read's records
// are only the checkers' index's (a long run's final reads, tens of MB a
// line, are streamed to it as they are decoded: history.ScanReads); the
// timeline keeps none.
func (r *timelineReader) scan(path string, show func(string)) error {
	r.path = path
	return history.ScanReadsFileShowing(path, func(op *history.Op) error {
		r.add(op)
		return nil
	}, func(k history.Key, hinted bool, rs []history.Record) error {
		if r.check != nil {
			r.check.AddRecords(k, hinted, rs)
		}
		return nil
	}, show)
}

func (r *timelineReader) add(hop *history.Op) {
	tl := r.tl
	pos := int32(tl.len())
	if tl.byIndex == nil && hop.Index != int64(pos) {
		tl.byIndex = make(map[int64]int, pos+1)
		for j := range int(pos) {
			tl.byIndex[int64(j)] = j
		}
	}
	if tl.byIndex != nil {
		if _, dup := tl.byIndex[hop.Index]; !dup {
			tl.byIndex[hop.Index] = int(pos)
		}
		if tl.indexes == nil {
			tl.indexes = map[int32]int64{}
		}
		if hop.Index != int64(pos) {
			tl.indexes[pos] = hop.Index
		}
	}
	st := r.pairs.Add(hop, pos)
	r.windows.Add(hop, pos, st)
	r.rec.Add(hop)
	if r.check != nil {
		r.check.Add(hop)
	}
	if tl.nops%opBlock == 0 {
		tl.ops = append(tl.ops, offheap.Make[op](tl.arena, opBlock)[:0])
		tl.pairs = append(tl.pairs, offheap.Make[int32](tl.arena, opBlock)[:0])
	}
	var inv int32 = -1
	if st.Invoke >= 0 {
		inv = st.Invoke
		tl.pairs[inv/opBlock][inv%opBlock] = pos
	}
	tl.pairs[len(tl.pairs)-1] = append(tl.pairs[len(tl.pairs)-1], inv)
	if pos%timeGroup == 0 {
		tl.bases = append(tl.bases, hop.Time)
	}
	dt := hop.Time - tl.bases[pos/timeGroup]
	if dt != int64(int32(dt)) || dt == wideTime {
		if tl.wide == nil {
			tl.wide = map[int32]int64{}
		}
		tl.wide[pos], dt = hop.Time, wideTime
	}
	o := op{dt: int32(dt), process: int32(hop.Process), part: tl.part(hop.Value),
		fn: tl.fnID(hop.F), err: tl.id(&tl.errs, hop.Error), typ: 3}
	if t := slices.Index(opTypes[:], hop.Type); t >= 0 {
		o.typ = uint8(t)
	}
	if o.part < 0 && inv >= 0 {
		o.part = tl.op(int(inv)).part
	}
	o.client = hop.Process >= 0 && hop.Type != history.Invoke && inv >= 0
	if o.client {
		tl.nclients++
	}
	tl.ops[len(tl.ops)-1] = append(tl.ops[len(tl.ops)-1], o)
	tl.nops++
	tl.end = max(tl.end, hop.Time)
	part := int(o.part)
	crash := hop.F == history.Crash && hop.Type != history.Invoke && hop.Value.Crashed() != nil
	if hop.Process == history.NemesisProcess || crash {
		tl.kept[pos] = history.Detached(hop)
	}
	if crash {
		tl.crashes = append(tl.crashes, pos)
	}
	switch {
	case hop.Process == history.NemesisProcess:
		// Its windows are read at the end, from Windows.
		if hop.Type != history.Invoke {
			tl.nemesis = append(tl.nemesis, pos)
		}
	case hop.Process == history.MonitorProcess && hop.F == history.Monitor:
		if hop.Type != history.Invoke && part >= 0 {
			tl.samples[part].Add(tl.monitorSample(hop, pos))
			if !tl.sampled {
				tl.sampled = true
				clear(tl.readHW)
			}
		}
	case hop.Process >= 0:
		if hop.Type == history.Invoke {
			if (hop.F == history.FinalRead || hop.F == history.ReplicaRead) && tl.finalAt < 0 {
				tl.finalAt = hop.Time
			}
			if hop.F == history.Send && part >= 0 {
				if s := &tl.sendSpan[part]; s[0] < 0 {
					s[0] = hop.Time
				}
			}
			return
		}
		if inv < 0 {
			return
		}
		switch {
		case hop.F == history.Send && part >= 0:
			tl.sendSpan[part][1] = hop.Time
			if hop.Type == history.OK {
				tl.acked[part].add(hop.Time)
				tl.ackedAll.add(hop.Time)
				tl.anySendOK = true
			}
		case hop.Type == history.OK && part >= 0 && hop.Value != nil:
			hw := hop.Value.HW
			if hop.F == history.EndOffset {
				hw = hop.Value.Offset
			} else if hop.F != history.Poll {
				hw = nil
			}
			if hw != nil && !tl.sampled {
				tl.readHW[part] = append(tl.readHW[part], pt{t: hop.Time, v: float64(*hw), pos: pos})
			}
		}
	}
}

// finish completes the timeline once the history has been read. sched is
// the planned schedule, used only when the history has no nemesis
// operations.
func (r *timelineReader) finish(sched results.Schedule) *timeline {
	tl := r.tl
	// Partitions in sorted order, their tables with them.
	order := make([]int, len(tl.parts))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(strings.Compare(tl.parts[a].Topic, tl.parts[b].Topic), cmp.Compare(tl.parts[a].Partition, tl.parts[b].Partition))
	})
	renum := make([]int32, len(order))
	for to, from := range order {
		renum[from] = int32(to)
	}
	tl.parts = permute(tl.parts, order)
	tl.samples, tl.readHW = permute(tl.samples, order), permute(tl.readHW, order)
	tl.acked, tl.sendSpan = permute(tl.acked, order), permute(tl.sendSpan, order)
	for i, k := range tl.parts {
		tl.partIdx[k] = i
	}
	// Written only where the number changes: a page left clean is one the
	// kernel can take back without writing it, and partitions first seen
	// in their order change none.
	moved := false
	for from, to := range renum {
		moved = moved || int32(from) != to
	}
	if moved {
		for i := range tl.all() {
			if o := tl.op(i); o.part >= 0 && renum[o.part] != o.part {
				o.part = renum[o.part]
			}
		}
	}
	if tl.sampled {
		tl.readHW = nil
	}
	tl.ids = nil

	tl.readWindows(r.windows.Windows(), r.windows.Heals())
	tl.recovery = r.recoveries()
	if r.check != nil {
		tl.checked = r.check.History()
	}
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
	for i := range tl.samples {
		tl.samples[i] = inTimeOrder(tl.samples[i], tl.sampleArena)
	}
	tl.countFaultSends()
	return tl
}

// recoveries is the fault windows' recovery table, from the history read
// again where it needs (a history whose times do not run with its ops).
func (r *timelineReader) recoveries() []results.WindowRecovery {
	if r.path == "" {
		return results.RecoveriesOps(r.tl.src, &r.rec)
	}
	// Read once already, the history reads again where it must; were it
	// to fail now, the table would be of what was read.
	rs, _ := results.RecoveriesFile(r.path, &r.rec)
	return rs
}

// inTimeOrder is ss in time order, as it came where it came so (a
// monitor's are; a foreign history's need not be), else sorted, stably,
// into a new list in a.
func inTimeOrder(ss blocks.List[sample], a *offheap.Arena) blocks.List[sample] {
	last, sorted := int64(math.MinInt64), true
	for s := range ss.All() {
		if s.t < last {
			sorted = false
			break
		}
		last = s.t
	}
	if sorted {
		return ss
	}
	all := slices.Collect(ss.All())
	slices.SortStableFunc(all, func(a, b sample) int { return cmp.Compare(a.t, b.t) })
	var out blocks.List[sample]
	out.In(a)
	for _, s := range all {
		out.Add(s)
	}
	return out
}

func permute[T any](s []T, order []int) []T {
	out := make([]T, len(order))
	for to, from := range order {
		out[to] = s[from]
	}
	return out
}

// newTimeline reads a history held in memory.
func newTimeline(ops []history.Op, sched results.Schedule) *timeline {
	return newTimelineReader().read(ops, sched)
}

// read adds ops, a history held in memory, and finishes the timeline,
// which reads the ops again from memory when it needs them whole.
func (r *timelineReader) read(ops []history.Op, sched results.Schedule) *timeline {
	r.tl.src = ops
	for i := range ops {
		r.add(&ops[i])
	}
	return r.finish(sched)
}

// readWindows draws history's fault windows: each from its start (the
// invoke, where the nemesis records one) to its stop or the heal that
// ended it. The completions of a window's operations add what they say
// (targets, an error, the commands they ran); a heal's go with the last
// window it ended. Commands of operations that belong to no window (a
// final heal with nothing open) are kept apart: what they did to the
// cluster still has to be shown.
func (tl *timeline) readWindows(windows []history.Window, heals []history.Span) {
	owner := map[int32]int{} // a completion's position -> its window
	for k, w := range windows {
		start := tl.kept[w.Start.At()]
		f := faultWindow{Fault: w.Fault, Start: start.Time, End: -1, StartOp: start.Index, EndOp: -1, Open: true}
		f.Targets = start.Value.FaultTargets()
		if e := w.Ended(); e.At() >= 0 {
			f.End, f.EndOp, f.Open = tl.time(int(e.At())), tl.index(int(e.At())), false
		}
		tl.faults = append(tl.faults, f)
		for _, done := range []int32{w.Start.Done, w.Stop.Done, w.Heal.Done} {
			if done >= 0 {
				owner[done] = k
			}
		}
	}
	for _, h := range heals {
		tl.heals = append(tl.heals, tl.time(int(h.At())))
	}
	for _, i := range tl.nemesis {
		op := tl.kept[i]
		var cmds []faultCmd
		if op.Value != nil && op.Value.FaultInfo != nil {
			for _, c := range op.Value.Commands {
				cmds = append(cmds, faultCmd{F: op.F, Op: op.Index, Command: c})
			}
		}
		k, ok := owner[i]
		if !ok {
			tl.strayCmds = append(tl.strayCmds, cmds...)
			continue
		}
		f, w := &tl.faults[k], &windows[k]
		if t := op.Value.FaultTargets(); w.Start.Done == i && len(t) > 0 {
			f.Targets = t
		}
		if op.Error != "" {
			f.Error = strings.TrimSpace(f.Error + " " + op.Error)
		}
		f.Cmds = append(f.Cmds, cmds...)
	}
}

func (tl *timeline) monitorSample(op *history.Op, pos int32) sample {
	s := sample{t: op.Time, pos: pos, leader: -1, epoch: -1, hw: -1}
	v := op.Value
	if op.Type != history.OK || v == nil {
		err := op.Error
		if err == "" {
			err = "no answer (" + string(op.Type) + ")"
		}
		s.err = tl.id(&tl.errs, err)
		return s
	}
	s.ok = true
	if v.HW != nil {
		s.hw = *v.HW
	}
	m := v.Sample
	if m == nil {
		s.isrList = tl.lists.ID(nil)
		return s
	}
	if m.Leader != nil {
		s.leader = *m.Leader
	}
	if m.Epoch != nil {
		s.epoch = *m.Epoch
	}
	s.isr, s.replicas, s.isrList = int32(len(m.ISR)), int32(len(m.Replicas)), tl.lists.ID(m.ISR)
	return s
}

// countFaultSends counts the sends completed inside each fault window, so
// the faults table shows what each fault did to availability: in one pass
// over the sends, each counted at the first window start or end at or
// after it (a long run has thousands of windows and millions of sends).
func (tl *timeline) countFaultSends() {
	if len(tl.faults) == 0 {
		return
	}
	// Counted at the windows' starts and ends, not from every send's
	// time held: a day's run completes tens of millions. below[k][q] is
	// then how many sends of outcome k completed before at[q], upTo[k][q]
	// how many at or before it.
	at := make([]int64, 0, 2*len(tl.faults))
	for _, f := range tl.faults {
		at = append(at, f.Start, f.End)
	}
	slices.Sort(at)
	at = slices.Compact(at)
	var below, upTo [3][]int
	for k := range below {
		below[k], upTo[k] = make([]int, len(at)+1), make([]int, len(at)+1)
	}
	for c := range tl.clients() {
		o := tl.op(int(c.done))
		if tl.f(o) != history.Send {
			continue
		}
		t, k := tl.time(int(c.done)), typeSlot(o.Type())
		// Counted, as differences, from the first point it is at or
		// before, and the first it is before.
		q, _ := slices.BinarySearch(at, t)
		upTo[k][q]++
		if q < len(at) && at[q] == t {
			q++
		}
		below[k][q]++
	}
	for k := range below {
		for q := 1; q < len(at); q++ {
			below[k][q] += below[k][q-1]
			upTo[k][q] += upTo[k][q-1]
		}
	}
	for i := range tl.faults {
		f := &tl.faults[i]
		from, _ := slices.BinarySearch(at, f.Start)
		to, _ := slices.BinarySearch(at, f.End)
		for k := range f.sends {
			f.sends[k] = max(upTo[k][to]-below[k][from], 0)
		}
	}
}

// index is the index of the op at position i: its position, unless the
// history numbers its ops otherwise.
func (tl *timeline) index(i int) int64 {
	if ix, ok := tl.indexes[int32(i)]; ok {
		return ix
	}
	return int64(i)
}

// pos is the position of the op with the given index, or -1.
func (tl *timeline) pos(index int64) int {
	if tl.byIndex != nil {
		if p, ok := tl.byIndex[index]; ok {
			return p
		}
		return -1
	}
	if index < 0 || index >= int64(tl.len()) {
		return -1
	}
	return int(index)
}

// window is an interval of time.
type window struct{ start, end int64 }

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

// noLeader returns the intervals in which the monitor saw a partition
// without a leader, and those in which it got no answer at all.
func noLeader(ss *blocks.List[sample], end int64) (leaderless, blind []window) {
	var cur, curBlind *window
	for s := range ss.All() {
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
	if n := ss.Len(); n > 0 {
		last = ss.At(n - 1).t
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

// full is the op at pos whole: kept, fetched, or in the caller's memory;
// nil if none of these has it.
func (tl *timeline) full(pos int32) *history.Op {
	if op := tl.kept[pos]; op != nil {
		return op
	}
	if op := tl.detail[pos]; op != nil {
		return op
	}
	if pos >= 0 && int(pos) < len(tl.src) {
		return &tl.src[pos]
	}
	return nil
}

// fetch reads the ops at the given positions again from the history file
// at path, for full: the page shows a few thousand operations of a
// history whose millions it did not keep. A history in memory needs no
// second reading. If it fails, the ops are shown as the timeline keeps
// them.
func (tl *timeline) fetch(path string, positions ...[]int32) error {
	if tl.src != nil || path == "" {
		return nil
	}
	want := make([]uint64, (tl.len()+63)/64)
	n := 0
	for _, ps := range positions {
		for _, p := range ps {
			if p >= 0 && int(p) < tl.len() && tl.kept[p] == nil {
				want[p/64] |= 1 << (p % 64)
				n++
			}
		}
	}
	if n == 0 {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	tl.detail = make(map[int32]*history.Op, n)
	// A long line's records come ahead of its op, streamed as they are
	// decoded (history.ScanAtReads): past shownRecords, only how many,
	// and the first and last, are kept.
	var streamed []history.Record
	count := 0
	err = history.ScanAtReads(f, func(p int) bool { return p < tl.len() && want[p/64]&(1<<(p%64)) != 0 }, func(p int, op *history.Op) error {
		n := 0
		if v := op.Value; v != nil {
			n = count + len(v.Records)
			if count > 0 {
				v.Records = append(streamed, v.Records...)
			}
		}
		if v := op.Value; v != nil && n > shownRecords {
			// A final or replica read of a long run holds every record
			// of its partition, and the page says only how many and
			// which offsets: keeping them all held the final phase's
			// reads whole, most of a long run's report.
			if tl.records == nil {
				tl.records = map[int32]int{}
			}
			tl.records[int32(p)] = n
			v.Records = []history.Record{v.Records[0], v.Records[len(v.Records)-1]}
			op = history.Detached(op)
		}
		streamed, count = nil, 0
		tl.detail[int32(p)] = op
		return nil
	}, func(_ history.Key, _ bool, rs []history.Record) error {
		if rs == nil {
			streamed, count = nil, 0
		}
		for _, r := range rs {
			switch count++; {
			case count <= shownRecords:
				streamed = append(streamed, r)
			case count == shownRecords+1:
				streamed = []history.Record{streamed[0], r}
			default:
				streamed[1] = r
			}
		}
		return nil
	})
	if errors.Is(err, history.ErrTornTail) {
		err = nil
	}
	return err
}
