package controller

import (
	"slices"
	"strings"
	"testing"

	"github.com/chaos-isr/chaos/broker/control"
)

// cluster registers and unfences brokers 1..n and creates topic "t" with
// one partition and the given policy.
func cluster(t *testing.T, n int, election string) *Controller {
	t.Helper()
	cfg := DefaultConfig()
	cfg.SessionTimeoutMs = 1000
	c := New(cfg, nil)
	for id := int32(1); id <= int32(n); id++ {
		r := c.Handle(0, &control.RegisterRequest{BrokerID: id, Incarnation: "a", Host: "h", Port: 1}).(*control.RegisterResponse)
		c.Handle(0, &control.HeartbeatRequest{BrokerID: id, BrokerEpoch: r.BrokerEpoch})
	}
	res := c.Handle(0, &control.CreateTopicsRequest{Topics: []control.TopicSpec{{Name: "t", Partitions: 1, ReplicationFactor: int16(n), Election: election}}}).(*control.CreateTopicsResponse)
	if res.Results[0].ErrorCode != 0 {
		t.Fatalf("create: %+v", res.Results[0])
	}
	return c
}

func part(c *Controller) control.Partition {
	_, p := c.md.Lookup("t", 0)
	return *p
}

func epochOf(c *Controller, id int32) int64 { return c.broker(id).Epoch }

// heartbeatAll keeps every broker in live alive at time now.
func heartbeatAll(c *Controller, now int64, live ...int32) {
	for _, id := range live {
		c.Handle(now, &control.HeartbeatRequest{BrokerID: id, BrokerEpoch: epochOf(c, id)})
	}
}

func TestElections(t *testing.T) {
	for _, tc := range []struct {
		name       string
		election   string
		isr        []int32 // set before the leader dies
		dead       []int32
		wantLeader int32
		wantISR    []int32
	}{
		{"clean picks the next ISR member", control.Clean, []int32{1, 2, 3}, []int32{1}, 2, []int32{2, 3}},
		{"clean skips replicas outside the ISR", control.Clean, []int32{1, 3}, []int32{1}, 3, []int32{3}},
		{"clean goes offline and keeps the ISR", control.Clean, []int32{1}, []int32{1}, control.NoLeader, []int32{1}},
		{"unclean prefers an ISR member", control.Unclean, []int32{1, 3}, []int32{1}, 3, []int32{3}},
		{"unclean takes the first live replica", control.Unclean, []int32{1}, []int32{1}, 2, []int32{2}},
		{"unclean with nobody alive goes offline", control.Unclean, []int32{1}, []int32{1, 2, 3}, control.NoLeader, []int32{1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cluster(t, 3, tc.election)
			p := part(c)
			if p.Leader != 1 {
				t.Fatalf("initial leader %d, want 1", p.Leader)
			}
			r := c.Handle(0, &control.AlterISRRequest{BrokerID: 1, BrokerEpoch: epochOf(c, 1), Topic: "t", LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, ISR: tc.isr}).(*control.AlterISRResponse)
			if r.Error != "" {
				t.Fatalf("alter isr: %s", r.Error)
			}
			var live []int32
			for id := int32(1); id <= 3; id++ {
				if !slices.Contains(tc.dead, id) {
					live = append(live, id)
				}
			}
			for now := int64(100); now <= 2000; now += 100 {
				heartbeatAll(c, now, live...)
				c.Tick(now)
			}
			p = part(c)
			if p.Leader != tc.wantLeader || !slices.Equal(p.ISR, tc.wantISR) {
				t.Fatalf("leader %d isr %v, want %d %v", p.Leader, p.ISR, tc.wantLeader, tc.wantISR)
			}
			if p.LeaderEpoch < 1 {
				t.Fatalf("leader epoch %d did not grow", p.LeaderEpoch)
			}
		})
	}
}

func TestOfflineComesBackWithISRMember(t *testing.T) {
	c := cluster(t, 3, control.Clean)
	p := part(c)
	c.Handle(0, &control.AlterISRRequest{BrokerID: 1, BrokerEpoch: epochOf(c, 1), Topic: "t", LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, ISR: []int32{1}})
	for now := int64(100); now <= 2000; now += 100 {
		heartbeatAll(c, now, 2, 3)
		c.Tick(now)
	}
	if part(c).Leader != control.NoLeader {
		t.Fatalf("leader %d, want offline", part(c).Leader)
	}
	// Broker 1 restarts (new incarnation) and heartbeats: elected again.
	r := c.Handle(2100, &control.RegisterRequest{BrokerID: 1, Incarnation: "b", Host: "h", Port: 1}).(*control.RegisterResponse)
	c.Handle(2100, &control.HeartbeatRequest{BrokerID: 1, BrokerEpoch: r.BrokerEpoch})
	if p := part(c); p.Leader != 1 || p.LeaderEpoch != 2 {
		t.Fatalf("after return: leader %d epoch %d, want 1 and 2", p.Leader, p.LeaderEpoch)
	}
}

