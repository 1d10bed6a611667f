package txn

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/workload"
)

// meanSends is the mean number of sends in a transaction as plan draws
// them, for the pacing of --rate.
const meanSends = 1.875

// producer is one transactional session and the worker that drives it:
// a transaction at a time, its micro-operations in order, then its end.
type producer struct {
	w        *Workload
	i        int
	process  int
	stride   int // added to process when it is replaced
	rng      *rand.Rand
	interval time.Duration
	next     time.Duration // when the next transaction may start
	cl       *workload.Client
	x        *workload.Txn
	ready    bool            // the session has its producer id and epoch
	seq      int             // values this process has sent
	from     map[int32]int64 // where the session's polls of each partition go on from
	// paused by the nemesis (pause-producer): held is the step it takes
	// when unpaused; zombie: another process has taken its place, so it
	// stops once the transaction it is in ends; done: it has stopped.
	paused, zombie, done bool
	held                 func()
}

// plan draws a transaction: one to four micro-operations, each a send of
// a new value to a partition (three in four) or a poll of a partition,
// and whether it aborts (one in five).
func (pr *producer) plan() (mops []history.Mop, parts []int32, abort bool) {
	n := 1 + pr.rng.IntN(4)
	for range n {
		part := pr.rng.Int32N(pr.w.cfg.Partitions)
		k := history.Key{Topic: pr.w.cfg.Topic, Partition: part}
		if pr.rng.IntN(4) == 0 {
			mops = append(mops, history.PollMop())
		} else {
			mops = append(mops, history.SendMop(k, fmt.Sprintf("%d-%d", pr.process, pr.seq)))
			pr.seq++
		}
		parts = append(parts, part)
	}
	return mops, parts, pr.rng.IntN(5) == 0
}

func (pr *producer) wake() {
	w := pr.w
	if pr.hold(pr.wake) {
		return
	}
	if w.over() || pr.zombie {
		pr.done = true
		pr.cl.Close()
		w.stopped()
		return
	}
	env := w.p.Env()
	if now := env.Now(); now < pr.next {
		env.After(w.p.Wait(pr.next-now), pr.wake)
		return
	}
	if !pr.ready {
		pr.cl.InitTxn(pr.x, func(a workload.TxnAnswer) {
			if !a.OK() {
				env.After(failBackoff, pr.wake)
				return
			}
			pr.ready = true
			pr.wake()
		})
		return
	}
	pr.next = env.Now() + pr.interval
	mops, parts, abort := pr.plan()
	inv := history.Op{Process: pr.process, Type: history.Invoke, F: history.Txn,
		Value: &history.Value{TxnInfo: &history.TxnInfo{Mops: mops, Abort: abort, Isolation: history.ReadCommitted}}}
	if !w.p.Record(inv) {
		return
	}
	t := &running{pr: pr, inv: inv, parts: parts, abort: abort}
	for _, m := range mops {
		t.done = append(t.done, copyMop(m))
	}
	t.step(0)
}

func copyMop(m history.Mop) history.Mop {
	if m.MopSend != nil {
		s := *m.MopSend
		m.MopSend = &s
	}
	return m
}

// running is a transaction in progress: its invoke, its micro-operations
// as they complete, and what went wrong, if anything did.
type running struct {
	pr    *producer
	inv   history.Op
	parts []int32
	abort bool
	done  []history.Mop
	// failed is the error of a send that did not succeed: the
	// transaction cannot commit, and is aborted.
	failed string
	sent   bool // a send was attempted: the transaction is open at the coordinator
}

// step runs micro-operation i, then the next, then the end.
func (t *running) step(i int) {
	pr := t.pr
	if pr.hold(func() { t.step(i) }) {
		return
	}
	if i == len(t.done) || t.failed != "" {
		t.end()
		return
	}
	m := &t.done[i]
	k := history.Key{Topic: pr.w.cfg.Topic, Partition: t.parts[i]}
	if m.F == history.Send {
		t.sent = true
		pr.cl.TxnSend(pr.x, k, m.Value, func(o workload.Outcome) {
			if o.Type == history.OK {
				m.Offset = history.Int64(o.Offset)
			} else {
				// The partition's sequence is unknown now: the session
				// starts again after this transaction (TxnSend).
				t.failed = "send " + m.Value + ": " + o.Error
				pr.ready = false
			}
			t.step(i + 1)
		})
		return
	}
	from := pr.from[k.Partition]
	pr.cl.PollCommitted(k, from, func(r workload.Read, err error) {
		if err == nil {
			m.Reads = []history.PartitionRecords{{Topic: k.Topic, Partition: k.Partition, From: history.Int64(from), Records: r.Records}}
			pr.from[k.Partition] = max(r.Next, from)
		}
		t.step(i + 1)
	})
}

// end commits or aborts the transaction and records how it ended.
func (t *running) end() {
	pr := t.pr
	if pr.hold(t.end) {
		return
	}
	env := pr.w.p.Env()
	info := &history.TxnInfo{Mops: t.done, Abort: t.abort, Isolation: history.ReadCommitted}
	complete := func(typ history.Type, why string) {
		done := history.Op{Process: pr.process, Type: typ, F: history.Txn, Value: &history.Value{TxnInfo: info}, Error: why}
		if !pr.w.p.Record(done) {
			return
		}
		if typ == history.Info && !pr.zombie {
			// Jepsen's rule: a process whose state is unknown does not
			// go on; its session starts again, fencing the old one.
			pr.process += pr.stride
			pr.ready = false
			pr.cl.Close()
			pr.cl = pr.w.p.NewClient(pr.w.clientOptions(pr.x.ID))
		}
		pr.wake()
	}
	commit := !t.abort && t.failed == ""
	if !t.sent {
		// Nothing written: nothing to commit or abort (a client asks the
		// coordinator nothing for a transaction without partitions).
		if commit {
			complete(history.OK, "")
		} else {
			complete(history.Fail, t.why())
		}
		return
	}
	if !commit {
		pr.cl.EndTxn(pr.x, false, func(a workload.TxnAnswer) {
			if !a.OK() {
				// Never asked to commit, so never committed; the next
				// incarnation's epoch aborts it if this did not.
				pr.ready = false
			}
			complete(history.Fail, t.why())
		})
		return
	}
	info.CommitTime = history.Int64(int64(env.Now()))
	pr.cl.EndTxn(pr.x, true, func(a workload.TxnAnswer) {
		switch {
		case a.OK():
			complete(history.OK, "")
		case a.Fenced() && !a.Retried:
			// A newer epoch took the id over, aborting what this one
			// had open, or the coordinator aborted it at its timeout.
			// (After an attempt whose answer was lost, the commit may
			// have been carried out before the id moved on: unknown.)
			pr.ready = false
			complete(history.Fail, "EndTxn: "+a.Error())
		default:
			complete(history.Info, "EndTxn: "+a.Error())
		}
	})
}

// why is the error a transaction that did not commit records.
func (t *running) why() string {
	if t.failed != "" {
		return t.failed
	}
	return history.TxnAborted
}
