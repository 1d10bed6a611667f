package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/broker/controller"
	"github.com/chaos-isr/chaos/broker/core"
	"github.com/chaos-isr/chaos/broker/server"
	"github.com/chaos-isr/chaos/cluster"
	"github.com/chaos-isr/chaos/internal/testbin"
)

const (
	nodes             = 3
	partitions        = 3
	replicationFactor = 3
	recordSize        = 100
)

// Producer settings, overridable for tuning experiments, e.g.
//
//	go test -run=NONE -bench=ProduceCluster$ -benchtime=500000x ./bench/ -args -linger=10ms -inflight=5
var (
	flagLinger   = flag.Duration("linger", 5*time.Millisecond, "kgo.ProducerLinger")
	flagBatch    = flag.Int("batch-bytes", 1<<20, "kgo.ProducerBatchMaxBytes (bytes per partition batch)")
	flagBuffered = flag.Int("buffered", 20_000, "kgo.MaxBufferedRecords (records produced but not yet acknowledged)")
	flagInflight = flag.Int("inflight", 1, "kgo.MaxProduceRequestsInflightPerBroker")
)

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	envs.closeAll()
	testbin.Cleanup()
	os.Exit(code)
}

// BenchmarkProduceCluster produces b.N records of 100 bytes at acks=-1 to a
// three-partition topic with replication factor 3 on a local three-broker
// cluster of child processes.
func BenchmarkProduceCluster(b *testing.B) {
	runProduce(b, envs.get(b, "processes", startProcesses), "acks-all", -1)
}

// BenchmarkProduceClusterLeaderAck is BenchmarkProduceCluster at acks=1:
// the difference is the cost of waiting for the followers.
func BenchmarkProduceClusterLeaderAck(b *testing.B) {
	runProduce(b, envs.get(b, "processes", startProcesses), "acks-leader", 1)
}

// BenchmarkProduceInProcess is BenchmarkProduceCluster with the controller
// and brokers running inside the test process, for CPU profiles that show
// the broker side.
func BenchmarkProduceInProcess(b *testing.B) {
	runProduce(b, envs.get(b, "in-process", startInProcess), "acks-all", -1)
}

// BenchmarkProduceKfake is BenchmarkProduceCluster against franz-go's
// kfake, an in-memory Kafka of three brokers in this process that neither
// replicates nor writes to disk: the yardstick the broker is measured
// against, in the same run and with the same client. Each run gets a
// fresh kfake: it keeps every record in this process's memory and slows
// as they pile up, so one reused across runs (as the brokers are) would
// flatter the broker.
func BenchmarkProduceKfake(b *testing.B) {
	e, err := startKfake()
	if err != nil {
		b.Fatal(err)
	}
	defer e.stop()
	runProduce(b, e, "acks-all", -1)
}

// runProduce produces b.N records to topic at acks -1 or 1.
func runProduce(b *testing.B, e *env, topic string, acks int16) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := e.ensureTopic(ctx, topic); err != nil {
		b.Fatal(err)
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(e.bootstrap...),
		kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(map[int16]kgo.Acks{-1: kgo.AllISRAcks(), 1: kgo.LeaderAck()}[acks]),
		// Plain produce throughput, comparable with the numbers before the broker had idempotence.
		kgo.DisableIdempotentWrite(),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		// Every partition (and so every leader) gets a third of the records.
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()),
		kgo.ProducerLinger(*flagLinger),
		kgo.ProducerBatchMaxBytes(int32(*flagBatch)),
		kgo.MaxBufferedRecords(*flagBuffered),
		kgo.MaxProduceRequestsInflightPerBroker(*flagInflight),
		kgo.ProduceRequestTimeout(30*time.Second),
	)
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	// Connect and learn the leaders before the clock starts.
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: make([]byte, recordSize)}).FirstErr(); err != nil {
		b.Fatalf("warm-up produce: %v", err)
	}
	e.produced(topic, 1)

	values := recordValues(1024)
	lat := make([]time.Duration, b.N)
	var done atomic.Int64
	var failed atomic.Int64
	var firstErr atomic.Pointer[error]
	promise := func(r *kgo.Record, err error) {
		d := time.Since(r.Timestamp)
		if err != nil {
			failed.Add(1)
			firstErr.CompareAndSwap(nil, &err)
		}
		lat[done.Add(1)-1] = d
	}

	b.SetBytes(recordSize)
	b.ResetTimer()
	for i := range b.N {
		// The timestamp carries the monotonic clock: the latency is the
		// time from this call to the promise.
		cl.Produce(ctx, &kgo.Record{Value: values[i%len(values)], Timestamp: time.Now()}, promise)
	}
	if err := cl.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	elapsed := b.Elapsed()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d records failed; first error: %v", n, b.N, *firstErr.Load())
	}
	// At acks=-1 every acknowledged record is below the high watermark at
	// once; at acks=1 the followers catch up soon after.
	want := e.produced(topic, int64(b.N))
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := endOffsets(ctx, cl, topic)
		if err != nil {
			b.Fatalf("list offsets: %v", err)
		}
		if got == want {
			break
		}
		if acks == -1 || time.Now().After(deadline) {
			b.Fatalf("the partitions' high watermarks add up to %d, want %d acknowledged records", got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}

	slices.Sort(lat)
	perSec := float64(b.N) / elapsed.Seconds()
	p50, p99 := quantile(lat, 0.50), quantile(lat, 0.99)
	b.ReportMetric(perSec, "records/s")
	b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
	if b.N >= 10_000 {
		b.Logf("%s: %d records of %d B in %v: %.0f records/s, %.1f MB/s, latency p50 %v p99 %v max %v "+
			"(linger %v, batch %d B, buffered %d, inflight %d)",
			topic, b.N, recordSize, elapsed.Round(time.Millisecond), perSec, perSec*recordSize/1e6,
			p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond), lat[len(lat)-1].Round(10*time.Microsecond),
			*flagLinger, *flagBatch, *flagBuffered, *flagInflight)
	}
}

