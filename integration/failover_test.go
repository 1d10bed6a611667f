package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/chaos-isr/chaos/cluster"
)

// ackLog records what a producer was told, safe for a producer goroutine
// and the test to share.
type ackLog struct {
	mu   sync.Mutex
	acks []ackEntry
}

type ackEntry struct {
	value  string
	offset int64
	at     time.Time
}

func (a *ackLog) add(value string, offset int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.acks = append(a.acks, ackEntry{value, offset, time.Now()})
}

func (a *ackLog) snapshot() []ackEntry {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.acks)
}

func (a *ackLog) len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.acks)
}

// checkAcked asserts that every acknowledged value is in log at its
// acknowledged offset (the lost-write and inconsistent-offsets checks), and
// that the log holds nothing but values we sent (garbage-read).
func checkAcked(t *testing.T, log []record, acks []ackEntry, sent func(string) bool) {
	t.Helper()
	at := map[int64]string{}
	for _, r := range log {
		at[r.offset] = r.value
		if !sent(r.value) {
			t.Errorf("offset %d holds %q, which nobody sent", r.offset, r.value)
		}
	}
	bad := 0
	for _, a := range acks {
		if got, ok := at[a.offset]; !ok || got != a.value {
			bad++
			if bad <= 10 {
				t.Errorf("acknowledged %q at offset %d, but the log has %q there (present: %v)", a.value, a.offset, got, ok)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d acknowledged writes are not at their offsets", bad, len(acks))
	}
}

// waitLogsEqual waits until every broker's replica of a partition (read as
// the debug consumer, to its log end) equals the leader's, and returns it.
func (tc *testCluster) waitLogsEqual(topic string, partition int32, timeout time.Duration) []record {
	tc.t.Helper()
	var leaderLog []record
	waitFor(tc.t, timeout, fmt.Sprintf("all replicas of %s-%d to equal the leader's", topic, partition), func() (bool, string) {
		s, err := tc.state(tc.brokerIDs()[0], topic, partition)
		if err != nil || s.leader < 0 {
			return false, fmt.Sprintf("no leader: %v %v", s, err)
		}
		leaderLog, _, err = readLog(tc.addr(s.leader), topic, partition, -2)
		if err != nil {
			return false, err.Error()
		}
		for _, id := range tc.brokerIDs() {
			got, _, err := readLog(tc.addr(id), topic, partition, -2)
			if err != nil {
				return false, fmt.Sprintf("broker %d: %v", id, err)
			}
			if !slices.Equal(got, leaderLog) {
				return false, fmt.Sprintf("broker %d has %d records, leader %d has %d; first difference %s",
					id, len(got), s.leader, len(leaderLog), firstDiff(got, leaderLog))
			}
		}
		return true, ""
	})
	return leaderLog
}

func firstDiff(a, b []record) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("at index %d: %+v vs %+v", i, a[i], b[i])
		}
	}
	return fmt.Sprintf("one is a prefix of the other (%d vs %d)", len(a), len(b))
}

