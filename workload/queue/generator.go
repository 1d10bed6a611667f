package queue

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/workload"
)

// Generator decides what each worker of a workload does next: which
// operation, on which partition, with which value, and when. It does no
// I/O and reads no clock: time is what the caller says it is, and
// randomness comes from the seed alone, so the same seed and the same
// sequence of calls give the same decisions whether goroutines on the wall
// clock or one event loop on a virtual clock drive it.
//
// A worker is a stable slot, a producer (0 to Producers()-1) or a
// consumer (from Producers() on); its process is the id the history
// records, which changes when an operation's outcome is unknown (Jepsen's
// rule: a process in an unknown state does not go on). A producer session
// with MaxInFlight K > 1 is K producer slots, its lanes: each keeps one
// request in flight, as a process does one operation at a time, and they
// share the session's client (its producer id, sequence numbers and
// connections), so that the session has up to K. A worker does one operation at a
// time: Next, then Done with how it ended, then Next again. Calls for
// different workers may come from different goroutines.
type Generator struct {
	topic          string
	partitions     int32
	limit          time.Duration
	endOffsetEvery int
	lanes          int
	producers      int
	workers        []*worker
}

// ActionKind says what a worker is to do.
type ActionKind int

const (
	// Invoke: record Action.Op and perform it, then report it to Done.
	Invoke ActionKind = iota
	// Wait: nothing until Action.Until, then ask again.
	Wait
	// Stop: the worker is done for good.
	Stop
)

// Action is one decision of the generator.
type Action struct {
	Kind ActionKind
	// Until is when a Wait ends, on the caller's clock.
	Until time.Duration
	// Op is an Invoke's invocation, as the history records it: process,
	// function and arguments.
	Op history.Op
}

// CompletionOf is what the generator needs to know of the operation
// whose completion the history records as done, its call having returned
// r.
func CompletionOf(done history.Op, r workload.Result) Completion {
	c := Completion{Type: done.Type}
	switch {
	case done.F == history.Poll && done.Type == history.OK:
		c.Records = r.Read.Records
	case done.Type == history.Fail && done.F != history.Send:
		var oor *workload.OutOfRangeError
		if errors.As(r.Err, &oor) {
			c.OutOfRange, c.HW = true, oor.HW
		}
	}
	return c
}

// Completion is what the generator needs to know of how an operation
// ended.
type Completion struct {
	Type history.Type
	// Records are what a poll read, in offset order.
	Records []history.Record
	// OutOfRange says a poll's offset was past the log's end (a truncated
	// log) and HW where it now ends.
	OutOfRange bool
	HW         int64
}

// failBackoff is how long a worker waits after a failed operation:
// refusals come back at once, and a partition that is offline must not
// flood the history with them.
const failBackoff = 50 * time.Millisecond

// worker is one slot's state. Only its own Next and Done touch it.
type worker struct {
	process  int
	stride   int // added to process when it is replaced: ids stay unique
	inFlight bool
	// notBefore is when the worker may invoke again, after a failure.
	notBefore time.Duration

	// A producer's pacing and choices, and its session: set (on its
	// sends) only when sessions have several lanes.
	producer bool
	session  *int32
	rng      *rand.Rand
	interval time.Duration // between sends; 0: as fast as they complete
	started  bool
	next     time.Duration // when the next send is due
	planned  bool          // next and partition are drawn for the coming send
	part     int32
	seq      int // values this process has sent

	// A consumer's partitions, polled in turn, and where each poll starts.
	parts []int32
	from  []int64
	ops   int    // operations so far
	cur   int    // index in parts of the operation in flight
	curF  string // the function in flight
}

// NewGenerator is cfg's generator. Producers send unique values
// "<process>-<n>" to partitions drawn from the seed, spaced so that all
// together send cfg.Rate per second (with seeded jitter, so that they do
// not march in lockstep). Consumer i polls partitions i, i+Consumers, ...
// in turn, each from where it left off, and every EndOffsetEvery-th
// operation reads a partition's end offset instead. A consumer left
// without partitions (more consumers than partitions) has no worker.
func NewGenerator(cfg workload.Config) *Generator {
	g := &Generator{topic: cfg.Topic, partitions: cfg.Partitions, limit: cfg.TimeLimit, endOffsetEvery: cfg.EndOffsetEvery,
		lanes: max(cfg.MaxInFlight, 1)}
	g.producers = cfg.Concurrency * g.lanes
	var interval time.Duration
	if cfg.Rate > 0 {
		interval = time.Duration(float64(g.producers) / cfg.Rate * float64(time.Second))
	}
	for i := 0; i < g.producers; i++ {
		// Each producer slot has the random stream it had before the
		// generator existed, so an old run's seed still picks the same
		// partitions and jitter.
		w := &worker{producer: true, rng: rand.New(rand.NewPCG(cfg.Seed, uint64(i)+1)), interval: interval}
		if g.lanes > 1 {
			w.session = new(int32(i / g.lanes))
		}
		g.workers = append(g.workers, w)
	}
	for i := 0; i < cfg.Consumers; i++ {
		var parts []int32
		for p := int32(i); p < cfg.Partitions; p += int32(cfg.Consumers) {
			parts = append(parts, p)
		}
		if len(parts) > 0 {
			g.workers = append(g.workers, &worker{parts: parts, from: make([]int64, len(parts))})
		}
	}
	for i, w := range g.workers {
		w.process, w.stride = i, len(g.workers)
	}
	return g
}

