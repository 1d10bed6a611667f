package queue

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/workload"
)

// step is one invocation a simulated run made: when, by which worker.
type step struct {
	at     time.Duration
	worker int
	op     history.Op
}

// outcome decides how a simulated operation ends and how long it takes.
type outcome func(s step) (time.Duration, Completion)

// allOK completes every operation after latency, polls with no records.
func allOK(latency time.Duration) outcome {
	return func(step) (time.Duration, Completion) { return latency, Completion{Type: history.OK} }
}

// simulate steps g as a deterministic simulator would: one loop on a
// virtual clock, always the worker due first (the lowest-numbered on a
// tie), until every worker has stopped. It returns the invocations in
// order.
func simulate(t *testing.T, g *Generator, out outcome) []step {
	t.Helper()
	ready := make([]time.Duration, g.Workers())
	// done holds, for a worker with an operation in flight, its
	// completion; -1 in doneAt when nothing is in flight.
	doneAt := make([]time.Duration, g.Workers())
	done := make([]Completion, g.Workers())
	stopped := make([]bool, g.Workers())
	for i := range doneAt {
		doneAt[i] = -1
	}
	var steps []step
	for n := 0; ; n++ {
		if n > 1_000_000 {
			t.Fatal("the simulation does not end")
		}
		w := -1
		for i := range ready {
			if !stopped[i] && (w < 0 || ready[i] < ready[w]) {
				w = i
			}
		}
		if w < 0 {
			return steps
		}
		now := ready[w]
		if doneAt[w] >= 0 {
			g.Done(w, now, done[w])
			doneAt[w] = -1
			continue
		}
		a := g.Next(w, now)
		switch a.Kind {
		case Stop:
			stopped[w] = true
		case Wait:
			if a.Until <= now {
				t.Fatalf("worker %d at %s: a wait until %s", w, now, a.Until)
			}
			ready[w] = a.Until
		case Invoke:
			s := step{at: now, worker: w, op: a.Op}
			steps = append(steps, s)
			d, c := out(s)
			ready[w], doneAt[w], done[w] = now+d, now+d, c
		}
	}
}

func genConfig() workload.Config {
	return workload.Config{Workload: results.Workload{Topic: "t", Partitions: 5, Concurrency: 3, Consumers: 2, Rate: 300,
		TimeLimit: 2 * time.Second, Seed: 7, EndOffsetEvery: 5}}
}

// mixed ends some sends fail and some info, by value, so that a run
// exercises retirement and back-off the same way every time.
func mixed(s step) (time.Duration, Completion) {
	v := s.op.Value
	if s.op.F == history.Send {
		switch {
		case strings.HasSuffix(v.Value, "7"):
			return 3 * time.Millisecond, Completion{Type: history.Info}
		case strings.HasSuffix(v.Value, "3"):
			return time.Millisecond, Completion{Type: history.Fail}
		}
		return 2 * time.Millisecond, Completion{Type: history.OK}
	}
	if s.op.F == history.Poll {
		from := *v.From
		return 5 * time.Millisecond, Completion{Type: history.OK,
			Records: []history.Record{{Offset: from, Value: "x"}, {Offset: from + 1, Value: "y"}}}
	}
	return time.Millisecond, Completion{Type: history.OK}
}

func TestGeneratorSameSeedSameDecisions(t *testing.T) {
	a := simulate(t, NewGenerator(genConfig()), mixed)
	b := simulate(t, NewGenerator(genConfig()), mixed)
	if len(a) < 100 {
		t.Fatalf("only %d operations", len(a))
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two generators with the same seed decided differently")
	}
}

func TestGeneratorDifferentSeedsDiffer(t *testing.T) {
	cfg := genConfig()
	a := simulate(t, NewGenerator(cfg), mixed)
	cfg.Seed++
	b := simulate(t, NewGenerator(cfg), mixed)
	partitions := func(steps []step) (out []int32) {
		for _, s := range steps {
			if s.op.F == history.Send {
				out = append(out, s.op.Value.Partition)
			}
		}
		return out
	}
	if reflect.DeepEqual(partitions(a), partitions(b)) {
		t.Fatal("seeds 7 and 8 chose the same partitions for every send")
	}
}

