package checker

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/chaos-isr/chaos/history"
)

// The transactions' anomalies (Jepsen's Kafka checker's names), judged
// from the operations of the transactional workload (history.Txn) and the
// isolation level of every reader. A transaction's sends and polls are
// also sends and reads like any other: lost-write, unseen, duplicate,
// poll-skip and the rest judge them too, and aborted-read judges what its
// readers made of an aborted transaction (AbortedRead).
const (
	// PrecommittedReadName: a read returned a record of a transaction
	// before that transaction could have committed: the transaction's own
	// poll of what it sent, or a read that completed before the writer
	// asked to commit (before it began, where the history does not say
	// when it asked).
	PrecommittedReadName = "precommitted-read"
	// IntPollSkipName: within one transaction, a poll's next record of a
	// partition skipped offsets that exist (that its isolation lets it
	// see).
	IntPollSkipName = "int-poll-skip"
	// IntNonmonotonicPollName: within one transaction, a poll's next
	// record of a partition was at or below the one before.
	IntNonmonotonicPollName = "int-nonmonotonic-poll"
	// IntSendSkipName: within one transaction, two consecutive sends to a
	// partition landed with another record between them.
	IntSendSkipName = "int-send-skip"
	// IntNonmonotonicSendName: within one transaction, a later send to a
	// partition landed at or below an earlier one.
	IntNonmonotonicSendName = "int-nonmonotonic-send"
	// G0Name: a cycle of write-write dependencies among committed
	// transactions (Adya's G0), the order of writes being each partition's
	// order of offsets.
	G0Name = "G0"
	// G1cName: a cycle of write-read (and write-write) dependencies among
	// committed transactions that holds a write-read one (Adya's G1c).
	G1cName = "G1c"
)

// TxnNames lists the transactions' anomalies, in the order Results
// reports them, after every other (Names).
func TxnNames() []string {
	return []string{PrecommittedReadName, IntPollSkipName, IntNonmonotonicPollName,
		IntSendSkipName, IntNonmonotonicSendName, G0Name, G1cName}
}

// txnCheckers are the checkers of TxnNames, in its order.
func txnCheckers() []func(*History) Result {
	return []func(*History) Result{PrecommittedRead, IntPollSkip, IntNonmonotonicPoll,
		IntSendSkip, IntNonmonotonicSend, G0, G1c}
}

// txnIndex is what a history's transactions are, tabled as it is indexed.
type txnIndex struct {
	// ops are the transactions, in completion order (those the history
	// ended before completing last).
	ops []txnOp
	// writer is the transaction that sent each value (by value id), -1
	// for none: built once the history is indexed.
	writer []int32
	// rcReads: some read was read_committed.
	rcReads bool
	// any: the history has an operation of function txn, whatever came
	// of it (most have none, and asking the op table costs a cache miss).
	any bool
	// graph is the dependency graph of the committed transactions, built
	// on first use by whichever of G0 and G1c running at once needs it
	// first.
	graph     *txnGraph
	graphOnce sync.Once
}

// txnOp is one transaction.
type txnOp struct {
	inv, done int32
	process   int32
	// typ is its outcome as judged: a transaction the workload meant to
	// abort never asked to commit, so whatever its completion says short
	// of ok, it failed.
	typ outcome
	// rc: its polls read committed.
	rc bool
	// commitAt is when its client asked to commit, -1 if the history
	// does not say.
	commitAt int64
	// sends are its sends, in the order it made them; reads its polls'
	// records, partition by partition (in the order it first read each),
	// each partition's in the order read.
	sends []txnRecord
	reads []txnRecord
}

// txnRecord is one record a transaction sent (offset -1 where no answer
// gave one) or read.
type txnRecord struct {
	vid, part int32
	offset    int64
}

