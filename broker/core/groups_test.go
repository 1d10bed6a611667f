package core

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/broker/control"
	"github.com/chaos-isr/chaos/broker/storage"
)

// coordinator is broker id leading the one partition of the offsets topic
// (its ISR itself alone, so that what it writes commits at once), with the
// initial rebalance delay off.
func coordinator(t *testing.T, id int32, logs *storage.MemoryFactory, epoch int32) *harness {
	t.Helper()
	cfg := testConfig(id)
	cfg.GroupInitialRebalanceDelayMs = 0
	h := newHarness(t, cfg, logs)
	h.tick(h.now + 1)
	hb := h.hb
	h.hb = 0
	md := &control.Snapshot{Version: 1}
	for b := int32(1); b <= 3; b++ {
		md.Brokers = append(md.Brokers, control.Broker{ID: b, Host: fmt.Sprintf("b%d", b), Port: 9092, Epoch: 1})
	}
	md.Topics = []control.Topic{{Name: OffsetsTopic, MinInsyncReplicas: 1, Election: control.Clean,
		Partitions: []control.Partition{{Partition: 0, Leader: id, LeaderEpoch: epoch, Replicas: []int32{1, 2, 3}, ISR: []int32{id}}}}}
	h.respond(hb, &control.HeartbeatResponse{Metadata: md})
	h.take()
	return h
}

func joinReq(member string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = 5
	req.Group, req.MemberID, req.ProtocolType = "g", member, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 6000, 10000
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte(member)}}
	return req
}

// newMember joins as a new member: MEMBER_ID_REQUIRED, then the join with
// the id it was given, parked on a connection of its own.
func (h *harness) newMember() (string, ConnID) {
	h.t.Helper()
	resp := h.call(joinReq("")).(*kmsg.JoinGroupResponse)
	if resp.ErrorCode != kerr.MemberIDRequired.Code || resp.MemberID == "" {
		h.t.Fatalf("first join: %+v, want MEMBER_ID_REQUIRED with an id", resp)
	}
	return resp.MemberID, h.request(joinReq(resp.MemberID))
}

func (h *harness) joined(conn ConnID) *kmsg.JoinGroupResponse {
	h.t.Helper()
	r, ok := h.reply(conn)
	if !ok {
		h.t.Fatal("the join was not answered")
	}
	return r.Resp.(*kmsg.JoinGroupResponse)
}

func (h *harness) sync(member string, generation int32, assign map[string]string) ConnID {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = 3
	req.Group, req.MemberID, req.Generation = "g", member, generation
	for id, a := range assign {
		req.GroupAssignment = append(req.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: id, MemberAssignment: []byte(a)})
	}
	return h.request(req)
}

func (h *harness) commit(member string, generation int32, offset int64) int16 {
	h.t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 7
	req.Group, req.MemberID, req.Generation = "g", member, generation
	req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: offset, LeaderEpoch: -1}}}}
	return h.call(req).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
}

func (h *harness) committedOffset() int64 {
	h.t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 8
	req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}}}}
	g := h.call(req).(*kmsg.OffsetFetchResponse).Groups[0]
	if g.ErrorCode != 0 {
		h.t.Fatalf("offset fetch: %s", kerr.ErrorForCode(g.ErrorCode))
	}
	return g.Topics[0].Partitions[0].Offset
}

func (h *harness) heartbeat(member string, generation int32) int16 {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = 3
	req.Group, req.MemberID, req.Generation = "g", member, generation
	return h.call(req).(*kmsg.HeartbeatResponse).ErrorCode
}

