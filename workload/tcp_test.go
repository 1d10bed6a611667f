package workload

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chaos-isr/chaos/broker/controller"
	"github.com/chaos-isr/chaos/broker/core"
	"github.com/chaos-isr/chaos/broker/server"
	"github.com/chaos-isr/chaos/history"
)

// testCluster is a controller and brokers of the real broker, in this
// process, on 127.0.0.1: what the codec must agree with is the broker's
// behaviour over TCP, not its packages.
type testCluster struct {
	id        string
	bootstrap []string
	brokers   map[int32]string
}

// syncBuffer collects the nodes' logs, shown when a test fails.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startTestCluster(t *testing.T, nodes int) *testCluster {
	t.Helper()
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		var tc *testCluster
		// A port seen free may be taken before a node binds it: another
		// set of ports is the cure.
		if tc, err = tryStartCluster(t, nodes); err == nil {
			return tc
		}
	}
	t.Fatalf("starting a cluster: %v", err)
	return nil
}

func tryStartCluster(t *testing.T, nodes int) (*testCluster, error) {
	// Made before the cleanup that stops the nodes is registered, so
	// removed after they have stopped writing to it.
	dir := t.TempDir()
	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	var waits []func()
	t.Cleanup(func() {
		cancel()
		for _, w := range waits {
			w()
		}
		if t.Failed() {
			t.Logf("the nodes' logs:\n%s", logs)
		}
	})
	ports, err := freePorts(nodes + 1)
	if err != nil {
		return nil, err
	}
	tc := &testCluster{id: "workload-test", brokers: map[int32]string{}}
	ccfg := controller.DefaultConfig()
	ccfg.ClusterID = tc.id
	ctrlAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	c, err := server.StartController(ctx, server.ControllerOptions{Config: ccfg, Listen: ctrlAddr,
		DataDir: filepath.Join(dir, "controller"), Logger: log.New(logs, "controller: ", log.Lmicroseconds)})
	if err != nil {
		return nil, err
	}
	waits = append(waits, c.Wait)
	for i := 1; i <= nodes; i++ {
		cfg := core.DefaultConfig()
		cfg.BrokerID, cfg.ClusterID = int32(i), tc.id
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[i]))
		b, err := server.StartBroker(ctx, server.BrokerOptions{Core: cfg, Listen: addr, Controller: ctrlAddr,
			DataDir: filepath.Join(dir, fmt.Sprintf("broker-%d", i)), Logger: log.New(logs, fmt.Sprintf("broker %d: ", i), log.Lmicroseconds)})
		if err != nil {
			return nil, err
		}
		waits = append(waits, b.Wait)
		tc.bootstrap = append(tc.bootstrap, addr)
		tc.brokers[int32(i)] = addr
	}
	return tc, nil
}

func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func valuesOf(recs []history.Record) []string {
	out := []string{}
	for _, r := range recs {
		out = append(out, r.Value)
	}
	return out
}

