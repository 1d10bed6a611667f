package checker

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/history"
)

// txnSynth shapes a synthetic transactional history.
type txnSynth struct {
	txns       int // about this many transactions
	partitions int
	processes  int
	seed       uint64
	// plant adds, halfway, two transactions that each read what the
	// other sent: a cycle of write-read dependencies, G1c.
	plant bool
	// interleave runs, every 200 transactions, two at once that send to
	// two partitions in opposite orders: a cycle of write-write
	// dependencies, G0, which Kafka permits.
	interleave bool
}

// synthTxn simulates a correct Kafka under the transactional workload:
// transactions of 2 to 5 micro-operations (sends and polls of random
// partitions) one after another, 5% of them aborted by design, each
// ending with a marker per partition it sent to. Consumers read
// committed: a poll returns up to three records from the process's
// position, passing over markers and aborted records, and stops at its
// own transaction's first record (the last stable offset). It ends with
// a read_committed final read and three replica reads of every
// partition.
func synthTxn(c txnSynth) []history.Op {
	rng := rand.New(rand.NewPCG(c.seed, 11))
	const (
		open uint8 = iota
		committed
		aborted
		marker
	)
	type rec struct {
		value string
		state uint8
	}
	logs := make([][]rec, c.partitions)
	pos := map[[2]int]int64{}
	ops := make([]history.Op, 0, 2*c.txns+8*c.partitions)
	var t int64
	emit := func(p int, typ history.Type, f string, v *history.Value, errText string) int64 {
		t += 1 + rng.Int64N(3)
		ops = append(ops, history.Op{Index: int64(len(ops)), Time: t, Process: p, Type: typ, F: f, Value: v, Error: errText})
		return t
	}
	key := func(part int) history.Key { return history.Key{Topic: topic, Partition: int32(part)} }
	seq := 0
	send := func(p, part int, meant, got *[]history.Mop) (int, int64) {
		seq++
		val := fmt.Sprintf("%d-%d", p, seq)
		off := int64(len(logs[part]))
		logs[part] = append(logs[part], rec{val, open})
		*meant = append(*meant, history.SendMop(key(part), val))
		m := history.SendMop(key(part), val)
		m.Offset = history.Int64(off)
		*got = append(*got, m)
		return part, off
	}
	// end commits or aborts what a transaction sent, and writes the
	// markers.
	end := func(sent map[int][]int64, state uint8) {
		for _, part := range slices.Sorted(func(yield func(int) bool) {
			for k := range sent {
				if !yield(k) {
					return
				}
			}
		}) {
			for _, off := range sent[part] {
				logs[part][off].state = state
			}
			logs[part] = append(logs[part], rec{state: marker})
		}
	}
	txnValue := func(mops []history.Mop, abort bool, commitAt int64) *history.Value {
		v := &history.TxnInfo{Mops: mops, Abort: abort, Isolation: history.ReadCommitted}
		if commitAt > 0 {
			v.CommitTime = history.Int64(commitAt)
		}
		return &history.Value{TxnInfo: v}
	}
	// twoAtOnce runs transactions a and b at once, given as the sends
	// and polls each makes in turn.
	twoAtOnce := func(pa, pb int, steps func(meantA, gotA, meantB, gotB *[]history.Mop) (sentA, sentB map[int][]int64)) {
		var ma, ga, mb, gb []history.Mop
		sa, sb := steps(&ma, &ga, &mb, &gb)
		emit(pa, history.Invoke, history.Txn, txnValue(ma, false, 0), "")
		emit(pb, history.Invoke, history.Txn, txnValue(mb, false, 0), "")
		end(sb, committed)
		end(sa, committed)
		ca, cb := t+1, t+2
		t += 2
		emit(pa, history.OK, history.Txn, txnValue(ga, false, ca), "")
		emit(pb, history.OK, history.Txn, txnValue(gb, false, cb), "")
	}
	for i := range c.txns {
		switch {
		case c.plant && i == c.txns/2:
			a, b := c.processes, c.processes+1
			twoAtOnce(a, b, func(ma, ga, mb, gb *[]history.Mop) (map[int][]int64, map[int][]int64) {
				pa, oa := send(a, 0, ma, ga)
				pb, ob := send(b, 1%c.partitions, mb, gb)
				read := func(meant, got *[]history.Mop, part int, off int64) {
					*meant = append(*meant, history.PollMop())
					*got = append(*got, history.Mop{F: history.Poll, Reads: []history.PartitionRecords{{Topic: topic, Partition: int32(part),
						From: history.Int64(off), Records: []history.Record{{Offset: off, Value: logs[part][off].value}}}}})
				}
				read(ma, ga, pb, ob)
				read(mb, gb, pa, oa)
				return map[int][]int64{pa: {oa}}, map[int][]int64{pb: {ob}}
			})
			continue
		case c.interleave && i%200 == 199 && c.partitions > 1:
			a, b := i%c.processes, (i+1)%c.processes
			twoAtOnce(a, b, func(ma, ga, mb, gb *[]history.Mop) (map[int][]int64, map[int][]int64) {
				sa, sb := map[int][]int64{}, map[int][]int64{}
				for _, s := range []struct {
					p, part    int
					meant, got *[]history.Mop
					sent       map[int][]int64
				}{{a, 0, ma, ga, sa}, {b, 0, mb, gb, sb}, {b, 1, mb, gb, sb}, {a, 1, ma, ga, sa}} {
					part, off := send(s.p, s.part, s.meant, s.got)
					s.sent[part] = append(s.sent[part], off)
				}
				return sa, sb
			})
			continue
		}
		p := i % c.processes
		var meant, got []history.Mop
		sent := map[int][]int64{}
		for range 2 + rng.IntN(4) {
			part := rng.IntN(c.partitions)
			if rng.IntN(10) < 6 {
				part, off := send(p, part, &meant, &got)
				sent[part] = append(sent[part], off)
				continue
			}
			meant = append(meant, history.PollMop())
			limit := int64(len(logs[part]))
			if offs := sent[part]; len(offs) > 0 {
				limit = offs[0] // its own open record: the last stable offset
			}
			from := pos[[2]int{p, part}]
			var rs []history.Record
			o := from
			for ; o < limit && len(rs) < 3; o++ {
				if r := logs[part][o]; r.state == committed {
					rs = append(rs, history.Record{Offset: o, Value: r.value})
				}
			}
			pos[[2]int{p, part}] = o
			m := history.Mop{F: history.Poll}
			if len(rs) > 0 {
				m.Reads = []history.PartitionRecords{{Topic: topic, Partition: int32(part), From: history.Int64(from), Records: rs}}
			}
			got = append(got, m)
		}
		abort := rng.IntN(100) < 5
		emit(p, history.Invoke, history.Txn, txnValue(meant, abort, 0), "")
		if abort {
			end(sent, aborted)
			emit(p, history.Fail, history.Txn, txnValue(got, true, 0), history.TxnAborted)
			continue
		}
		end(sent, committed)
		t++
		emit(p, history.OK, history.Txn, txnValue(got, false, t), "")
	}
	final := c.processes + 2
	for part := range c.partitions {
		var committedRecs, all []history.Record
		for o, r := range logs[part] {
			switch r.state {
			case committed:
				committedRecs = append(committedRecs, history.Record{Offset: int64(o), Value: r.value})
				all = append(all, history.Record{Offset: int64(o), Value: r.value})
			case aborted:
				all = append(all, history.Record{Offset: int64(o), Value: r.value})
			}
		}
		hw := history.Int64(int64(len(logs[part])))
		rc := &history.TxnInfo{Isolation: history.ReadCommitted}
		emit(final, history.Invoke, history.FinalRead, &history.Value{Topic: topic, Partition: int32(part), TxnInfo: rc}, "")
		emit(final, history.OK, history.FinalRead, &history.Value{Topic: topic, Partition: int32(part), Records: committedRecs, HW: hw, TxnInfo: rc}, "")
		for br := int32(1); br <= 3; br++ {
			emit(final, history.Invoke, history.ReplicaRead, &history.Value{Topic: topic, Partition: int32(part), Broker: history.Int32(br)}, "")
			emit(final, history.OK, history.ReplicaRead, &history.Value{Topic: topic, Partition: int32(part), Broker: history.Int32(br), Records: all, HW: hw}, "")
		}
	}
	return ops
}

