package checker

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chaos-isr/chaos/history"
)

// tx is how a test transaction completes: its type, whether its polls
// read committed, whether the workload meant to abort it, and when it
// asked to commit (0: the history does not say).
type tx struct {
	typ      history.Type
	rc       bool
	abort    bool
	commitAt int64
}

var (
	okRC = tx{typ: history.OK, rc: true}
	okRU = tx{typ: history.OK}
)

// parseMops reads a transaction's micro-operations tersely: "s0:a@3"
// sends a to partition 0 and got offset 3 ("s0:a" got none), "p1:4=b,5=c"
// is a poll that read b and c at offsets 4 and 5 of partition 1. It
// returns them as the invoke lists them and as the completion does.
func parseMops(s string) (meant, got []history.Mop) {
	for _, f := range strings.Fields(s) {
		part, _ := strconv.Atoi(f[1:strings.Index(f, ":")])
		k := history.Key{Topic: topic, Partition: int32(part)}
		body := f[strings.Index(f, ":")+1:]
		switch f[0] {
		case 's':
			val, off, hasOff := strings.Cut(body, "@")
			meant = append(meant, history.SendMop(k, val))
			m := history.SendMop(k, val)
			if hasOff {
				o, _ := strconv.ParseInt(off, 10, 64)
				m.Offset = history.Int64(o)
			}
			got = append(got, m)
		case 'p':
			meant = append(meant, history.PollMop())
			got = append(got, history.Mop{F: history.Poll, Reads: []history.PartitionRecords{
				{Topic: topic, Partition: int32(part), Records: recs(strings.ReplaceAll(body, ",", " "))}}})
		}
	}
	return meant, got
}

func isolation(rc bool) string {
	if rc {
		return history.ReadCommitted
	}
	return history.ReadUncommitted
}

// invokeTxn opens a transaction of process p; doneTxn completes it.
// Together they write concurrent transactions.
func (b *hb) invokeTxn(p int, o tx, mops string) int64 {
	meant, _ := parseMops(mops)
	return b.add(p, history.Invoke, history.Txn, &history.Value{TxnInfo: &history.TxnInfo{Mops: meant, Abort: o.abort, Isolation: isolation(o.rc)}}, "")
}

func (b *hb) doneTxn(p int, o tx, mops string) int64 {
	_, got := parseMops(mops)
	v := &history.TxnInfo{Mops: got, Abort: o.abort, Isolation: isolation(o.rc)}
	if o.commitAt > 0 {
		v.CommitTime = history.Int64(o.commitAt)
	}
	errText := ""
	switch {
	case o.abort:
		errText = history.TxnAborted
	case o.typ == history.Info:
		errText = "REQUEST_TIMED_OUT"
	case o.typ == history.Fail:
		errText = "INVALID_PRODUCER_EPOCH"
	}
	return b.add(p, o.typ, history.Txn, &history.Value{TxnInfo: v}, errText)
}

// txn writes a transaction of process p and returns its completion's
// index.
func (b *hb) txn(p int, o tx, mops string) int64 {
	b.invokeTxn(p, o, mops)
	return b.doneTxn(p, o, mops)
}

// pollIso writes an ok poll with an isolation level.
func (b *hb) pollIso(p int, part int32, from, hw int64, rs string, rc bool) int64 {
	b.add(p, history.Invoke, history.Poll, &history.Value{Topic: topic, Partition: part, From: history.Int64(from), TxnInfo: &history.TxnInfo{Isolation: isolation(rc)}}, "")
	return b.add(p, history.OK, history.Poll, &history.Value{Topic: topic, Partition: part, From: history.Int64(from), Records: recs(rs), HW: history.Int64(hw),
		TxnInfo: &history.TxnInfo{Isolation: isolation(rc)}}, "")
}

// finalRC writes an ok read_committed final read of part by process 99,
// and three replica reads of the whole log, aborted records included.
func (b *hb) finalRC(part int32, hw int64, rs, log string) int64 {
	b.add(99, history.Invoke, history.FinalRead, &history.Value{Topic: topic, Partition: part, TxnInfo: &history.TxnInfo{Isolation: history.ReadCommitted}}, "")
	i := b.add(99, history.OK, history.FinalRead, &history.Value{Topic: topic, Partition: part, Records: recs(rs), HW: history.Int64(hw),
		TxnInfo: &history.TxnInfo{Isolation: history.ReadCommitted}}, "")
	for br := int32(1); br <= 3; br++ {
		b.replica(part, br, hw, log)
	}
	return i
}