func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// recordValues returns n distinct incompressible values of recordSize bytes.
func recordValues(n int) [][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([][]byte, n)
	for i := range out {
		v := make([]byte, recordSize)
		for j := range v {
			v[j] = byte(rng.Uint32())
		}
		out[i] = v
	}
	return out
}

// env is a running cluster shared by the runs of the benchmarks.
type env struct {
	name      string
	bootstrap []string
	stop      func()

	mu     sync.Mutex
	topics map[string]bool
	counts map[string]int64 // records acknowledged per topic
}

// produced adds n acknowledged records to the topic's count and returns the
// total.
func (e *env) produced(topic string, n int64) int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.counts[topic] += n
	return e.counts[topic]
}

type envSet struct {
	mu  sync.Mutex
	all map[string]*env
}

var envs = envSet{all: map[string]*env{}}

type starter func() (*env, error)

// get starts the cluster on first use; later runs reuse it.
func (s *envSet) get(b *testing.B, key string, start starter) *env {
	b.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.all[key]; e != nil {
		return e
	}
	e, err := start()
	if err != nil {
		b.Fatal(err)
	}
	s.all[key] = e
	return e
}

func (s *envSet) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, e := range s.all {
		e.stop()
		delete(s.all, k)
	}
}

// startProcesses runs the controller and brokers as child processes of the
// chaos binary, the way "chaos cluster up" does.
func startProcesses() (*env, error) {
	bin, err := testbin.Path()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "chaos-bench-")
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	var lc *cluster.Local
	for attempt := 0; ; attempt++ {
		base, err := freePortRange(nodes + 1)
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		// The controller takes the first port, the brokers the rest.
		lc, err = cluster.Start(ctx, cluster.Spec{
			Nodes: nodes, BasePort: base + 1, ControllerPort: base,
			DataDir: filepath.Join(dir, strconv.Itoa(attempt)), Binary: bin,
		})
		if err == nil {
			break
		}
		if attempt == 4 { // a port taken between the check and the start, five times
			os.RemoveAll(dir)
			return nil, err
		}
	}
	var addrs []string
	for _, n := range lc.Nodes()[1:] {
		addrs = append(addrs, n.Addr)
	}
	return &env{name: "processes", bootstrap: addrs, topics: map[string]bool{}, counts: map[string]int64{}, stop: func() {
		lc.Close()
		os.RemoveAll(dir)
	}}, nil
}