// addTxn tables a transaction (history.Txn), given its invoke and its
// completion (either may be nil, not both). Its sends are sends (with
// the transaction's outcome) and its polls reads, one per partition it
// read, so that every check of sends and reads judges them too.
func (h *History) addTxn(invOp, doneOp *history.Op, inv, done int32) {
	var meant, got *history.TxnInfo
	t := txnOp{inv: inv, done: done, typ: outOpen, commitAt: -1}
	if invOp != nil {
		meant, t.process = invOp.Value.Transaction(), int32(invOp.Process)
	}
	if doneOp != nil {
		got, t.typ = doneOp.Value.Transaction(), outcomeOf(doneOp.Type)
		t.process = int32(doneOp.Process)
	}
	abort := (meant != nil && meant.Abort) || (got != nil && got.Abort)
	switch {
	case abort && t.typ == outOK:
		h.problem(fmt.Sprintf("op %d: a transaction meant to abort completed ok; judged as committed", h.index(done)))
	case abort:
		t.typ = outFail
	}
	t.rc = (got != nil && got.Isolation == history.ReadCommitted) || (meant != nil && meant.Isolation == history.ReadCommitted)
	if got != nil && got.CommitTime != nil {
		t.commitAt = *got.CommitTime
	}
	// The completion's sends carry what came of them; a send the invoke
	// meant and the completion does not list may have been made all the
	// same, and is unknown even in a transaction that committed.
	var mops []history.Mop
	if got != nil {
		mops = got.Mops
	}
	for _, m := range mops {
		if m.F == history.Send && m.MopSend != nil && m.MopSend.Value != "" {
			off := int64(-1)
			if m.Offset != nil {
				off = *m.Offset
			}
			t.sends = append(t.sends, txnRecord{vid: h.valueOf(m.MopSend.Value), part: h.keyOf(m.Key()), offset: off})
		}
	}
	listed := len(t.sends)
	if meant != nil {
		for _, m := range meant.Mops {
			if m.F != history.Send || m.MopSend == nil || m.MopSend.Value == "" {
				continue
			}
			vid := h.valueOf(m.MopSend.Value)
			if !slices.ContainsFunc(t.sends, func(s txnRecord) bool { return s.vid == vid }) {
				t.sends = append(t.sends, txnRecord{vid: vid, part: h.keyOf(m.Key()), offset: -1})
			}
		}
	}
	for i, s := range t.sends {
		typ := t.typ
		if i >= listed && typ == outOK {
			typ = outInfo
		}
		val := h.vals.at(s.vid)
		val.flags |= sentInTxn | sentFlag[typ]
		if val.part < 0 {
			val.part = s.part
		}
		h.addSendOp(newSendOp(inv, done, s.vid, s.part, s.offset, typ))
		if s.offset >= 0 {
			// The offset is a fact whether the transaction committed or
			// not: its records are in the log, aborted ones too.
			h.observe(s.vid, s.part, s.offset, done, true)
		}
	}
	h.addTxnReads(&t, doneOp, mops)
	h.txn.ops = append(h.txn.ops, t)
}

// sentFlag is the value flag of a send's outcome.
var sentFlag = [...]uint16{outOpen: sentOpen, outOK: sentOK, outFail: sentFail, outInfo: sentInfo}

// addTxnReads tables a transaction's polls: what it read of each
// partition is one read, as a consumer's poll is, whatever became of the
// transaction (what a consumer was given is a fact).
func (h *History) addTxnReads(t *txnOp, doneOp *history.Op, mops []history.Mop) {
	type partRead struct {
		part int32
		from int64
		recs []record
		own  bool // recs is a slice of its own, not a poll's
	}
	var parts []partRead
	for _, m := range mops {
		if m.F != history.Poll {
			continue
		}
		for _, pr := range m.Reads {
			part := h.keyOf(pr.Key())
			i := slices.IndexFunc(parts, func(p partRead) bool { return p.part == part })
			if i < 0 {
				from := int64(-1)
				if pr.From != nil {
					from = *pr.From
				}
				parts = append(parts, partRead{part: part, from: from, recs: h.records(nil, part, pr.Records)})
				continue
			}
			if !parts[i].own {
				parts[i].recs, parts[i].own = slices.Clone(parts[i].recs), true
			}
			parts[i].recs = append(parts[i].recs, h.records(nil, part, pr.Records)...)
		}
	}
	seen := readByClient
	if t.rc {
		seen |= readCommitted
	}
	gen := int32(-1)
	if doneOp != nil && doneOp.Value != nil && doneOp.Value.GroupInfo != nil {
		gen = doneOp.Value.Generation
	}
	for _, p := range parts {
		if len(p.recs) == 0 {
			continue
		}
		if t.rc {
			h.txn.rcReads = true
		}
		for _, rec := range p.recs {
			vid := rec.vid
			h.vals.at(vid).readBy(t.done, seen)
			h.observe(vid, p.part, rec.Offset, t.done, false)
			t.reads = append(t.reads, txnRecord{vid: vid, part: p.part, offset: rec.Offset})
		}
		r := readOp{inv: t.inv, done: t.done, part: p.part, hw: -1, recs: h.ids.pack(p.recs, &h.parts[p.part].obs)}
		h.setFrom(&r, p.from)
		h.addPoll(r, gen)
	}
}

// finishTxns runs the passes over the transactions that need the whole
// history: who sent each value, and the offsets a read_committed reader
// may see.
func (h *History) finishTxns() {
	h.txn.writer = slices.Repeat([]int32{-1}, int(h.vals.len()))
	for i := range h.txn.ops {
		for _, s := range h.txn.ops[i].sends {
			h.txn.writer[s.vid] = int32(i)
		}
	}
	if !h.txn.rcReads {
		return
	}
	visible := func(vid1 int32) bool { return vid1 > 0 && !h.mayBeAborted(h.vals.at(vid1-1)) }
	for _, p := range h.parts {
		p.existRC = &offsetSet{}
		p.exist.all(func(off int64) {
			if s := p.obs.lookup(off); s != nil && (visible(s.ackVid) || visible(s.readVid)) {
				p.existRC.add(off)
			}
		})
	}
}

// mayBeAborted: a transaction sent the value and is not known to have
// committed (it did not complete ok, and no read_committed read returned
// the value), so a read_committed reader may never see it.
func (h *History) mayBeAborted(v *valueInfo) bool {
	return v.flags&sentInTxn != 0 && v.flags&(sentOK|readCommitted) == 0
}

// hiddenFromFinal: the final read of p is read_committed and the value
// may belong to a transaction that aborted, so its absence from that read
// says nothing of whether it is in the log.
func (h *History) hiddenFromFinal(v *valueInfo, p *partition) bool {
	return h.mayBeAborted(v) && h.readsCommitted(h.finals.at(p.final))
}

