package integration

import (
	"context"
	"maps"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/chaos-isr/chaos/workload"
)

// TestVerifyClusterIdentity: the tester's check of the cluster it started,
// against real brokers. A cluster with another id is refused at once,
// naming the address and both ids; the right id passes; a broker listed at
// an address the tester did not give it is refused; a broker that never
// registers times out naming it. And a broker started for another cluster
// is refused by the controller: it never joins.
func TestVerifyClusterIdentity(t *testing.T) {
	tc := startCluster(t, clusterOpts{clusterID: "foreign-cluster"})
	brokers := maps.Clone(tc.addrs)
	ctx := context.Background()

	start := time.Now()
	err := workload.VerifyCluster(ctx, workload.Identity{ClusterID: "mine", Brokers: brokers}, 20*time.Second)
	want := tc.addr(1) + " answers as cluster foreign-cluster, not the cluster chaos started (mine): is another cluster on these ports?"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("a foreign cluster verified as ours: %v", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("a foreign cluster took %s to be refused; it should be at once", took)
	}

	if err := workload.VerifyCluster(ctx, workload.Identity{ClusterID: "foreign-cluster", Brokers: brokers}, 20*time.Second); err != nil {
		t.Fatalf("the cluster's own id refused: %v", err)
	}

	swapped := maps.Clone(brokers)
	swapped[1], swapped[2] = brokers[2], brokers[1]
	err = workload.VerifyCluster(ctx, workload.Identity{ClusterID: "foreign-cluster", Brokers: swapped}, 20*time.Second)
	if err == nil || !strings.Contains(err.Error(), "which is not one of the cluster's brokers") {
		t.Fatalf("brokers at other addresses verified: %v", err)
	}

	// A fourth broker, started for another cluster, at a free port.
	port := reservePorts(t, 1)
	addr := "127.0.0.1:" + strconv.Itoa(port)
	ctrl, _ := tc.Node(0)
	dir := t.TempDir()
	cmd := exec.Command(chaosBin, "broker", "--id", "4", "--listen", addr, "--controller", ctrl.Addr,
		"--data", filepath.Join(dir, "data"), "--cluster-id", "intruder")
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	four := maps.Clone(brokers)
	four[4] = addr
	err = workload.VerifyCluster(ctx, workload.Identity{ClusterID: "foreign-cluster", Brokers: four}, 20*time.Second)
	if err == nil || !strings.Contains(err.Error(), addr+" answers as cluster intruder") {
		t.Fatalf("a cluster with a broker of another cluster: %v", err)
	}
	waitFor(t, 10*time.Second, "the intruder to be refused", func() (bool, string) {
		return strings.Contains(log.String(), "refused registration"), log.String()
	})
	// Refused, it is not one of the cluster's brokers.
	if err := workload.VerifyCluster(ctx, workload.Identity{ClusterID: "foreign-cluster", Brokers: brokers}, 20*time.Second); err != nil {
		t.Fatalf("the cluster lists the intruder: %v", err)
	}
	// A broker that never comes: the wait ends naming what is missing.
	err = workload.VerifyCluster(ctx, workload.Identity{ClusterID: "foreign-cluster", Brokers: map[int32]string{1: brokers[1], 2: brokers[2], 3: brokers[3], 5: "127.0.0.1:1"}}, time.Second)
	if err == nil || !strings.Contains(err.Error(), "cluster not ready after 1s") || !strings.Contains(err.Error(), "3 of 4 brokers") {
		t.Fatalf("a cluster missing a broker: %v", err)
	}
	if !strings.Contains(log.String(), "controller refused registration: cluster-id-mismatch") {
		t.Errorf("the intruder's log does not say it was refused:\n%s", log.String())
	}
	if n := strings.Count(log.String(), "refused registration"); n != 1 {
		t.Errorf("the refusal is logged %d times, want once:\n%s", n, log.String())
	}
}

// TestCreateTopicVerifies: the tester's topic must have what it asked
// for. An existing topic with other settings is an error naming them, one
// with the same settings an error too (a test writes to a topic of its
// own); a created topic is checked through Metadata and DescribeConfigs,
// which a real admin client (kadm) reads the same way.
func TestCreateTopicVerifies(t *testing.T) {
	tc := startCluster(t, clusterOpts{})
	bootstrap := strings.Split(tc.Bootstrap(), ",")
	ctx := context.Background()
	tc.createTopic("taken", 2, 3, map[string]string{"min.insync.replicas": "1"})

	err := workload.CreateTopic(ctx, bootstrap, workload.TopicSpec{Name: "taken", Partitions: 3, ReplicationFactor: 3, MinInsyncReplicas: 2}, 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "already exists with other settings: partitions=2 (asked 3), min.insync.replicas=1 (asked 2)") {
		t.Fatalf("an existing topic with other settings: %v", err)
	}
	same := workload.TopicSpec{Name: "taken", Partitions: 2, ReplicationFactor: 3, MinInsyncReplicas: 1}
	err = workload.CreateTopic(ctx, bootstrap, same, 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "already exists; a test writes to a topic of its own") {
		t.Fatalf("an existing topic with the same settings: %v", err)
	}
	if err := workload.VerifyTopic(ctx, bootstrap, same); err != nil {
		t.Fatalf("the topic as created: %v", err)
	}
	unclean := same
	unclean.Unclean = true
	if err := workload.VerifyTopic(ctx, bootstrap, unclean); err == nil || !strings.Contains(err.Error(), "unclean.leader.election.enable=false (asked true)") {
		t.Fatalf("a clean topic verified as unclean: %v", err)
	}
	if err := workload.VerifyTopic(ctx, bootstrap, workload.TopicSpec{Name: "absent", Partitions: 1, ReplicationFactor: 1, MinInsyncReplicas: 1}); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("a missing topic verified: %v", err)
	}

	fresh := workload.TopicSpec{Name: "fresh", Partitions: 3, ReplicationFactor: 3, MinInsyncReplicas: 2, Unclean: true}
	if err := workload.CreateTopic(ctx, bootstrap, fresh, 10*time.Second); err != nil {
		t.Fatalf("creating a fresh topic: %v", err)
	}
	cl := tc.kgoClient()
	defer cl.Close()
	// The brokers learn of a new topic from the controller one by one,
	// as Kafka's do: the broker kadm asks may not know it for a moment.
	var rc kadm.ResourceConfig
	deadline := time.Now().Add(10 * time.Second)
	for {
		rcs, err := kadm.NewClient(cl).DescribeTopicConfigs(ctx, "fresh")
		if err == nil {
			rc, err = rcs.On("fresh", nil)
		}
		if err == nil && rc.Err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("kadm describing fresh: %v %v", err, rc.Err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	got := map[string]string{}
	for _, c := range rc.Configs {
		got[c.Key] = c.MaybeValue()
	}
	if got["min.insync.replicas"] != "2" || got["unclean.leader.election.enable"] != "true" {
		t.Fatalf("kadm reads the configs as %v", got)
	}
}