// TestTxnSynthetic: a correct Kafka's transactional history raises no
// alarm, its interleaved transactions are permitted G0 cycles, and a
// cycle of write-read dependencies planted in it is found, alone.
func TestTxnSynthetic(t *testing.T) {
	for _, c := range []struct {
		s       txnSynth
		lin     bool
		g0, g1c int
		planted bool
	}{
		{txnSynth{txns: 2000, partitions: 3, processes: 4, seed: 1}, true, 0, 0, false},
		{txnSynth{txns: 20_000, partitions: 6, processes: 8, seed: 2, interleave: true}, false, 100, 0, false},
		{txnSynth{txns: 20_000, partitions: 6, processes: 8, seed: 3, plant: true}, false, 0, 1, true},
	} {
		ops := synthTxn(c.s)
		start := time.Now()
		res := Check(ops, strict, Options{SkipLinearizability: !c.lin})
		t.Logf("%+v: %d ops, checked in %v", c.s, len(ops), time.Since(start))
		want := []string(nil)
		if c.planted {
			want = []string{G1cName}
		}
		if !slices.Equal(res.Unexpected, want) {
			for _, r := range res.Results {
				if r.Forbidden > 0 {
					t.Errorf("%+v: %s %v", c.s, r.Name, r.Details)
				}
			}
		}
		for _, r := range res.Results {
			if r.Valid == Unknown && r.NotChecked == "" && !r.NotApplicable {
				t.Errorf("%+v: %s unknown: %v", c.s, r.Name, r.Details)
			}
		}
		g0, _ := res.Get(G0Name)
		g1c, _ := res.Get(G1cName)
		if g0.Count != c.g0 || g1c.Count != c.g1c || g1c.Forbidden != c.g1c {
			t.Errorf("%+v: G0 %d, G1c %d (%d forbidden), want %d and %d", c.s, g0.Count, g1c.Count, g1c.Forbidden, c.g0, c.g1c)
		}
		if c.planted && (len(g1c.Cycles) != 1 || len(g1c.Cycles[0].Steps) != 2 || g1c.Cycles[0].Steps[0].Process != c.s.processes) {
			t.Errorf("%+v: the planted cycle is reported as %+v", c.s, g1c.Cycles)
		}
		if r, _ := res.Get(NonlinearizableSendName); c.lin && r.Stats["porcupine-ok"] != 1 {
			t.Errorf("%+v: porcupine %v %v", c.s, r.Stats, r.Details)
		}
	}
}

