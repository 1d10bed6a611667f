package workload

import (
	"context"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/broker/wire"
	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/results"
)

// fakeBrokers are two brokers on loopback as the monitor sees them: broker 1
// is paused (it accepts connections, since the kernel does, and never
// answers), broker 2 leads partition 0 of topic "t" and answers Metadata
// and ListOffsets, and Fetch with batches. With leaderPaused, broker 1
// leads instead.
type fakeBrokers struct {
	paused, live net.Listener
	leaderPaused bool
	batches      []byte // what a fetch returns, from offset 0
	mu           sync.Mutex
	conns        []net.Conn
}

func newFakeBrokers(t *testing.T, leaderPaused bool) *fakeBrokers {
	t.Helper()
	f := &fakeBrokers{leaderPaused: leaderPaused}
	var err error
	if f.paused, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	if f.live, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	go f.accept(f.paused, func(net.Conn) {})
	go f.accept(f.live, f.serve)
	t.Cleanup(func() {
		f.paused.Close()
		f.live.Close()
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, c := range f.conns {
			c.Close()
		}
	})
	return f
}

func (f *fakeBrokers) accept(ln net.Listener, handle func(net.Conn)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		f.conns = append(f.conns, c)
		f.mu.Unlock()
		go handle(c)
	}
}

func (f *fakeBrokers) serve(c net.Conn) {
	for {
		frame, err := wire.ReadFrame(c, 0, nil)
		if err != nil {
			return
		}
		req, err := wire.ParseRequest(frame)
		if err != nil {
			return
		}
		var resp kmsg.Response
		switch body := req.Body.(type) {
		case *kmsg.MetadataRequest:
			md := kmsg.NewPtrMetadataResponse()
			for id, ln := range map[int32]net.Listener{1: f.paused, 2: f.live} {
				host, port, _ := net.SplitHostPort(ln.Addr().String())
				p, _ := strconv.Atoi(port)
				b := kmsg.NewMetadataResponseBroker()
				b.NodeID, b.Host, b.Port = id, host, int32(p)
				md.Brokers = append(md.Brokers, b)
			}
			slices.SortFunc(md.Brokers, func(a, b kmsg.MetadataResponseBroker) int { return int(a.NodeID - b.NodeID) })
			tp := kmsg.NewMetadataResponseTopic()
			tp.Topic = kmsg.StringPtr("t")
			pp := kmsg.NewMetadataResponseTopicPartition()
			pp.Leader, pp.LeaderEpoch, pp.Replicas, pp.ISR = 2, 1, []int32{1, 2}, []int32{1, 2}
			if f.leaderPaused {
				pp.Leader = 1
			}
			tp.Partitions = append(tp.Partitions, pp)
			md.Topics = append(md.Topics, tp)
			resp = md
		case *kmsg.ListOffsetsRequest:
			lr := kmsg.NewPtrListOffsetsResponse()
			for _, rt := range body.Topics {
				tp := kmsg.NewListOffsetsResponseTopic()
				tp.Topic = rt.Topic
				for _, rp := range rt.Partitions {
					pp := kmsg.NewListOffsetsResponseTopicPartition()
					pp.Partition, pp.Offset = rp.Partition, 42
					tp.Partitions = append(tp.Partitions, pp)
				}
				lr.Topics = append(lr.Topics, tp)
			}
			resp = lr
		case *kmsg.FetchRequest:
			fr := kmsg.NewPtrFetchResponse()
			tp := kmsg.NewFetchResponseTopic()
			tp.Topic = "t"
			pp := kmsg.NewFetchResponseTopicPartition()
			pp.HighWatermark, pp.RecordBatches = 42, f.batches
			tp.Partitions = append(tp.Partitions, pp)
			fr.Topics = append(fr.Topics, tp)
			resp = fr
		default:
			return
		}
		if _, err := c.Write(wire.AppendResponse(nil, req, resp)); err != nil {
			return
		}
	}
}

// sampled is one monitor sample: its completion and how long it took.
type sampled struct {
	history.Op
	took time.Duration
}