// TestTCPClientAgainstTheBroker runs every call of the client against the
// real broker: what it sends the broker must read, and what the broker
// answers it must read back, with franz-go's own client as the third
// party that says both sides speak Kafka and not a dialect of their own.
func TestTCPClientAgainstTheBroker(t *testing.T) {
	tc := startTestCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := VerifyCluster(ctx, Identity{ClusterID: tc.id, Brokers: tc.brokers}, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	spec := TopicSpec{Name: "codec", Partitions: 2, ReplicationFactor: 3, MinInsyncReplicas: 2}
	if err := CreateTopic(ctx, tc.bootstrap, spec, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	cl := NewSyncClient(tc.bootstrap, ClientOptions{ID: "test", Timeout: 5 * time.Second, ProduceTimeout: 3 * time.Second})
	defer cl.Close()

	md, err := cl.Metadata(ctx, spec.Name)
	if err != nil {
		t.Fatal(err)
	}
	if md.ClusterID != tc.id || !reflect.DeepEqual(md.Brokers, tc.brokers) || len(md.Partitions) != 2 || !slices.Contains(tc.bootstrap, md.From) {
		t.Fatalf("metadata %+v", md)
	}
	for p, s := range md.Partitions {
		if s.Leader < 1 || len(s.Replicas) != 3 || len(s.ISR) != 3 || s.Epoch < 0 {
			t.Fatalf("partition %d: %+v", p, s)
		}
	}

	k := history.Key{Topic: spec.Name, Partition: 0}
	// The new topic reaches the brokers one by one: until the leader has
	// it, a send fails, definitely not written, and may be tried again.
	for o := cl.Send(ctx, k, "v0", -1); o.Type != history.OK; o = cl.Send(ctx, k, "v0", -1) {
		if o.Type != history.Fail || ctx.Err() != nil {
			t.Fatalf("the first send: %+v", o)
		}
		time.Sleep(20 * time.Millisecond)
	}
	sent := []string{"v0"}
	for i, acks := range []int16{-1, -1, 1, 1} {
		i++
		v := fmt.Sprintf("v%d", i)
		if o := cl.Send(ctx, k, v, acks); o.Type != history.OK || o.Offset != int64(i) {
			t.Fatalf("send %s acks=%d: %+v, want ok at %d", v, acks, o, i)
		}
		sent = append(sent, v)
	}
	if o := cl.Send(ctx, k, "v5", 0); o.Type != history.Info || o.Error != "acks=0: no acknowledgement" {
		t.Fatalf("acks=0: %+v", o)
	}
	sent = append(sent, "v5")

	// The acks=0 record and the followers' copies land soon after.
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := cl.Poll(ctx, k, 0)
		if err == nil && r.HW == 6 && reflect.DeepEqual(valuesOf(r.Records), sent) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("poll from 0: %+v, %v; want %q below HW 6", r, err, sent)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if r, err := cl.Poll(ctx, k, 4); err != nil || !reflect.DeepEqual(valuesOf(r.Records), sent[4:]) || r.Records[0].Offset != 4 {
		t.Fatalf("poll from 4: %+v, %v", r, err)
	}
	var oor *OutOfRangeError
	if _, err := cl.Poll(ctx, k, 100); !errors.As(err, &oor) || oor.HW != 6 ||
		err.Error() != "OFFSET_OUT_OF_RANGE: resuming at the high watermark 6" {
		t.Fatalf("poll from 100: %v, want out of range at HW 6", err)
	}
	if off, err := cl.EndOffset(ctx, k); err != nil || off != 6 {
		t.Fatalf("end offset %d, %v; want 6", off, err)
	}
	if r, err := cl.FinalRead(ctx, k); err != nil || r.HW != 6 || !reflect.DeepEqual(valuesOf(r.Records), sent) {
		t.Fatalf("final read: %+v, %v", r, err)
	}
	for _, b := range md.Partitions[0].Replicas {
		for {
			r, err := cl.ReplicaRead(ctx, k, b)
			if err == nil && reflect.DeepEqual(valuesOf(r.Records), sent) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("broker %d's replica: %+v, %v; want %q", b, r, err, sent)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	// franz-go reads what this client wrote...
	kc, err := kgo.NewClient(kgo.SeedBrokers(tc.bootstrap...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{spec.Name: {0: kgo.NewOffset().AtStart()}}),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	var read []string
	for len(read) < len(sent) && ctx.Err() == nil {
		fs := kc.PollFetches(ctx)
		if errs := fs.Errors(); len(errs) > 0 {
			t.Fatalf("franz-go's consumer: %v", errs)
		}
		fs.EachRecord(func(r *kgo.Record) { read = append(read, string(r.Value)) })
	}
	if !reflect.DeepEqual(read, sent) {
		t.Fatalf("franz-go's consumer read %q, want %q", read, sent)
	}
	// ...and this client reads what franz-go wrote, several records to a
	// batch.
	k1 := history.Key{Topic: spec.Name, Partition: 1}
	var theirs []string
	var recs []*kgo.Record
	for i := range 20 {
		theirs = append(theirs, fmt.Sprintf("kgo-%d", i))
		recs = append(recs, &kgo.Record{Topic: spec.Name, Partition: 1, Value: []byte(theirs[i])})
	}
	kp, err := kgo.NewClient(kgo.SeedBrokers(tc.bootstrap...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer kp.Close()
	if err := kp.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if r, err := cl.FinalRead(ctx, k1); err != nil || !reflect.DeepEqual(valuesOf(r.Records), theirs) {
		t.Fatalf("final read of franz-go's records: %+v, %v", r, err)
	}
	if r, err := cl.Poll(ctx, k1, 7); err != nil || len(r.Records) == 0 || r.Records[0].Offset != 7 || r.Records[0].Value != "kgo-7" {
		t.Fatalf("poll from inside franz-go's batch: %+v, %v", r, err)
	}

	// A second create of the same topic is refused: a test writes to a
	// topic of its own.
	if err := CreateTopic(ctx, tc.bootstrap, spec, 5*time.Second); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("creating the topic again: %v", err)
	}
	var ke *kerr.Error
	if err := cl.CreateTopic(ctx, spec, time.Second); !errors.As(err, &ke) || ke != kerr.TopicAlreadyExists {
		t.Fatalf("the client's CreateTopic of an existing topic: %v", err)
	}
}

// TestSendNeverSentIsFail: with no broker to take it, a send definitely
// did not happen.
func TestSendNeverSentIsFail(t *testing.T) {
	ports, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	cl := NewSyncClient([]string{net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))}, ClientOptions{ID: "test", Timeout: time.Second})
	defer cl.Close()
	o := cl.Send(context.Background(), history.Key{Topic: "t"}, "0-1", -1)
	if o.Type != history.Fail || !strings.Contains(o.Error, "not sent") {
		t.Fatalf("%+v, want fail: not sent", o)
	}
}

// TestSendUnansweredIsInfo: a send the leader took and never answered may
// have been written.
func TestSendUnansweredIsInfo(t *testing.T) {
	f := newFakeBrokers(t, true)
	cl := NewSyncClient([]string{f.live.Addr().String()}, ClientOptions{ID: "test", Timeout: 300 * time.Millisecond})
	defer cl.Close()
	o := cl.Send(context.Background(), history.Key{Topic: "t"}, "0-1", -1)
	if o.Type != history.Info || !strings.Contains(o.Error, "timeout") {
		t.Fatalf("%+v, want info: timeout", o)
	}
}

// TestPollDetectsCorruptCRC: a fetch answer whose batch does not match its
// CRC fails the poll, naming the CRC, rather than passing on records that
// cannot be told from garbage.
func TestPollDetectsCorruptCRC(t *testing.T) {
	f := newFakeBrokers(t, false)
	f.batches = encodeBatch(1, values("0-1", "0-2")...)
	cl := NewSyncClient([]string{f.live.Addr().String()}, ClientOptions{ID: "test", Timeout: time.Second})
	defer cl.Close()
	k := history.Key{Topic: "t"}
	if r, err := cl.Poll(context.Background(), k, 0); err != nil || len(r.Records) != 2 || r.HW != 42 {
		t.Fatalf("intact: %+v, %v", r, err)
	}
	f.batches[len(f.batches)-3] ^= 0x20
	if r, err := cl.Poll(context.Background(), k, 0); err == nil || !strings.Contains(err.Error(), "CRC-32C") {
		t.Fatalf("corrupt: %+v, %v; want a CRC mismatch", r, err)
	}
}

// TestClassify: only a refusal before the append is fail.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err  *kerr.Error
		acks int16
		want history.Type
	}{
		{kerr.NotEnoughReplicas, -1, history.Fail},
		{kerr.UnknownTopicOrPartition, -1, history.Fail},
		{kerr.LeaderNotAvailable, -1, history.Fail},
		{kerr.CorruptMessage, 1, history.Fail},
		{kerr.MessageTooLarge, 1, history.Fail},
		{kerr.NotLeaderForPartition, 1, history.Fail},
		{kerr.NotLeaderForPartition, -1, history.Info},
		{kerr.NotEnoughReplicasAfterAppend, -1, history.Info},
		{kerr.RequestTimedOut, -1, history.Info},
		{kerr.UnknownServerError, 1, history.Info},
	} {
		if o := classify(tc.err.Code, tc.acks); o.Type != tc.want || o.Error != tc.err.Message {
			t.Errorf("%s at acks=%d: %+v, want %s %s", tc.err.Message, tc.acks, o, tc.want, tc.err.Message)
		}
	}
	if o := classify(0, -1); o.Type != history.OK || o.Error != "" {
		t.Errorf("no error: %+v", o)
	}
}

// TestTCPPipelinedSessionAgainstTheBroker: five lanes of an idempotent
// session send through one client at once. Their requests to the leader
// share one connection with several outstanding (the broker reads them
// one at a time, in order), every send is acknowledged, and the offsets
// follow the order the sends took their places in (their sequence
// numbers), whatever order they completed in.
func TestTCPPipelinedSessionAgainstTheBroker(t *testing.T) {
	tc := startTestCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	spec := TopicSpec{Name: "pipe", Partitions: 1, ReplicationFactor: 3, MinInsyncReplicas: 2}
	if err := CreateTopic(ctx, tc.bootstrap, spec, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	cl := NewSyncClient(tc.bootstrap, ClientOptions{ID: "test", Timeout: 5 * time.Second, ProduceTimeout: 3 * time.Second,
		Retries: 5, Idempotent: true})
	defer cl.Close()
	k := history.Key{Topic: spec.Name, Partition: 0}
	// The topic reaches the leader a moment after it is created.
	for o := cl.Send(ctx, k, "first", -1); o.Type != history.OK; o = cl.Send(ctx, k, "first", -1) {
		if o.Type != history.Fail || ctx.Err() != nil {
			t.Fatalf("the first send: %+v", o)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Five lanes on the client's loop, each sending its next value once
	// its last is answered: the order of the Send calls is the order the
	// sends took their places in.
	var order []string
	offsets := map[string]int64{}
	finished := make(chan struct{})
	lanes := 5
	cl.l.post(func() {
		for lane := range lanes {
			var next func(n int)
			next = func(n int) {
				if n == 40 {
					if lanes--; lanes == 0 {
						close(finished)
					}
					return
				}
				v := fmt.Sprintf("%d-%d", lane, n)
				order = append(order, v)
				cl.cl.Send(k, v, -1, func(o Outcome) {
					if o.Type != history.OK {
						t.Errorf("send %s: %+v", v, o)
					}
					offsets[v] = o.Offset
					next(n + 1)
				})
			}
			next(0)
		}
	})
	select {
	case <-finished:
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	if t.Failed() {
		return
	}
	for i := 1; i < len(order); i++ {
		if offsets[order[i]] <= offsets[order[i-1]] {
			t.Fatalf("%s (sent after %s) landed at %d, after %d", order[i], order[i-1], offsets[order[i]], offsets[order[i-1]])
		}
	}
	most := 0
	cl.l.do(func() {
		for _, conn := range cl.cl.wire.(*tcpWire).conns {
			conn.mu.Lock()
			most = max(most, conn.most)
			conn.mu.Unlock()
		}
	})
	t.Logf("%d sends, at most %d requests outstanding on one connection", len(order), most)
	if most < 2 {
		t.Fatalf("at most %d request outstanding on a connection: the lanes did not pipeline", most)
	}
}