// TestGeneratorPacing: producers together send at the rate asked for, each
// spaced by its share of it give or take a quarter (the jitter), and
// none after the time limit.
func TestGeneratorPacing(t *testing.T) {
	cfg := genConfig()
	cfg.Consumers = 0
	cfg.TimeLimit = 10 * time.Second
	steps := simulate(t, NewGenerator(cfg), allOK(time.Millisecond))
	interval := time.Duration(float64(cfg.Concurrency) / cfg.Rate * float64(time.Second))
	last := map[int]time.Duration{}
	sends := 0
	for _, s := range steps {
		if s.at >= cfg.TimeLimit {
			t.Fatalf("a send at %s, past the time limit", s.at)
		}
		if prev, ok := last[s.worker]; ok {
			if gap := s.at - prev; gap < interval*3/4 || gap > interval*5/4 {
				t.Fatalf("worker %d: %s between sends, want %s ± 25%%", s.worker, gap, interval)
			}
		}
		last[s.worker] = s.at
		sends++
	}
	want := cfg.Rate * cfg.TimeLimit.Seconds()
	if math.Abs(float64(sends)-want) > want/50 {
		t.Fatalf("%d sends in %s at %g/s, want about %g", sends, cfg.TimeLimit, cfg.Rate, want)
	}
}

// TestGeneratorCatchesUp: a producer whose send took several intervals
// sends the ones it fell behind on at once, so the rate holds over a run.
func TestGeneratorCatchesUp(t *testing.T) {
	cfg := genConfig()
	cfg.Concurrency, cfg.Consumers, cfg.Rate = 1, 0, 100 // 10 ms apart
	g := NewGenerator(cfg)
	a := g.Next(0, 0)
	if a.Kind != Wait {
		t.Fatalf("the first send is not paced: %+v", a)
	}
	if a = g.Next(0, a.Until); a.Kind != Invoke {
		t.Fatalf("due and not invoked: %+v", a)
	}
	g.Done(0, 100*time.Millisecond, Completion{Type: history.OK})
	for i := 0; i < 5; i++ {
		if a = g.Next(0, 100*time.Millisecond); a.Kind != Invoke {
			t.Fatalf("send %d after a slow one: %+v, want it at once", i+2, a)
		}
		g.Done(0, 100*time.Millisecond, Completion{Type: history.OK})
	}
}

func TestGeneratorUnthrottled(t *testing.T) {
	cfg := genConfig()
	cfg.Rate, cfg.Consumers, cfg.TimeLimit = 0, 0, 100*time.Millisecond
	steps := simulate(t, NewGenerator(cfg), allOK(time.Millisecond))
	if want := cfg.Concurrency * 100; len(steps) != want {
		t.Fatalf("%d sends, want %d: one per millisecond per producer", len(steps), want)
	}
}

// TestGeneratorProcesses: values are "<process>-<n>", unique; a process
// whose send ended info is replaced by a new id, which starts again at 1;
// a failure keeps the process and holds it back 50 ms.
func TestGeneratorProcesses(t *testing.T) {
	cfg := genConfig()
	steps := simulate(t, NewGenerator(cfg), mixed)
	seen := map[string]bool{}
	procOf := map[int]int{}   // worker -> its current process
	nextSeq := map[int]int{}  // process -> the n its next value must have
	workerOf := map[int]int{} // process -> its worker
	var prev = map[int]step{} // worker -> its previous step
	for _, s := range steps {
		p := s.op.Process
		if w, ok := workerOf[p]; ok && w != s.worker {
			t.Fatalf("process %d used by workers %d and %d", p, w, s.worker)
		}
		workerOf[p] = s.worker
		if last, ok := prev[s.worker]; ok {
			if c := lastCompletion(last); c == history.Info && p == procOf[s.worker] {
				t.Fatalf("worker %d went on as process %d after an info", s.worker, p)
			} else if c != history.Info && p != procOf[s.worker] {
				t.Fatalf("worker %d became process %d after %s", s.worker, p, c)
			}
			if lastCompletion(last) == history.Fail && s.at-last.at < failBackoff {
				t.Fatalf("worker %d invoked %s after a failure", s.worker, s.at-last.at)
			}
		}
		procOf[s.worker], prev[s.worker] = p, s
		if s.op.F != history.Send {
			continue
		}
		if seen[s.op.Value.Value] {
			t.Fatalf("value %s sent twice", s.op.Value.Value)
		}
		seen[s.op.Value.Value] = true
		if nextSeq[p] == 0 {
			nextSeq[p] = 1
		}
		if want := fmt.Sprintf("%d-%d", p, nextSeq[p]); s.op.Value.Value != want {
			t.Fatalf("process %d sent %s, want %s", p, s.op.Value.Value, want)
		}
		nextSeq[p]++
	}
	if len(workerOf) <= NewGenerator(cfg).Workers() {
		t.Fatal("no process was replaced")
	}
}

