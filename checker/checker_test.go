package checker

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/chaos-isr/chaos/history"
)

type want struct {
	valid    Validity
	count    int
	examples []int64 // nil: not checked
}

func bad(count int, examples ...int64) want { return want{Invalid, count, examples} }

// runAll runs every checker on ops, linearizability with acks=-1.
func runAll(t *testing.T, ops []history.Op) map[string]Result {
	t.Helper()
	h := NewHistory(ops, strict)
	if p := h.Problems(); len(p) > 0 {
		t.Fatalf("the test history is malformed: %v", p)
	}
	out := map[string]Result{}
	for _, c := range checkers() {
		r := c(h)
		out[r.Name] = r
	}
	for _, r := range Linearizability(h, Options{}) {
		out[r.Name] = r
	}
	if len(out) != len(queueNames()) {
		t.Fatalf("%d results for %d anomalies", len(out), len(queueNames()))
	}
	return out
}

// TestCheckers runs every checker on hand-built histories: each finds its
// anomaly with the right op indexes, and every checker not listed in the
// case must stay valid (quiet on clean histories and on the anomalies of
// other checkers).
func TestCheckers(t *testing.T) {
	cases := []struct {
		name  string
		build func(b *hb) map[string]want
	}{
		{"clean", func(b *hb) map[string]want {
			b.nemesis("start-kill", "kill")
			b.send(0, 0, "a", 0)
			b.send(1, 0, "b", 1)
			b.poll(10, 0, 0, 2, "0=a 1=b")
			b.send(0, 0, "c", 2)
			b.nemesis("stop-kill", "kill")
			b.poll(10, 0, 2, 3, "2=c")
			b.endOffset(11, 0, 3)
			b.send(1, 1, "d", 0)
			b.final(0, 3, "0=a 1=b 2=c")
			b.final(1, 1, "0=d")
			for br := int32(1); br <= 3; br++ {
				b.replica(0, br, 3, "0=a 1=b 2=c")
				b.replica(1, br, 1, "0=d")
			}
			return nil
		}},
		{"lost write", func(b *hb) map[string]want {
			b.send(0, 0, "a", 0)
			lost := b.send(0, 0, "b", 1)
			b.send(0, 0, "c", 2)
			b.final(0, 3, "0=a 2=c")
			return map[string]want{LostWriteName: bad(1, lost), UnseenName: bad(1, lost)}
		}},
		{"an unknown send never read is not lost", func(b *hb) map[string]want {
			b.send(0, 0, "a", 0)
			b.sendInfo(1, 0, "b")
			b.final(0, 1, "0=a")
			return nil
		}},
		{"an unfinished send never read is not lost", func(b *hb) map[string]want {
			b.send(0, 0, "a", 0)
			b.invokeSend(1, 0, "b")
			b.final(0, 1, "0=a")
			return nil
		}},
		{"an unknown send read later is neither garbage nor aborted", func(b *hb) map[string]want {
			b.send(0, 0, "a", 0)
			b.sendInfo(1, 0, "b")
			b.send(2, 0, "c", 2)
			b.poll(10, 0, 0, 3, "0=a 1=b 2=c")
			b.final(0, 3, "0=a 1=b 2=c")
			return nil
		}},
		{"a record beyond the final read, with a replica unread, is undecided", func(b *hb) map[string]want {
			// With acks=-1 the ack says the HW passed offset 1, so the
			// final read's HW of 1 is also stale. Replica 3 was not
			// read: it may hold b, so b's fate is open.
			b.send(0, 0, "a", 0)
			ok := b.send(0, 0, "b", 1)
			fr := b.final(0, 1, "0=a")
			b.replica(0, 1, 1, "0=a")
			b.replica(0, 2, 1, "0=a")
			return map[string]want{LostWriteName: {Unknown, 0, []int64{}}, UnseenName: {Unknown, 0, []int64{}},
				StaleReadName: bad(1, ok, fr), ReplicaDivergenceName: {Unknown, 0, []int64{}}}
		}},
		{"a committed tail cut off below every replica's end is lost", func(b *hb) map[string]want {
			// Finding 1 of the checker soundness review: acknowledged
			// under acks=-1 and read by a consumer, then gone from the
			// final read and every replica's log, which all end before.
			b.send(0, 0, "a", 0)
			x := b.send(0, 0, "b", 1)
			y := b.send(0, 0, "c", 2)
			p := b.poll(10, 0, 0, 3, "0=a 1=b 2=c")
			fr := b.final(0, 1, "0=a")
			for br := int32(1); br <= 3; br++ {
				b.replica(0, br, 1, "0=a")
			}
			_ = p
			return map[string]want{LostWriteName: bad(2, x, y), StaleReadName: bad(1, y, fr)}
		}},
		{"a polled record cut off at the tail is lost though never acknowledged", func(b *hb) map[string]want {
			b.send(0, 0, "a", 0)
			b.sendInfo(1, 0, "b")
			p := b.poll(10, 0, 0, 2, "0=a 1=b")
			fr := b.final(0, 1, "0=a")
			for br := int32(1); br <= 3; br++ {
				b.replica(0, br, 1, "0=a")
			}
			return map[string]want{LostWriteName: bad(1, p), StaleReadName: bad(1, p, fr)}
		}},
		{"no final read: lost-write cannot be judged", func(b *hb) map[string]want {
			b.send(0, 0, "a", 0)
			b.poll(10, 0, 0, 1, "0=a")
			b.send(0, 0, "b", 1)
			return map[string]want{LostWriteName: {Unknown, 0, []int64{}}, UnseenName: {Unknown, 0, []int64{}}}
		}},
		{"duplicate", func(b *hb) map[string]want {
			a := b.send(0, 0, "a", 0)
			b.send(0, 0, "b", 1)
			fr := b.final(0, 3, "0=a 1=b 2=a")
			return map[string]want{DuplicateName: bad(1, a, fr)}
		}},
		{"duplicate across partitions", func(b *hb) map[string]want {
			a := b.send(0, 0, "a", 0)
			b.final(0, 1, "0=a")
			fr := b.final(1, 1, "0=a")
			return map[string]want{DuplicateName: bad(1, a, fr)}
		}},
		{"inconsistent offsets", func(b *hb) map[string]want {
			b.send(0, 0, "a", 0)
			b.sendInfo(1, 0, "b")
			b.sendInfo(2, 0, "c")
			p := b.poll(10, 0, 0, 2, "0=a 1=b")
			fr := b.final(0, 2, "0=a 1=c")
			// b, read by a consumer, is gone: lost as well.
			return map[string]want{InconsistentOffsetsName: bad(1, p, fr), LostWriteName: bad(1, p)}
		}},
		{"nonmonotonic send", func(b *hb) map[string]want {
			// One process's sends are sequential, so a lower offset for
			// its later send is also a real-time contradiction.
			first := b.send(0, 0, "a", 1)
			second := b.send(0, 0, "b", 0)
			b.final(0, 2, "0=b 1=a")
			return map[string]want{NonmonotonicSendName: bad(1, first, second), NonlinearizableSendName: bad(1, first, second)}
		}},
		{"poll skip between polls", func(b *hb) map[string]want {
			b.send(0, 0, "a", 0)
			b.send(0, 0, "b", 1)
			b.send(0, 0, "c", 2)
			b.poll(10, 0, 0, 3, "0=a")
			p := b.poll(10, 0, 1, 3, "2=c")
			b.final(0, 3, "0=a 1=b 2=c")
			return map[string]want{PollSkipName: bad(1, p)}
		}},
		{"poll skip inside a poll", func(b *hb) map[string]want {
			b.send(0, 0, "a", 0)
			b.send(0, 0, "b", 1)
			b.send(0, 0, "c", 2)
			p := b.poll(10, 0, 0, 3, "0=a 2=c")
			b.final(0, 3, "0=a 1=b 2=c")
			return map[string]want{PollSkipName: bad(1, p)}
		}},
		{"poll skip from the start", func(b *hb) map[string]want {
			b.send(0, 0, "a", 0)
			b.send(0, 0, "b", 1)
			p := b.poll(10, 0, 0, 2, "1=b")
			b.final(0, 2, "0=a 1=b")
			return map[string]want{PollSkipName: bad(1, p)}
		}},
		{"a gap of offsets nobody saw is not a skip", func(b *hb) map[string]want {
			// Real Kafka leaves gaps (transaction markers, compaction).
			b.send(0, 0, "a", 0)
			b.send(0, 0, "b", 5)
			b.poll(10, 0, 0, 6, "0=a 5=b")
			b.final(0, 6, "0=a 5=b")
			return nil
		}},
		{"nonmonotonic poll", func(b *hb) map[string]want {
			b.send(0, 0, "a", 0)
			b.send(0, 0, "b", 1)
			p1 := b.poll(10, 0, 0, 2, "0=a 1=b")
			b.send(0, 0, "c", 2)
			p2 := b.poll(10, 0, 1, 3, "1=b 2=c")
			b.final(0, 3, "0=a 1=b 2=c")
			return map[string]want{NonmonotonicPollName: bad(1, p1, p2)}
		}},
		{"nonmonotonic poll inside a poll", func(b *hb) map[string]want {
			b.send(0, 0, "a", 0)
			b.send(0, 0, "b", 1)
			p := b.poll(10, 0, 0, 2, "0=a 1=b 1=b")
			b.final(0, 2, "0=a 1=b")
			return map[string]want{NonmonotonicPollName: bad(1, p)}
		}},
		{"consumers are tracked apart", func(b *hb) map[string]want {
			b.send(0, 0, "a", 0)
			b.send(0, 0, "b", 1)
			b.poll(10, 0, 0, 2, "0=a 1=b")
			b.poll(11, 0, 0, 2, "0=a")
			b.poll(11, 0, 1, 2, "1=b")
			b.final(0, 2, "0=a 1=b")
			return nil
		}},
		{"aborted read", func(b *hb) map[string]want {
			b.send(0, 0, "a", 0)
			f := b.sendFail(1, 0, "b")
			fr := b.final(0, 2, "0=a 1=b")
			return map[string]want{AbortedReadName: bad(1, f, fr)}
		}},
		{"aborted read by a replica only", func(b *hb) map[string]want {
			b.send(0, 0, "a", 0)
			f := b.sendFail(1, 0, "b")
			rep := b.replica(0, 1, 1, "0=a 1=b")
			b.replica(0, 2, 1, "0=a 1=b")
			b.replica(0, 3, 1, "0=a 1=b")
			b.final(0, 1, "0=a")
			return map[string]want{AbortedReadName: bad(1, f, rep)}
		}},
		{"aborted read cites the client's read, not the replica's before it", func(b *hb) map[string]want {
			b.send(0, 0, "a", 0)
			f := b.sendFail(1, 0, "b")
			for broker := range int32(3) {
				b.replica(0, broker+1, 2, "0=a 1=b")
			}
			fr := b.final(0, 2, "0=a 1=b")
			return map[string]want{AbortedReadName: bad(1, f, fr)}
		}},
		{"a failed send never read is quiet", func(b *hb) map[string]want {
			b.send(0, 0, "a", 0)
			b.sendFail(1, 0, "b")
			b.final(0, 1, "0=a")
			return nil
		}},
		{"garbage read", func(b *hb) map[string]want {
			b.send(0, 0, "a", 0)
			fr := b.final(0, 2, "0=a 1=zz")
			return map[string]want{GarbageReadName: bad(1, fr)}
		}},
		{"garbage in a replica", func(b *hb) map[string]want {
			b.send(0, 0, "a", 0)
			b.final(0, 1, "0=a")
			b.replica(0, 1, 1, "0=a")
			r2 := b.replica(0, 2, 1, "0=a 1=zz")
			b.replica(0, 3, 1, "0=a")
			return map[string]want{GarbageReadName: bad(1, r2)}
		}},
		{"replica divergence", func(b *hb) map[string]want {
			b.send(0, 0, "a", 0)
			b.send(0, 0, "b", 1)
			b.final(0, 2, "0=a 1=b")
			r1 := b.replica(0, 1, 2, "0=a 1=b")
			r2 := b.replica(0, 2, 2, "0=a 1=b")
			r3 := b.replica(0, 3, 2, "0=a")
			return map[string]want{ReplicaDivergenceName: bad(2, r1, r2, r3)}
		}},
		{"an uncommitted replica tail is not divergence", func(b *hb) map[string]want {
			b.send(0, 0, "a", 0)
			b.send(0, 0, "b", 1)
			b.sendInfo(1, 0, "c")
			b.final(0, 2, "0=a 1=b")
			b.replica(0, 1, 2, "0=a 1=b")
			b.replica(0, 2, 3, "0=a 1=b 2=c")
			b.replica(0, 3, 2, "0=a 1=b")
			return nil
		}},
		{"nonlinearizable send", func(b *hb) map[string]want {
			first := b.send(0, 0, "a", 1)
			second := b.send(1, 0, "b", 0)
			b.final(0, 2, "0=b 1=a")
			return map[string]want{NonlinearizableSendName: bad(1, first, second)}
		}},
		{"concurrent sends may take offsets in either order", func(b *hb) map[string]want {
			b.invokeSend(0, 0, "a")
			b.invokeSend(1, 0, "b")
			b.doneSend(0, 0, "a", history.OK, 1)
			b.doneSend(1, 0, "b", history.OK, 0)
			b.final(0, 2, "0=b 1=a")
			return nil
		}},
		{"two acks at one offset", func(b *hb) map[string]want {
			b.invokeSend(0, 0, "a")
			b.invokeSend(1, 0, "b")
			a := b.doneSend(0, 0, "a", history.OK, 0)
			bb := b.doneSend(1, 0, "b", history.OK, 0)
			b.final(0, 1, "0=b")
			return map[string]want{LostWriteName: bad(1, a), UnseenName: bad(1, a), NonlinearizableSendName: bad(1, a, bb)}
		}},
		{"stale end offset", func(b *hb) map[string]want {
			a := b.send(0, 0, "a", 0)
			e := b.endOffset(10, 0, 0)
			b.final(0, 1, "0=a")
			return map[string]want{StaleReadName: bad(1, a, e)}
		}},
		{"stale poll after a fresher read", func(b *hb) map[string]want {
			b.sendInfo(0, 0, "a")
			b.sendInfo(1, 0, "b")
			e := b.endOffset(11, 0, 2)
			p := b.poll(10, 0, 0, 1, "0=a")
			b.poll(10, 0, 1, 2, "1=b")
			b.final(0, 2, "0=a 1=b")
			return map[string]want{StaleReadName: bad(1, e, p)}
		}},
		{"a read from the future", func(b *hb) map[string]want {
			p := b.poll(10, 0, 0, 1, "0=a")
			a := b.send(0, 0, "a", 0)
			b.final(0, 1, "0=a")
			return map[string]want{NonlinearizableSendName: bad(1, p, a)}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := &hb{}
			wants := c.build(b)
			got := runAll(t, b.ops)
			for _, name := range queueNames() {
				w, ok := wants[name]
				r := got[name]
				if !ok {
					// Quiet: valid, or not checked for lack of the
					// evidence it judges (a small history has no
					// replica reads, no polls, ...).
					w = want{Valid, 0, []int64{}}
					if r.NotChecked != "" {
						w.valid = Unknown
					}
				}
				if r.Valid != w.valid || r.Count != w.count {
					t.Errorf("%s: valid %s count %d, want %s count %d\n  details: %s", name, r.Valid, r.Count, w.valid, w.count, strings.Join(r.Details, "\n  "))
					continue
				}
				if w.examples != nil {
					ex := slices.Clone(w.examples)
					slices.Sort(ex)
					if !slices.Equal(r.Examples, ex) && !(len(ex) == 0 && len(r.Examples) == 0) {
						t.Errorf("%s: examples %v, want %v\n  details: %s", name, r.Examples, ex, strings.Join(r.Details, "\n  "))
					}
				}
				if r.Valid == Invalid && len(r.Details) == 0 {
					t.Errorf("%s: invalid without details", name)
				}
			}
		})
	}
}