// readsCommitted: the read was read_committed (its operation says so, on
// its completion or its invoke).
func (h *History) readsCommitted(r *readOp) bool {
	// Only an operation kept whole can say so: one with transaction
	// information is.
	for _, pos := range [2]int32{r.done, r.inv} {
		if op := h.ops.whole(pos); op != nil && op.Value.ReadCommitted() {
			return true
		}
	}
	return false
}

// isTxn: the operation at pos is a transaction's.
func (h *History) isTxn(pos int32) bool {
	return h.txn.any && pos >= 0 && h.ops.fn(pos) == history.Txn
}

// txnOf is the transaction that sent vid, nil for none.
func (h *History) txnOf(vid int32) (*txnOp, int32) {
	if int(vid) >= len(h.txn.writer) {
		return nil, -1
	}
	if w := h.txn.writer[vid]; w >= 0 {
		return &h.txn.ops[w], w
	}
	return nil, -1
}

// pos is the operation to cite for a transaction: its completion, or
// its invoke if it never completed.
func (t *txnOp) pos() int32 { return max(t.done, t.inv) }

// describeTxn names a transaction for a human, and for ForbiddenOps,
// which finds "(op N," in a detail.
func (h *History) describeTxn(t *txnOp) string {
	return fmt.Sprintf("the transaction (op %d, process %d)", h.index(t.pos()), t.process)
}

// readerName names a read for a human: a transaction's polls, or a poll
// or final read.
func (h *History) readerName(r *readOp) string {
	iso := history.ReadUncommitted
	if h.readsCommitted(r) {
		iso = history.ReadCommitted
	}
	what := h.ops.fn(r.done)
	if what == history.Txn {
		what = "transaction's poll"
	}
	return fmt.Sprintf("%s %s (op %d, process %d)", iso, what, h.index(r.done), h.readProcess(r))
}

// readCause is the cause of an instance that a read of an uncommitted
// record makes: asked for, by a read_uncommitted reader; else what can
// only happen where the coordinator's record of a transaction, or a
// partition's transaction markers, can be lost with committed records.
func (h *History) readCause(r *readOp) Cause {
	if h.readsCommitted(r) {
		return CommittedTruncation
	}
	return UncommittedRead
}

// noTxns says a transaction check had nothing to judge because the
// history holds no transaction, and reports whether it had none.
func noTxns(h *History, f *finding) bool {
	if len(h.txn.ops) == 0 {
		f.noEvidence("the history holds no transaction")
		return true
	}
	return false
}

// abortedTxnReads adds to aborted-read the values of aborted transactions
// that a client read returned: forbidden from a read_committed reader
// unless committed truncation is permitted (only a lost abort marker lets
// the producer's next commit take the records in), permitted from a
// read_uncommitted one. The transaction's own polls are left to
// precommitted-read. Count is one per value, judged by its strictest
// reader.
func (h *History) abortedTxnReads(f *finding) {
	type firsts struct{ rc, ru *readOp }
	found := map[int32]*firsts{}
	for _, rs := range []*table[readOp]{&h.polls, &h.finals} {
		for i := range rs.len() {
			r := rs.at(i)
			for rec := range h.readRecs(r) {
				vid := rec.vid
				if v := h.vals.at(vid); v.flags&sentInTxn == 0 || !v.onlyFailed() {
					continue
				}
				if t, _ := h.txnOf(vid); t == nil || (t.done >= 0 && r.done == t.done) {
					continue
				}
				fs := found[vid]
				if fs == nil {
					fs = &firsts{}
					found[vid] = fs
				}
				switch rc := h.readsCommitted(r); {
				case rc && fs.rc == nil:
					fs.rc = r
				case !rc && fs.ru == nil:
					fs.ru = r
				}
			}
		}
	}
	vids := make([]int32, 0, len(found))
	for vid := range found {
		vids = append(vids, vid)
	}
	slices.Sort(vids)
	for _, vid := range vids {
		fs := found[vid]
		r := cmp.Or(fs.rc, fs.ru)
		t, _ := h.txnOf(vid)
		f.add(h.readCause(r), fmt.Sprintf("value %q, sent by %s, which aborted, was returned by a %s",
			h.valStr(vid), h.describeTxn(t), h.readerName(r)), h.index(t.pos()), h.index(r.done))
	}
}