func TestReRegistrationMovesLeadership(t *testing.T) {
	c := cluster(t, 3, control.Clean)
	before := part(c)
	oldEpoch := epochOf(c, 1)
	r := c.Handle(10, &control.RegisterRequest{BrokerID: 1, Incarnation: "restarted", Host: "h", Port: 1}).(*control.RegisterResponse)
	if r.BrokerEpoch <= oldEpoch {
		t.Fatalf("new broker epoch %d is not fresh", r.BrokerEpoch)
	}
	p := part(c)
	if p.Leader == 1 || p.LeaderEpoch <= before.LeaderEpoch || slices.Contains(p.ISR, 1) {
		t.Fatalf("restarted leader kept its leadership or ISR place: %+v", p)
	}
	// The old incarnation's heartbeats are refused.
	hb := c.Handle(20, &control.HeartbeatRequest{BrokerID: 1, BrokerEpoch: oldEpoch}).(*control.HeartbeatResponse)
	if hb.Error != control.ErrStaleBrokerEpoch {
		t.Fatalf("stale heartbeat: %q", hb.Error)
	}
	// A retry of the same registration is idempotent.
	r2 := c.Handle(30, &control.RegisterRequest{BrokerID: 1, Incarnation: "restarted", Host: "h", Port: 1}).(*control.RegisterResponse)
	if r2.BrokerEpoch != r.BrokerEpoch {
		t.Fatalf("retry got epoch %d, want %d", r2.BrokerEpoch, r.BrokerEpoch)
	}
}

func TestAlterISRValidation(t *testing.T) {
	c := cluster(t, 3, control.Clean)
	p := part(c)
	ok := control.AlterISRRequest{BrokerID: 1, BrokerEpoch: epochOf(c, 1), Topic: "t", LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, ISR: []int32{1, 2}}
	for _, tc := range []struct {
		name string
		mod  func(r *control.AlterISRRequest)
		want string
	}{
		{"not the leader", func(r *control.AlterISRRequest) { r.BrokerID, r.BrokerEpoch = 2, epochOf(c, 2) }, control.ErrNotLeader},
		{"stale broker epoch", func(r *control.AlterISRRequest) { r.BrokerEpoch-- }, control.ErrStaleBrokerEpoch},
		{"stale leader epoch", func(r *control.AlterISRRequest) { r.LeaderEpoch-- }, control.ErrStaleLeaderEpoch},
		{"stale partition epoch", func(r *control.AlterISRRequest) { r.PartitionEpoch++ }, control.ErrStalePartition},
		{"leader not in isr", func(r *control.AlterISRRequest) { r.ISR = []int32{2, 3} }, control.ErrIneligibleReplica},
		{"not a replica", func(r *control.AlterISRRequest) { r.ISR = []int32{1, 7} }, control.ErrIneligibleReplica},
		{"unknown partition", func(r *control.AlterISRRequest) { r.Partition = 5 }, control.ErrUnknownPartition},
		{"accepted", func(r *control.AlterISRRequest) {}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ok
			tc.mod(&r)
			resp := c.Handle(0, &r).(*control.AlterISRResponse)
			if resp.Error != tc.want {
				t.Fatalf("error %q, want %q", resp.Error, tc.want)
			}
		})
	}
	if got := part(c); !slices.Equal(got.ISR, []int32{1, 2}) || got.PartitionEpoch != p.PartitionEpoch+1 {
		t.Fatalf("after accepted change: %+v", got)
	}
	// Adding back a fenced broker is refused.
	for now := int64(100); now <= 2000; now += 100 {
		heartbeatAll(c, now, 1, 2)
		c.Tick(now)
	}
	p = part(c)
	resp := c.Handle(2000, &control.AlterISRRequest{BrokerID: 1, BrokerEpoch: epochOf(c, 1), Topic: "t", LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, ISR: []int32{1, 2, 3}}).(*control.AlterISRResponse)
	if resp.Error != control.ErrIneligibleReplica {
		t.Fatalf("fenced broker re-added: %q", resp.Error)
	}
}

