package memdriver

import (
	"slices"
	"strings"
	"testing"
)

// started is a 3-broker cluster with topic t (one partition, min.insync 2:
// random_test.go's safe) and its leader.
func started(t *testing.T, seed uint64) (*Cluster, int32) {
	t.Helper()
	c := New(DefaultOptions(seed))
	c.Run(500)
	if err := c.CreateTopic(safe); err != nil {
		t.Fatal(err)
	}
	return c, c.Partition("t", 0).Leader
}

// TestAfterAndSendFunc: a simulation's own events run at their virtual
// time, in the order queued when due together, and a call's callback runs
// once it is answered.
func TestAfterAndSendFunc(t *testing.T) {
	c, leader := started(t, 1)
	var got []string
	at := c.Now()
	c.After(20, func() { got = append(got, "b@20") })
	c.After(10, func() { got = append(got, "a@10") })
	c.After(20, func() { got = append(got, "c@20") })
	var answered *Call
	c.SendFunc(leader, c.ProduceTo(leader, "t", 0, -1, 1000, "x").Req, func(call *Call) { answered = call })
	c.Run(1000)
	if !slices.Equal(got, []string{"a@10", "b@20", "c@20"}) {
		t.Fatalf("events ran as %v", got)
	}
	if answered == nil || !answered.Done || ProduceResult(answered) != "ok@1" {
		t.Fatalf("callback: %+v", answered)
	}
	if c.Now() != at+1000 {
		t.Fatalf("time %d, want %d", c.Now(), at+1000)
	}
}

// TestBlockHoldsUntilHeal: a blocked link delivers nothing until healed,
// then everything it held, as a stalled TCP stream that recovers; a slowed
// follower leaves the ISR and rejoins once healed.
func TestBlockHoldsUntilHeal(t *testing.T) {
	c, leader := started(t, 2)
	var follower int32 = 1
	if follower == leader {
		follower = 2
	}
	c.Block(follower, leader)
	mark := len(c.Trace())
	c.Run(300)
	from := "b" + string('0'+rune(leader)) + " <- b" + string('0'+rune(follower))
	if strings.Contains(c.Trace()[mark:], from) {
		t.Fatalf("a blocked link delivered: %s", from)
	}
	c.Heal()
	mark = len(c.Trace())
	c.Run(50)
	if !strings.Contains(c.Trace()[mark:], from) {
		t.Fatalf("the healed link did not deliver what it held (%s)", from)
	}

	c.SlowLink(follower, leader, 3000)
	if !c.RunUntil(10_000, func() bool { return !slices.Contains(c.Partition("t", 0).ISR, follower) }) {
		t.Fatalf("a follower slowed beyond the lag time stayed in the ISR:\n%s", c.State("t", 0))
	}
	c.Heal()
	if !c.RunUntil(20_000, func() bool { return len(c.Partition("t", 0).ISR) == 3 }) {
		t.Fatalf("the follower did not rejoin once healed:\n%s", c.State("t", 0))
	}
}

// TestDropAllResets: a dropped message resets its connection: the side
// that sent the request hears so at once.
func TestDropAllResets(t *testing.T) {
	c, _ := started(t, 3)
	mark := len(c.Trace())
	c.DropAll(1, 7)
	c.Run(500)
	if !strings.Contains(c.Trace()[mark:], errConnReset.Error()) {
		t.Fatal("no reset while every message between nodes is dropped")
	}
	c.Heal()
	call := c.Produce("t", 0, -1, 5000, "after")
	if !c.Await(call, 10_000) || !strings.HasPrefix(ProduceResult(call), "ok@") {
		t.Fatalf("after the heal: %s\n%s", ProduceResult(call), c.State("t", 0))
	}
}

// TestStopKeepsUnsynced: a clean stop syncs the logs, so a broker that
// keeps unsynced writes in memory loses nothing to it, where a kill
// loses them.
func TestStopKeepsUnsynced(t *testing.T) {
	c, leader := started(t, 4)
	if call := c.Produce("t", 0, -1, 5000, "a", "b"); !c.Await(call, 5000) {
		t.Fatal("no answer")
	}
	c.Stop(leader)
	if c.Up(leader) || c.Node(leader) != nil {
		t.Fatal("a stopped broker is up")
	}
	c.Restart(leader)
	if c.Incarnation(leader) != 2 || !c.Up(leader) {
		t.Fatalf("incarnation %d after a restart", c.Incarnation(leader))
	}
	c.Kill(leader, true)
	if got := c.Values(leader, "t", 0); len(got) != 2 {
		t.Fatalf("the stop's sync did not keep the writes: %v", got)
	}
	c.Restart(leader)
	c.Pause(leader)
	if !c.Paused(leader) || !c.Up(leader) {
		t.Fatal("Paused")
	}
	if !c.ControllerUp() {
		t.Fatal("ControllerUp")
	}

	// Without the stop, the kill loses them.
	c, leader = started(t, 4)
	if call := c.Produce("t", 0, -1, 5000, "a", "b"); !c.Await(call, 5000) {
		t.Fatal("no answer")
	}
	c.Kill(leader, true)
	if got := c.Values(leader, "t", 0); len(got) != 0 {
		t.Fatalf("a kill that loses unsynced writes kept %v", got)
	}
}
