package core

import (
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/broker/control"
)

// TestHighWatermarkIsMinLEOOfISR: the HW is the minimum log end offset of
// the ISR (the leader's own included), it never goes back, and a follower
// this leader has not heard from in its epoch holds it where it is.
func TestHighWatermarkIsMinLEOOfISR(t *testing.T) {
	h := newLeader(t, 1, 1, 2, 3)
	for _, v := range []string{"a", "b", "c", "d"} {
		h.produceOK(v)
	}
	for _, step := range []struct {
		follower int32
		offset   int64
		wantHW   int64
	}{
		{2, 4, 0}, // 3 has not fetched in this epoch: its LEO is unknown
		{3, 1, 1},
		{3, 3, 3},
		{2, 4, 3},
		{3, 4, 4},
		{2, 2, 4}, // a stale fetch does not move the HW back
	} {
		h.follow(step.follower, step.offset)
		if hw := h.info().HW; hw != step.wantHW {
			t.Fatalf("after %d fetched at %d: hw %d, want %d", step.follower, step.offset, hw, step.wantHW)
		}
	}
}

// TestHighWatermarkIgnoresFollowersOutsideISR: a replica outside the ISR
// does not hold the HW back.
func TestHighWatermarkIgnoresFollowersOutsideISR(t *testing.T) {
	h := newLeader(t, 1, 1, 2)
	h.produceOK("a", "b")
	h.follow(2, 2)
	h.follow(3, 0)
	if hw := h.info().HW; hw != 2 {
		t.Fatalf("hw %d, want 2 (replica 3 is not in the ISR)", hw)
	}
}

// TestReadsStopAtHW: consumers (replica id -1) never read at or above the
// HW; debug consumers (-2) and followers read the whole log.
func TestReadsStopAtHW(t *testing.T) {
	h := newLeader(t, 1, 1, 2)
	for _, v := range []string{"a", "b", "c", "d", "e"} {
		h.produceOK(v)
	}
	h.follow(2, 3) // hw 3
	for _, tc := range []struct {
		name      string
		replicaID int32
		offset    int64
		want      string
		wantErr   *kerr.Error
	}{
		{"consumer from 0", ConsumerReplicaID, 0, "a b c", nil},
		{"consumer at the hw", ConsumerReplicaID, 3, "", nil},
		{"consumer above the hw", ConsumerReplicaID, 4, "", nil},
		{"consumer past the leo", ConsumerReplicaID, 6, "", kerr.OffsetOutOfRange},
		{"debug from 0", DebugReplicaID, 0, "a b c d e", nil},
		{"debug at the hw", DebugReplicaID, 3, "d e", nil},
		{"follower at the hw", 3, 3, "d e", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := h.fetch(tc.replicaID, tc.offset, -1)
			if want := errCode(tc.wantErr); p.ErrorCode != want {
				t.Fatalf("error %s, want %s", errName(p.ErrorCode), errName(want))
			}
			if got := strings.Join(recordValues(t, p.RecordBatches), " "); got != tc.want {
				t.Fatalf("read %q, want %q", got, tc.want)
			}
			if tc.wantErr == nil && p.HighWatermark != 3 {
				t.Fatalf("response hw %d, want 3", p.HighWatermark)
			}
		})
	}
}

func errCode(e *kerr.Error) int16 {
	if e == nil {
		return 0
	}
	return e.Code
}

// TestListOffsets: latest is the HW for a consumer, since it cannot read
// past it, and the LEO for a debug consumer; earliest is the log start.
func TestListOffsets(t *testing.T) {
	h := newLeader(t, 1, 1, 2)
	for _, v := range []string{"a", "b", "c", "d", "e"} {
		h.produceOK(v)
	}
	h.follow(2, 3)
	for _, tc := range []struct {
		name      string
		replicaID int32
		timestamp int64
		want      int64
	}{
		{"latest", ConsumerReplicaID, -1, 3},
		{"latest debug", DebugReplicaID, -1, 5},
		{"earliest", ConsumerReplicaID, -2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.call(listOffsetsReq(tc.replicaID, tc.timestamp)).(*kmsg.ListOffsetsResponse)
			p := r.Topics[0].Partitions[0]
			if p.ErrorCode != 0 || p.Offset != tc.want {
				t.Fatalf("offset %d (%s), want %d", p.Offset, errName(p.ErrorCode), tc.want)
			}
		})
	}
}

