package txn

import (
	"errors"

	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/workload"
)

// consumer polls its partitions in turn outside transactions, each from
// where it left off, read_committed or read_uncommitted.
type consumer struct {
	w         *Workload
	process   int
	stride    int
	committed bool
	cl        *workload.Client
	parts     []int32
	from      []int64
	cur       int
}

func (c *consumer) isolation() string {
	if c.committed {
		return history.ReadCommitted
	}
	return history.ReadUncommitted
}

func (c *consumer) wake() {
	w := c.w
	if w.over() {
		c.cl.Close()
		w.stopped()
		return
	}
	i := c.cur
	c.cur = (c.cur + 1) % len(c.parts)
	k := history.Key{Topic: w.cfg.Topic, Partition: c.parts[i]}
	inv := history.Op{Process: c.process, Type: history.Invoke, F: history.Poll,
		Value: &history.Value{Topic: k.Topic, Partition: k.Partition, From: history.Int64(c.from[i]),
			TxnInfo: &history.TxnInfo{Isolation: c.isolation()}}}
	if !w.p.Record(inv) {
		return
	}
	got := func(r workload.Read, err error) {
		done := workload.Complete(inv, workload.Result{Read: r, Err: err})
		if !w.p.Record(done) {
			return
		}
		var oor *workload.OutOfRangeError
		switch {
		case err == nil:
			c.from[i] = max(r.Next, c.from[i])
		case errors.As(err, &oor):
			c.from[i] = oor.HW
		}
		if err != nil {
			w.p.Env().After(failBackoff, c.wake)
			return
		}
		c.wake()
	}
	if c.committed {
		c.cl.PollCommitted(k, c.from[i], got)
	} else {
		c.cl.Poll(k, c.from[i], got)
	}
}
