package checker

import (
	"fmt"
	"slices"

	"github.com/chaos-isr/chaos/history"
)

// The consumer-group anomalies, judged from the operations of a
// workload whose consumers read as members of a group (history.Assign,
// history.Commit, and polls that name their group and generation). A
// group's committed offsets are records of the coordinator's internal
// topic, written and acknowledged as an acks=-1 write is (once the high
// watermark passes them), so what may take one back is what may truncate
// a committed record.
const (
	// OffsetRegressionName: a group's committed offset of a partition, as
	// a member fetched it when it joined, was below one whose commit had
	// been acknowledged (or that an earlier join had fetched) before it.
	OffsetRegressionName = "offset-regression"
	// FencedCommitName: a commit was acknowledged from a generation older
	// than one the coordinator had already given a member before the
	// commit began: a member fenced by a rebalance moved the group's
	// offset of a partition it may no longer own.
	FencedCommitName = "fenced-commit"
	// UnreadBelowCommitName: a record below the group's final committed
	// offset of its partition that no member of the group ever received:
	// at-least-once delivery broken.
	UnreadBelowCommitName = "unread-below-commit"
	// StuckGroupName: after the last heal, a new member could not join
	// the group (and fetch its committed offsets) within the liveness
	// bound.
	StuckGroupName = "stuck-group"
)

// noGroup is why the group checks have nothing to judge.
const noGroup = "the consumers did not read as a group (--sub-via subscribe)"

// groupEvent is an ok assign or commit: its invoke and completion
// positions, the generation, and the offsets it stands for.
type groupEvent struct {
	inv, done int32
	group     string
	gen       int32
	commit    bool
	offsets   []history.PartitionOffset
	topic     string
	final     bool // an assign of the final phase
	ok        bool
}

// addGroupOp tables an assign or commit as the history is indexed: a
// process does one operation at a time, so the index pairs it with its
// invoke.
func (h *History) addGroupOp(op *history.Op, inv, done int32) {
	h.hasGroups = true
	v := op.Value
	if v == nil || v.GroupInfo == nil {
		return
	}
	e := groupEvent{inv: inv, done: done, group: v.Group, gen: v.Generation, commit: op.F == history.Commit,
		topic: v.Topic, ok: op.Type == history.OK, final: h.lastConverge >= 0 && inv > h.lastConverge}
	switch {
	case e.commit && v.Offset != nil:
		e.offsets = []history.PartitionOffset{{Partition: v.Partition, Offset: *v.Offset}}
	case !e.commit:
		e.offsets = v.Committed
	}
	h.groups = append(h.groups, e)
}

// groupOps is the history's group operations, and whether it has any:
// the group checks are not applicable to a history without.
func (h *History) groupOps() ([]groupEvent, bool) { return h.groups, h.hasGroups }

// groupCheck runs one group check, or says it is not applicable.
func groupCheck(h *History, name string, check func(*History, *finding, []groupEvent)) Result {
	f := h.newFinding(name)
	events, any := h.groupOps()
	if !any {
		f.notApplicable("%s", noGroup)
		return f.result()
	}
	check(h, f, events)
	return f.result()
}

// OffsetRegression finds a group's committed offset going back: a join
// fetched, for a partition, an offset below one acknowledged (or fetched
// by an earlier join) before the join began. Count is the number of
// fetched offsets that did.
func OffsetRegression(h *History) Result {
	return groupCheck(h, OffsetRegressionName, offsetRegression)
}

// FencedCommit finds commits acknowledged from a generation older than
// one given to a member before the commit began.
func FencedCommit(h *History) Result { return groupCheck(h, FencedCommitName, fencedCommit) }

// UnreadBelowCommit finds records below the group's last fetched
// committed offsets (in the final reads) that no member of the group ever
// polled. Count is the number of such records.
func UnreadBelowCommit(h *History) Result {
	return groupCheck(h, UnreadBelowCommitName, unreadBelowCommit)
}

// StuckGroup finds a group that a new member could not join after the last
// heal, though the final phase tried until past the liveness bound.
func StuckGroup(h *History) Result { return groupCheck(h, StuckGroupName, stuckGroup) }

// known is, per group and partition, the committed offsets known at each
// completion, in completion order: an acknowledged commit, or a join that
// fetched it.
type knownOffset struct {
	done   int32
	offset int64
	at     int32 // the op that made it known
}