func TestLostWriteDetailNamesTheValue(t *testing.T) {
	b := &hb{}
	b.send(0, 0, "0-1", 0)
	ok := b.send(0, 0, "0-17", 1)
	b.send(0, 0, "0-2", 2)
	fr := b.final(0, 3, "0=0-1 2=0-2")
	r := LostWrite(NewHistory(b.ops, strict))
	want := `value "0-17" acknowledged at offset 1 (op 3) is missing from the final read of t-0 (op 7), which reached offset 3`
	if len(r.Details) != 1 || r.Details[0] != want {
		t.Fatalf("details %q, want %q (ok %d, final %d)", r.Details, want, ok, fr)
	}
}

func TestUnknownOutcomesNeverLost(t *testing.T) {
	// Many unknown sends, none read, with a final read past all of them:
	// no lost-write, no unseen, whatever their number.
	b := &hb{}
	b.send(0, 0, "a", 0)
	for i := range 50 {
		b.sendInfo(100+i, 0, "u"+string(rune('A'+i%26))+string(rune('a'+i/26)))
	}
	b.invokeSend(1, 0, "open")
	b.final(0, 40, "0=a")
	h := NewHistory(b.ops, strict)
	for _, r := range []Result{LostWrite(h), Unseen(h), AbortedRead(h), GarbageRead(h)} {
		if r.Valid != Valid {
			t.Errorf("%s: %s %v", r.Name, r.Valid, r.Details)
		}
	}
}