// checkTxns judges ops under the strictest configuration, by name.
func checkTxns(t *testing.T, ops []history.Op, cfg Config) (*Results, map[string]Result) {
	t.Helper()
	if _, err := history.Pairs(ops); err != nil {
		t.Fatalf("the test history is malformed: %v", err)
	}
	res := Check(ops, cfg, Options{})
	out := map[string]Result{}
	for _, r := range res.Results {
		out[r.Name] = r
	}
	if len(out) != len(Names()) {
		t.Fatalf("%d results for %d anomalies", len(out), len(Names()))
	}
	return res, out
}

// txnWant is what a case expects of one anomaly: found, how many
// instances, how many forbidden.
type txnWant struct{ count, forbidden int }

// TestTxnCheckers runs every checker on hand-built transactional
// histories: each finds its anomaly, with the instances the model
// permits and forbids, and every anomaly not listed in the case stays
// quiet (valid, or not checked for want of evidence).
func TestTxnCheckers(t *testing.T) {
	cases := []struct {
		name  string
		cfg   Config
		build func(b *hb) map[string]txnWant
	}{
		{"clean read_committed", strict, func(b *hb) map[string]txnWant {
			// T1 commits a and b; T2 is aborted by design (c at offset
			// 2, between T1's commit marker and T2's abort marker); T3
			// commits d at 4. A read_committed consumer passes over c,
			// and T4 reads T1's records.
			b.txn(0, okRC, "s0:a@0 s1:b@0")
			b.txn(1, tx{typ: history.Fail, rc: true, abort: true}, "s0:c@2")
			b.pollIso(10, 0, 0, 2, "0=a", true)
			b.txn(2, okRC, "s0:d@4")
			b.pollIso(10, 0, 1, 6, "4=d", true)
			b.txn(3, okRC, "p0:0=a p1:0=b")
			b.finalRC(0, 6, "0=a 4=d", "0=a 2=c 4=d")
			b.finalRC(1, 2, "0=b", "0=b")
			return nil
		}},
		{"read_committed reads an aborted transaction", strict, func(b *hb) map[string]txnWant {
			b.txn(0, okRC, "s0:a@0")
			b.txn(1, tx{typ: history.Fail, rc: true, abort: true}, "s0:c@2")
			b.pollIso(10, 0, 0, 4, "0=a 2=c", true)
			b.finalRC(0, 4, "0=a", "0=a 2=c")
			return map[string]txnWant{AbortedReadName: {1, 1}}
		}},
		{"read_uncommitted reads an aborted transaction", strict, func(b *hb) map[string]txnWant {
			b.txn(0, okRC, "s0:a@0")
			b.txn(1, tx{typ: history.Fail, rc: true, abort: true}, "s0:c@2")
			b.pollIso(10, 0, 0, 4, "0=a 2=c", false)
			b.finalRC(0, 4, "0=a", "0=a 2=c")
			return map[string]txnWant{AbortedReadName: {1, 0}}
		}},
		{"an aborted read under unclean election", Config{Acks: -1, MinInsyncReplicas: 2, ReplicationFactor: 3, Election: "unclean", MaxInFlight: 1}, func(b *hb) map[string]txnWant {
			b.txn(0, tx{typ: history.Fail, rc: true, abort: true}, "s0:c@0")
			b.pollIso(10, 0, 0, 2, "0=c", true)
			b.finalRC(0, 2, "", "0=c")
			return map[string]txnWant{AbortedReadName: {1, 0}}
		}},
		{"a failed plain send read, in a history with transactions", strict, func(b *hb) map[string]txnWant {
			b.txn(0, okRC, "s0:a@0")
			b.sendFail(5, 0, "x")
			b.pollIso(10, 0, 0, 3, "0=a 2=x", false)
			b.finalRC(0, 3, "0=a 2=x", "0=a 2=x")
			return map[string]txnWant{AbortedReadName: {1, 1}}
		}},
		{"a transaction reads its own write", strict, func(b *hb) map[string]txnWant {
			b.txn(0, okRC, "s0:a@0 p0:0=a")
			b.finalRC(0, 2, "0=a", "0=a")
			return map[string]txnWant{PrecommittedReadName: {1, 1}}
		}},
		{"a read before the writer asked to commit", strict, func(b *hb) map[string]txnWant {
			o := okRC
			b.invokeTxn(0, o, "s0:a@0")
			b.pollIso(10, 0, 0, 1, "0=a", true)
			o.commitAt = b.t + 5
			b.doneTxn(0, o, "s0:a@0")
			b.finalRC(0, 2, "0=a", "0=a")
			return map[string]txnWant{PrecommittedReadName: {1, 1}}
		}},
		{"a read_uncommitted read before the commit", strict, func(b *hb) map[string]txnWant {
			o := okRC
			b.invokeTxn(0, o, "s0:a@0")
			b.pollIso(10, 0, 0, 1, "0=a", false)
			o.commitAt = b.t + 5
			b.doneTxn(0, o, "s0:a@0")
			b.finalRC(0, 2, "0=a", "0=a")
			return map[string]txnWant{PrecommittedReadName: {1, 0}}
		}},
		{"a read during the transaction, its commit time unknown", strict, func(b *hb) map[string]txnWant {
			// Read before it completed, but maybe after it asked to
			// commit: nothing is certain.
			b.invokeTxn(0, okRC, "s0:a@0")
			b.pollIso(10, 0, 0, 1, "0=a", true)
			b.doneTxn(0, okRC, "s0:a@0")
			b.finalRC(0, 2, "0=a", "0=a")
			return nil
		}},
		{"a transaction's polls skip a committed record", strict, func(b *hb) map[string]txnWant {
			b.txn(0, okRC, "s0:a@0 s0:b@1 s0:c@2")
			b.txn(1, okRC, "p0:0=a p0:2=c")
			b.finalRC(0, 4, "0=a 1=b 2=c", "0=a 1=b 2=c")
			return map[string]txnWant{IntPollSkipName: {1, 1}}
		}},
		{"a transaction's polls pass over aborted records", strict, func(b *hb) map[string]txnWant {
			b.txn(0, okRC, "s0:a@0")
			b.txn(1, tx{typ: history.Fail, rc: true, abort: true}, "s0:x@2")
			b.txn(2, okRC, "s0:c@4")
			b.txn(3, okRC, "p0:0=a p0:4=c")
			b.finalRC(0, 6, "0=a 4=c", "0=a 2=x 4=c")
			return nil
		}},
		{"a transaction's polls go back", strict, func(b *hb) map[string]txnWant {
			b.txn(0, okRC, "s0:a@0 s0:b@1")
			b.txn(1, okRC, "p0:1=b p0:0=a")
			b.finalRC(0, 3, "0=a 1=b", "0=a 1=b")
			return map[string]txnWant{IntNonmonotonicPollName: {1, 1}}
		}},
		{"interleaved transactions", strict, func(b *hb) map[string]txnWant {
			// T1 and T2 send to partition 0 at once: a, b, c. Nothing is
			// wrong, but T1's sends skip b, and each precedes the other.
			b.invokeTxn(0, okRC, "s0:a@0 s0:c@2")
			b.invokeTxn(1, okRC, "s0:b@1")
			b.doneTxn(1, okRC, "s0:b@1")
			b.doneTxn(0, okRC, "s0:a@0 s0:c@2")
			b.finalRC(0, 5, "0=a 1=b 2=c", "0=a 1=b 2=c")
			return map[string]txnWant{IntSendSkipName: {1, 0}, G0Name: {1, 0}}
		}},
		{"a transaction's sends go back", strict, func(b *hb) map[string]txnWant {
			b.txn(0, okRC, "s0:a@1 s0:b@0")
			b.txn(0, okRC, "s0:c@3")
			b.finalRC(0, 4, "0=b 1=a 3=c", "0=b 1=a 3=c")
			return map[string]txnWant{IntNonmonotonicSendName: {1, 1}}
		}},
		{"each transaction read the other's write", strict, func(b *hb) map[string]txnWant {
			b.invokeTxn(0, okRC, "s0:a@0 p1:0=b")
			b.invokeTxn(1, okRC, "s1:b@0 p0:0=a")
			b.doneTxn(0, okRC, "s0:a@0 p1:0=b")
			b.doneTxn(1, okRC, "s1:b@0 p0:0=a")
			b.finalRC(0, 2, "0=a", "0=a")
			b.finalRC(1, 2, "0=b", "0=b")
			return map[string]txnWant{G1cName: {1, 1}}
		}},
		{"each read the other's write, read_uncommitted", strict, func(b *hb) map[string]txnWant {
			b.invokeTxn(0, okRU, "s0:a@0 p1:0=b")
			b.invokeTxn(1, okRU, "s1:b@0 p0:0=a")
			b.doneTxn(0, okRU, "s0:a@0 p1:0=b")
			b.doneTxn(1, okRU, "s1:b@0 p0:0=a")
			b.finalRC(0, 2, "0=a", "0=a")
			b.finalRC(1, 2, "0=b", "0=b")
			return map[string]txnWant{G1cName: {1, 0}}
		}},
		{"a write-write and a write-read dependency", strict, func(b *hb) map[string]txnWant {
			// T1 sends a, T2 sends b after it and c, commits; T1 reads
			// c and commits: T1 <ww T2 <wr T1, as a correct Kafka does.
			b.invokeTxn(0, okRC, "s0:a@0 p1:0=c")
			b.txn(1, okRC, "s0:b@1 s1:c@0")
			b.doneTxn(0, okRC, "s0:a@0 p1:0=c")
			b.finalRC(0, 4, "0=a 1=b", "0=a 1=b")
			b.finalRC(1, 2, "0=c", "0=c")
			return map[string]txnWant{G1cName: {1, 0}}
		}},
		{"a committed transaction's write is lost", strict, func(b *hb) map[string]txnWant {
			b.txn(0, okRC, "s0:a@0")
			b.txn(0, okRC, "s0:b@2")
			b.finalRC(0, 4, "2=b", "2=b")
			return map[string]txnWant{LostWriteName: {1, 1}, UnseenName: {1, 1}}
		}},
		{"an unknown transaction read uncommitted, then aborted", strict, func(b *hb) map[string]txnWant {
			// Read by a read_uncommitted consumer, missing from the
			// read_committed final read: it may have aborted (its
			// records are all in the replicas' logs).
			b.txn(0, tx{typ: history.Info, rc: true}, "s0:a@0")
			b.pollIso(10, 0, 0, 2, "0=a", false)
			b.finalRC(0, 2, "", "0=a")
			return nil
		}},
		{"a send the completion does not list is unknown", strict, func(b *hb) map[string]txnWant {
			// Committed, yet it does not say b was sent: b may never
			// have been.
			b.invokeTxn(0, okRC, "s0:a s0:b")
			b.doneTxn(0, okRC, "s0:a@0")
			b.finalRC(0, 2, "0=a", "0=a")
			return nil
		}},
		{"a read_committed poll skips a committed record", strict, func(b *hb) map[string]txnWant {
			b.txn(0, okRC, "s0:a@0 s0:b@1")
			b.txn(1, okRC, "s0:c@3")
			b.pollIso(10, 0, 0, 1, "0=a", true)
			b.pollIso(10, 0, 1, 5, "3=c", true)
			b.finalRC(0, 5, "0=a 1=b 3=c", "0=a 1=b 3=c")
			return map[string]txnWant{PollSkipName: {1, 1}}
		}},
		{"a read_committed poll passes over maybe-aborted records", strict, func(b *hb) map[string]txnWant {
			// Offset 1 is an aborted transaction's, 2 one of unknown
			// outcome that only a read_uncommitted consumer read.
			b.txn(0, okRC, "s0:a@0")
			b.txn(1, tx{typ: history.Fail, rc: true, abort: true}, "s0:x@1")
			b.txn(2, tx{typ: history.Info, rc: true}, "s0:y")
			b.pollIso(11, 0, 0, 3, "0=a 1=x 2=y", false)
			b.txn(3, okRC, "s0:c@3")
			b.pollIso(10, 0, 0, 1, "0=a", true)
			b.pollIso(10, 0, 1, 5, "3=c", true)
			b.finalRC(0, 5, "0=a 3=c", "0=a 1=x 2=y 3=c")
			return map[string]txnWant{AbortedReadName: {1, 0}}
		}},
		{"a transaction and then a poll: consecutive reads are poll-skip's", strict, func(b *hb) map[string]txnWant {
			b.txn(0, okRC, "s0:a@0 s0:b@1 s0:c@2 s0:d@3")
			b.txn(10, okRC, "p0:0=a p0:1=b")
			b.pollIso(10, 0, 2, 5, "3=d", true)
			b.finalRC(0, 5, "0=a 1=b 2=c 3=d", "0=a 1=b 2=c 3=d")
			return map[string]txnWant{PollSkipName: {1, 1}}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := &hb{}
			wants := c.build(b)
			_, got := checkTxns(t, b.ops, c.cfg)
			for _, name := range Names() {
				r := got[name]
				w, ok := wants[name]
				if !ok {
					// Quiet: valid, or not checked for want of the
					// evidence it judges (a small history has no monitor
					// samples, no pairs of sends to one partition, ...).
					if r.Valid == Invalid || (r.Valid == Unknown && r.NotChecked == "" && !r.NotApplicable) {
						t.Errorf("%s: %s, want quiet\n  %s", name, r.Valid, strings.Join(r.Details, "\n  "))
					}
					continue
				}
				if r.Valid != Invalid || r.Count != w.count || r.Forbidden != w.forbidden {
					t.Errorf("%s: %s count %d forbidden %d, want count %d forbidden %d\n  %s", name, r.Valid, r.Count, r.Forbidden, w.count, w.forbidden, strings.Join(r.Details, "\n  "))
				}
				if r.Expected != (w.forbidden == 0) {
					t.Errorf("%s: expected %v with %d forbidden", name, r.Expected, w.forbidden)
				}
				if len(r.Details) == 0 || len(r.Examples) == 0 {
					t.Errorf("%s: found without details or examples", name)
				}
			}
		})
	}
}