// runMonitor runs the monitor against the brokers for d, then stops it and
// returns its samples and how long it took to stop.
func runMonitor(t *testing.T, f *fakeBrokers, interval, timeout, d time.Duration) ([]sampled, time.Duration) {
	t.Helper()
	rec := newRecording(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	cfg := Config{Workload: results.Workload{Bootstrap: []string{f.live.Addr().String()}, Topic: "t", Partitions: 1}}
	go func() { done <- Monitor(ctx, cfg, rec.Recorder, interval, timeout) }()
	time.Sleep(d)
	cancel()
	stop := time.Now()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("monitor: %v", err)
		}
	case <-time.After(10 * timeout):
		t.Fatalf("the monitor did not stop within %s of its context ending", 10*timeout)
	}
	took := time.Since(stop)
	ops, pairs := rec.ops(t)
	var out []sampled
	for i, op := range ops {
		if op.Type != history.Invoke {
			out = append(out, sampled{op, time.Duration(op.Time - ops[pairs[i]].Time)})
		}
	}
	return out, took
}

// TestMonitorKeepsSamplingPastAPausedBroker: a paused broker that is not
// the leader must not slow the samples down. The metadata the monitor
// fetches at every sample is fresh, so finding the leader for the HW must
// not ask the brokers again, starting with the paused one and waiting out
// its timeout.
func TestMonitorKeepsSamplingPastAPausedBroker(t *testing.T) {
	f := newFakeBrokers(t, false)
	const timeout = time.Second
	samples, _ := runMonitor(t, f, 20*time.Millisecond, timeout, 2*time.Second)
	// The last sample may have been cut short by the cancellation.
	samples = samples[:max(len(samples)-1, 0)]
	if len(samples) < 2 {
		t.Fatalf("%d samples in 2 s", len(samples))
	}
	for _, s := range samples {
		if s.Type != history.OK || s.Value.HW == nil || *s.Value.HW != 42 || *s.Value.Leader != 2 {
			t.Fatalf("sample %+v: want ok, leader 2, HW 42", s.Op)
		}
		// A sample is a few local round trips; one that asked the paused
		// broker took its whole timeout.
		if s.took >= timeout {
			t.Errorf("sample %d took %s: it waited for the paused broker", s.Index, s.took)
		}
	}
}

// TestMonitorStopsWithinATimeoutOfAPausedLeader: when the leader does not
// answer, a sample still records who leads (without an HW), and cancelling
// the monitor returns within about one request timeout, so a run's
// shutdown is not held up by a paused broker.
func TestMonitorStopsWithinATimeoutOfAPausedLeader(t *testing.T) {
	f := newFakeBrokers(t, true)
	const timeout = 300 * time.Millisecond
	samples, took := runMonitor(t, f, 20*time.Millisecond, timeout, time.Second)
	samples = samples[:max(len(samples)-1, 0)]
	if len(samples) == 0 {
		t.Fatal("no sample while the leader was paused")
	}
	for _, s := range samples {
		if s.Type != history.OK || *s.Value.Leader != 1 || s.Value.HW != nil {
			t.Fatalf("sample %+v: want ok, leader 1, no HW", s.Op)
		}
	}
	if took > timeout+time.Second {
		t.Errorf("the monitor took %s to stop; a request times out after %s", took, timeout)
	}
}

// TestWatchPastAPausedBroker: the nemesis's watch asks every broker each
// poll on a connection kept to each, does not wait for a paused one (nor
// ask it again while it has not answered), and so polls every few
// milliseconds with the live broker's answer.
func TestWatchPastAPausedBroker(t *testing.T) {
	f := newFakeBrokers(t, false)
	w := NewWatch([]string{f.live.Addr().String()}, "t")
	defer w.Close()
	for i := 0; i < 20; i++ {
		start := time.Now()
		got, err := w.Poll(context.Background())
		took := time.Since(start)
		if err != nil || len(got) != 1 || got[0].Partitions[0].Leader != 2 || got[0].Partitions[0].Epoch != 1 {
			t.Fatalf("poll %d: %+v, %v", i, got, err)
		}
		if i > 0 && got[0].Broker != 2 {
			t.Errorf("poll %d answered by broker %d, want 2", i, got[0].Broker)
		}
		// Waiting for the paused broker takes the watch's request
		// timeout (1 s); half of that leaves a loaded machine's
		// scheduling room (100 ms failed under CI's other tests).
		if took > 500*time.Millisecond {
			t.Errorf("poll %d took %s: it waited for the paused broker", i, took)
		}
	}
	f.mu.Lock()
	conns := len(f.conns)
	f.mu.Unlock()
	if conns > 3 {
		t.Errorf("%d connections for 20 polls: one to learn the brokers, then one kept to each", conns)
	}
}