func TestMalformedHistoriesAreWorkedAround(t *testing.T) {
	b := &hb{}
	b.add(0, history.OK, history.Send, &history.Value{Topic: topic, Value: "a", Offset: history.Int64(0)}, "")
	b.invokeSend(1, 0, "b")
	b.invokeSend(1, 0, "c") // b is now unknown
	b.doneSend(1, 0, "c", history.OK, 1)
	b.final(0, 2, "0=a 1=c")
	h := NewHistory(b.ops, strict)
	if len(h.Problems()) != 2 {
		t.Fatalf("problems %q", h.Problems())
	}
	if r := LostWrite(h); r.Valid != Valid {
		t.Fatalf("lost-write %s %v", r.Valid, r.Details)
	}
}

func TestOpCounts(t *testing.T) {
	b := &hb{}
	b.send(0, 0, "a", 0)
	b.sendFail(1, 0, "b")
	b.sendInfo(2, 0, "c")
	b.invokeSend(3, 0, "d")
	b.nemesis("start-kill", "kill")
	res := Check(b.ops, Config{Acks: -1}, Options{})
	c := res.Ops[history.Send]
	if c.Invoke != 4 || c.OK != 1 || c.Fail != 1 || c.Info != 1 || c.Open != 1 {
		t.Fatalf("send counts %+v", c)
	}
	if c := res.Ops["start-kill"]; c.Info != 1 {
		t.Fatalf("nemesis counts %+v", c)
	}
}