// lastCompletion is how mixed ended s.
func lastCompletion(s step) history.Type {
	_, c := mixed(s)
	return c.Type
}

// TestGeneratorConsumers: consumer i polls partitions i, i+Consumers, ...
// in turn, each from past the last record it got, reads an end offset
// every EndOffsetEvery-th operation, and resumes at the HW when its offset
// was out of range. Consumers beyond the partitions have no worker.
func TestGeneratorConsumers(t *testing.T) {
	cfg := workload.Config{Workload: results.Workload{Topic: "t", Partitions: 5, Concurrency: 1, Consumers: 2, TimeLimit: time.Minute, EndOffsetEvery: 3}}
	g := NewGenerator(cfg)
	if g.Workers() != 3 || !g.Producer(0) || g.Producer(1) || g.Producer(2) {
		t.Fatalf("%d workers, want a producer and two consumers", g.Workers())
	}
	type want struct {
		f    string
		part int32
		from int64
	}
	// Far enough apart that a failure's back-off is over.
	var now time.Duration
	next := func(w int, c Completion) want {
		t.Helper()
		now += 100 * time.Millisecond
		a := g.Next(w, now)
		if a.Kind != Invoke {
			t.Fatalf("worker %d: %+v", w, a)
		}
		g.Done(w, now, c)
		got := want{a.Op.F, a.Op.Value.Partition, -1}
		if a.Op.Value.From != nil {
			got.from = *a.Op.Value.From
		}
		return got
	}
	ok := func(offsets ...int64) Completion {
		c := Completion{Type: history.OK}
		for _, o := range offsets {
			c.Records = append(c.Records, history.Record{Offset: o})
		}
		return c
	}
	// Worker 1 is consumer 0: partitions 0, 2, 4.
	for i, tc := range []struct {
		c    Completion
		want want
	}{
		{ok(0, 1), want{history.Poll, 0, 0}},
		{ok(), want{history.Poll, 2, 0}},
		{ok(), want{history.EndOffset, 4, -1}},
		{ok(2), want{history.Poll, 0, 2}},
		{Completion{Type: history.Fail, OutOfRange: true, HW: 9}, want{history.Poll, 2, 0}},
		{ok(), want{history.EndOffset, 4, -1}},
		{ok(), want{history.Poll, 0, 3}},
		{ok(), want{history.Poll, 2, 9}},
	} {
		if got := next(1, tc.c); got != tc.want {
			t.Fatalf("consumer 0, operation %d: %+v, want %+v", i, got, tc.want)
		}
	}
	// Worker 2 is consumer 1: partitions 1, 3.
	if got := next(2, ok()); got != (want{history.Poll, 1, 0}) {
		t.Fatalf("consumer 1: %+v", got)
	}
	if got := next(2, ok()); got != (want{history.Poll, 3, 0}) {
		t.Fatalf("consumer 1: %+v", got)
	}

	cfg.Consumers = 7
	if g := NewGenerator(cfg); g.Workers() != 1+5 {
		t.Fatalf("7 consumers of 5 partitions: %d workers, want 1 producer and 5 consumers", g.Workers())
	}
}

func TestGeneratorOneOperationInFlight(t *testing.T) {
	g := NewGenerator(genConfig())
	if a := g.Next(3, 0); a.Kind != Invoke {
		t.Fatalf("a consumer's first operation: %+v", a)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Next with an operation in flight did not panic")
		}
	}()
	g.Next(3, 0)
}