// startInProcess runs the controller and brokers as goroutines of this
// process, each with its own data directory and a log file.
func startInProcess() (*env, error) {
	dir, err := os.MkdirTemp("", "chaos-bench-")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	logf, err := os.Create(filepath.Join(dir, "nodes.log"))
	if err != nil {
		cancel()
		os.RemoveAll(dir)
		return nil, err
	}
	var waits []func()
	stop := func() {
		cancel()
		for _, w := range waits {
			w()
		}
		logf.Close()
		os.RemoveAll(dir)
	}
	ports, err := freePorts(nodes + 1)
	if err != nil {
		stop()
		return nil, err
	}
	ctrlAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))
	c, err := server.StartController(ctx, server.ControllerOptions{
		Config: controller.DefaultConfig(), Listen: ctrlAddr, DataDir: filepath.Join(dir, "controller"),
		Logger: log.New(logf, "controller: ", log.Lmicroseconds),
	})
	if err != nil {
		stop()
		return nil, err
	}
	waits = append(waits, c.Wait)
	var addrs []string
	for i := 1; i <= nodes; i++ {
		cfg := core.DefaultConfig()
		cfg.BrokerID = int32(i)
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[i]))
		br, err := server.StartBroker(ctx, server.BrokerOptions{
			Core: cfg, Listen: addr, Controller: ctrlAddr, DataDir: filepath.Join(dir, fmt.Sprintf("broker-%d", i)),
			Logger: log.New(logf, fmt.Sprintf("broker %d: ", i), log.Lmicroseconds),
		})
		if err != nil {
			stop()
			return nil, err
		}
		waits = append(waits, br.Wait)
		addrs = append(addrs, addr)
	}
	return &env{name: "in-process", bootstrap: addrs, topics: map[string]bool{}, counts: map[string]int64{}, stop: stop}, nil
}

// startKfake starts kfake's three brokers.
func startKfake() (*env, error) {
	c, err := kfake.NewCluster(kfake.NumBrokers(nodes))
	if err != nil {
		return nil, err
	}
	return &env{name: "kfake", bootstrap: c.ListenAddrs(), topics: map[string]bool{}, counts: map[string]int64{}, stop: c.Close}, nil
}

// ensureTopic creates the topic (partitions, replication factor 3) once and
// waits until every partition has a leader and a full ISR.
func (e *env) ensureTopic(ctx context.Context, topic string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.topics[topic] {
		return nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.bootstrap...))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// Brokers register with the controller shortly after they listen: until
	// all have, CreateTopics may fail (too few brokers for RF=3).
	var last error
	for {
		last = createTopic(ctx, cl, topic)
		if last == nil {
			break
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return fmt.Errorf("create topic %s on %s cluster: %w (last error: %v)", topic, e.name, err, last)
		}
	}
	for {
		last = topicReady(ctx, cl, topic)
		if last == nil {
			e.topics[topic] = true
			return nil
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return fmt.Errorf("topic %s on %s cluster not ready: %w (last: %v)", topic, e.name, err, last)
		}
	}
}

func createTopic(ctx context.Context, cl *kgo.Client, topic string) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 5000
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = topic, partitions, replicationFactor
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if len(resp.Topics) != 1 {
		return fmt.Errorf("CreateTopics answered %d topics", len(resp.Topics))
	}
	rt := resp.Topics[0]
	if err := kerr.ErrorForCode(rt.ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		if rt.ErrorMessage != nil {
			return fmt.Errorf("%w: %s", err, *rt.ErrorMessage)
		}
		return err
	}
	return nil
}

func topicReady(ctx context.Context, cl *kgo.Client, topic string) error {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err
	}
	if len(resp.Topics) != 1 {
		return fmt.Errorf("metadata lists %d topics", len(resp.Topics))
	}
	t := resp.Topics[0]
	if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
		return err
	}
	if len(t.Partitions) != partitions {
		return fmt.Errorf("%d of %d partitions", len(t.Partitions), partitions)
	}
	for _, p := range t.Partitions {
		if p.Leader < 0 || len(p.ISR) != replicationFactor {
			return fmt.Errorf("partition %d: leader %d, isr %v", p.Partition, p.Leader, p.ISR)
		}
	}
	return nil
}

// endOffsets is the sum of the topic's partitions' high watermarks.
func endOffsets(ctx context.Context, cl *kgo.Client, topic string) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for p := range int32(partitions) {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = p, -1 // -1: the latest offset
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, err
	}
	var sum int64
	var n int
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return 0, fmt.Errorf("partition %d: %w", p.Partition, err)
			}
			sum += p.Offset
			n++
		}
	}
	if n != partitions {
		return 0, fmt.Errorf("got offsets of %d of %d partitions", n, partitions)
	}
	return sum, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// freePorts returns n ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var ports []int
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// freePortRange returns the first of n consecutive ports that were free a
// moment ago (cluster.Start numbers broker ports consecutively).
func freePortRange(n int) (int, error) {
	for range 100 {
		base := 20000 + rand.IntN(30000)
		ok := true
		var lns []net.Listener
		for p := base; p < base+n; p++ {
			ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
			if err != nil {
				ok = false
				break
			}
			lns = append(lns, ln)
		}
		for _, ln := range lns {
			ln.Close()
		}
		if ok {
			return base, nil
		}
	}
	return 0, errors.New("no range of free ports on 127.0.0.1")
}
