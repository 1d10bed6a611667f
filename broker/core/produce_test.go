package core

import (
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/chaos-isr/chaos/broker/control"
)

// outcome says what a client saw of a produce: "" (nothing yet), "no
// response" (acks=0), "closed", "ok@offset" or an error name.
func (h *harness) outcome(conn ConnID) string {
	t := h.t
	t.Helper()
	r, ok := h.reply(conn)
	switch {
	case !ok:
		return ""
	case r.Close:
		return "closed"
	case r.Resp == nil:
		return "no response"
	}
	p := produced(t, r.Resp)
	if p.ErrorCode != 0 {
		if p.BaseOffset != -1 {
			t.Errorf("%s with base offset %d, want -1", errName(p.ErrorCode), p.BaseOffset)
		}
		return errName(p.ErrorCode)
	}
	return fmt.Sprintf("ok@%d", p.BaseOffset)
}

// TestProduceAcks pins when each acks setting is answered: acks=0 never
// (the driver only reads the next request), acks=1 right after the
// leader's append, before any follower has the batch, acks=-1 only once
// the HW passes the batch.
func TestProduceAcks(t *testing.T) {
	for _, tc := range []struct {
		acks               int16
		atAppend, atFollow string // the answer after the append; after the follower caught up
	}{
		{acks: 0, atAppend: "no response"},
		{acks: 1, atAppend: "ok@0"},
		{acks: -1, atFollow: "ok@0"},
	} {
		t.Run(fmt.Sprintf("acks=%d", tc.acks), func(t *testing.T) {
			h := newLeader(t, 1, 1, 2)
			conn := h.request(produceReq(tc.acks, 30000, "a", "b"))
			if got := h.outcome(conn); got != tc.atAppend {
				t.Fatalf("after the append: %q, want %q", got, tc.atAppend)
			}
			if info := h.info(); info.LEO != 2 || info.HW != 0 {
				t.Fatalf("after the append: leo %d hw %d, want 2 and 0", info.LEO, info.HW)
			}

			// The follower fetches at 0: it has nothing yet, the HW stays.
			h.follow(2, 0)
			if got := h.outcome(conn); got != "" {
				t.Fatalf("follower at 0: answered %q before the HW passed the batch", got)
			}
			if hw := h.info().HW; hw != 0 {
				t.Fatalf("follower at 0: hw %d, want 0", hw)
			}

			// It fetches at 2: it has both records, the HW is 2.
			h.follow(2, 2)
			if hw := h.info().HW; hw != 2 {
				t.Fatalf("follower at 2: hw %d, want 2", hw)
			}
			if got := h.outcome(conn); got != tc.atFollow {
				t.Fatalf("follower at 2: %q, want %q", got, tc.atFollow)
			}
		})
	}
}

// TestProduceAcksAllLeaderAloneInISR: a leader alone in the ISR is the
// whole ISR, so acks=-1 is answered with the append.
func TestProduceAcksAllLeaderAloneInISR(t *testing.T) {
	h := newLeader(t, 1, 1)
	if got := h.outcome(h.request(produceReq(-1, 30000, "a"))); got != "ok@0" {
		t.Fatalf("got %q, want ok@0 at once", got)
	}
	if hw := h.info().HW; hw != 1 {
		t.Fatalf("hw %d, want 1", hw)
	}
}

// TestProduceAcks0FailureClosesConnection: an acks=0 producer reads no
// responses, so a failed write closes the connection instead.
func TestProduceAcks0FailureClosesConnection(t *testing.T) {
	h := newHarness(t, testConfig(2), nil)
	h.partition(1, 0, 0, 1, 2) // broker 2 follows
	if got := h.outcome(h.request(produceReq(0, 1000, "a"))); got != "closed" {
		t.Fatalf("acks=0 to a follower: %q, want the connection closed", got)
	}
	if leo := h.info().LEO; leo != 0 {
		t.Fatalf("a follower appended a client's write: leo %d", leo)
	}
}

// TestProduceNotEnoughReplicas: with the ISR below min.insync.replicas an
// acks=-1 write is refused before the append (definitely not written); the
// rule does not bind acks=1.
func TestProduceNotEnoughReplicas(t *testing.T) {
	for _, tc := range []struct {
		acks    int16
		want    string
		wantLEO int64
	}{
		{acks: -1, want: errName(kerr.NotEnoughReplicas.Code), wantLEO: 0},
		{acks: 1, want: "ok@0", wantLEO: 1},
	} {
		t.Run(fmt.Sprintf("acks=%d", tc.acks), func(t *testing.T) {
			h := newLeader(t, 2, 1) // min.insync.replicas=2, isr [1]
			if got := h.outcome(h.request(produceReq(tc.acks, 30000, "a"))); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
			if leo := h.info().LEO; leo != tc.wantLEO {
				t.Fatalf("leo %d, want %d", leo, tc.wantLEO)
			}
			if tc.wantLEO == 0 && len(h.values()) != 0 {
				t.Fatalf("refused write is in the log: %v", h.values())
			}
		})
	}
}