// TestGroupLifecycle: a group forms, commits, rebalances when a second
// member joins (its old generation's commits refused from then on), and
// loses a member whose session ends; a broker that takes the offsets
// partition over reads the generation and the committed offset back.
func TestGroupLifecycle(t *testing.T) {
	logs := &storage.MemoryFactory{}
	h := coordinator(t, 1, logs, 0)
	find := kmsg.NewPtrFindCoordinatorRequest()
	find.Version, find.CoordinatorKey = 2, "g"
	if r := h.call(find).(*kmsg.FindCoordinatorResponse); r.ErrorCode != 0 || r.NodeID != 1 {
		t.Fatalf("find coordinator: %+v", r)
	}

	a, conn := h.newMember()
	j := h.joined(conn)
	if j.ErrorCode != 0 || j.Generation != 1 || j.LeaderID != a || len(j.Members) != 1 || *j.Protocol != "range" {
		t.Fatalf("the first join: %+v", j)
	}
	sc := h.sync(a, 1, map[string]string{a: "all of t"})
	r, ok := h.reply(sc)
	if s := r.Resp.(*kmsg.SyncGroupResponse); !ok || s.ErrorCode != 0 || string(s.MemberAssignment) != "all of t" {
		t.Fatalf("the leader's sync: %v %+v", ok, r.Resp)
	}
	if code := h.commit(a, 1, 7); code != 0 || h.committedOffset() != 7 {
		t.Fatalf("commit in generation 1: %s, fetched %d", kerr.ErrorForCode(code), h.committedOffset())
	}

	// A second member: the first learns of the rebalance by its
	// heartbeat, joins again, and both are answered generation 2.
	b, bconn := h.newMember()
	if _, ok := h.reply(bconn); ok {
		t.Fatal("the new member's join was answered before the old member joined again")
	}
	if code := h.heartbeat(a, 1); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("heartbeat during the rebalance: %v", kerr.ErrorForCode(code))
	}
	aconn := h.request(joinReq(a))
	ja, jb := h.joined(aconn), h.joined(bconn)
	if ja.Generation != 2 || jb.Generation != 2 || ja.LeaderID != a || len(ja.Members) != 2 || len(jb.Members) != 0 {
		t.Fatalf("generation 2: %+v / %+v", ja, jb)
	}
	// b's sync waits for the leader's assignment.
	bs := h.sync(b, 2, nil)
	if _, ok := h.reply(bs); ok {
		t.Fatal("a follower's sync was answered before the leader's")
	}
	as := h.sync(a, 2, map[string]string{a: "t-0", b: "t-1"})
	if r, _ := h.reply(bs); string(r.Resp.(*kmsg.SyncGroupResponse).MemberAssignment) != "t-1" {
		t.Fatalf("b's assignment: %+v", r.Resp)
	}
	h.reply(as)
	if code := h.commit(a, 1, 9); code != kerr.IllegalGeneration.Code {
		t.Fatalf("a commit from generation 1 in generation 2: %v, want ILLEGAL_GENERATION", kerr.ErrorForCode(code))
	}
	if code := h.commit(b, 2, 11); code != 0 || h.committedOffset() != 11 {
		t.Fatalf("commit in generation 2: %v, fetched %d", kerr.ErrorForCode(code), h.committedOffset())
	}

	// Another broker takes the offsets partition over with the same log:
	// the group is at generation 2, its offset 11.
	h2 := coordinator(t, 2, logs, 1)
	if got := h2.committedOffset(); got != 11 {
		t.Fatalf("the new coordinator read back offset %d, want 11", got)
	}
	if code := h2.commit(a, 1, 13); code != kerr.IllegalGeneration.Code {
		t.Fatalf("at the new coordinator, a commit from generation 1: %v, want ILLEGAL_GENERATION", kerr.ErrorForCode(code))
	}
	if code := h2.heartbeat(b, 2); code != 0 {
		t.Fatalf("at the new coordinator, b's heartbeat: %v", kerr.ErrorForCode(code))
	}

	// a stops heartbeating: its session ends, the group rebalances, and
	// b alone makes generation 3.
	start := h2.now
	for code := int16(0); code == 0; {
		if h2.now > start+6500 {
			t.Fatal("a's session did not end within 6.5 s of the failover")
		}
		h2.tick(h2.now + 500)
		if code = h2.heartbeat(b, 2); code != 0 && code != kerr.RebalanceInProgress.Code {
			t.Fatalf("b's heartbeat: %v", kerr.ErrorForCode(code))
		}
	}
	bconn = h2.request(joinReq(b))
	if jb := h2.joined(bconn); jb.Generation != 3 || jb.LeaderID != b || len(jb.Members) != 1 {
		t.Fatalf("after a's session ended: %+v", jb)
	}
	if !slices.ContainsFunc(h2.logLines(), func(l string) bool { return strings.Contains(l, "its session timed out") }) {
		t.Fatal("no log line says why a was removed")
	}
}

func (h *harness) logLines() []string {
	var out []string
	for _, e := range h.take() {
		if l, ok := e.(Log); ok {
			out = append(out, l.Line)
		}
	}
	return out
}