var bigTxnHistory = sync.OnceValue(func() []history.Op {
	return synthTxn(txnSynth{txns: 100_000, partitions: 8, processes: 16, seed: 1, plant: true})
})

// BenchmarkTxnCycles: G0's and G1c's search (the dependency graph built,
// Tarjan's components of its subgraphs, a shortest cycle in each) on a
// correct history of 100,000 transactions over 8 partitions with one
// cycle planted, indexed beforehand. Target: at most 1 s.
func BenchmarkTxnCycles(b *testing.B) {
	h := NewHistory(bigTxnHistory(), strict)
	b.ResetTimer()
	for b.Loop() {
		h.txn.graph, h.txn.graphOnce = nil, sync.Once{}
		g0, g1c := G0(h), G1c(h)
		if g0.Count != 0 || g1c.Count != 1 || g1c.Forbidden != 1 {
			b.Fatalf("G0 %d, G1c %d (%d forbidden)", g0.Count, g1c.Count, g1c.Forbidden)
		}
	}
	b.ReportMetric(float64(len(h.txn.ops)), "txns")
	b.ReportMetric(float64(len(h.graph().adj)), "edges")
}

// BenchmarkTxnCheck: every checker but porcupine on the same history,
// indexing included.
func BenchmarkTxnCheck(b *testing.B) {
	ops := bigTxnHistory()
	b.ResetTimer()
	for b.Loop() {
		res := Check(ops, strict, Options{SkipLinearizability: true})
		if !slices.Equal(res.Unexpected, []string{G1cName}) {
			b.Fatalf("unexpected %v", res.Unexpected)
		}
	}
	b.ReportMetric(float64(len(ops)), "ops")
}