// TestLeaderFailover kills a partition leader under a steady acks=-1 load
// with min.insync.replicas=2: a follower must take over within a few session
// timeouts, no acknowledged write may be lost or move, and the old leader
// must come back as an in-sync follower with the same log as the new leader.
func TestLeaderFailover(t *testing.T) {
	tc := startCluster(t, clusterOpts{})
	const topic = "failover"
	tc.createTopic(topic, 1, 3, map[string]string{"min.insync.replicas": "2"})
	old := tc.mustState(topic, 0)

	cl := tc.kgoClient(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DisableIdempotentWrite(), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordDeliveryTimeout(8*time.Second))
	defer cl.Close()
	var acks ackLog
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		// One request in flight at a time, so acknowledged offsets must
		// increase with the order of the sends.
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			v := fmt.Sprintf("load-%06d", i)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			r, err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).First()
			cancel()
			if err == nil {
				acks.add(v, r.Offset)
			}
		}
	}()
	defer func() {
		select {
		case <-done:
		default:
			close(stop)
			<-done
		}
	}()

	waitFor(t, 10*time.Second, "100 acknowledged writes before the kill", func() (bool, string) {
		n := acks.len()
		return n >= 100, fmt.Sprintf("%d acks", n)
	})
	killedAt := time.Now()
	if err := tc.Kill(int(old.leader)); err != nil {
		t.Fatal(err)
	}
	acksAtKill := acks.len()
	t.Logf("killed leader %d (%v) after %d acks", old.leader, old, acksAtKill)

	// A raw produce to whatever the survivors name as leader, one attempt
	// each, shows when the partition is writable again without any client's
	// retry and metadata timing in the way.
	var survivors []int32
	for _, id := range tc.brokerIDs() {
		if id != old.leader {
			survivors = append(survivors, id)
		}
	}
	var probes ackLog
	var probeErr string
	deadline := killedAt.Add(3 * sessionTimeout)
	for i := 0; ; i++ {
		s := tc.mustState(topic, 0, survivors...)
		if s.leader >= 0 && s.leader != old.leader {
			v := fmt.Sprintf("probe-%d", i)
			off, err := produceOnce(tc.addr(s.leader), topic, 0, -1, v)
			if err == nil {
				probes.add(v, off)
				t.Logf("new leader %d (%v) accepted an acks=-1 write %v after the kill", s.leader, s, time.Since(killedAt))
				break
			}
			probeErr = fmt.Sprintf("produce to %d: %v", s.leader, err)
		} else {
			probeErr = s.String()
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new leader accepted an acks=-1 write within 3 session timeouts (%v) of the kill; last: %s", 3*sessionTimeout, probeErr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	waitFor(t, 10*time.Second, "the kgo producer to resume after the failover", func() (bool, string) {
		n := acks.len()
		return n >= acksAtKill+50, fmt.Sprintf("%d acks, %d at the kill", n, acksAtKill)
	})
	close(stop)
	<-done

	all := append(acks.snapshot(), probes.snapshot()...)
	for i, a := range acks.snapshot()[1:] {
		if prev := acks.snapshot()[i]; a.offset <= prev.offset {
			t.Errorf("nonmonotonic send: %q acknowledged at %d after %q at %d", a.value, a.offset, prev.value, prev.offset)
		}
	}
	isSent := func(v string) bool { return strings.HasPrefix(v, "load-") || strings.HasPrefix(v, "probe-") }
	now := tc.mustState(topic, 0, survivors...)
	log, hw, err := readLog(tc.addr(now.leader), topic, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after the failover: %v, hw %d, %d acknowledged writes", now, hw, len(all))
	checkAcked(t, log, all, isSent)

	if err := tc.Restart(context.Background(), int(old.leader)); err != nil {
		t.Fatal(err)
	}
	tc.waitISR(topic, 0, 3, 15*time.Second)
	final := tc.waitLogsEqual(topic, 0, 10*time.Second)
	checkAcked(t, final, all, isSent)
	if lg := tc.logOf(int(old.leader)); strings.Contains(lg, "truncated by leader epoch") {
		t.Logf("the old leader truncated by leader epoch on rejoining")
	} else {
		t.Logf("the old leader had nothing to truncate (its log was a prefix of the new leader's)")
	}
}

// TestBrokerRestart takes a broker down and starts it again by hand on the
// same data directory: it must recover its log, catch up on what was written
// meanwhile, and rejoin every ISR. Three ways down, three code paths: a kill
// the controller notices by the session timeout; a kill and an immediate
// restart, which the controller learns of from the new incarnation's
// registration; and a graceful SIGTERM, which checkpoints on the way out.
func TestBrokerRestart(t *testing.T) {
	for _, how := range []string{"kill", "kill-restart-at-once", "sigterm"} {
		t.Run(how, func(t *testing.T) { testBrokerRestart(t, how) })
	}
}