// Workers is how many workers there are, numbered from 0.
func (g *Generator) Workers() int { return len(g.workers) }

// Producer says whether worker i sends (else it reads).
func (g *Generator) Producer(i int) bool { return g.workers[i].producer }

// Producers is how many producer workers there are: workers 0 to
// Producers()-1.
func (g *Generator) Producers() int { return g.producers }

// Lanes is how many producer workers share a session (and a client):
// workers i and j do if i/Lanes() == j/Lanes().
func (g *Generator) Lanes() int { return g.lanes }

// Process is worker i's process now.
func (g *Generator) Process(i int) int { return g.workers[i].process }

// Replace gives worker i a new process, as after an operation whose
// outcome is unknown, for a worker whose operations the generator does not
// decide (a group member of the subscribe workload).
func (g *Generator) Replace(i int) int {
	w := g.workers[i]
	w.process += w.stride
	return w.process
}

// Next is what worker i does at time now (since the workload started):
// the operation to invoke, how long to wait first, or nothing more once
// the time limit has passed.
func (g *Generator) Next(i int, now time.Duration) Action {
	w := g.workers[i]
	if w.inFlight {
		panic(fmt.Sprintf("workload: worker %d asked for its next operation with one in flight", i))
	}
	if now >= g.limit {
		return Action{Kind: Stop}
	}
	if w.producer {
		return g.produce(w, now)
	}
	return g.consume(w, now)
}

func (g *Generator) produce(w *worker, now time.Duration) Action {
	if !w.started {
		w.started, w.next = true, now
	}
	if !w.planned {
		// The draws happen in the same order whatever the timing: a
		// send's jitter, then its partition.
		if w.interval > 0 {
			w.next += w.interval + time.Duration(w.rng.Int64N(int64(w.interval)/2+1)) - w.interval/4
		}
		w.part = w.rng.Int32N(g.partitions)
		w.planned = true
	}
	due := w.notBefore
	if w.interval > 0 {
		// Late sends are not skipped: after a slow one the producer
		// catches up, so the rate holds over the run.
		due = max(due, w.next)
	}
	if now < due {
		return Action{Kind: Wait, Until: due}
	}
	w.planned, w.inFlight = false, true
	w.seq++
	return Action{Kind: Invoke, Op: history.Op{Process: w.process, Type: history.Invoke, F: history.Send,
		Value: &history.Value{Topic: g.topic, Partition: w.part, Value: fmt.Sprintf("%d-%d", w.process, w.seq), Producer: w.session}}}
}

func (g *Generator) consume(w *worker, now time.Duration) Action {
	if now < w.notBefore {
		return Action{Kind: Wait, Until: w.notBefore}
	}
	n := w.ops
	w.ops++
	w.cur, w.inFlight = n%len(w.parts), true
	v := &history.Value{Topic: g.topic, Partition: w.parts[w.cur]}
	if g.endOffsetEvery > 0 && n%g.endOffsetEvery == g.endOffsetEvery-1 {
		w.curF = history.EndOffset
	} else {
		w.curF = history.Poll
		v.From = history.Int64(w.from[w.cur])
	}
	return Action{Kind: Invoke, Op: history.Op{Process: w.process, Type: history.Invoke, F: w.curF, Value: v}}
}

// Done tells the generator how worker i's operation ended, at time now.
func (g *Generator) Done(i int, now time.Duration, c Completion) {
	w := g.workers[i]
	if !w.inFlight {
		panic(fmt.Sprintf("workload: worker %d reported an operation it was not given", i))
	}
	w.inFlight = false
	switch c.Type {
	case history.Info:
		w.process += w.stride
		w.seq = 0
	case history.Fail:
		w.notBefore = now + failBackoff
	}
	if w.producer || w.curF != history.Poll {
		return
	}
	switch {
	case c.OutOfRange:
		// Like auto.offset.reset=latest: a truncated log leaves the
		// consumer past its end, and it resumes at the HW.
		w.from[w.cur] = c.HW
	case c.Type == history.OK && len(c.Records) > 0:
		w.from[w.cur] = c.Records[len(c.Records)-1].Offset + 1
	}
}