// PrecommittedRead finds reads of a transaction's records before it
// could have committed: a transaction's poll of a value it sent itself
// (Jepsen's precommitted-read), or any read that completed before the
// transaction that sent the value asked to commit (history.TxnInfo's
// CommitTime), or before it began where the history does not say when it
// asked: what is certain from real time alone. A read of an aborted
// transaction's value by another is aborted-read's. Count is one per read
// and transaction read from; a read_committed reader's are forbidden
// unless committed truncation is permitted, a read_uncommitted one's are
// what it asked for.
func PrecommittedRead(h *History) Result {
	f := h.newFinding(PrecommittedReadName)
	if noTxns(h, f) {
		return f.result()
	}
	type pair struct{ read, txn int32 }
	found := map[pair]bool{}
	var judged int64
	for _, rs := range []*table[readOp]{&h.polls, &h.finals} {
		for i := range rs.len() {
			r := rs.at(i)
			for rec := range h.readRecs(r) {
				t, w := h.txnOf(rec.vid)
				if t == nil {
					continue
				}
				judged++
				own := t.done >= 0 && r.done == t.done
				bound, asked := t.commitAt, "asked to commit"
				if bound < 0 {
					bound, asked = h.callTime(t.inv), "began"
				}
				if !own && (t.typ == outFail || h.at(r.done) >= bound) {
					continue
				}
				if k := (pair{r.done, w}); !found[k] {
					found[k] = true
					detail := fmt.Sprintf("%s polled %q at offset %d of %s, which it sent itself, before it committed",
						h.describeTxn(t), h.str(rec), rec.Offset, h.key(r.part))
					if !own {
						detail = fmt.Sprintf("a %s returned %q at offset %d of %s, completing at %s, before %s, which sent it, %s (at %s)",
							h.readerName(r), h.str(rec), rec.Offset, h.key(r.part), secs(h.at(r.done)), h.describeTxn(t), asked, secs(bound))
					}
					f.add(h.readCause(r), detail, h.index(t.pos()), h.index(r.done))
				}
			}
		}
	}
	f.stat("transaction-records-read", judged)
	if judged == 0 {
		f.noEvidence("no read returned a record a transaction sent")
	}
	return f.result()
}

// IntPollSkip finds, within one transaction, a poll's record of a
// partition that skipped offsets after the transaction's previous record
// of it, where offsets exist between them that its isolation lets it see
// (a read_committed reader skips aborted transactions' records and the
// markers, which no read returns). Count is the number of such gaps.
func IntPollSkip(h *History) Result {
	f := h.newFinding(IntPollSkipName)
	if noTxns(h, f) {
		return f.result()
	}
	pairs := walkTxnReads(h, func(t *txnOp, r *readOp, a, b txnRecord) {
		if b.offset <= a.offset+1 {
			return
		}
		if n := h.existingFor(r, a.offset+1, b.offset); n > 0 {
			f.add(CommittedTruncation, fmt.Sprintf("%s read offset %d of %s, then offset %d, skipping %d existing offsets",
				h.describeTxn(t), a.offset, h.key(a.part), b.offset, n), h.index(t.pos()))
		}
	})
	if pairs == 0 {
		f.noEvidence("no transaction polled two records of one partition")
	}
	return f.result()
}

// IntNonmonotonicPoll finds, within one transaction, a poll's record of a
// partition at or below the transaction's previous record of it. Count is
// the number of such steps back.
func IntNonmonotonicPoll(h *History) Result {
	f := h.newFinding(IntNonmonotonicPollName)
	if noTxns(h, f) {
		return f.result()
	}
	pairs := walkTxnReads(h, func(t *txnOp, r *readOp, a, b txnRecord) {
		if b.offset <= a.offset {
			f.add(CommittedTruncation, fmt.Sprintf("%s read offset %d of %s (%q), then offset %d (%q)",
				h.describeTxn(t), a.offset, h.key(a.part), h.valStr(a.vid), b.offset, h.valStr(b.vid)), h.index(t.pos()))
		}
	})
	if pairs == 0 {
		f.noEvidence("no transaction polled two records of one partition")
	}
	return f.result()
}

// walkTxnReads calls pair with each two records of a partition one
// transaction read one after the other, and the read they are part of,
// and returns how many pairs there were.
func walkTxnReads(h *History, pair func(t *txnOp, r *readOp, a, b txnRecord)) int64 {
	var n int64
	var r readOp
	for i := range h.txn.ops {
		t := &h.txn.ops[i]
		for j := 1; j < len(t.reads); j++ {
			a, b := t.reads[j-1], t.reads[j]
			if a.part != b.part {
				continue
			}
			n++
			r = readOp{inv: t.inv, done: t.done, part: a.part}
			h.setFrom(&r, 0)
			pair(t, &r, a, b)
		}
	}
	return n
}

// IntSendSkip finds, within one transaction, two consecutive sends to a
// partition that landed with other records between them. Kafka does not
// isolate a transaction's writes: other producers' records land between
// its own as they are sent, so every configuration permits it (Jepsen's
// checker does too). Count is the number of such pairs.
func IntSendSkip(h *History) Result {
	f := h.newFinding(IntSendSkipName)
	if noTxns(h, f) {
		return f.result()
	}
	pairs := walkTxnSends(h, func(t *txnOp, a, b txnRecord) {
		if b.offset <= a.offset+1 {
			return
		}
		if n := h.existing(a.part, a.offset+1, b.offset); n > 0 {
			f.add(InterleavedWrites, fmt.Sprintf("%s sent %q to offset %d of %s, then %q to offset %d, with %d records of others between",
				h.describeTxn(t), h.valStr(a.vid), a.offset, h.key(a.part), h.valStr(b.vid), b.offset, n), h.index(t.pos()))
		}
	})
	if pairs == 0 {
		f.noEvidence("no transaction made two sends to one partition that both got an offset")
	}
	return f.result()
}