// TestTxnCycleExplained: a forbidden G1c cycle is reported with each
// transaction and the dependency that leads to the next, in words and as
// data.
func TestTxnCycleExplained(t *testing.T) {
	b := &hb{}
	b.invokeTxn(0, okRC, "s0:a@0 p1:0=b")
	b.invokeTxn(1, okRC, "s1:b@0 p0:0=a")
	t1 := b.doneTxn(0, okRC, "s0:a@0 p1:0=b")
	t2 := b.doneTxn(1, okRC, "s1:b@0 p0:0=a")
	_, got := checkTxns(t, b.ops, strict)
	g := got[G1cName]
	if len(g.Cycles) != 1 || len(g.Cycles[0].Steps) != 2 {
		t.Fatalf("cycles %+v", g.Cycles)
	}
	want := []CycleStep{
		{Op: t1, Process: 0, Rel: "wr", Topic: topic, Partition: 0, Value: "a", Offset: 0},
		{Op: t2, Process: 1, Rel: "wr", Topic: topic, Partition: 1, Value: "b", Offset: 0},
	}
	if !slices.Equal(g.Cycles[0].Steps, want) {
		t.Errorf("steps %+v, want %+v", g.Cycles[0].Steps, want)
	}
	if d := g.Details[0]; !strings.Contains(d, `sent "a" to t-0 (offset 0), which the transaction (op 3, process 1) polled`) || !strings.Contains(d, `sent "b" to t-1 (offset 0), which the transaction (op 2, process 0) polled`) {
		t.Errorf("detail %q", d)
	}
	if ops := g.ForbiddenOps(); !slices.Equal(ops, []int64{t1, t2}) {
		t.Errorf("forbidden ops %v", ops)
	}
	if !slices.Equal(g.Examples, []int64{t1, t2}) {
		t.Errorf("examples %v", g.Examples)
	}

	// A write-write step names both records.
	b = &hb{}
	b.invokeTxn(0, okRC, "s0:a@0 s0:c@2")
	b.txn(1, okRC, "s0:b@1")
	b.doneTxn(0, okRC, "s0:a@0 s0:c@2")
	_, got = checkTxns(t, b.ops, strict)
	g = got[G0Name]
	if len(g.Cycles) != 1 {
		t.Fatalf("G0 cycles %+v", g.Cycles)
	}
	for _, st := range g.Cycles[0].Steps {
		if st.Rel != "ww" || st.Next == "" || st.NextOffset == nil || *st.NextOffset <= st.Offset {
			t.Errorf("ww step %+v", st)
		}
	}
}

