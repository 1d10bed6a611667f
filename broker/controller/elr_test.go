package controller

import (
	"slices"
	"testing"

	"github.com/chaos-isr/chaos/broker/bug"
	"github.com/chaos-isr/chaos/broker/control"
)

// elrCluster is cluster under policy elr with min.insync.replicas 2 and
// the bugs given.
func elrCluster(t *testing.T, bugs ...bug.Bug) *Controller {
	t.Helper()
	cfg := DefaultConfig()
	cfg.SessionTimeoutMs, cfg.DefaultElection, cfg.DefaultMinInsyncReplicas = 1000, control.ELR, 2
	for _, b := range bugs {
		cfg.Bugs |= bug.Of(b)
	}
	c := New(cfg, nil)
	for id := int32(1); id <= 3; id++ {
		r := c.Handle(0, &control.RegisterRequest{BrokerID: id, Incarnation: "a", Host: "h", Port: 1}).(*control.RegisterResponse)
		c.Handle(0, &control.HeartbeatRequest{BrokerID: id, BrokerEpoch: r.BrokerEpoch})
	}
	// A topic that asks only for no unclean elections gets the
	// cluster's ELR, as in Kafka, where ELR is a feature of the cluster.
	res := c.Handle(0, &control.CreateTopicsRequest{Topics: []control.TopicSpec{{Name: "t", Partitions: 1, ReplicationFactor: 3, Election: control.Clean}}}).(*control.CreateTopicsResponse)
	if res.Results[0].ErrorCode != 0 || res.Results[0].Topic.Election != control.ELR {
		t.Fatalf("create: %+v", res.Results[0])
	}
	if c.md.Features[control.FeatureELR] != 1 {
		t.Fatalf("features %v, want %s at 1", c.md.Features, control.FeatureELR)
	}
	return c
}

func alterISR(t *testing.T, c *Controller, isr ...int32) {
	t.Helper()
	p := part(c)
	r := c.Handle(0, &control.AlterISRRequest{BrokerID: p.Leader, BrokerEpoch: epochOf(c, p.Leader), Topic: "t", LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, ISR: isr}).(*control.AlterISRResponse)
	if r.Error != "" {
		t.Fatalf("alter isr %v: %s", isr, r.Error)
	}
}

// runFor heartbeats the live brokers and ticks from..to, so that the
// others are fenced.
func runFor(c *Controller, from, to int64, live ...int32) {
	for now := from; now <= to; now += 100 {
		heartbeatAll(c, now, live...)
		c.Tick(now)
	}
}

// restart registers broker id as a new process: after a clean shutdown
// it names its previous broker epoch, after a crash it does not.
func restart(t *testing.T, c *Controller, now int64, id int32, clean bool) {
	t.Helper()
	var prev int64
	if clean {
		prev = epochOf(c, id)
	}
	r := c.Handle(now, &control.RegisterRequest{BrokerID: id, Incarnation: "b", Host: "h", Port: 1, PreviousBrokerEpoch: prev}).(*control.RegisterResponse)
	if r.Error != "" {
		t.Fatalf("register %d: %s", id, r.Error)
	}
	c.Handle(now, &control.HeartbeatRequest{BrokerID: id, BrokerEpoch: r.BrokerEpoch})
}

func wantState(t *testing.T, c *Controller, leader int32, isr, elr, lastKnown []int32) {
	t.Helper()
	p := part(c)
	if p.Leader != leader || !slices.Equal(p.ISR, isr) || !slices.Equal(p.ELR, elr) || !slices.Equal(p.LastKnownELR, lastKnown) {
		t.Fatalf("leader %d isr %v elr %v last known %v, want %d %v %v %v", p.Leader, p.ISR, p.ELR, p.LastKnownELR, leader, isr, elr, lastKnown)
	}
}

// TestELRMembership: a replica joins the ELR only when it leaves an ISR
// that is then below min.insync.replicas, and an ISR back at the minimum
// clears it.
func TestELRMembership(t *testing.T) {
	c := elrCluster(t)
	alterISR(t, c, 1, 2)
	wantState(t, c, 1, []int32{1, 2}, nil, nil) // 3 left an ISR still at the minimum
	alterISR(t, c, 1)
	wantState(t, c, 1, []int32{1}, []int32{2}, nil)
	alterISR(t, c, 1, 3)
	wantState(t, c, 1, []int32{1, 3}, nil, nil)
}

// TestELRElection: with the ISR's last member dead, a live ELR member is
// elected, and the dead leader, which left the ISR below the minimum,
// joins the ELR (the ISR may be empty).
func TestELRElection(t *testing.T) {
	c := elrCluster(t)
	alterISR(t, c, 1, 2)
	alterISR(t, c, 1)
	runFor(c, 100, 2000, 2, 3)
	wantState(t, c, 2, []int32{2}, []int32{1}, nil)
}

// TestELRUncleanShutdown is KIP-966's case: the follower stops cleanly,
// the leader, alone in the ISR, crashes and comes back first. It must not
// be elected (it may have lost unsynced writes), and the follower must be
// when it returns. With the planted bug elr-keeps-unclean the crashed
// leader stays eligible and is elected.
func TestELRUncleanShutdown(t *testing.T) {
	for _, planted := range []bool{false, true} {
		var bugs []bug.Bug
		if planted {
			bugs = append(bugs, bug.ELRKeepsUnclean)
		}
		c := elrCluster(t, bugs...)
		alterISR(t, c, 1, 2)
		alterISR(t, c, 1) // 2 leaves below the minimum: ELR {2}
		runFor(c, 100, 2000, 3)
		wantState(t, c, control.NoLeader, nil, []int32{1, 2}, nil)
		restart(t, c, 2100, 1, false)
		runFor(c, 2200, 2500, 1, 3)
		if planted {
			wantState(t, c, 1, []int32{1}, []int32{2}, nil)
			continue
		}
		wantState(t, c, control.NoLeader, nil, []int32{2}, []int32{1})
		restart(t, c, 2600, 2, true)
		runFor(c, 2700, 3000, 1, 2, 3)
		wantState(t, c, 2, []int32{2}, nil, []int32{1})
	}
}

// TestELRLastKnown: once every eligible replica has shut down uncleanly,
// the most recent of them to leave is elected when it is back: each held
// every committed record before its crash.
func TestELRLastKnown(t *testing.T) {
	c := elrCluster(t)
	alterISR(t, c, 1, 2)
	alterISR(t, c, 1)
	runFor(c, 100, 2000, 3)
	restart(t, c, 2100, 2, false)
	restart(t, c, 2100, 1, false)
	wantState(t, c, 1, []int32{1}, nil, []int32{2})
}