// IntNonmonotonicSend finds, within one transaction, a send to a
// partition that landed at or below the transaction's previous send to
// it. A transactional producer is idempotent, so only a truncation of one
// of the two records explains one, as for nonmonotonic-send. Count is the
// number of such pairs.
func IntNonmonotonicSend(h *History) Result {
	f := h.newFinding(IntNonmonotonicSendName)
	if noTxns(h, f) {
		return f.result()
	}
	pairs := walkTxnSends(h, func(t *txnOp, a, b txnRecord) {
		if b.offset > a.offset {
			return
		}
		c, decided := h.explainFor(f, a.vid, b.vid)
		f.addExplained(c, decided, fmt.Sprintf("%s sent %q to offset %d of %s, then %q to offset %d",
			h.describeTxn(t), h.valStr(a.vid), a.offset, h.key(a.part), h.valStr(b.vid), b.offset), h.index(t.pos()))
	})
	if pairs == 0 {
		f.noEvidence("no transaction made two sends to one partition that both got an offset")
	}
	return f.result()
}

// walkTxnSends calls pair with each two sends of one transaction to one
// partition, one after the other among those that got an offset, and
// returns how many pairs there were.
func walkTxnSends(h *History, pair func(t *txnOp, a, b txnRecord)) int64 {
	var n int64
	for i := range h.txn.ops {
		t := &h.txn.ops[i]
		for j, b := range t.sends {
			if b.offset < 0 {
				continue
			}
			for k := j - 1; k >= 0; k-- {
				if a := t.sends[k]; a.part == b.part && a.offset >= 0 {
					n++
					pair(t, a, b)
					break
				}
			}
		}
	}
	return n
}

// Cycle is a dependency cycle among committed transactions (G0, G1c), for
// a report to draw: each step is a transaction and the dependency by
// which it precedes the next; the last precedes the first.
type Cycle struct {
	Steps []CycleStep `json:"steps"`
}