// TestQueueHistoryHasNoTxnResults: a history without transactions is
// judged as before: no transaction result, aborted-read's permission
// unchanged, no trace of them in the results' JSON.
func TestQueueHistoryHasNoTxnResults(t *testing.T) {
	b := lostWriteHistory()
	res := Check(b.ops, strict, Options{})
	var names []string
	for _, r := range res.Results {
		names = append(names, r.Name)
	}
	if !slices.Equal(names, queueNames()) {
		t.Fatalf("results %v", names)
	}
	ar, _ := res.Get(AbortedReadName)
	if want := Permitted(strict)[AbortedReadName]; ar.Why != want.Why || len(ar.Permits) != 1 {
		t.Errorf("aborted-read judged by %q %v", ar.Why, ar.Permits)
	}
	data, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"cycles", "transactions", "isolation", string(InterleavedWrites), string(UncommittedRead)} {
		if strings.Contains(string(data), s) {
			t.Errorf("the results of a queue history mention %q", s)
		}
	}
	// A configuration that says transactions ran has them judged even
	// without one in the history: not checked.
	cfg := strict
	cfg.Transactions = true
	res = Check(b.ops, cfg, Options{})
	if len(res.Results) != len(Names()) {
		t.Fatalf("%d results with transactions", len(res.Results))
	}
	if g, _ := res.Get(G1cName); g.NotChecked == "" || g.Valid != Unknown {
		t.Errorf("G1c without transactions: %+v", g)
	}
}