// TestOffsetTable: offsets far from zero stay dense, outliers go to the
// overflow map, and a slot moves into the pages when they grow over it, so
// an offset never has two slots.
func TestOffsetTable(t *testing.T) {
	var tb offsetTable
	tb.get(3000).readVid = 1
	out := tb.get(5000)
	if i, ok := tb.overflow[5000]; !ok || &tb.spare[i] != out {
		t.Fatal("a far offset did not go to the overflow map")
	}
	out.readVid = 7
	tb.get(1 << 40).readVid = 9
	for off := int64(3001); off < 4000; off++ {
		tb.get(off)
	}
	tb.get(2990) // grows down
	tb.get(5001) // grows over 5000
	if _, ok := tb.overflow[5000]; ok {
		t.Fatalf("5000 is still in the overflow map")
	}
	if s := tb.lookup(5000); s == nil || s.readVid != 7 || s != tb.lookupDense(5000) {
		t.Fatalf("slot of 5000 %+v, overflow %v", s, tb.overflow)
	}
	if s := tb.lookup(3000); s == nil || s.readVid != 1 || tb.lo != 2990 {
		t.Fatalf("slot of 3000 %+v, lo %d", s, tb.lo)
	}
	if s := tb.lookup(1 << 40); s == nil || s.readVid != 9 || tb.span > 1<<20 || len(tb.pages) > 1<<20/pageSlots {
		t.Fatalf("outlier %+v, span %d in %d pages", s, tb.span, len(tb.pages))
	}
}