// CycleStep is one transaction of a cycle and how it precedes the next.
type CycleStep struct {
	// Op is the transaction's completion (history.Op.Index), Process its
	// process.
	Op      int64 `json:"op"`
	Process int   `json:"process"`
	// Rel is how it precedes the next transaction: "ww", its record comes
	// before the next one's in a partition's log with no committed
	// transaction's record between them; "wr", the next one polled its
	// record.
	Rel       string `json:"rel"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Value and Offset are its record that the dependency is on.
	Value  string `json:"value"`
	Offset int64  `json:"offset"`
	// Next and NextOffset are, for "ww", the next transaction's record
	// that follows it in the log.
	Next       string `json:"next,omitempty"`
	NextOffset *int64 `json:"next_offset,omitempty"`
}

// Dependency kinds, as the edges of the graph carry them (one edge may
// carry several).
const (
	edgeWW  uint8 = 1 << iota // write-write: one's record precedes the other's in a partition
	edgeWRC                   // write-read, the reader read_committed
	edgeWRU                   // write-read, the reader read_uncommitted
	edgeWR  = edgeWRC | edgeWRU
)

// txnGraph is the dependency graph of the committed transactions, as
// Elle infers it for Kafka: the order of a partition's committed records
// by offset orders their writers (ww), and a transaction that polled
// another's record follows it (wr). Vertices are the transactions (by
// index in txnIndex.ops); the edges out of v are adj[off[v]:off[v+1]],
// with their kinds.
type txnGraph struct {
	committed []bool
	off       []int32
	adj       []int32
	kind      []uint8
	// order is, per partition, the committed transactions' records in
	// offset order: where the ww edges come from, and what explains one.
	order  [][]wwRecord
	ww, wr int // edges with a dependency of each kind
}

type wwRecord struct {
	offset   int64
	txn, vid int32
}

func cmpWW(a, b wwRecord) int {
	return cmp.Or(cmp.Compare(a.offset, b.offset), cmp.Compare(a.txn, b.txn))
}

// graph is the history's dependency graph, built once.
func (h *History) graph() *txnGraph {
	h.txn.graphOnce.Do(func() { h.txn.graph = buildTxnGraph(h) })
	return h.txn.graph
}

// buildTxnGraph builds the graph over the transactions known to have
// committed: those that completed ok, and those of unknown outcome whose
// records a read_committed reader read. An aborted transaction's reads
// and writes order nothing: a read of one is aborted-read's.
func buildTxnGraph(h *History) *txnGraph {
	ops := h.txn.ops
	g := &txnGraph{committed: make([]bool, len(ops)), order: make([][]wwRecord, len(h.parts))}
	for i := range ops {
		t := &ops[i]
		g.committed[i] = t.typ == outOK || (t.typ != outFail && slices.ContainsFunc(t.sends, func(s txnRecord) bool {
			return h.vals.at(s.vid).flags&readCommitted != 0
		}))
	}
	type edge struct {
		from, to int32
		kind     uint8
	}
	var edges []edge
	for i := range ops {
		if !g.committed[i] {
			continue
		}
		for _, s := range ops[i].sends {
			if off, ok := h.offsetOf(s); ok {
				g.order[s.part] = append(g.order[s.part], wwRecord{off, int32(i), s.vid})
			}
		}
	}
	for _, o := range g.order {
		slices.SortFunc(o, cmpWW)
		for j := 1; j < len(o); j++ {
			if o[j].txn != o[j-1].txn {
				edges = append(edges, edge{o[j-1].txn, o[j].txn, edgeWW})
			}
		}
	}
	for i := range ops {
		t := &ops[i]
		if !g.committed[i] {
			continue
		}
		k := edgeWRU
		if t.rc {
			k = edgeWRC
		}
		for _, r := range t.reads {
			if w := h.txn.writer[r.vid]; w >= 0 && w != int32(i) && g.committed[w] {
				edges = append(edges, edge{w, int32(i), k})
			}
		}
	}
	slices.SortFunc(edges, func(a, b edge) int { return cmp.Or(cmp.Compare(a.from, b.from), cmp.Compare(a.to, b.to)) })
	g.off = make([]int32, len(ops)+1)
	for j := 0; j < len(edges); {
		e := edges[j]
		k := e.kind
		for j++; j < len(edges) && edges[j].from == e.from && edges[j].to == e.to; j++ {
			k |= edges[j].kind
		}
		g.adj, g.kind = append(g.adj, e.to), append(g.kind, k)
		g.off[e.from+1]++
		if k&edgeWW != 0 {
			g.ww++
		}
		if k&edgeWR != 0 {
			g.wr++
		}
	}
	for v := range ops {
		g.off[v+1] += g.off[v]
	}
	return g
}

// offsetOf is where a transaction's record is: the offset its send got,
// or else where a read found it.
func (h *History) offsetOf(s txnRecord) (int64, bool) {
	if s.offset >= 0 {
		return s.offset, true
	}
	if v := h.vals.at(s.vid); v.obsPos >= 0 && v.obsPart == s.part {
		return v.obsOff, true
	}
	return -1, false
}

// sccs finds the strongly connected components of the subgraph of the
// edges that carry a kind of mask (Tarjan's algorithm, iterative: the
// graph of a long history is deeper than a recursion should go). It
// returns each vertex's component, -1 for one in no cycle, and the
// components of two or more vertices, each sorted, in the order of their
// first vertex.
func (g *txnGraph) sccs(mask uint8) (comp []int32, groups [][]int32) {
	n := len(g.committed)
	index := make([]int32, n) // the order of the first visit, from 1; 0: not visited
	low := make([]int32, n)
	onStack := make([]bool, n)
	comp = slices.Repeat([]int32{-1}, n)
	var stack []int32
	type frame struct{ v, e int32 }
	var calls []frame
	next := int32(1)
	visit := func(v int32) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		calls = append(calls, frame{v, g.off[v]})
	}
	for s := range int32(n) {
		if index[s] != 0 || g.off[s] == g.off[s+1] {
			continue
		}
		visit(s)
		for len(calls) > 0 {
			fr := &calls[len(calls)-1]
			v := fr.v
			if fr.e < g.off[v+1] {
				e := fr.e
				fr.e++
				if g.kind[e]&mask == 0 {
					continue
				}
				switch w := g.adj[e]; {
				case index[w] == 0:
					visit(w)
				case onStack[w]:
					low[v] = min(low[v], index[w])
				}
				continue
			}
			calls = calls[:len(calls)-1]
			if len(calls) > 0 {
				u := calls[len(calls)-1].v
				low[u] = min(low[u], low[v])
			}
			if low[v] != index[v] {
				continue
			}
			i := len(stack) - 1
			for stack[i] != v {
				i--
			}
			for _, w := range stack[i:] {
				onStack[w] = false
			}
			if len(stack)-i > 1 {
				members := slices.Clone(stack[i:])
				slices.Sort(members)
				groups = append(groups, members)
			}
			stack = stack[:i]
		}
	}
	slices.SortFunc(groups, func(a, b []int32) int { return cmp.Compare(a[0], b[0]) })
	for c, grp := range groups {
		for _, v := range grp {
			comp[v] = int32(c)
		}
	}
	return comp, groups
}

// path is a shortest path (breadth first) from src towards dst over the
// edges that carry a kind of mask, within component c: the vertices from
// src to the last before dst, nil if there is none. With dst == src it is
// a shortest cycle through src.
func (g *txnGraph) path(src, dst int32, mask uint8, comp []int32, c int32) []int32 {
	parent := map[int32]int32{src: -1}
	queue := []int32{src}
	for qi := 0; qi < len(queue); qi++ {
		u := queue[qi]
		for e := g.off[u]; e < g.off[u+1]; e++ {
			w := g.adj[e]
			if g.kind[e]&mask == 0 || comp[w] != c {
				continue
			}
			if w == dst {
				var p []int32
				for x := u; x != -1; x = parent[x] {
					p = append(p, x)
				}
				slices.Reverse(p)
				return p
			}
			if _, seen := parent[w]; !seen {
				parent[w] = u
				queue = append(queue, w)
			}
		}
	}
	return nil
}

// kindOf is the kinds of the edge from a to b, 0 if there is none.
func (g *txnGraph) kindOf(a, b int32) uint8 {
	adj := g.adj[g.off[a]:g.off[a+1]]
	if i, ok := slices.BinarySearch(adj, b); ok {
		return g.kind[int(g.off[a])+i]
	}
	return 0
}

// firstEdgeIn is the first edge (by its tail, then its head) that
// carries a kind of mask and lies within component c.
func (g *txnGraph) firstEdgeIn(grp []int32, mask uint8, comp []int32, c int32) (u, v int32, ok bool) {
	for _, u := range grp {
		for e := g.off[u]; e < g.off[u+1]; e++ {
			if g.kind[e]&mask != 0 && comp[g.adj[e]] == c {
				return u, g.adj[e], true
			}
		}
	}
	return 0, 0, false
}

// addCycle adds one cycle of G0 or G1c to f: the transactions of cyc
// in order, each preceding the next by an edge of mask (a write-read one
// said where there is one), explained for the details and the result's
// cycles if f keeps them.
func (h *History) addCycle(f *finding, g *txnGraph, c Cause, cyc []int32, mask uint8) {
	ops := make([]int64, len(cyc))
	for i, v := range cyc {
		ops[i] = h.index(h.txn.ops[v].pos())
	}
	if !f.keeps(c) {
		f.add(c, "", ops...)
		return
	}
	var cycle Cycle
	says := make([]string, len(cyc))
	for i, a := range cyc {
		b := cyc[(i+1)%len(cyc)]
		st, say := h.cycleStep(g, a, b, g.kindOf(a, b)&mask)
		cycle.Steps, says[i] = append(cycle.Steps, st), say
	}
	f.add(c, fmt.Sprintf("%s cycle of %d transactions: %s", f.name, len(cyc), strings.Join(says, "; ")), ops...)
	if f.perm.allows(c) {
		f.okCycles = append(f.okCycles, cycle)
	} else {
		f.badCycles = append(f.badCycles, cycle)
	}
}

// keeps: an instance of cause c added now would be kept among the
// examples.
func (f *finding) keeps(c Cause) bool {
	if f.perm.allows(c) {
		return len(f.ok.details) < MaxExamples
	}
	return len(f.bad.details) < MaxExamples
}

// cycleStep explains the edge from a to b, of kinds k: by a record of a
// that b polled, where the edge is write-read; else by a record of a and
// the one of b that follows it in a partition.
func (h *History) cycleStep(g *txnGraph, a, b int32, k uint8) (CycleStep, string) {
	ta, tb := &h.txn.ops[a], &h.txn.ops[b]
	st := CycleStep{Op: h.index(ta.pos()), Process: int(ta.process)}
	if k&edgeWR != 0 {
		for _, r := range tb.reads {
			if h.txn.writer[r.vid] != a {
				continue
			}
			key := h.key(r.part)
			st.Rel, st.Topic, st.Partition, st.Value, st.Offset = "wr", key.Topic, key.Partition, h.valStr(r.vid), r.offset
			return st, fmt.Sprintf("%s sent %q to %s (offset %d), which %s polled", h.describeTxn(ta), st.Value, key, r.offset, h.describeTxn(tb))
		}
	}
	for _, s := range ta.sends {
		off, ok := h.offsetOf(s)
		if !ok {
			continue
		}
		o := g.order[s.part]
		j, found := slices.BinarySearchFunc(o, wwRecord{off, a, s.vid}, cmpWW)
		if !found {
			continue
		}
		for j++; j < len(o) && o[j].txn == a; j++ {
		}
		if j == len(o) || o[j].txn != b {
			continue
		}
		key := h.key(s.part)
		next := o[j]
		st.Rel, st.Topic, st.Partition, st.Value, st.Offset = "ww", key.Topic, key.Partition, h.valStr(s.vid), off
		st.Next, st.NextOffset = h.valStr(next.vid), history.Int64(next.offset)
		return st, fmt.Sprintf("%s sent %q to %s (offset %d), before %s sent %q (offset %d)",
			h.describeTxn(ta), st.Value, key, off, h.describeTxn(tb), st.Next, next.offset)
	}
	return st, fmt.Sprintf("%s precedes %s", h.describeTxn(ta), h.describeTxn(tb))
}

// G0 finds cycles of write-write dependencies among committed
// transactions: one per strongly connected component of the write-write
// graph, described by a shortest cycle in it. Kafka does not isolate a
// transaction's writes, so two transactions that send to the same
// partitions at once make them all the time: permitted everywhere, as
// Jepsen's checker permits them; they show the workload's transactions
// overlapped.
func G0(h *History) Result {
	f := h.newFinding(G0Name)
	if noTxns(h, f) {
		return f.result()
	}
	g := h.graph()
	f.stat("ww-edges", int64(g.ww))
	if g.ww == 0 {
		f.noEvidence("no two committed transactions sent to one partition")
		return f.result()
	}
	comp, groups := g.sccs(edgeWW)
	for c, grp := range groups {
		h.addCycle(f, g, InterleavedWrites, g.path(grp[0], grp[0], edgeWW, comp, int32(c)), edgeWW)
	}
	return f.result()
}

// G1c finds cycles of dependencies among committed transactions that hold
// a write-read one, each component of the graph reported once, by a
// shortest cycle, the strictest first:
//
//   - a cycle of write-read dependencies whose readers all read committed:
//     each transaction read another's record after that one committed,
//     and committed after its own reads, so some commit would come before
//     itself. Only a lost record of the coordinator's (a commit marker
//     written again, making a later transaction's records visible early)
//     explains it: forbidden unless committed truncation is permitted;
//   - one that needs a read_uncommitted reader: what it asked for;
//   - one that needs a write-write dependency: Kafka does not isolate
//     writes (a transaction's record may precede another's in the log
//     and be committed after it, so t1 <ww t2 <wr t1 is a correct
//     Kafka's, as Jepsen's checker says), permitted everywhere.
func G1c(h *History) Result {
	f := h.newFinding(G1cName)
	if noTxns(h, f) {
		return f.result()
	}
	g := h.graph()
	f.stat("wr-edges", int64(g.wr))
	if g.wr == 0 {
		f.noEvidence("no committed transaction polled a record another committed transaction sent")
		return f.result()
	}
	reported := make([]bool, len(g.committed))
	seen := func(grp []int32) bool {
		return slices.ContainsFunc(grp, func(v int32) bool { return reported[v] })
	}
	mark := func(grp []int32) {
		for _, v := range grp {
			reported[v] = true
		}
	}
	for _, pass := range []struct {
		mask  uint8
		cause Cause
	}{{edgeWRC, CommittedTruncation}, {edgeWR, UncommittedRead}} {
		comp, groups := g.sccs(pass.mask)
		for c, grp := range groups {
			if !seen(grp) {
				h.addCycle(f, g, pass.cause, g.path(grp[0], grp[0], pass.mask, comp, int32(c)), pass.mask)
			}
			mark(grp)
		}
	}
	all := edgeWW | edgeWR
	comp, groups := g.sccs(all)
	for c, grp := range groups {
		if seen(grp) {
			continue
		}
		// A cycle through a write-read edge: the component has no cycle
		// of write-read edges alone (the passes above would have marked
		// it), so it holds a write-write one.
		u, v, ok := g.firstEdgeIn(grp, edgeWR, comp, int32(c))
		if !ok {
			continue // write-write alone: G0's
		}
		h.addCycle(f, g, InterleavedWrites, append([]int32{u}, g.path(v, u, all, comp, int32(c))...), all)
	}
	return f.result()
}

// txnPermitted adds the transactions' anomalies to the model p, given
// its reasons for the truncations and for a failed send's read. A
// transaction's state is records too (the coordinator's, in its internal
// topic, and the markers it writes to each partition, both acknowledged
// as acks=-1 writes are), so what a read_committed reader must never see
// may show where committed records can be lost: a lost abort marker
// leaves an aborted transaction's records open for the producer's next
// commit to take in, and a coordinator that lost its record of a commit
// completes it again, over a later transaction's records.
func txnPermitted(p map[string]Permission, commit, uncommitted, failedSend reason) {
	interleaved := reason{true, "everywhere: Kafka does not isolate a transaction's writes, it appends each record as it is sent and makes them visible at the commit, so two transactions' records interleave in a partition whatever order they commit in (Jepsen's Kafka checker permits G0 and int-send-skip, and G1c with write-write dependencies, for this reason)"}
	asked := reason{true, "a read_uncommitted reader asked for the records of open and aborted transactions, which are in the log below the high watermark"}
	hidden := func(what string) reason {
		return reason{commit.ok, "a read_committed reader " + what + " only where a transaction's markers or its coordinator's record of it can be lost: " + commit.why}
	}
	p[AbortedReadName] = causes("judged per value: a plain send that failed was never written, while an aborted transaction's records are in the log and its abort marker hides them from read_committed readers", map[Cause]reason{
		UncommittedRead: asked, CommittedTruncation: hidden("sees an aborted transaction's records"), Unexplained: failedSend})
	p[PrecommittedReadName] = causes("judged per read by the reader's isolation", map[Cause]reason{
		UncommittedRead: asked, CommittedTruncation: hidden("sees a transaction's records before it asked to commit")})
	p[IntPollSkipName] = causes("within a transaction a consumer reads a partition in log order, passing over only what its isolation hides (aborted records, markers), unless the log was rewritten under it", map[Cause]reason{
		CommittedTruncation: commit})
	p[IntNonmonotonicPollName] = causes("within a transaction a consumer's reads of a partition only go forward, unless a truncation sends it back", map[Cause]reason{
		CommittedTruncation: commit})
	p[IntSendSkipName] = causes("", map[Cause]reason{InterleavedWrites: interleaved})
	p[IntNonmonotonicSendName] = causes("a truncation rewinds the log end, so a later send can land lower; judged per pair by the records' fate", map[Cause]reason{
		UncommittedTruncation: uncommitted, CommittedTruncation: commit,
		Unexplained: {false, "a transactional producer is idempotent: a broker takes its batches of a partition only in sequence order"}})
	p[G0Name] = causes("cycles of write-write dependencies among committed transactions, ordered by each partition's offsets", map[Cause]reason{
		InterleavedWrites: interleaved})
	p[G1cName] = causes("cycles of write-read (and write-write) dependencies among committed transactions, judged per cycle", map[Cause]reason{
		InterleavedWrites: interleaved, UncommittedRead: asked,
		CommittedTruncation: hidden("makes a cycle of write-read dependencies (each transaction read another's record after it committed, and committed after its own reads, so some commit came before itself)")})
}
