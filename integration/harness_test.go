package integration

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chaos-isr/chaos/cluster"
)

// Short timings keep the package fast; the session timeout and the lag time
// are equal so that a paused node is dropped by whichever rule fires first,
// and tests that need one rule alone override the other.
const (
	sessionTimeout = 1500 * time.Millisecond
	lagTimeMax     = 1500 * time.Millisecond
	heartbeatMs    = 100
)

// clusterOpts describe one test cluster; zero values take the defaults above.
type clusterOpts struct {
	nodes     int    // default 3
	sessionMs int64  // controller --session-timeout-ms
	lagMs     int64  // broker --replica-lag-time-max-ms
	election  string // controller --election: clean (default) or unclean
	clusterID string // every node's --cluster-id; default: the nodes' own
	// brokerArgs are more `chaos broker` flags, after the defaults.
	brokerArgs []string
}

// testCluster is a running local cluster owned by one test.
type testCluster struct {
	*cluster.Local
	t     testing.TB
	opts  clusterOpts
	addrs map[int32]string
}

// Ports come from a block of our own: other packages' tests and a developer's
// Kafka (9092) may be running on the same machine. The block start depends on
// the pid so that two test processes rarely probe the same ports, and stays
// below Linux's ephemeral range (32768+) where outgoing connections live.
var ports = struct {
	sync.Mutex
	next int
}{next: 29100 + (os.Getpid()%50)*64}

// reservePorts returns the first of n consecutive ports that were free when
// probed.
func reservePorts(t testing.TB, n int) int {
	ports.Lock()
	defer ports.Unlock()
	for tries := 0; tries < 200; tries++ {
		base := ports.next
		ports.next += n
		if ports.next > 32700 {
			ports.next = 29100
		}
		free := true
		for p := base; p < base+n && free; p++ {
			ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
			if err != nil {
				free = false
				continue
			}
			ln.Close()
		}
		if free {
			return base
		}
	}
	t.Fatalf("no block of %d free ports found", n)
	return 0
}

func startCluster(t testing.TB, o clusterOpts) *testCluster {
	t.Helper()
	if o.nodes == 0 {
		o.nodes = 3
	}
	if o.sessionMs == 0 {
		o.sessionMs = sessionTimeout.Milliseconds()
	}
	if o.lagMs == 0 {
		o.lagMs = lagTimeMax.Milliseconds()
	}
	if o.election == "" {
		o.election = "clean"
	}
	var lc *cluster.Local
	var err error
	// A port probed free may be taken by someone else before a node binds
	// it; that start fails, and a fresh block of ports is the cure.
	for attempt := 0; attempt < 3 && lc == nil; attempt++ {
		dir := t.TempDir() // registered before Close, so removed after the processes are gone
		base := reservePorts(t, o.nodes+1)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		lc, err = cluster.Start(ctx, cluster.Spec{
			Nodes:          o.nodes,
			ControllerPort: base,
			BasePort:       base + 1,
			DataDir:        dir,
			Binary:         chaosBin,
			ClusterID:      o.clusterID,
			ControllerArgs: []string{
				"--session-timeout-ms", fmt.Sprint(o.sessionMs),
				"--election", o.election,
			},
			BrokerArgs: append([]string{
				"--replica-lag-time-max-ms", fmt.Sprint(o.lagMs),
				"--heartbeat-interval-ms", fmt.Sprint(heartbeatMs),
				// Well under the lag time, so an idle follower's parked
				// fetch never makes it look lagging.
				"--replica-fetch-wait-max-ms", "200",
			}, o.brokerArgs...),
		})
		cancel()
		if err != nil {
			t.Logf("starting cluster (attempt %d): %v", attempt+1, err)
		}
	}
	if err != nil {
		t.Fatalf("starting cluster: %v", err)
	}
	tc := &testCluster{Local: lc, t: t, opts: o, addrs: map[int32]string{}}
	for _, n := range lc.Nodes()[1:] {
		tc.addrs[int32(n.ID)] = n.Addr
	}
	t.Cleanup(func() {
		// Close sends SIGTERM and falls back to SIGKILL after 2s; a node
		// that needed the fallback does not shut down cleanly, which a
		// user stopping "chaos cluster up" with Ctrl-C would hit too.
		var running []*cluster.Node
		for _, n := range lc.Nodes() {
			if n.PID() != 0 {
				running = append(running, n)
			}
		}
		start := time.Now()
		lc.Close()
		for _, n := range running {
			if lg := tc.logOf(n.ID); !strings.HasSuffix(strings.TrimSpace(lg), "stopped") {
				t.Errorf("%s %d did not stop cleanly on SIGTERM (Close took %v); its log ends:\n%s",
					n.Role, n.ID, time.Since(start), lastLines(lg, 5))
			}
		}
	})
	t.Cleanup(func() {
		if t.Failed() {
			tc.dumpLogs(60)
		}
	})
	tc.waitBrokers(20 * time.Second)
	return tc
}

