package integration

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestPausedFollowers stops followers with SIGSTOP for longer than
// replica.lag.time.max.ms. The session timeout is long, so what removes them
// from the ISR is the leader's lag rule, not the controller fencing them.
// With min.insync.replicas=2 and RF=3: one follower out, acks=-1 still
// works; two out, acks=-1 is refused with NOT_ENOUGH_REPLICAS and nothing is
// written; both back, the ISR is whole again and acks=-1 works.
func TestPausedFollowers(t *testing.T) {
	tc := startCluster(t, clusterOpts{sessionMs: 20000})
	const topic = "pause"
	tc.createTopic(topic, 1, 3, map[string]string{"min.insync.replicas": "2"})
	s := tc.mustState(topic, 0)
	leader := s.leader
	var followers []int32
	for _, id := range tc.brokerIDs() {
		if id != leader {
			followers = append(followers, id)
		}
	}
	f1, f2 := followers[0], followers[1]
	acks := map[string]int64{}
	produceOK := func(v string) {
		t.Helper()
		off, err := produceOnce(tc.addr(leader), topic, 0, -1, v)
		if err != nil {
			t.Fatalf("acks=-1 produce of %q to leader %d: %v", v, leader, err)
		}
		acks[v] = off
	}
	produceOK("healthy")
	// On a loaded machine a follower may not have caught up yet and be out
	// of the ISR already; the timing below is about one that is in it.
	tc.waitISR(topic, 0, 3, 15*time.Second, leader)
	// An ISR of three can hold a follower that has not fetched for a
	// while and is about to be dropped. An acks=-1 write acknowledged
	// with all three in the ISR was fetched by each just now, so f1's
	// lag time starts from about when it is paused.
	for i := 0; ; i++ {
		produceOK(fmt.Sprintf("caught-up-%d", i))
		if s := tc.mustState(topic, 0); len(s.isr) == 3 {
			break
		}
		if i == 20 {
			t.Fatalf("no acks=-1 write left the ISR at three: %v", tc.mustState(topic, 0))
		}
		tc.waitISR(topic, 0, 3, 15*time.Second, leader)
	}

	if err := tc.Pause(int(f1)); err != nil {
		t.Fatal(err)
	}
	pausedAt := time.Now()
	// Sent while the paused follower is still in the ISR: the HW cannot pass
	// it until the leader drops the follower, and then the write commits
	// with two in-sync replicas.
	produceOK("one-paused")
	waited := time.Since(pausedAt)
	if waited < lagTimeMax-500*time.Millisecond {
		t.Errorf("an acks=-1 write with follower %d paused was acknowledged after %v; it should have waited about replica.lag.time.max.ms (%v) for the ISR to shrink",
			f1, waited, lagTimeMax)
	}
	s = tc.waitISR(topic, 0, 2, 10*time.Second, leader, f2)
	if slices.Contains(s.isr, f1) {
		t.Fatalf("paused follower %d is still in the ISR: %v", f1, s)
	}
	t.Logf("follower %d paused: %v; an acks=-1 write waited %v", f1, s, waited)
	produceOK("isr-of-two")

	if err := tc.Pause(int(f2)); err != nil {
		t.Fatal(err)
	}
	s = tc.waitISR(topic, 0, 1, 10*time.Second, leader)
	if s.leader != leader || s.isr[0] != leader {
		t.Fatalf("with both followers paused: %v, want leader %d alone in the ISR", s, leader)
	}
	_, err := produceOnce(tc.addr(leader), topic, 0, -1, "refused")
	if !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Errorf("acks=-1 produce with ISR %v and min.insync.replicas=2: got %v, want NOT_ENOUGH_REPLICAS", s.isr, err)
	}
	// min.insync.replicas binds acks=-1 only.
	if _, err := produceOnce(tc.addr(leader), topic, 0, 1, "acks1-alone"); err != nil {
		t.Errorf("acks=1 produce with the leader alone in the ISR: %v", err)
	}

	for _, f := range followers {
		if err := tc.Resume(int(f)); err != nil {
			t.Fatal(err)
		}
	}
	s = tc.waitISR(topic, 0, 3, 15*time.Second)
	if s.leader != leader {
		t.Errorf("leadership moved from %d to %d although the leader was never paused", leader, s.leader)
	}
	produceOK("resumed")

	log := tc.waitLogsEqual(topic, 0, 10*time.Second)
	var entries []ackEntry
	for v, off := range acks {
		entries = append(entries, ackEntry{value: v, offset: off})
	}
	checkAcked(t, log, entries, func(v string) bool { return v != "refused" })
	var values []string
	for _, r := range log {
		if !strings.HasPrefix(r.value, "caught-up-") {
			values = append(values, r.value)
		}
	}
	if want := "healthy one-paused isr-of-two acks1-alone resumed"; strings.Join(values, " ") != want {
		t.Errorf("log is %q, want %q", strings.Join(values, " "), want)
	}
}