// TestLogsNotStartingAtZero: a log whose start was deleted (real Kafka
// with retention) is judged the same way; b, acknowledged at 1000001, was
// overwritten by the unknown send x, so it is lost, and the consumer that
// jumped from 1000000 to 1000002 skipped an existing offset.
func TestLogsNotStartingAtZero(t *testing.T) {
	const base = 1_000_000
	b := &hb{}
	b.send(0, 0, "a", base)
	lost := b.send(0, 0, "b", base+1)
	b.send(0, 0, "c", base+2)
	b.sendInfo(1, 0, "x")
	b.poll(10, 0, base, base+2, "1000000=a")
	p := b.poll(10, 0, base+1, base+3, "1000002=c")
	b.final(0, base+3, "1000000=a 1000001=x 1000002=c")
	h := NewHistory(b.ops, strict)
	for _, c := range []struct {
		r    Result
		want []int64
	}{
		{PollSkip(h), []int64{p}},
		{LostWrite(h), []int64{lost}},
		{InconsistentOffsets(h), nil},
	} {
		if !slices.Equal(c.r.Examples, c.want) {
			t.Errorf("%s: examples %v, want %v (%v)", c.r.Name, c.r.Examples, c.want, c.r.Details)
		}
	}
}

func TestLostWritesListsEveryLoss(t *testing.T) {
	// More losses than MaxExamples, on two partitions, one value
	// acknowledged twice (lost once), one send beyond the final read (not
	// judged) and one info send (never lost): LostWrites lists exactly the
	// values LostWrite counts, with where and when they were acknowledged.
	b := &hb{}
	var acks []int64
	for i := range MaxExamples + 5 {
		acks = append(acks, b.send(0, int32(i%2), fmt.Sprintf("v%d", i), int64(i/2)))
	}
	b.send(1, 0, "v0", 40) // v0 again: one lost value
	b.send(1, 1, "late", 50)
	b.sendInfo(2, 0, "maybe")
	b.final(0, 41, "")
	b.final(1, 41, "")
	h := NewHistory(b.ops, strict)
	lost := LostWrites(h)
	if r := LostWrite(h); r.Count != len(lost) || len(lost) != MaxExamples+5 {
		t.Fatalf("LostWrites %d, LostWrite counts %d, want %d", len(lost), r.Count, MaxExamples+5)
	}
	for i, l := range lost {
		want := fmt.Sprintf("v%d", i)
		if l.Value != want || l.Partition != int32(i%2) || l.Offset != int64(i/2) || l.Op != acks[i] ||
			l.Time != b.ops[acks[i]].Time || l.Topic != topic || l.Reach != 41 {
			t.Fatalf("lost[%d] = %+v, want %s at %d of partition %d acked by op %d", i, l, want, i/2, i%2, acks[i])
		}
	}
}