// TestProduceNotEnoughReplicasAfterAppend: an acks=-1 write waiting for a
// follower that stops fetching. The leader asks to drop the follower; while
// the controller has not answered, the HW still waits for it (the write is
// not answered); once the ISR is [1], below min.insync.replicas=2, the HW
// passes the batch and the answer is NOT_ENOUGH_REPLICAS_AFTER_APPEND: the
// write is in the leader's log, but not on enough replicas.
func TestProduceNotEnoughReplicasAfterAppend(t *testing.T) {
	h := newLeader(t, 2, 1, 2)
	conn := h.request(produceReq(-1, 30000, "a", "b"))
	for now := int64(100); now <= 1500; now += 100 {
		h.tick(now)
	}
	s, req, ok := h.alterISR()
	if !ok || !slices.Equal(req.ISR, []int32{1}) {
		t.Fatalf("leader did not ask to shrink the ISR to [1]: %v", req)
	}
	if got := h.outcome(conn); got != "" {
		t.Fatalf("answered %q while the shrink was in flight", got)
	}
	if info := h.info(); info.HW != 0 || !slices.Equal(info.ISR, []int32{1, 2}) {
		t.Fatalf("with the shrink in flight: hw %d isr %v, want 0 and [1 2]", info.HW, info.ISR)
	}
	h.respond(s.ID, &control.AlterISRResponse{State: &control.Partition{
		Partition: 0, Leader: 1, LeaderEpoch: 0, PartitionEpoch: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1},
	}})
	if got, want := h.outcome(conn), errName(kerr.NotEnoughReplicasAfterAppend.Code); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if info := h.info(); info.LEO != 2 || info.HW != 2 {
		t.Fatalf("leo %d hw %d, want the batch appended and committed by the smaller ISR (2, 2)", info.LEO, info.HW)
	}
}

// TestProduceTimesOut: an acks=-1 write the HW never reaches is answered
// REQUEST_TIMED_OUT at its timeout, not before.
func TestProduceTimesOut(t *testing.T) {
	h := newLeader(t, 1, 1, 2)
	h.tick(1000)
	conn := h.request(produceReq(-1, 100, "a"))
	h.tick(1099)
	if got := h.outcome(conn); got != "" {
		t.Fatalf("answered %q before the timeout", got)
	}
	h.tick(1100)
	if got, want := h.outcome(conn), errName(kerr.RequestTimedOut.Code); got != want {
		t.Fatalf("at the timeout: %q, want %q", got, want)
	}
	if leo := h.info().LEO; leo != 1 {
		t.Fatalf("leo %d, want 1: a timed-out write stays in the leader's log (its outcome is unknown)", leo)
	}
}

// TestProduceLeadershipMoved: an acks=-1 write waiting when the broker
// stops leading is answered NOT_LEADER_OR_FOLLOWER (outcome unknown), even
// if the HW could later pass it.
func TestProduceLeadershipMoved(t *testing.T) {
	for _, tc := range []struct {
		name   string
		leader int32
	}{
		{"to another broker", 2},
		{"re-elected in a new epoch", 1},
		{"offline", control.NoLeader},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newLeader(t, 1, 1, 2)
			conn := h.request(produceReq(-1, 30000, "a"))
			h.partition(tc.leader, 1, 1, 1, 2)
			if got, want := h.outcome(conn), errName(kerr.NotLeaderForPartition.Code); got != want {
				t.Fatalf("got %q, want %q", got, want)
			}
		})
	}
}

// TestProduceConnClosedForgetsWait: a write whose connection closed is not
// answered later.
func TestProduceConnClosedForgetsWait(t *testing.T) {
	h := newLeader(t, 1, 1, 2)
	conn := h.request(produceReq(-1, 30000, "a"))
	h.b.ConnClosed(conn)
	h.follow(2, 1)
	if got := h.outcome(conn); got != "" {
		t.Fatalf("answered %q on a closed connection", got)
	}
	if hw := h.info().HW; hw != 1 {
		t.Fatalf("hw %d, want 1", hw)
	}
}