// TestTxnModel: the transactions' permissions, configuration by
// configuration: what read_uncommitted asked for and interleaved writes
// are permitted everywhere; what a read_committed reader must never see,
// only where committed truncation is.
func TestTxnModel(t *testing.T) {
	f2 := strict
	f2.LoseUnsynced, f2.Declared = true, []FaultRun{{Kind: "kill", KilledBrokers: 1}}
	unclean := strict
	unclean.Election = "unclean"
	for _, c := range []struct {
		cfg       Config
		truncates bool
	}{{strict, false}, {f2, true}, {unclean, true}} {
		c.cfg.Transactions = true
		p := Permitted(c.cfg)
		for name, want := range map[string]map[Cause]bool{
			AbortedReadName:         {UncommittedRead: true, CommittedTruncation: c.truncates, Unexplained: false},
			PrecommittedReadName:    {UncommittedRead: true, CommittedTruncation: c.truncates},
			IntPollSkipName:         {CommittedTruncation: c.truncates},
			IntNonmonotonicPollName: {CommittedTruncation: c.truncates},
			IntSendSkipName:         {InterleavedWrites: true},
			IntNonmonotonicSendName: {UncommittedTruncation: c.truncates, CommittedTruncation: c.truncates, Unexplained: false},
			G0Name:                  {InterleavedWrites: true},
			G1cName:                 {InterleavedWrites: true, UncommittedRead: true, CommittedTruncation: c.truncates},
		} {
			got := p[name]
			if len(got.Causes) != len(want) {
				t.Errorf("%+v: %s permits %v, want %v", c.cfg, name, got.Causes, want)
			}
			for cause, ok := range want {
				if got.Causes[cause] != ok {
					t.Errorf("%+v: %s: %s permitted %v, want %v (%s)", c.cfg, name, cause, got.Causes[cause], ok, got.Why)
				}
			}
			if got.Why == "" {
				t.Errorf("%s has no reason", name)
			}
		}
	}
}

