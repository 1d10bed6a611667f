package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestElection is the 2013 Jepsen scenario under both election policies
// (docs/guarantees.md, classic scenarios 2 and 3): RF=3, min.insync.replicas=1,
// followers paused until the ISR is the leader alone, acks=-1 writes that
// only the leader holds, then the leader dies and the followers come back.
//
//   - clean: no out-of-sync replica may lead, so the partition stays offline
//     until the old leader returns, and then every acknowledged write is there;
//   - unclean: a stale follower is elected and the writes acknowledged while
//     it was out are lost. The test demands the loss: a tester whose
//     permitted anomalies never happen has no teeth.
func TestElection(t *testing.T) {
	for _, policy := range []string{"clean", "unclean"} {
		t.Run(policy, func(t *testing.T) {
			testElection(t, policy)
		})
	}
}

func testElection(t *testing.T, policy string) {
	tc := startCluster(t, clusterOpts{election: policy})
	const topic = "election"
	tc.createTopic(topic, 1, 3, nil)
	old := tc.mustState(topic, 0)
	leader := old.leader
	var followers []int32
	for _, id := range tc.brokerIDs() {
		if id != leader {
			followers = append(followers, id)
		}
	}
	var committed, aloneAcks []ackEntry
	for i := range 10 {
		v := fmt.Sprintf("replicated-%d", i)
		off, err := produceOnce(tc.addr(leader), topic, 0, -1, v)
		if err != nil {
			t.Fatalf("produce %s: %v", v, err)
		}
		committed = append(committed, ackEntry{value: v, offset: off})
	}

	for _, f := range followers {
		if err := tc.Pause(int(f)); err != nil {
			t.Fatal(err)
		}
	}
	tc.waitISR(topic, 0, 1, 10*time.Second, leader)
	for i := range 10 {
		v := fmt.Sprintf("leader-alone-%d", i)
		off, err := produceOnce(tc.addr(leader), topic, 0, -1, v)
		if err != nil {
			t.Fatalf("acks=-1 produce %s with the ISR the leader alone and min.insync.replicas=1: %v", v, err)
		}
		aloneAcks = append(aloneAcks, ackEntry{value: v, offset: off})
	}
	killedAt := time.Now()
	if err := tc.Kill(int(leader)); err != nil {
		t.Fatal(err)
	}
	for _, f := range followers {
		if err := tc.Resume(int(f)); err != nil {
			t.Fatal(err)
		}
	}
	isSent := func(v string) bool {
		return strings.HasPrefix(v, "replicated-") || strings.HasPrefix(v, "leader-alone-")
	}

	if policy == "clean" {
		// Until the controller fences the dead leader its metadata still
		// names it; after that the partition must be offline. Either way
		// no stale follower may lead, for a good while past the fencing.
		until := killedAt.Add(sessionTimeout + 3*time.Second)
		var last partitionState
		for time.Now().Before(until) {
			last = tc.mustState(topic, 0, followers...)
			if last.leader != leader && last.leader != -1 {
				t.Fatalf("clean election made out-of-sync replica %d leader: %v", last.leader, last)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if last.leader != -1 || last.err != kerr.LeaderNotAvailable.Code {
			t.Errorf("%v after the kill: %v, want leader -1 and LEADER_NOT_AVAILABLE", time.Since(killedAt), last)
		}
		_, err := produceOnce(tc.addr(followers[0]), topic, 0, 1, "to-offline")
		if !errors.Is(err, kerr.NotLeaderForPartition) {
			t.Errorf("produce to follower %d of an offline partition: %v, want NOT_LEADER_OR_FOLLOWER", followers[0], err)
		}
		t.Logf("offline for %v: %v", time.Since(killedAt), last)

		if err := tc.Restart(context.Background(), int(leader)); err != nil {
			t.Fatal(err)
		}
		s := tc.waitISR(topic, 0, 3, 15*time.Second)
		if s.leader != leader {
			t.Errorf("after the restart %v, want the old leader %d: it is the only in-sync replica", s, leader)
		}
		log := tc.waitLogsEqual(topic, 0, 10*time.Second)
		checkAcked(t, log, append(committed, aloneAcks...), isSent)
		return
	}

	var s partitionState
	waitFor(t, 3*sessionTimeout+2*time.Second, "an unclean election of a follower", func() (bool, string) {
		s = tc.mustState(topic, 0, followers...)
		return slices.Contains(followers, s.leader), s.String()
	})
	if s.epoch <= old.epoch {
		t.Errorf("new leader %d has epoch %d, not above the old %d", s.leader, s.epoch, old.epoch)
	}
	log, hw, err := readLog(tc.addr(s.leader), topic, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("unclean election %v after the kill: %v, hw %d", time.Since(killedAt), s, hw)
	checkAcked(t, log, committed, isSent)
	for _, r := range log {
		if strings.HasPrefix(r.value, "leader-alone-") {
			t.Errorf("new leader %d has %q at %d, which only the old leader held", s.leader, r.value, r.offset)
		}
	}

	// The old leader must give up the writes no one else has: it truncates
	// by leader epoch to the new leader's log (KIP-101).
	if err := tc.Restart(context.Background(), int(leader)); err != nil {
		t.Fatal(err)
	}
	tc.waitISR(topic, 0, 3, 15*time.Second)
	final := tc.waitLogsEqual(topic, 0, 10*time.Second)
	lost := 0
	at := map[int64]string{}
	for _, r := range final {
		at[r.offset] = r.value
	}
	for _, a := range aloneAcks {
		if at[a.offset] != a.value {
			lost++
		}
	}
	if lost != len(aloneAcks) {
		t.Errorf("%d of the %d writes acknowledged by the lone leader were lost; unclean election should lose all of them", lost, len(aloneAcks))
	}
	if lg := tc.logOf(int(leader)); !strings.Contains(lg, "truncated by leader epoch") {
		t.Errorf("the old leader %d rejoined without truncating by leader epoch, though it held %d records the new leader never had", leader, len(aloneAcks))
	}
}