// TestISRShrinkByLagTime: a follower that has not caught up within
// replica.lag.time.max.ms makes the leader ask the controller for a smaller
// ISR. The leader does not apply the change alone: the ISR it reports
// changes only with the controller's answer, and a refusal keeps it.
func TestISRShrinkByLagTime(t *testing.T) {
	h := newLeader(t, 1, 1, 2, 3)
	h.produceOK("a")
	// Follower 2 keeps up; follower 3 never fetches. The leader checks
	// every lag/2 and drops a follower behind for more than lag.
	var ask *control.AlterISRRequest
	var send Send
	for now := int64(100); now <= 1600 && ask == nil; now += 100 {
		h.tick(now)
		h.follow(2, 1)
		if s, req, ok := h.alterISR(); ok {
			send, ask = s, req
			if now <= lagTimeMs {
				t.Fatalf("asked to shrink at %dms, within replica.lag.time.max.ms", now)
			}
		}
	}
	if ask == nil {
		t.Fatal("no AlterISR for a follower silent for 1.6s")
	}
	want := control.AlterISRRequest{BrokerID: 1, BrokerEpoch: 1, Topic: testTopic, Partition: 0, LeaderEpoch: 0, PartitionEpoch: 0, ISR: []int32{1, 2}}
	if !equalAlter(*ask, want) {
		t.Fatalf("asked %+v, want %+v", *ask, want)
	}
	if isr := h.info().ISR; !slices.Equal(isr, []int32{1, 2, 3}) {
		t.Fatalf("isr %v before the controller answered, want [1 2 3]", isr)
	}

	// Refused (the controller's state is newer): the ISR is what the
	// controller says, and the leader asks again at the next check.
	h.respond(send.ID, &control.AlterISRResponse{Error: control.ErrStalePartition, State: &control.Partition{
		Partition: 0, Leader: 1, LeaderEpoch: 0, PartitionEpoch: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3},
	}})
	if isr := h.info().ISR; !slices.Equal(isr, []int32{1, 2, 3}) {
		t.Fatalf("isr %v after a refusal, want [1 2 3]", isr)
	}
	h.tick(h.now + lagTimeMs/2)
	send, ask, ok := h.alterISR()
	if !ok || ask.PartitionEpoch != 1 || !slices.Equal(ask.ISR, []int32{1, 2}) {
		t.Fatalf("after the refusal asked %+v, want isr [1 2] at partition epoch 1", ask)
	}
	h.respond(send.ID, &control.AlterISRResponse{State: &control.Partition{
		Partition: 0, Leader: 1, LeaderEpoch: 0, PartitionEpoch: 2, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2},
	}})
	if isr := h.info().ISR; !slices.Equal(isr, []int32{1, 2}) {
		t.Fatalf("isr %v after the controller accepted, want [1 2]", isr)
	}
}

func equalAlter(a, b control.AlterISRRequest) bool {
	return a.BrokerID == b.BrokerID && a.BrokerEpoch == b.BrokerEpoch && a.Topic == b.Topic && a.Partition == b.Partition &&
		a.LeaderEpoch == b.LeaderEpoch && a.PartitionEpoch == b.PartitionEpoch && slices.Equal(a.ISR, b.ISR)
}

// TestISRShrinkByLagMessages: a follower more than replica.lag.max.messages
// behind the leader's LEO is asked out, however recently it fetched.
func TestISRShrinkByLagMessages(t *testing.T) {
	for _, tc := range []struct {
		behind  int64
		wantISR []int32 // what the leader asks for; nil: nothing
	}{
		{behind: 3},
		{behind: 4, wantISR: []int32{1, 2}},
	} {
		cfg := testConfig(1)
		cfg.ReplicaLagMaxMessages = 3
		h := newHarness(t, cfg, nil)
		h.partition(1, 0, 0, 1, 2, 3)
		for _, v := range []string{"a", "b", "c", "d", "e"} {
			h.produceOK(v)
		}
		h.tick(100)
		h.follow(2, 5)
		h.follow(3, 5-tc.behind)
		h.tick(500) // the first ISR check, well within the lag time
		_, ask, ok := h.alterISR()
		switch {
		case tc.wantISR == nil && ok:
			t.Errorf("%d behind: asked for isr %v, want no change", tc.behind, ask.ISR)
		case tc.wantISR != nil && (!ok || !slices.Equal(ask.ISR, tc.wantISR)):
			t.Errorf("%d behind: asked %v, want isr %v", tc.behind, ask, tc.wantISR)
		}
	}
}

