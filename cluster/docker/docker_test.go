package docker_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/cluster/docker"
	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/internal/dockertest"
	"github.com/chaos-isr/chaos/internal/testbin"
	"github.com/chaos-isr/chaos/nemesis"
	"github.com/chaos-isr/chaos/workload"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

// TestEveryFault starts a cluster in containers and runs every fault of
// the nemesis against it, one short window each: each must start and heal
// without an error, the cluster must come back whole (every broker
// registered, every partition led, data kept across kills), and nothing
// may be left once it is closed.
func TestEveryFault(t *testing.T) {
	dockertest.Require(t)
	start := time.Now()
	bin, err := testbin.Path()
	if err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	ctx := context.Background()
	c, err := docker.Start(ctx, docker.Spec{
		Nodes: 3, DataDir: data, Binary: bin, NetworkFaults: true,
		ControllerArgs: []string{"--session-timeout-ms", "1500", "--min-insync-replicas", "2"},
		BrokerArgs:     []string{"--replica-lag-time-max-ms", "1000", "--lose-unsynced"},
	})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			c.Close()
		}
	}()
	t.Logf("cluster up in %s: %s", time.Since(start).Round(time.Millisecond), c.Bootstrap())
	boot := strings.Split(c.Bootstrap(), ",")
	if err := workload.CreateTopic(ctx, boot, workload.TopicSpec{Name: "t", Partitions: 3, ReplicationFactor: 3, MinInsyncReplicas: 2}, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	net, err := c.Network(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("delays via %s", net.DelayMechanism())

	// The cluster's faults: those of the client family act on a
	// workload's own clients (its consumer group, its requests, its
	// transactional sessions), which this test has none of.
	var kinds []string
	for _, f := range nemesis.Names() {
		if k, _ := nemesis.Lookup(f); !nemesis.NeedsGroup([]string{f}) && k.Family() != nemesis.FamilyClient {
			kinds = append(kinds, f)
		}
	}
	var sched nemesis.Schedule
	for i, f := range kinds {
		at := time.Duration(i) * 2 * time.Second
		sched = append(sched, nemesis.Event{Fault: f, Start: at + 500*time.Millisecond, End: at + 1500*time.Millisecond})
	}
	histPath := filepath.Join(t.TempDir(), "history.jsonl")
	hw, err := history.Create(histPath)
	if err != nil {
		t.Fatal(err)
	}
	rec := workload.NewRecorder(hw, time.Now())
	leaders := func(ctx context.Context) (map[int32]int32, error) { return workload.Leaders(ctx, boot, "t") }
	nem := nemesis.New(nemesis.Config{Brokers: 3, Partitions: 3, LagTimeMax: time.Second, StopTimeout: 5 * time.Second, Seed: 1},
		c, net, leaders, rec)
	if err := nem.Run(ctx, time.Now(), sched); err != nil {
		t.Fatal(err)
	}
	if err := nem.HealAll(ctx); err != nil {
		t.Errorf("final heal: %v", err)
	}
	if err := hw.Close(); err != nil {
		t.Fatal(err)
	}
	recorded, err := history.ReadFile(histPath)
	if err != nil {
		t.Fatal(err)
	}
	started := map[string]bool{}
	for _, op := range recorded {
		if op.Type != history.Info {
			continue
		}
		if op.Error != "" {
			t.Errorf("%s %v: %s", op.F, op.Value.Targets, op.Error)
		}
		if strings.HasPrefix(op.F, "start-") {
			started[op.Value.Fault] = true
		}
		if op.F == "start-slow-follower" && !strings.Contains(strings.Join(op.Value.Targets, " "), "via "+net.Mechanism()) {
			t.Errorf("slow-follower does not say how it delays: %v", op.Value.Targets)
		}
	}
	for _, f := range kinds {
		if !started[f] {
			t.Errorf("fault %s never started", f)
		}
	}

	// Whole again: every partition led (clean election: by an ISR member)
	// once the brokers have rejoined.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ls, err := workload.Leaders(ctx, boot, "t")
		ok := err == nil && len(ls) == 3
		for _, l := range ls {
			ok = ok && l > 0
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster did not recover: leaders %v, %v", ls, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, n := range c.Info() {
		if !n.Running {
			t.Errorf("%s is not running after the heal", n.Name)
		}
	}
	c.Close()
	closed = true
	// Restarted containers kept their data (bind-mounted from the run's
	// directory), and their logs, all incarnations, were copied out.
	for i := 1; i <= 3; i++ {
		if _, err := os.Stat(filepath.Join(data, "broker-"+string(rune('0'+i)), "t-0")); err != nil {
			t.Errorf("broker %d's data: %v", i, err)
		}
		log, err := os.ReadFile(filepath.Join(data, "broker-"+string(rune('0'+i))+".log"))
		if err != nil {
			t.Errorf("broker %d's log: %v", i, err)
		} else if n := strings.Count(string(log), "listening on"); n < 2 {
			t.Errorf("broker %d's log shows %d starts; kill-all restarts every broker", i, n)
		}
	}
	dockertest.NoLeftovers(t)
	dockertest.NoPulls(t, start)
	t.Logf("every fault in %s", time.Since(start).Round(time.Second))
}

// TestBadInput: what the runtime refuses, with the reason.
func TestBadInput(t *testing.T) {
	ctx := context.Background()
	if _, err := docker.Start(ctx, docker.Spec{Nodes: 0, DataDir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "at least one node") {
		t.Errorf("0 nodes: %v", err)
	}
	if _, err := docker.Start(ctx, docker.Spec{Nodes: 3}); err == nil || !strings.Contains(err.Error(), "data directory") {
		t.Errorf("no data directory: %v", err)
	}
	dockertest.Require(t)
	// A dynamically linked binary cannot run FROM scratch.
	if _, err := docker.Start(ctx, docker.Spec{Nodes: 1, DataDir: t.TempDir(), Binary: "/bin/ls"}); err == nil || !strings.Contains(err.Error(), "static") {
		t.Errorf("a dynamic binary: %v", err)
	}
	dockertest.NoLeftovers(t)
}
