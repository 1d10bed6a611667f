package integration

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/workload"
)

// TestMonitorSeesISRShrinkAndHWGrow runs the run-time monitor against a real
// cluster while a follower is paused past replica.lag.time.max.ms and writes
// are made: its samples must show the ISR shrink to two and grow back to
// three, the HW follow the writes, and keep coming while a broker is paused.
func TestMonitorSeesISRShrinkAndHWGrow(t *testing.T) {
	tc := startCluster(t, clusterOpts{sessionMs: 20000})
	const topic = "monitored"
	tc.createTopic(topic, 1, 3, map[string]string{"min.insync.replicas": "2"})
	leader := tc.mustState(topic, 0).leader
	var follower int32
	for _, id := range tc.brokerIDs() {
		if id != leader {
			follower = id
			break
		}
	}
	var bootstrap []string
	for _, id := range tc.brokerIDs() {
		bootstrap = append(bootstrap, tc.addr(id))
	}

	path := filepath.Join(t.TempDir(), "history.jsonl")
	hw, err := history.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	rec := workload.NewRecorder(hw, time.Now())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	cfg := workload.Config{Workload: results.Workload{Bootstrap: bootstrap, Topic: topic, Partitions: 1}}
	go func() { done <- workload.Monitor(ctx, cfg, rec, 100*time.Millisecond, 500*time.Millisecond) }()

	for i := range 5 {
		if _, err := produceOnce(tc.addr(leader), topic, 0, -1, "before-"+string(rune('a'+i))); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(500 * time.Millisecond)
	if err := tc.Pause(int(follower)); err != nil {
		t.Fatal(err)
	}
	tc.waitISR(topic, 0, 2, 10*time.Second, leader)
	time.Sleep(500 * time.Millisecond)
	if err := tc.Resume(int(follower)); err != nil {
		t.Fatal(err)
	}
	tc.waitISR(topic, 0, 3, 15*time.Second, leader)
	time.Sleep(500 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("monitor: %v", err)
	}
	if err := hw.Close(); err != nil {
		t.Fatal(err)
	}
	ops, err := history.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := history.Pairs(ops); err != nil {
		t.Fatalf("monitor history does not pair: %v", err)
	}
	// The sequence of ISR sizes with repeats collapsed must contain 3, 2, 3.
	var sizes []string
	var maxHW int64 = -1
	okSamples := 0
	for _, op := range ops {
		if op.Process != history.MonitorProcess || op.F != history.Monitor {
			t.Fatalf("op %v is not a monitor op", op)
		}
		if op.Type != history.OK {
			continue
		}
		okSamples++
		v := op.Value
		if v.Leader == nil || v.Epoch == nil || len(v.Replicas) != 3 {
			t.Fatalf("sample %v lacks leader, epoch or replicas", op)
		}
		s := string(rune('0' + len(v.ISR)))
		if len(sizes) == 0 || sizes[len(sizes)-1] != s {
			sizes = append(sizes, s)
		}
		if v.HW != nil && *v.HW > maxHW {
			maxHW = *v.HW
		}
	}
	seq := strings.Join(sizes, "")
	if !strings.Contains(seq, "32") || !strings.Contains(seq[strings.Index(seq, "32"):], "23") {
		t.Errorf("ISR sizes over time %q: want the shrink 3→2 and the growth 2→3", seq)
	}
	if maxHW != 5 {
		t.Errorf("highest sampled HW %d, want 5 (five acks=-1 writes)", maxHW)
	}
	if okSamples < 10 {
		t.Errorf("only %d samples in a run of several seconds at 100ms", okSamples)
	}
	t.Logf("%d samples; ISR sizes %s; max HW %d", okSamples, seq, maxHW)
}