func TestCreateTopicsValidation(t *testing.T) {
	c := cluster(t, 3, control.Clean)
	for _, tc := range []struct {
		spec control.TopicSpec
		code int16
	}{
		{control.TopicSpec{Name: "t"}, errTopicExists},
		{control.TopicSpec{Name: "bad/name"}, errInvalidTopic},
		{control.TopicSpec{Name: ".."}, errInvalidTopic},
		{control.TopicSpec{Name: "big", ReplicationFactor: 4}, errInvalidReplication},
		{control.TopicSpec{Name: "minisr", ReplicationFactor: 2, MinInsyncReplicas: 3}, errInvalidConfig},
		{control.TopicSpec{Name: "policy", Election: "maybe"}, errInvalidConfig},
		{control.TopicSpec{Name: "ok", Partitions: 4, ReplicationFactor: 2}, 0},
	} {
		res := c.Handle(0, &control.CreateTopicsRequest{Topics: []control.TopicSpec{tc.spec}}).(*control.CreateTopicsResponse).Results[0]
		if res.ErrorCode != tc.code {
			t.Errorf("%+v: code %d (%s), want %d", tc.spec, res.ErrorCode, res.Message, tc.code)
		}
	}
	top, _ := c.md.Lookup("ok", -1)
	leaders := map[int32]bool{}
	for _, p := range top.Partitions {
		if len(p.Replicas) != 2 || p.Replicas[0] == p.Replicas[1] || !slices.Equal(p.Replicas, p.ISR) {
			t.Fatalf("bad assignment %+v", p)
		}
		leaders[p.Leader] = true
	}
	if len(leaders) < 2 {
		t.Fatalf("4 partitions all led by %v: leadership is not spread", leaders)
	}
}

func TestRestoreGivesBrokersAFreshSession(t *testing.T) {
	c := cluster(t, 3, control.Clean)
	snap := c.Snapshot()
	r := New(c.cfg, snap)
	// The restored controller starts at time 50000: no broker is fenced on
	// its first tick, only after a whole session without heartbeats.
	r.Tick(50000)
	if p, _ := r.md.Lookup("t", 0); p == nil {
		t.Fatal("topic lost in restore")
	}
	for _, b := range r.md.Brokers {
		if b.Fenced {
			t.Fatalf("broker %d fenced on restore", b.ID)
		}
	}
	r.Tick(51001)
	if p := part(r); p.Leader != control.NoLeader {
		t.Fatalf("no heartbeats for a session after restore, yet leader %d", p.Leader)
	}
}

// TestRegisterRefusesOtherCluster: a broker started for another cluster
// is refused (and said once in the log, however often it asks), and one
// of this cluster is accepted; an unset id on both sides is the default.
func TestRegisterRefusesOtherCluster(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ClusterID = "run-a"
	c := New(cfg, nil)
	for range 3 {
		r := c.Handle(0, &control.RegisterRequest{ClusterID: "run-b", BrokerID: 1, Incarnation: "x", Host: "h", Port: 1}).(*control.RegisterResponse)
		if !strings.HasPrefix(r.Error, control.ErrClusterID) || !strings.Contains(r.Error, `"run-a"`) || !strings.Contains(r.Error, `"run-b"`) || r.BrokerEpoch != 0 {
			t.Fatalf("a broker of run-b got %+v", r)
		}
	}
	if ev := c.Events(); len(ev) != 1 {
		t.Fatalf("refusals logged %d times, want once: %q", len(ev), ev)
	}
	if len(c.Snapshot().Brokers) != 0 {
		t.Fatal("the refused broker is in the metadata")
	}
	if r := c.Handle(0, &control.RegisterRequest{ClusterID: "run-a", BrokerID: 1, Incarnation: "x", Host: "h", Port: 1}).(*control.RegisterResponse); r.Error != "" {
		t.Fatalf("a broker of run-a refused: %s", r.Error)
	}
	d := New(Config{SessionTimeoutMs: 1000, DefaultPartitions: 1, DefaultReplicationFactor: 1, DefaultMinInsyncReplicas: 1, DefaultElection: control.Clean}, nil)
	if r := d.Handle(0, &control.RegisterRequest{ClusterID: control.DefaultClusterID, BrokerID: 1, Incarnation: "x"}).(*control.RegisterResponse); r.Error != "" {
		t.Fatalf("the default id refused by a controller without one: %s", r.Error)
	}
}
