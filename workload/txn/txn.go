package txn

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/workload"
)

// Kind is the transactional workload, --workload txn.
var Kind = workload.Kind{
	Name: results.WorkloadTxn,
	Doc:  "transactional producers send and poll in transactions that commit or abort; consumers poll read_committed and read_uncommitted",
	New:  New,
}

// Timeout is the transaction timeout the sessions ask for: a transaction
// left open by a session that lost track of it is aborted by its
// coordinator after this, if no new incarnation aborts it first.
const Timeout = results.TxnTimeout

// failBackoff is how long a worker waits after a failure before it tries
// again.
const failBackoff = 100 * time.Millisecond

// New is cfg's transactional workload, or why it cannot run.
func New(cfg workload.Config) (workload.Workload, error) {
	switch {
	case cfg.Acks != -1:
		return nil, fmt.Errorf("acks %d: transactions write with acks=-1 (all), as Kafka's transactional producers must; give --acks -1", cfg.Acks)
	case cfg.SubVia == results.SubViaSubscribe:
		return nil, errors.New("--sub-via subscribe: its consumers read partitions of their own (assign); a group of its own is not yet supported")
	}
	return &Workload{cfg: cfg}, nil
}

// Workload is one run's transactional workload: its producers (sessions)
// and consumers, each a worker with a client of its own.
type Workload struct {
	cfg       workload.Config
	p         *workload.Phases
	producers []*producer
	// zombies are the paused sessions (pause-producer) of each slot,
	// whose places new processes took.
	zombies   map[int][]*producer
	consumers []*consumer
	running   int
	done      func()
}

// Start starts every worker; done is called once all have stopped at the
// time limit.
func (w *Workload) Start(p *workload.Phases, done func()) {
	w.p, w.done = p, done
	// A consumer beyond the partitions would have none to read.
	consumers := min(w.cfg.Consumers, int(w.cfg.Partitions))
	workers := w.cfg.Concurrency + consumers
	var interval time.Duration
	if w.cfg.Rate > 0 {
		// Rate is of sends; a transaction has meanSends on average.
		interval = time.Duration(float64(w.cfg.Concurrency) * meanSends / w.cfg.Rate * float64(time.Second))
	}
	for i := range w.cfg.Concurrency {
		pr := &producer{w: w, i: i, process: i, stride: workers, interval: interval,
			rng: rand.New(rand.NewPCG(w.cfg.Seed, uint64(i)+1)), x: workload.NewTxn(fmt.Sprintf("chaos-txn-%d", i), Timeout),
			from: map[int32]int64{}}
		pr.cl = p.NewClient(w.clientOptions(fmt.Sprintf("chaos-txn-%d", i)))
		w.producers = append(w.producers, pr)
	}
	for i := range consumers {
		c := &consumer{w: w, process: w.cfg.Concurrency + i, stride: workers, committed: i%2 == 0}
		for part := int32(i); part < w.cfg.Partitions; part += int32(w.cfg.Consumers) {
			c.parts = append(c.parts, part)
		}
		c.from = make([]int64, len(c.parts))
		c.cl = p.NewClient(w.clientOptions(fmt.Sprintf("chaos-consumer-%d", i)))
		w.consumers = append(w.consumers, c)
	}
	w.running = len(w.producers) + len(w.consumers)
	for _, pr := range w.producers {
		pr.wake()
	}
	for _, c := range w.consumers {
		c.wake()
	}
}

func (w *Workload) clientOptions(id string) workload.ClientOptions {
	return workload.ClientOptions{ID: id, Timeout: w.cfg.ClientTimeout(), ProduceTimeout: w.cfg.RequestTimeout,
		Retries: max(w.cfg.Retries, 3)}
}

// stopped is a worker's last word.
func (w *Workload) stopped() {
	if w.running--; w.running == 0 {
		w.done()
	}
}

// over says whether a worker is to stop instead of starting an operation.
func (w *Workload) over() bool {
	return w.p.Stopped() || w.p.Env().Now() >= w.cfg.TimeLimit
}

// Stop closes every worker's client.
func (w *Workload) Stop() {
	for _, pr := range w.producers {
		pr.cl.Close()
	}
	for _, zs := range w.zombies {
		for _, z := range zs {
			z.cl.Close()
		}
	}
	for _, c := range w.consumers {
		c.cl.Close()
	}
}

// Final starts every session once more, each a new incarnation of its
// transactional id, so that a transaction a session lost track of is
// aborted (or, decided, completed) before the partitions are read; then
// it reads every partition read_committed, to the last stable offset.
func (w *Workload) Final(f *workload.Final, next func()) {
	left := len(w.producers)
	reads := func() { w.committedReads(f, next) }
	if left == 0 {
		reads()
		return
	}
	for i := range w.producers {
		cl := f.NewClient(w.clientOptions(fmt.Sprintf("chaos-final-txn-%d", i)))
		x := workload.NewTxn(fmt.Sprintf("chaos-txn-%d", i), Timeout)
		cl.InitTxn(x, func(workload.TxnAnswer) {
			cl.Close()
			if left--; left == 0 {
				reads()
			}
		})
	}
}

// committedReads records a read_committed read of every partition, from
// offset 0 to its last stable offset, one after another.
func (w *Workload) committedReads(f *workload.Final, next func()) {
	cl := f.NewClient(w.clientOptions("chaos-final-committed"))
	proc := w.p.Recorder().NewProcess()
	var read func(part int32)
	read = func(part int32) {
		if part == w.cfg.Partitions || f.Stopped() {
			cl.Close()
			next()
			return
		}
		k := history.Key{Topic: w.cfg.Topic, Partition: part}
		inv := workload.FinalRead{Key: k}.Invoke(proc)
		inv.Value.TxnInfo = &history.TxnInfo{Isolation: history.ReadCommitted}
		if !w.p.Record(inv) {
			return
		}
		cl.FinalReadCommitted(k, func(r workload.Read, err error) {
			if w.p.Record(workload.ReadDone(inv, r, err)) {
				read(part + 1)
			}
		})
	}
	read(0)
}
