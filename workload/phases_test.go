package workload_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/workload"
	"github.com/chaos-isr/chaos/workload/queue"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// recording is a Recorder into a history file of the test's own, stamped
// by a clock.
type recording struct {
	*workload.Recorder
	w    *history.Writer
	path string
}

func newRecordingClock(t *testing.T, clock func() time.Duration) *recording {
	t.Helper()
	path := filepath.Join(t.TempDir(), "history.jsonl")
	w, err := history.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	return &recording{workload.NewRecorderClock(w, clock), w, path}
}

// ops closes the history and reads it back, with each operation's pair
// (history.Pairs), failing t if the operations do not pair.
func (r *recording) ops(t *testing.T) ([]history.Op, []int) {
	t.Helper()
	if err := r.w.Close(); err != nil {
		t.Fatal(err)
	}
	ops, err := history.ReadFile(r.path)
	if err != nil {
		t.Fatal(err)
	}
	pairs, err := history.Pairs(ops)
	if err != nil {
		t.Fatalf("the operations do not pair: %v", err)
	}
	return ops, pairs
}

// memEnv is an Env in memory: a virtual clock whose events run in time
// order, and a one-broker cluster behind every Wire that keeps one log per
// partition (broker 1 leads them all). Sends of values ending in "-3" get
// no answer, as a timeout might leave them; those ending in "-2" are
// refused with NOT_ENOUGH_REPLICAS. It counts the wires made and closed.
type memEnv struct {
	now    time.Duration
	seq    int
	events []memEvent
	logs   map[history.Key][]history.Record
	wires  int
	closes int
}

type memEvent struct {
	at  time.Duration
	seq int
	fn  func()
}

func newMemEnv() *memEnv { return &memEnv{logs: map[history.Key][]history.Record{}} }

func (e *memEnv) Now() time.Duration { return e.now }
func (e *memEnv) Stamp() int64       { return e.now.Milliseconds() }
func (e *memEnv) After(d time.Duration, fn func()) {
	e.seq++
	e.events = append(e.events, memEvent{e.now + max(d, 0), e.seq, fn})
}

// run runs the events in time order until done says so or none are left.
func (e *memEnv) run(t *testing.T, done func() bool) {
	t.Helper()
	for !done() {
		if len(e.events) == 0 {
			t.Fatal("no events left, and not done")
		}
		i := 0
		for j, ev := range e.events {
			if ev.at < e.events[i].at || (ev.at == e.events[i].at && ev.seq < e.events[i].seq) {
				i = j
			}
		}
		ev := e.events[i]
		e.events = slices.Delete(e.events, i, i+1)
		e.now = ev.at
		ev.fn()
	}
}

func (e *memEnv) NewWire(o workload.ClientOptions) workload.Wire {
	e.wires++
	return &memWire{e: e}
}

type memWire struct {
	e      *memEnv
	closed bool
}

func (w *memWire) Close() {
	if !w.closed {
		w.closed = true
		w.e.closes++
	}
}

func (w *memWire) CallAddr(_ string, req kmsg.Request, done func(kmsg.Response, error)) {
	w.Call(1, "", req, done)
}

// Call answers req a millisecond later, or says the connection was lost
// if the broker leaves it unanswered.
func (w *memWire) Call(_ int32, _ string, req kmsg.Request, done func(kmsg.Response, error)) {
	resp, answered := w.e.answer(req)
	var err error
	if !answered {
		err = errors.New("read: connection reset by peer")
	}
	w.e.After(time.Millisecond, func() {
		if !w.closed {
			done(resp, err)
		}
	})
}

