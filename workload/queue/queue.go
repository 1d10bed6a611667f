package queue

import (
	"fmt"

	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/workload"
)

// Kind is the queue workload, --workload queue, the default.
var Kind = workload.Kind{
	Name: "queue",
	Doc:  "producers send unique values to the topic's partitions; consumers poll them, each partitions of its own (--sub-via assign) or as the members of one consumer group (--sub-via subscribe)",
	New:  func(cfg workload.Config) (workload.Workload, error) { return New(cfg), nil },
}

// Queue is the queue workload of one run: the Generator's workers and,
// under --sub-via subscribe, the consumer group's members in place of its
// consumers.
type Queue struct {
	cfg     workload.Config
	p       *workload.Phases
	gen     *Generator
	running int // workers that have not stopped
	workers []*slot
	members []*groupMember
	// lanesLeft counts the lanes of each session's client not yet
	// stopped.
	lanesLeft map[*workload.Client]int
}

// New is cfg's queue workload.
func New(cfg workload.Config) *Queue { return &Queue{cfg: cfg} }

// Start starts each worker of cfg's Generator: each steps it (Next,
// record, perform, record, Done) until it says stop, with a client of its
// own, and a new one for a process whose state became unknown, unless the
// worker is a lane of a producer session, whose client its lanes share
// and keep (the session's producer takes a new producer id itself after a
// send whose outcome is unknown, while the other lanes' requests go on).
// Under --sub-via subscribe the consumers are group members instead
// (subscribe.go).
func (q *Queue) Start(p *workload.Phases, done func()) {
	q.p = p
	q.gen = NewGenerator(q.cfg)
	q.running = q.gen.Workers()
	q.lanesLeft = map[*workload.Client]int{}
	lanes := q.gen.Lanes()
	var sessions []*workload.Client
	stopped := func() {
		if q.running--; q.running == 0 {
			done()
		}
	}
	for i := range q.gen.Workers() {
		if !q.gen.Producer(i) && q.cfg.Subscribe() {
			q.members = append(q.members, q.startMember(i, stopped))
			continue
		}
		wk := &slot{q: q, i: i, opts: ClientOptionsFor(q.cfg, q.gen, i), done: stopped}
		if q.gen.Producer(i) && lanes > 1 {
			if i%lanes == 0 {
				sessions = append(sessions, p.NewClient(wk.opts))
			}
			wk.cl, wk.lane = sessions[i/lanes], true
			q.lanesLeft[wk.cl]++
		} else {
			wk.cl = p.NewClient(wk.opts)
		}
		q.workers = append(q.workers, wk)
		wk.wake()
	}
}

// Stop closes every worker's client.
func (q *Queue) Stop() {
	for _, wk := range q.workers {
		wk.cl.Close()
	}
	for _, m := range q.members {
		m.cl.Close()
	}
}

// ClientOptionsFor are the options of worker i's client: its id names it
// (a producer by its session) in the brokers' logs, and it waits for an
// answer two seconds longer than the brokers may take to give one.
func ClientOptionsFor(cfg workload.Config, g *Generator, i int) workload.ClientOptions {
	id := fmt.Sprintf("chaos-producer-%d", i/g.Lanes())
	if !g.Producer(i) {
		id = fmt.Sprintf("chaos-consumer-%d", i-g.Producers())
	}
	return workload.ClientOptions{ID: id, Timeout: cfg.ClientTimeout(), ProduceTimeout: cfg.RequestTimeout,
		Retries: cfg.Retries, Idempotent: cfg.Idempotent}
}

// slot is one worker of the generator with its client.
type slot struct {
	q    *Queue
	i    int
	opts workload.ClientOptions
	cl   *workload.Client
	lane bool
	done func()
}

func (wk *slot) wake() {
	q, p := wk.q, wk.q.p
	if p.Stopped() {
		return
	}
	now := p.Env().Now()
	a := q.gen.Next(wk.i, now)
	switch a.Kind {
	case Stop:
		// A session's client is closed by the last of its lanes to stop:
		// the others may still have sends in flight on it.
		if q.lanesLeft[wk.cl]--; q.lanesLeft[wk.cl] <= 0 {
			wk.cl.Close()
		}
		wk.done()
	case Wait:
		p.Env().After(p.Wait(a.Until-now), wk.wake)
	case Invoke:
		if p.Record(a.Op) {
			wk.perform(a.Op)
		}
	}
}

// perform does the invoked operation op with the worker's client.
func (wk *slot) perform(op history.Op) {
	k := op.Key()
	done := func(r workload.Result) { wk.complete(op, r) }
	switch op.F {
	case history.Send:
		wk.cl.Send(k, op.Value.Value, wk.q.cfg.Acks, func(o workload.Outcome) { done(workload.Result{Send: o}) })
	case history.Poll:
		wk.cl.Poll(k, *op.Value.From, func(r workload.Read, err error) { done(workload.Result{Read: r, Err: err}) })
	case history.EndOffset:
		wk.cl.EndOffset(k, func(off int64, err error) { done(workload.Result{Offset: off, Err: err}) })
	default:
		panic("queue: the generator invoked " + op.F)
	}
}

func (wk *slot) complete(op history.Op, r workload.Result) {
	q, p := wk.q, wk.q.p
	done := workload.Complete(op, r)
	if !p.Record(done) {
		return
	}
	c := CompletionOf(done, r)
	q.gen.Done(wk.i, p.Env().Now(), c)
	if c.Type == history.Info && !wk.lane {
		wk.cl.Close()
		wk.cl = p.NewClient(wk.opts)
	}
	wk.wake()
}