func offsetRegression(h *History, f *finding, events []groupEvent) {
	type gp struct {
		group, topic string
		part         int32
	}
	known := map[gp][]knownOffset{} // prefix maxima, in completion order
	highest := func(k gp, before int32) (knownOffset, bool) {
		ks := known[k]
		i, _ := slices.BinarySearchFunc(ks, before, func(x knownOffset, t int32) int { return int(x.done - t) })
		if i == 0 {
			return knownOffset{}, false
		}
		return ks[i-1], true
	}
	fetched := 0
	for _, e := range events {
		if !e.ok {
			continue
		}
		for _, o := range e.offsets {
			k := gp{e.group, e.topic, o.Partition}
			if !e.commit {
				// A fetched -1 is no committed offset at all: below any.
				fetched++
				if best, ok := highest(k, e.inv); ok && e.inv >= 0 && o.Offset < best.offset {
					got := fmt.Sprintf("was %d", o.Offset)
					if o.Offset < 0 {
						got = "was gone"
					}
					f.add(CommittedTruncation, fmt.Sprintf("group %s's committed offset of %s-%d %s when a member joined (op %d), below offset %d committed before it began (op %d)",
						e.group, e.topic, o.Partition, got, h.index(e.done), best.offset, h.index(best.at)), h.index(best.at), h.index(e.done))
				}
			}
			if o.Offset < 0 {
				continue
			}
			ks := known[k]
			if n := len(ks); n == 0 || o.Offset > ks[n-1].offset {
				known[k] = append(ks, knownOffset{e.done, o.Offset, e.done})
			}
		}
	}
	f.stat("offsets fetched", int64(fetched))
	if fetched == 0 {
		f.noEvidence("no member fetched a committed offset")
	}
}

func fencedCommit(h *History, f *finding, events []groupEvent) {
	type given struct {
		done int32
		gen  int32
	}
	gens := map[string][]given{} // per group, the highest generation given so far, in completion order
	commits := 0
	for _, e := range events {
		if !e.ok {
			continue
		}
		if !e.commit {
			gs := gens[e.group]
			if n := len(gs); n == 0 || e.gen > gs[n-1].gen {
				gens[e.group] = append(gs, given{e.done, e.gen})
			}
			continue
		}
		commits++
		gs := gens[e.group]
		i, _ := slices.BinarySearchFunc(gs, e.inv, func(x given, t int32) int { return int(x.done - t) })
		if i == 0 || e.inv < 0 || gs[i-1].gen <= e.gen {
			continue
		}
		newer := gs[i-1]
		o := e.offsets[0]
		f.add(CommittedTruncation, fmt.Sprintf("group %s took a commit of offset %d of %s-%d from generation %d (op %d), though generation %d had been given before it began (op %d)",
			e.group, o.Offset, e.topic, o.Partition, e.gen, h.index(e.done), newer.gen, h.index(newer.done)), h.index(newer.done), h.index(e.done))
	}
	f.stat("commits acknowledged", int64(commits))
	if commits == 0 {
		f.noEvidence("no commit was acknowledged")
	}
}

func unreadBelowCommit(h *History, f *finding, events []groupEvent) {
	// The group's committed offsets as the last join fetched them.
	var last *groupEvent
	for i := range events {
		if e := &events[i]; e.ok && !e.commit && len(e.offsets) > 0 {
			last = e
		}
	}
	if last == nil {
		f.noEvidence("no member fetched the group's committed offsets")
		return
	}
	delivered := map[int32]bool{}
	for i := range h.polls.len() {
		r := h.polls.at(i)
		op := h.ops.op(r.done)
		if op.Value == nil || op.Value.GroupInfo == nil || op.Value.Group != last.group {
			continue
		}
		for rec := range h.readRecs(r) {
			delivered[rec.vid] = true
		}
	}
	judged := 0
	for _, o := range last.offsets {
		part, ok := h.keyID[history.Key{Topic: last.topic, Partition: o.Partition}]
		if !ok || h.parts[part].final < 0 {
			if o.Offset > 0 {
				f.missing("partition %d has no final read to hold its committed offset %d against", o.Partition, o.Offset)
			}
			continue
		}
		judged++
		unread, first := 0, int64(-1)
		for rec := range h.readRecs(h.finals.at(h.parts[part].final)) {
			if rec.Offset < o.Offset && !delivered[rec.vid] {
				if unread++; first < 0 {
					first = rec.Offset
				}
			}
		}
		if unread > 0 {
			f.addN(unread, CommittedTruncation, fmt.Sprintf("group %s's committed offset of %s-%d is %d (op %d), but %d records below it (the first at offset %d) were never received by a member",
				last.group, last.topic, o.Partition, o.Offset, h.index(last.done), unread, first), h.index(last.done))
		}
	}
	f.stat("partitions judged", int64(judged))
}

func stuckGroup(h *History, f *finding, events []groupEvent) {
	bound, heal, ok := h.livenessBound()
	switch {
	case !ok:
		h.notBounded(f)
		return
	case h.unhealed(f):
		return
	}
	tried, joined := 0, false
	var lastTry int32 = -1
	for _, e := range events {
		if e.commit || !e.final {
			continue
		}
		tried++
		lastTry = e.done
		joined = joined || e.ok
	}
	switch {
	case tried == 0:
		f.noEvidence("the final phase did not join the group")
	case joined:
	case h.at(lastTry) < heal+bound:
		f.missing("the final phase's attempts to join the group ended at %s, before the liveness bound after the last heal had passed", secs(h.at(lastTry)))
	default:
		f.add(Unexplained, fmt.Sprintf("after the last heal, %d attempts of a new member to join the group and fetch its offsets failed, until past the liveness bound (the last at op %d)", tried, h.index(lastTry)), h.index(lastTry))
	}
}