// TestISRExpand: a follower outside the ISR is asked back in once it has
// caught up to the HW and to the start of this leader epoch (so it has
// truncated); not before.
func TestISRExpand(t *testing.T) {
	for _, tc := range []struct {
		name   string
		offset int64
		want   bool
	}{
		{"below the hw", 2, false},
		{"at the hw", 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newLeader(t, 1, 1, 2)
			for _, v := range []string{"a", "b", "c"} {
				h.produceOK(v)
			}
			h.follow(2, 3) // hw 3
			h.follow(3, tc.offset)
			_, ask, ok := h.alterISR()
			if ok != tc.want {
				t.Fatalf("follower 3 at %d: asked %v, want a request: %v", tc.offset, ask, tc.want)
			}
			if ok && !slices.Equal(ask.ISR, []int32{1, 2, 3}) {
				t.Fatalf("asked for isr %v, want [1 2 3]", ask.ISR)
			}
		})
	}
}

// TestISRExpandWaitsForEpochStart: a new leader whose HW is behind its own
// log end does not take back a follower that is past the HW but short of
// the offset this epoch began at: that follower may still hold a suffix it
// must truncate.
func TestISRExpandWaitsForEpochStart(t *testing.T) {
	for _, tc := range []struct {
		offset int64
		want   bool
	}{
		{1, false},
		{2, true},
	} {
		h := newHarness(t, testConfig(1), seeded(t, epochValue{0, "a"}, epochValue{0, "b"}))
		h.partition(1, 1, 0, 1, 2) // leader in epoch 1 from leo 2, hw 0
		if info := h.info(); info.LEO != 2 || info.HW != 0 {
			t.Fatalf("leo %d hw %d, want 2 and 0", info.LEO, info.HW)
		}
		h.follow(3, tc.offset)
		if _, ask, ok := h.alterISR(); ok != tc.want {
			t.Errorf("follower 3 at %d: asked %v, want a request: %v", tc.offset, ask, tc.want)
		}
	}
}

// TestISRExpandInFlightHoldsHW: while the controller has not answered an
// expansion, the HW respects the old and the new ISR together (KIP-497):
// the joining follower holds it, and the ISR changes only with the answer.
func TestISRExpandInFlightHoldsHW(t *testing.T) {
	h := newLeader(t, 1, 1, 2)
	for _, v := range []string{"a", "b", "c"} {
		h.produceOK(v)
	}
	h.follow(2, 3)
	h.follow(3, 3)
	send, _, ok := h.alterISR()
	if !ok {
		t.Fatal("no expansion asked for")
	}
	h.produceOK("d")
	h.follow(2, 4)
	if info := h.info(); info.HW != 3 || !slices.Equal(info.ISR, []int32{1, 2}) {
		t.Fatalf("expansion in flight: hw %d isr %v, want 3 (held by 3) and [1 2]", info.HW, info.ISR)
	}
	h.respond(send.ID, &control.AlterISRResponse{State: &control.Partition{
		Partition: 0, Leader: 1, LeaderEpoch: 0, PartitionEpoch: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3},
	}})
	h.follow(3, 4)
	if info := h.info(); info.HW != 4 || !slices.Equal(info.ISR, []int32{1, 2, 3}) {
		t.Fatalf("after the answer: hw %d isr %v, want 4 and [1 2 3]", info.HW, info.ISR)
	}
}

// TestOutOfRangeFetchIsNotProgress: a follower's fetch past the leader's
// log end is refused, and does not count as the follower having caught up:
// counted, it would ask the follower into the ISR and let the HW (and
// acks=-1) pass records the follower never had.
func TestOutOfRangeFetchIsNotProgress(t *testing.T) {
	h := newLeader(t, 2, 1, 2)
	h.produceOK("a")
	h.follow(2, 1)
	if p := h.fetch(3, 5, 0); p.ErrorCode != kerr.OffsetOutOfRange.Code {
		t.Fatalf("fetch past the log end: %s", errName(p.ErrorCode))
	}
	if _, ask, ok := h.alterISR(); ok {
		t.Fatalf("a fetch refused as out of range made the leader ask for isr %v", ask.ISR)
	}
}