// dumpLogs shows the tail of every node's log, so a CI failure can be
// diagnosed from the test output alone.
func (tc *testCluster) dumpLogs(lines int) {
	for _, n := range tc.Nodes() {
		data, err := os.ReadFile(n.LogPath)
		if err != nil {
			tc.t.Logf("%s: %v", n.LogPath, err)
			continue
		}
		tc.t.Logf("---- %s node %d (%s) ----\n%s", n.Role, n.ID, n.LogPath, lastLines(string(data), lines))
	}
}

// with returns a view of the cluster whose assertions fail t: a subtest must
// not call FailNow on its parent.
func (tc *testCluster) with(t testing.TB) *testCluster {
	c := *tc
	c.t = t
	return &c
}

func lastLines(s string, n int) string {
	all := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(all) > n {
		all = all[len(all)-n:]
	}
	return strings.Join(all, "\n")
}

// addr is broker id's address.
func (tc *testCluster) addr(id int32) string { return tc.addrs[id] }

// brokerIDs are the broker ids, 1..n.
func (tc *testCluster) brokerIDs() []int32 {
	var ids []int32
	for id := int32(1); id <= int32(tc.opts.nodes); id++ {
		ids = append(ids, id)
	}
	return ids
}

// waitBrokers waits until every broker knows every broker as live, which is
// when topics created now get the full replication factor.
func (tc *testCluster) waitBrokers(timeout time.Duration) {
	tc.t.Helper()
	for _, id := range tc.brokerIDs() {
		waitFor(tc.t, timeout, fmt.Sprintf("broker %d to list %d live brokers", id, tc.opts.nodes), func() (bool, string) {
			md, err := metadata(tc.addr(id))
			if err != nil {
				return false, err.Error()
			}
			return len(md.Brokers) == tc.opts.nodes, fmt.Sprintf("%d brokers", len(md.Brokers))
		})
	}
}

// logOf returns node id's log file as it is now.
func (tc *testCluster) logOf(id int) string {
	n, err := tc.Node(id)
	if err != nil {
		tc.t.Fatal(err)
	}
	data, err := os.ReadFile(n.LogPath)
	if err != nil {
		tc.t.Fatal(err)
	}
	return string(data)
}

// createTopic creates a topic through kadm (CreateTopics with configs), then
// waits until its leader serves it, so tests start from a settled state.
func (tc *testCluster) createTopic(name string, partitions int32, rf int16, configs map[string]string) {
	tc.t.Helper()
	cl := tc.kgoClient()
	defer cl.Close()
	cfg := map[string]*string{}
	for k, v := range configs {
		cfg[k] = &v
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, rf, cfg, name)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		tc.t.Fatalf("create topic %s: %v (%s)", name, err, resp.ErrMessage)
	}
	for p := int32(0); p < partitions; p++ {
		tc.waitISR(name, p, int(rf), 10*time.Second)
	}
}

// kgoClient is a franz-go client tuned for a cluster whose leaders move within
// a second or two: it may refresh metadata as often as it likes.
func (tc *testCluster) kgoClient(opts ...kgo.Opt) *kgo.Client {
	tc.t.Helper()
	cl, err := kgo.NewClient(tc.kgoOpts(opts...)...)
	if err != nil {
		tc.t.Fatal(err)
	}
	return cl
}