// TestCorruptReadIsGarbage: a read that got records that do not decode (a
// bad checksum) is corruption found, not just a failed read.
func TestCorruptReadIsGarbage(t *testing.T) {
	b := &hb{}
	b.send(0, 0, "a", 0)
	b.invokeRead(10, history.Poll, 0, 0)
	bad := b.add(10, history.Fail, history.Poll, &history.Value{Topic: topic, From: history.Int64(0)},
		history.CorruptRecords+": the records do not decode: batch at offset 0: CRC-32C 1, the header says 2")
	b.final(0, 1, "0=a")
	r := GarbageRead(NewHistory(b.ops, strict))
	if r.Valid != Invalid || r.Count != 1 || r.Forbidden != 1 || !slices.Contains(r.Examples, bad) {
		t.Fatalf("garbage-read %+v", r)
	}
}

// TestNonmonotonicSendOrdersASessionByInvocation: the lanes of a
// producer session (several requests in flight) are processes of their
// own, and their sends complete in any order; the session's order is the
// order its sends were invoked in, which is the order of their sequence
// numbers.
func TestNonmonotonicSendOrdersASessionByInvocation(t *testing.T) {
	session := func(b *hb, first, second int64) {
		b.invokeSend(0, 0, "0-1")
		b.invokeSend(1, 0, "1-1")
		b.doneSend(1, 0, "1-1", history.OK, second)
		b.doneSend(0, 0, "0-1", history.OK, first)
		for i := range b.ops {
			b.ops[i].Value.Producer = new(int32(3))
		}
		recs := "0=0-1 1=1-1"
		if first > second {
			recs = "0=1-1 1=0-1"
		}
		b.final(0, 2, recs)
	}
	cfg := Config{Acks: -1, MinInsyncReplicas: 2, ReplicationFactor: 3, MaxInFlight: 2, Idempotent: true}
	var b hb
	session(&b, 0, 1)
	if r := NonmonotonicSend(NewHistory(b.ops, cfg)); r.Count != 0 {
		t.Fatalf("in order, completed out of order: %+v", r)
	}
	b = hb{}
	session(&b, 1, 0)
	r := NonmonotonicSend(NewHistory(b.ops, cfg))
	if r.Count != 1 || !strings.Contains(strings.Join(r.Details, "\n"), "producer 3 (process 1)'s send of \"1-1\"") {
		t.Fatalf("the later invocation landed first: %+v, want one instance naming producer 3", r)
	}
}

