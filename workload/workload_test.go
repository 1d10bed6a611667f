package workload

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/results"
)

// recording is a Recorder into a history file of the test's own.
type recording struct {
	*Recorder
	w    *history.Writer
	path string
}

func newRecording(t *testing.T) *recording {
	t.Helper()
	path := filepath.Join(t.TempDir(), "history.jsonl")
	w, err := history.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	return &recording{NewRecorder(w, time.Now()), w, path}
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

// memCluster is a cluster in memory behind the Client interface: one log
// per partition, every replica equal. Sends of values ending in "-3" end
// info without being written, as a timeout might; those ending in "-2"
// fail. It counts the clients dialled and closed.
type memCluster struct {
	mu     sync.Mutex
	logs   map[history.Key][]history.Record
	dials  int
	closes int
}

type memClient struct{ c *memCluster }

func (m *memCluster) dial(ClientOptions) Client {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dials++
	return memClient{m}
}

func (c memClient) Send(_ context.Context, k history.Key, value string, _ int16) Outcome {
	c.c.mu.Lock()
	defer c.c.mu.Unlock()
	switch {
	case strings.HasSuffix(value, "-3"):
		return Outcome{Type: history.Info, Error: "i/o timeout"}
	case strings.HasSuffix(value, "-2"):
		return Outcome{Type: history.Fail, Error: "NOT_ENOUGH_REPLICAS"}
	}
	off := int64(len(c.c.logs[k]))
	c.c.logs[k] = append(c.c.logs[k], history.Record{Offset: off, Value: value})
	return Outcome{Type: history.OK, Offset: off}
}

func (c memClient) SendQueued(ctx context.Context, k history.Key, value string, acks int16, queued func() bool) Outcome {
	if queued != nil && !queued() {
		return Outcome{}
	}
	return c.Send(ctx, k, value, acks)
}

func (c memClient) read(k history.Key, from int64) Read {
	c.c.mu.Lock()
	defer c.c.mu.Unlock()
	log := c.c.logs[k]
	return Read{Records: append([]history.Record(nil), log[min(from, int64(len(log))):]...), HW: int64(len(log))}
}

func (c memClient) Poll(_ context.Context, k history.Key, from int64) (Read, error) {
	time.Sleep(time.Millisecond) // as a fetch's wait would, rather than spin
	return c.read(k, from), nil
}

func (c memClient) EndOffset(_ context.Context, k history.Key) (int64, error) {
	return c.read(k, 0).HW, nil
}

func (c memClient) Metadata(_ context.Context, topic string, _ ...string) (Metadata, error) {
	md := Metadata{From: "mem", Brokers: map[int32]string{1: "mem"}, Partitions: map[int32]PartitionState{}}
	for p := int32(0); p < 3; p++ {
		md.Partitions[p] = PartitionState{Leader: 1, ISR: []int32{1}, Replicas: []int32{1}}
	}
	return md, nil
}

func (c memClient) FinalRead(_ context.Context, k history.Key) (Read, error) {
	return c.read(k, 0), nil
}

func (c memClient) ReplicaRead(_ context.Context, k history.Key, _ int32) (Read, error) {
	return c.read(k, 0), nil
}

func (c memClient) CreateTopic(context.Context, TopicSpec, time.Duration) error { return nil }

func (c memClient) DescribeTopic(context.Context, string) (TopicDescription, error) {
	return TopicDescription{}, nil
}

func (c memClient) Close() {
	c.c.mu.Lock()
	defer c.c.mu.Unlock()
	c.c.closes++
}

// TestRunAndFinalOverAClient runs the workload and the final phase over a
// cluster that is not TCP, and checks the history they record: every
// invocation completed, a process replaced (with a client of its own)
// after each info and never after anything else, and the final phase on a
// process of its own.
func TestRunAndFinalOverAClient(t *testing.T) {
	rec := newRecording(t)
	m := &memCluster{logs: map[history.Key][]history.Record{}}
	cfg := Config{Workload: results.Workload{Bootstrap: []string{"mem"}, Topic: "t", Partitions: 3, Acks: -1, Concurrency: 2, Consumers: 3,
		Rate: 200, TimeLimit: 500 * time.Millisecond, Seed: 1, RequestTimeout: time.Second, EndOffsetEvery: 5}}
	ctx := context.Background()
	if err := run(ctx, cfg, rec.Recorder, m.dial); err != nil {
		t.Fatal(err)
	}
	cl := m.dial(ClientOptions{})
	if conv, err := final(ctx, cfg, rec.Recorder, cl, m.dial, time.Second); err != nil || !conv.Converged {
		t.Fatalf("final: %+v, %v", conv, err)
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
	// Every info replaced its process and its client: one dial per
	// worker, one per info, one for the final phase.
	if want := 5 + infos + 1; m.dials != want {
		t.Fatalf("%d clients dialled, want %d", m.dials, want)
	}
	if m.closes != 5+infos {
		t.Fatalf("%d clients closed, want %d", m.closes, 5+infos)
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
	rec := newRecording(t)
	m := &memCluster{logs: map[history.Key][]history.Record{}}
	cfg := Config{Workload: results.Workload{Bootstrap: []string{"mem"}, Topic: "t", Partitions: 3, Acks: -1, Concurrency: 2, Consumers: 3,
		Rate: 200, TimeLimit: 500 * time.Millisecond, Seed: 1, RequestTimeout: time.Second, EndOffsetEvery: 5, MaxInFlight: 3}}
	g := NewGenerator(cfg)
	if g.Producers() != 6 || g.Lanes() != 3 || g.Workers() != 9 {
		t.Fatalf("%d producers in lanes of %d, %d workers; want 6, 3, 9", g.Producers(), g.Lanes(), g.Workers())
	}
	if id := ClientOptionsFor(cfg, g, 4).ID; id != "chaos-producer-1" {
		t.Fatalf("worker 4's client is %s, want session 1's", id)
	}
	if id := ClientOptionsFor(cfg, g, 6).ID; id != "chaos-consumer-0" {
		t.Fatalf("worker 6's client is %s, want the first consumer's", id)
	}
	if err := run(context.Background(), cfg, rec.Recorder, m.dial); err != nil {
		t.Fatal(err)
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
	if m.dials != 5 || m.closes != 5 {
		t.Fatalf("%d clients dialled and %d closed, want 5 and 5: an info does not replace a session's client", m.dials, m.closes)
	}
}