// kgoOpts are a franz-go client's options for this cluster, with opts
// after them: quick retries and metadata, for a cluster whose leaders
// move.
func (tc *testCluster) kgoOpts(opts ...kgo.Opt) []kgo.Opt {
	return append([]kgo.Opt{
		kgo.SeedBrokers(strings.Split(tc.Bootstrap(), ",")...),
		kgo.MetadataMinAge(50 * time.Millisecond),
		kgo.MetadataMaxAge(time.Second),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
		kgo.DialTimeout(time.Second),
		kgo.ProducerLinger(0),
	}, opts...)
}

// partitionState is one partition as a broker's metadata shows it.
type partitionState struct {
	leader int32
	epoch  int32
	isr    []int32
	err    int16
}

func (s partitionState) String() string {
	e := ""
	if s.err != 0 {
		e = " " + kerr.ErrorForCode(s.err).Error()
	}
	return fmt.Sprintf("leader %d epoch %d isr %v%s", s.leader, s.epoch, s.isr, e)
}

// state asks broker `from` for a partition's state. Asking one chosen broker
// (not "any broker", as a client would) matters when another is paused: a
// request to a stopped process would just hang.
func (tc *testCluster) state(from int32, topic string, partition int32) (partitionState, error) {
	md, err := metadata(tc.addr(from), topic)
	if err != nil {
		return partitionState{}, err
	}
	for _, t := range md.Topics {
		if t.Topic == nil || *t.Topic != topic {
			continue
		}
		if t.ErrorCode != 0 {
			return partitionState{}, kerr.ErrorForCode(t.ErrorCode)
		}
		for _, p := range t.Partitions {
			if p.Partition == partition {
				isr := slices.Clone(p.ISR)
				slices.Sort(isr)
				return partitionState{leader: p.Leader, epoch: p.LeaderEpoch, isr: isr, err: p.ErrorCode}, nil
			}
		}
	}
	return partitionState{}, fmt.Errorf("broker %d has no partition %s-%d", from, topic, partition)
}

// mustState is state from the first broker in `from` that answers.
func (tc *testCluster) mustState(topic string, partition int32, from ...int32) partitionState {
	tc.t.Helper()
	if len(from) == 0 {
		from = tc.brokerIDs()
	}
	var last error
	for _, id := range from {
		s, err := tc.state(id, topic, partition)
		if err == nil {
			return s
		}
		last = err
	}
	tc.t.Fatalf("no metadata for %s-%d from brokers %v: %v", topic, partition, from, last)
	return partitionState{}
}

// waitISR waits until broker metadata shows a live leader and an ISR of n,
// asked of `from` (default: every broker in turn).
func (tc *testCluster) waitISR(topic string, partition int32, n int, timeout time.Duration, from ...int32) partitionState {
	tc.t.Helper()
	if len(from) == 0 {
		from = tc.brokerIDs()
	}
	var got partitionState
	waitFor(tc.t, timeout, fmt.Sprintf("%s-%d to have a leader and %d in-sync replicas", topic, partition, n), func() (bool, string) {
		for _, id := range from {
			s, err := tc.state(id, topic, partition)
			if err != nil {
				return false, fmt.Sprintf("broker %d: %v", id, err)
			}
			if s.leader < 0 || len(s.isr) != n {
				return false, fmt.Sprintf("broker %d: %v", id, s)
			}
			got = s
		}
		return true, ""
	})
	return got
}

// waitFor polls cond every 50ms until it holds or the timeout passes; the
// string cond returns says what it last saw, for the failure message.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		ok, detail := cond()
		if ok {
			return
		}
		last = detail
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s; last seen: %s", timeout, what, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// kcatPath finds kcat (Debian's older packages call it kafkacat). Without it
// the test skips locally but fails under CI, where a skipped client matrix
// would pass silently.
func kcatPath(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"kcat", "kafkacat"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("kcat is not on PATH, and CI=true requires it: install it (apt-get install kcat)")
	}
	t.Skip("kcat is not on PATH; install it (apt-get install kcat) to run this test")
	return ""
}
