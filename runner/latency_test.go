package runner

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chaos-isr/chaos/cluster"
	"github.com/chaos-isr/chaos/internal/dockertest"
	"github.com/chaos-isr/chaos/netfault"
	"github.com/chaos-isr/chaos/workload"
)

// TestRealLatency is issue #16's acceptance test of the latency fault on
// real brokers: with acks=-1 and three replicas, 50 ms each way on every
// link between nodes (what the latency fault does), and then on one
// follower's links to the leader alone, the median produce latency rises
// by about 100 ms (the leader's answer to a parked fetch travels to the
// follower, whose next fetch travels back) and the cluster keeps
// answering: a starved link (the old HTB fallback in containers) would
// stall the fetches and with them every acks=-1 produce. Clients are
// never delayed, so the rise is the replication's alone. Both runtimes
// run it: the local one's proxies, and in containers netem or, on kernels
// without it, the same userspace delay line in a relay.
func TestRealLatency(t *testing.T) {
	if testing.Short() {
		t.Skip("starts clusters")
	}
	for _, rt := range Runtimes() {
		t.Run(rt, func(t *testing.T) {
			if rt == RuntimeDocker {
				dockertest.Require(t)
			}
			measureLatency(t, rt)
		})
	}
}

func measureLatency(t *testing.T, rt string) {
	const d = 50 * time.Millisecond
	ctx := context.Background()
	c := testCluster(t, rt, true)
	defer c.Close()
	t.Logf("delays via %s", c.Delays)
	if rt == RuntimeDocker && c.Delays != netfault.Netem && c.Delays != netfault.Userspace {
		t.Errorf("delays via %s in containers, want netem or the userspace delay line", c.Delays)
	}
	boot := strings.Split(c.Bootstrap(), ",")
	if err := workload.CreateTopic(ctx, boot, workload.TopicSpec{Name: "lat", Partitions: 1, ReplicationFactor: 3, MinInsyncReplicas: 2}, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(boot...), kgo.DefaultProduceTopic("lat"),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite(), kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RecordDeliveryTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	median := func(n int) time.Duration {
		t.Helper()
		lat := make([]time.Duration, n)
		for i := range lat {
			start := time.Now()
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
			lat[i] = time.Since(start)
		}
		slices.Sort(lat)
		return lat[n/2]
	}
	median(10) // connections and metadata
	healthy := median(30)
	rise := func(what string, start func()) {
		t.Helper()
		start()
		delayed := median(30)
		c.Net.HealAll()
		t.Logf("median produce latency (acks=-1): %v healthy, %v with %v each way on %s", healthy, delayed, d, what)
		if r := delayed - healthy; r < d || r > 6*d {
			t.Errorf("%s delayed %v each way: the median produce latency rose by %v, want %v..%v", what, d, r, d, 6*d)
		}
		median(5) // the heal's backlog
	}
	rise("every link", func() { c.Net.DelayAll(d) })
	// The latency fault's jitter, where the network draws it, keeps the
	// median: it is symmetric, and a chunk waits only for the ones
	// before it on its own connection.
	if jn, ok := c.Net.(interface {
		DelayAllJitter(d, j time.Duration, seed uint64) bool
	}); ok {
		rise("every link, ±10ms jitter", func() {
			if !jn.DelayAllJitter(d, 10*time.Millisecond, 1) && c.Delays != netfault.Netem {
				t.Errorf("delays via %s do not jitter", c.Delays)
			}
		})
	}
	leaders, err := workload.Leaders(ctx, boot, "lat")
	if err != nil {
		t.Fatal(err)
	}
	leader := int(leaders[0])
	follower := leader%3 + 1
	rise(cluster.NodeName(follower)+"'s link to its leader", func() {
		c.Net.Slow(cluster.NodeName(follower), cluster.NodeName(leader), d)
	})
}