func (e *memEnv) answer(req kmsg.Request) (kmsg.Response, bool) {
	switch r := req.(type) {
	case *kmsg.MetadataRequest:
		resp := kmsg.NewPtrMetadataResponse()
		resp.Brokers = []kmsg.MetadataResponseBroker{{NodeID: 1, Host: "mem", Port: 9092}}
		for _, rt := range r.Topics {
			t := kmsg.NewMetadataResponseTopic()
			t.Topic = rt.Topic
			for p := range int32(3) {
				mp := kmsg.NewMetadataResponseTopicPartition()
				mp.Partition, mp.Leader, mp.ISR, mp.Replicas = p, 1, []int32{1}, []int32{1}
				t.Partitions = append(t.Partitions, mp)
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp, true
	case *kmsg.ProduceRequest:
		rp := r.Topics[0].Partitions[0]
		k := history.Key{Topic: r.Topics[0].Topic, Partition: rp.Partition}
		recs, err := workload.DecodeBatches(rp.Records)
		if err != nil || len(recs) != 1 {
			panic(fmt.Sprintf("a produce of %d records: %v", len(recs), err))
		}
		resp := kmsg.NewPtrProduceResponse()
		t := kmsg.NewProduceResponseTopic()
		p := kmsg.NewProduceResponseTopicPartition()
		switch v := recs[0].Value; {
		case strings.HasSuffix(v, "-3"):
			return nil, false
		case strings.HasSuffix(v, "-2"):
			p.ErrorCode = kerr.NotEnoughReplicas.Code
		default:
			p.BaseOffset = int64(len(e.logs[k]))
			e.logs[k] = append(e.logs[k], history.Record{Offset: p.BaseOffset, Value: v})
		}
		t.Partitions = append(t.Partitions, p)
		resp.Topics = append(resp.Topics, t)
		return resp, true
	case *kmsg.FetchRequest:
		rp := r.Topics[0].Partitions[0]
		log := e.logs[history.Key{Topic: r.Topics[0].Topic, Partition: rp.Partition}]
		resp := kmsg.NewPtrFetchResponse()
		t := kmsg.NewFetchResponseTopic()
		p := kmsg.NewFetchResponseTopicPartition()
		p.HighWatermark = int64(len(log))
		if rest := log[min(rp.FetchOffset, int64(len(log))):]; len(rest) > 0 {
			var vs [][]byte
			for _, rec := range rest {
				vs = append(vs, []byte(rec.Value))
			}
			p.RecordBatches = workload.StampedBatch(rest[0].Offset, vs...)
		}
		t.Partitions = append(t.Partitions, p)
		resp.Topics = append(resp.Topics, t)
		return resp, true
	case *kmsg.ListOffsetsRequest:
		rp := r.Topics[0].Partitions[0]
		resp := kmsg.NewPtrListOffsetsResponse()
		t := kmsg.NewListOffsetsResponseTopic()
		p := kmsg.NewListOffsetsResponseTopicPartition()
		p.Offset = int64(len(e.logs[history.Key{Topic: r.Topics[0].Topic, Partition: rp.Partition}]))
		t.Partitions = append(t.Partitions, p)
		resp.Topics = append(resp.Topics, t)
		return resp, true
	}
	panic(fmt.Sprintf("memEnv: no answer to %T", req))
}

// TestRunAndFinalOverAClient runs the workload and the final phase over a
// cluster that is not TCP, and checks the history they record: every
// invocation completed, a process replaced (with a client of its own)
// after each info and never after anything else, and the final phase on a
// process of its own.
func TestRunAndFinalOverAClient(t *testing.T) {
	m := newMemEnv()
	rec := newRecordingClock(t, m.Now)
	cfg := workload.Config{Workload: results.Workload{Bootstrap: []string{"mem:9092"}, Topic: "t", Partitions: 3, Acks: -1, Concurrency: 2, Consumers: 3,
		Rate: 200, TimeLimit: 500 * time.Millisecond, Seed: 1, RequestTimeout: time.Second, EndOffsetEvery: 5}}
	ph := workload.NewPhases(m, cfg, rec.Recorder, queue.New(cfg))
	workers, final := false, false
	ph.StartWorkers(func() { workers = true })
	m.run(t, func() bool { return workers })
	ph.Final(time.Second, func(conv workload.Convergence) {
		if !conv.Converged {
			t.Errorf("final: %+v", conv)
		}
		final = true
	})
	m.run(t, func() bool { return final })
	if ph.Err() != nil {
		t.Fatal(ph.Err())
	}
	ops, pairs := rec.ops(t)
	infos, sends, polled := 0, 0, 0
	senders := map[int]bool{}
	finalProc := -1
	for i, op := range ops {
		if op.Type == history.Invoke {
			if pairs[i] < 0 {
				t.Fatalf("op %d never completed", op.Index)
			}
			continue
		}
		switch op.F {
		case history.Send:
			sends++
			if op.Type == history.Info {
				infos++
			}
			senders[op.Process] = true
		case history.Poll:
			polled += len(op.Value.Records)
		case history.FinalRead, history.ReplicaRead:
			finalProc = op.Process
		}
	}
	if sends < 20 || infos == 0 || polled == 0 {
		t.Fatalf("%d sends, %d info, %d records polled", sends, infos, polled)
	}
	// Every info replaced its process and its client: one client per
	// worker, one per info, one for the final phase, each closed.
	if want := 5 + infos + 1; m.wires != want || m.closes != want {
		t.Fatalf("%d clients made and %d closed, want %d", m.wires, m.closes, want)
	}
	if len(senders) != 2+infos {
		t.Fatalf("%d sending processes, want 2 and one per info (%d)", len(senders), infos)
	}
	for p := range senders {
		if p >= finalProc {
			t.Fatalf("the final phase ran as process %d, which the workload had used", finalProc)
		}
	}
}

// TestLanesShareASession: with MaxInFlight 3 each producer session is
// three workers, processes of their own, sharing one client that an info
// does not replace; their sends name the session, and the consumers
// follow the lanes.
func TestLanesShareASession(t *testing.T) {
	m := newMemEnv()
	rec := newRecordingClock(t, m.Now)
	cfg := workload.Config{Workload: results.Workload{Bootstrap: []string{"mem:9092"}, Topic: "t", Partitions: 3, Acks: -1, Concurrency: 2, Consumers: 3,
		Rate: 200, TimeLimit: 500 * time.Millisecond, Seed: 1, RequestTimeout: time.Second, EndOffsetEvery: 5, MaxInFlight: 3}}
	g := queue.NewGenerator(cfg)
	if g.Producers() != 6 || g.Lanes() != 3 || g.Workers() != 9 {
		t.Fatalf("%d producers in lanes of %d, %d workers; want 6, 3, 9", g.Producers(), g.Lanes(), g.Workers())
	}
	if id := queue.ClientOptionsFor(cfg, g, 4).ID; id != "chaos-producer-1" {
		t.Fatalf("worker 4's client is %s, want session 1's", id)
	}
	if id := queue.ClientOptionsFor(cfg, g, 6).ID; id != "chaos-consumer-0" {
		t.Fatalf("worker 6's client is %s, want the first consumer's", id)
	}
	ph := workload.NewPhases(m, cfg, rec.Recorder, queue.New(cfg))
	workers := false
	ph.StartWorkers(func() { workers = true })
	m.run(t, func() bool { return workers })
	if ph.Err() != nil {
		t.Fatal(ph.Err())
	}
	ops, pairs := rec.ops(t)
	infos := 0
	sessions := map[int]int32{}
	for i, op := range ops {
		if op.F != history.Send {
			continue
		}
		if op.Type == history.Invoke && pairs[i] < 0 {
			t.Fatalf("op %d never completed", op.Index)
		}
		if op.Type == history.Info {
			infos++
		}
		if op.Value.Producer == nil {
			t.Fatalf("op %d: a lane's send names no session", op.Index)
		}
		if s, ok := sessions[op.Process]; ok && s != *op.Value.Producer {
			t.Fatalf("process %d sent for sessions %d and %d", op.Process, s, *op.Value.Producer)
		}
		sessions[op.Process] = *op.Value.Producer
	}
	if infos == 0 {
		t.Fatal("no info outcome to replace a lane's process")
	}
	// Each info gives its lane a new process; one whose info came last
	// may meet the time limit before it sends, so up to one per lane is
	// missing.
	if len(sessions) > 6+infos || len(sessions) < infos {
		t.Fatalf("%d sending processes, want 6 and one per info (%d), less at most one per lane", len(sessions), infos)
	}
	// Two session clients and three consumers' (no consumer op ends info).
	if m.wires != 5 || m.closes != 5 {
		t.Fatalf("%d clients made and %d closed, want 5 and 5: an info does not replace a session's client", m.wires, m.closes)
	}
}