// TestTxnDeterministic: judging the same transactional history twice
// gives the same results, byte for byte (no map order leaks into them).
func TestTxnDeterministic(t *testing.T) {
	ops := synthTxn(txnSynth{txns: 3000, partitions: 4, processes: 6, seed: 5, plant: true, interleave: true})
	var first []byte
	for range 3 {
		data, err := json.Marshal(Check(ops, strict, Options{SkipLinearizability: true}))
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = data
		} else if string(data) != string(first) {
			t.Fatal("two judgements of one history differ")
		}
	}
}

// TestTxnForbiddenOps: where one result holds permitted and forbidden
// instances, the operations of the forbidden ones are told apart (what
// a campaign's detection reads): here an aborted transaction read by a
// read_uncommitted consumer first, then another by a read_committed one.
func TestTxnForbiddenOps(t *testing.T) {
	b := &hb{}
	abort := tx{typ: history.Fail, rc: true, abort: true}
	b.txn(0, abort, "s0:x@0")
	b.txn(1, abort, "s1:y@0")
	ru := b.pollIso(10, 0, 0, 2, "0=x", false)
	rc := b.pollIso(11, 1, 0, 2, "0=y", true)
	res, got := checkTxns(t, b.ops, strict)
	ar := got[AbortedReadName]
	if ar.Count != 2 || ar.Forbidden != 1 {
		t.Fatalf("aborted-read %+v", ar)
	}
	if ops := ar.ForbiddenOps(); !slices.Equal(ops, []int64{3, rc}) {
		t.Errorf("forbidden ops %v, want the aborted transaction 3 and the read %d (not %d)", ops, rc, ru)
	}
	if d, ok := FirstDetection(b.ops, res); !ok || d.Anomaly != AbortedReadName || d.Op != 3 {
		t.Errorf("first detection %+v %v", d, ok)
	}
}