func testBrokerRestart(t *testing.T, how string) {
	tc := startCluster(t, clusterOpts{})
	const topic = "restart"
	const victim = 2
	tc.createTopic(topic, 3, 3, nil)
	cl := tc.kgoClient(kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.DisableIdempotentWrite(), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordDeliveryTimeout(8*time.Second), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	defer cl.Close()
	acks := map[int32][]ackEntry{}
	produce := func(prefix string, n int) {
		t.Helper()
		var recs []*kgo.Record
		for i := range n {
			// Spread over the partitions: the victim leads some and
			// follows others, and both roles must recover.
			recs = append(recs, &kgo.Record{Partition: int32(i % 3), Value: fmt.Appendf(nil, "%s-%04d", prefix, i)})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		for _, r := range cl.ProduceSync(ctx, recs...) {
			if r.Err != nil {
				t.Fatalf("produce %s: %v", r.Record.Value, r.Err)
			}
			acks[r.Record.Partition] = append(acks[r.Record.Partition], ackEntry{value: string(r.Record.Value), offset: r.Record.Offset})
		}
	}
	produce("before", 150)

	// acks=-1 with the victim in every ISR: it holds all of it already.
	before := map[int32][]record{}
	for p := int32(0); p < 3; p++ {
		log, _, err := readLog(tc.addr(victim), topic, p, -2)
		if err != nil {
			t.Fatal(err)
		}
		checkAcked(t, log, acks[p], func(string) bool { return true })
		before[p] = log
	}
	var err error
	if how == "sigterm" {
		err = tc.Stop(victim, 5*time.Second)
	} else {
		err = tc.Kill(victim)
	}
	if err != nil {
		t.Fatal(err)
	}
	if how == "sigterm" {
		if lg := tc.logOf(victim); !strings.HasSuffix(strings.TrimSpace(lg), "stopped") {
			t.Errorf("broker %d did not shut down cleanly on SIGTERM; its log ends:\n%s", victim, lastLines(lg, 5))
		}
	}
	if how == "kill-restart-at-once" {
		// Back before its session expires: the controller must still treat
		// the new process as a new broker (its leaderships move, it leaves
		// the ISRs), because the old one's unflushed state is gone.
		if err := tc.Restart(context.Background(), victim); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 5*time.Second, "the controller to see a new incarnation", func() (bool, string) {
			lg := tc.logOf(cluster.ControllerNode)
			return strings.Contains(lg, fmt.Sprintf("broker %d re-registered (new incarnation)", victim)), lastLines(lg, 3)
		})
	} else {
		for p := int32(0); p < 3; p++ {
			waitFor(t, 3*sessionTimeout, fmt.Sprintf("broker %d to leave the ISR of %s-%d", victim, topic, p), func() (bool, string) {
				s, err := tc.state(1, topic, p)
				if err != nil {
					return false, err.Error()
				}
				return s.leader != victim && s.leader >= 0 && !slices.Contains(s.isr, victim), s.String()
			})
		}
	}
	produce("while-down", 150)

	if how != "kill-restart-at-once" {
		if err := tc.Restart(context.Background(), victim); err != nil {
			t.Fatal(err)
		}
	}
	for p := int32(0); p < 3; p++ {
		s := tc.waitISR(topic, p, 3, 15*time.Second)
		log := tc.waitLogsEqual(topic, p, 10*time.Second)
		checkAcked(t, log, acks[p], func(v string) bool {
			return strings.HasPrefix(v, "before-") || strings.HasPrefix(v, "while-down-")
		})
		after, _, err := readLog(tc.addr(victim), topic, p, -2)
		if err != nil {
			t.Fatal(err)
		}
		if len(after) < len(before[p]) || !slices.Equal(after[:len(before[p])], before[p]) {
			t.Errorf("%s-%d: broker %d's log before going down (%d records) is not a prefix of its log after the restart (%d records): %s",
				topic, p, victim, len(before[p]), len(after), firstDiff(after, before[p]))
		}
		t.Logf("%s-%d: %v, %d records", topic, p, s, len(log))
	}
}

// TestUncommittedTailTruncated leaves a write on the leader alone: both
// followers are paused (briefly, so they stay in the ISR) while an acks=-1
// produce is appended, and the leader is killed before anyone fetches it.
// A follower takes over under clean election, and the old leader, restarted,
// must drop the tail nobody else has (KIP-101), not keep it as a divergent
// suffix or serve it.
func TestUncommittedTailTruncated(t *testing.T) {
	tc := startCluster(t, clusterOpts{})
	const topic = "tail"
	tc.createTopic(topic, 1, 3, map[string]string{"min.insync.replicas": "2"})
	old := tc.mustState(topic, 0)
	var followers []int32
	for _, id := range tc.brokerIDs() {
		if id != old.leader {
			followers = append(followers, id)
		}
	}
	var acked []ackEntry
	for i := range 5 {
		v := fmt.Sprintf("committed-%d", i)
		off, err := produceOnce(tc.addr(old.leader), topic, 0, -1, v)
		if err != nil {
			t.Fatal(err)
		}
		acked = append(acked, ackEntry{value: v, offset: off})
	}
	tc.waitLogsEqual(topic, 0, 5*time.Second)

	pausedAt := time.Now()
	for _, f := range followers {
		if err := tc.Pause(int(f)); err != nil {
			t.Fatal(err)
		}
	}
	// A paused follower's fetch may still be parked at the leader, and the
	// leader would answer it with the new data into the follower's socket
	// buffer: SIGSTOP does not stop the kernel. Those fetches end after
	// --replica-fetch-wait-max-ms (200ms); only then is the leader alone.
	time.Sleep(400 * time.Millisecond)
	// The produce is appended at once and then waits for the HW, which the
	// paused followers hold back; it has no answer when the leader dies.
	done := make(chan error, 1)
	go func() {
		_, err := produceOnce(tc.addr(old.leader), topic, 0, -1, "tail-0", "tail-1", "tail-2")
		done <- err
	}()
	waitFor(t, 2*time.Second, "the tail on the leader", func() (bool, string) {
		log, _, err := readLog(tc.addr(old.leader), topic, 0, -2)
		if err != nil {
			return false, err.Error()
		}
		return len(log) == 8, fmt.Sprintf("%d records", len(log))
	})
	if err := tc.Kill(int(old.leader)); err != nil {
		t.Fatal(err)
	}
	for _, f := range followers {
		if err := tc.Resume(int(f)); err != nil {
			t.Fatal(err)
		}
	}
	if since := time.Since(pausedAt); since >= lagTimeMax {
		t.Fatalf("the followers were paused for %v, past replica.lag.time.max.ms: the scenario needs them in the ISR", since)
	}
	if err := <-done; err == nil {
		t.Fatal("the produce of the tail was acknowledged, though no follower could have fetched it")
	}
	var s partitionState
	waitFor(t, 3*sessionTimeout, "a follower to take over", func() (bool, string) {
		s = tc.mustState(topic, 0, followers...)
		return s.leader >= 0 && s.leader != old.leader, s.String()
	})
	if err := tc.Restart(context.Background(), int(old.leader)); err != nil {
		t.Fatal(err)
	}
	tc.waitISR(topic, 0, 3, 15*time.Second)
	final := tc.waitLogsEqual(topic, 0, 10*time.Second)
	checkAcked(t, final, acked, func(v string) bool { return true })
	for _, r := range final {
		if strings.HasPrefix(r.value, "tail-") {
			t.Errorf("the unacknowledged tail survived the failover: %q at %d (new leader %d)", r.value, r.offset, s.leader)
		}
	}
	if lg := tc.logOf(int(old.leader)); !strings.Contains(lg, "truncated by leader epoch") {
		t.Errorf("old leader %d rejoined without truncating by leader epoch; its log:\n%s", old.leader, lastLines(lg, 10))
	}
}
