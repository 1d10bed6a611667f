package sim

import (
	"slices"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/workload"
)

// await runs the simulated cluster until done says so (a minute at most).
func await(t *testing.T, w *world, what string, done func() bool) {
	t.Helper()
	if !w.c.RunUntil(60_000, done) {
		t.Fatalf("%s: no answer", what)
	}
}

// txnStep runs one transaction step of the client and returns its answer.
func txnStep(t *testing.T, w *world, what string, step func(func(workload.TxnAnswer))) workload.TxnAnswer {
	t.Helper()
	var got *workload.TxnAnswer
	step(func(a workload.TxnAnswer) { got = &a })
	await(t, w, what, func() bool { return got != nil })
	return *got
}

// pollAll reads k from offset 0 with read_committed (committed) or not,
// until the read reaches the end it reports.
func pollAll(t *testing.T, w *world, cl *workload.Client, k history.Key, committed bool) ([]string, int64) {
	t.Helper()
	var got []string
	from := int64(0)
	for range 20 {
		var r *workload.Read
		var rerr error
		done := func(read workload.Read, err error) { r, rerr = &read, err }
		if committed {
			cl.PollCommitted(k, from, done)
		} else {
			cl.Poll(k, from, done)
		}
		await(t, w, "poll", func() bool { return r != nil })
		if rerr != nil {
			t.Fatalf("poll: %v", rerr)
		}
		for _, rec := range r.Records {
			got = append(got, rec.Value)
			from = rec.Offset + 1
		}
		if len(r.Records) == 0 {
			return got, r.HW
		}
	}
	return got, -1
}

// TestClientTransactions: the client's transaction half against the
// simulated cluster: sends in a transaction wait for its end (a
// read_committed poll stops at the last stable offset), a commit shows
// them and an abort hides them from read_committed but not from
// read_uncommitted, and a second session of the same id fences the first
// and aborts what it left open.
func TestClientTransactions(t *testing.T) {
	w, cl, _ := clientWorld(t)
	k := history.Key{Topic: "t", Partition: 0}
	x := workload.NewTxn("tx", 10*time.Second)
	if a := txnStep(t, w, "init", func(d func(workload.TxnAnswer)) { cl.InitTxn(x, d) }); !a.OK() {
		t.Fatalf("init: %s", a.Error())
	}
	send := func(x *workload.Txn, v string) workload.Outcome {
		var got *workload.Outcome
		cl.TxnSend(x, k, v, func(o workload.Outcome) { got = &o })
		await(t, w, "send "+v, func() bool { return got != nil })
		return *got
	}
	for _, v := range []string{"a", "b"} {
		if o := send(x, v); o.Type != history.OK {
			t.Fatalf("send %s: %+v", v, o)
		}
	}
	// warm-up (clientWorld's) is committed; a and b are open.
	if got, lso := pollAll(t, w, cl, k, true); !slices.Equal(got, []string{"warm-up"}) || lso != 1 {
		t.Fatalf("read_committed with the transaction open: %v, end %d; want warm-up, 1", got, lso)
	}
	if a := txnStep(t, w, "commit", func(d func(workload.TxnAnswer)) { cl.EndTxn(x, true, d) }); !a.OK() {
		t.Fatalf("commit: %s", a.Error())
	}
	if o := send(x, "c"); o.Type != history.OK {
		t.Fatalf("send c: %+v", o)
	}
	if a := txnStep(t, w, "abort", func(d func(workload.TxnAnswer)) { cl.EndTxn(x, false, d) }); !a.OK() {
		t.Fatalf("abort: %s", a.Error())
	}
	w.c.Run(500)
	if got, _ := pollAll(t, w, cl, k, true); !slices.Equal(got, []string{"warm-up", "a", "b"}) {
		t.Fatalf("read_committed: %v, want warm-up a b", got)
	}
	if got, _ := pollAll(t, w, cl, k, false); !slices.Equal(got, []string{"warm-up", "a", "b", "c"}) {
		t.Fatalf("read_uncommitted: %v, want warm-up a b c", got)
	}
	// Offsets: warm-up 0, a 1, b 2, commit marker 3, c 4, abort marker 5.
	// A read_committed poll from c reads nothing and moves past both.
	var r *workload.Read
	cl.PollCommitted(k, 4, func(read workload.Read, err error) {
		if err != nil {
			t.Errorf("poll from c: %v", err)
		}
		r = &read
	})
	await(t, w, "poll from c", func() bool { return r != nil })
	if len(r.Records) != 0 || r.Next != 6 {
		t.Fatalf("read_committed from the aborted c: %v, next %d; want nothing, next 6", r.Records, r.Next)
	}
	var whole *workload.Read
	cl.FinalReadCommitted(k, func(read workload.Read, err error) {
		if err != nil {
			t.Errorf("final read: %v", err)
		}
		whole = &read
	})
	await(t, w, "final read", func() bool { return whole != nil })
	var vals []string
	for _, rec := range whole.Records {
		vals = append(vals, rec.Value)
	}
	if !slices.Equal(vals, []string{"warm-up", "a", "b"}) || whole.HW != 6 {
		t.Fatalf("read_committed final read: %v to %d, want warm-up a b to 6", vals, whole.HW)
	}
	// A read_uncommitted one reaches the log's end too, though the last
	// batch is a marker, which holds no record.
	whole = nil
	cl.FinalRead(k, func(read workload.Read, err error) {
		if err != nil {
			t.Errorf("final read: %v", err)
		}
		whole = &read
	})
	await(t, w, "final read", func() bool { return whole != nil })
	if len(whole.Records) != 4 {
		t.Fatalf("read_uncommitted final read: %v, want warm-up a b c", whole.Records)
	}

	// A zombie: the first session leaves d open, a second one of the
	// same id starts; d is aborted and the first session is fenced.
	if o := send(x, "d"); o.Type != history.OK {
		t.Fatalf("send d: %+v", o)
	}
	y := workload.NewTxn("tx", 10*time.Second)
	if a := txnStep(t, w, "second init", func(d func(workload.TxnAnswer)) { cl.InitTxn(y, d) }); !a.OK() {
		t.Fatalf("second init: %s", a.Error())
	}
	if a := txnStep(t, w, "zombie commit", func(d func(workload.TxnAnswer)) { cl.EndTxn(x, true, d) }); a.OK() || !a.Fenced() {
		t.Fatalf("the fenced session's commit: %q, want fenced", a.Error())
	}
	if o := send(x, "zombie"); o.Type == history.OK {
		t.Fatalf("the fenced session's send: %+v", o)
	}
	w.c.Run(500)
	if got, lso := pollAll(t, w, cl, k, true); !slices.Equal(got, []string{"warm-up", "a", "b"}) || lso < 0 {
		t.Fatalf("read_committed after the fencing: %v (end %d), want warm-up a b", got, lso)
	}
}