// TestUnsupportedCheck: a check the system under test gives no evidence
// for by design is not checked and left out of the verdict; without the
// declaration, the same history's missing replica reads make it unknown;
// and a check cannot be declared away in part: replica reads present are
// not judged either.
func TestUnsupportedCheck(t *testing.T) {
	b := &hb{}
	b.healthy(0)
	b.send(0, 0, "a", 0)
	b.send(0, 0, "b", 1)
	b.poll(10, 0, 0, 2, "0=a 1=b")
	b.final(0, 2, "0=a 1=b")
	b.healthy(0)
	if res := Check(b.ops, strict, Options{}); res.Valid != Unknown {
		t.Fatalf("without replica reads and no declaration: %s, want unknown", res.Valid)
	}
	cfg := strict
	cfg.Unsupported = map[string]string{ReplicaDivergenceName: "the brokers refuse replica reads"}
	res := Check(b.ops, cfg, Options{})
	if res.Valid != Valid {
		t.Fatalf("declared unsupported: %s, want valid; %v", res.Valid, res.Results)
	}
	r, _ := res.Get(ReplicaDivergenceName)
	if !r.Unsupported || r.Valid != Unknown || r.NotChecked != "the brokers refuse replica reads" {
		t.Fatalf("replica-divergence %+v", r)
	}
	if !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "replica-divergence not checked") }) {
		t.Fatalf("notes %q do not say what was not checked", res.Notes)
	}
	// A lost write is still found: only the declared check is left out.
	lost := &hb{}
	lost.send(0, 0, "a", 0)
	lost.send(0, 0, "b", 1)
	lost.send(0, 0, "c", 2)
	lost.final(0, 3, "0=a 2=c")
	if res := Check(lost.ops, cfg, Options{}); res.Valid != Invalid {
		t.Fatalf("a lost write with replica-divergence unsupported: %s, want invalid", res.Valid)
	}
	cfg.Unsupported = map[string]string{"replica-divergance": "typo"}
	if err := cfg.Validate(); err == nil {
		t.Fatal("an unknown check name was accepted")
	}
}

// TestOffsetTableAgainstMap drives offset tables with random offsets (runs
// going up and down, gaps, outliers, both ends of int64) and holds each to
// a map: every offset keeps one slot whatever grows around it, lookup
// finds every offset got, eachInOrder gives them all in order, and
// the pages cover no more than the density bound lets them.
func TestOffsetTableAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 29))
	for round := range 300 {
		var tb offsetTable
		want := map[int64]int32{}
		at := int64(rng.IntN(1 << 20))
		if round%10 == 0 {
			at = math.MinInt64 + int64(rng.IntN(5000))
		} else if round%10 == 1 {
			at = math.MaxInt64 - int64(rng.IntN(5000))
		}
		for i := range 1 + rng.IntN(6000) {
			switch r := rng.IntN(100); {
			case r < 70:
				at++
			case r < 80:
				at -= int64(rng.IntN(3 * pageSlots))
			case r < 90:
				at += int64(rng.IntN(3 * pageSlots))
			case r < 95:
				at = int64(rng.Uint64())
			default:
				at = []int64{math.MinInt64, math.MaxInt64, -1, 0}[rng.IntN(4)]
			}
			// A covered offset never got has a zero slot.
			if s := tb.lookup(at); (s == nil && want[at] != 0) || (s != nil && s.readVid != want[at]) {
				t.Fatalf("round %d: lookup(%d) = %v before get, map has %d", round, at, s, want[at])
			}
			s := tb.get(at)
			if s.readVid != want[at] {
				t.Fatalf("round %d: slot of %d holds %d, want %d", round, at, s.readVid, want[at])
			}
			s.readVid = int32(i + 1)
			want[at] = int32(i + 1)
		}
		for off, v := range want {
			if s := tb.lookup(off); s == nil || s.readVid != v {
				t.Fatalf("round %d: slot of %d is %+v, want %d", round, off, s, v)
			}
		}
		var got []int64
		tb.eachInOrder(func(off int64, s *slot) {
			if s.readVid != 0 {
				got = append(got, off)
			}
		})
		offs := slices.Sorted(maps.Keys(want))
		if !slices.Equal(got, offs) {
			t.Fatalf("round %d: eachInOrder gave %d offsets, want %d (or out of order)", round, len(got), len(offs))
		}
		if max := uint64(4*tb.n + 1024); tb.span > max || uint64(len(tb.pages)) > max/pageSlots+2 {
			t.Fatalf("round %d: span %d in %d pages for %d observations", round, tb.span, len(tb.pages), tb.n)
		}
	}
}
