package core

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// pump carries follower f's requests to leader l and l's answers back
// until f is caught up: until it asks for nothing more, or its fetch waits
// at the leader (then the leader's clock runs to the fetch's max wait, and
// that answer is the last delivered). It returns what f asked, in order:
// "epoch N" for an OffsetForLeaderEpoch about epoch N, "fetch@O" for a
// Fetch from offset O, "fetch@O waits" for the fetch that waited.
func pump(t *testing.T, l, f *harness) []string {
	t.Helper()
	var asked []string
	for range 20 {
		what, more := pumpOne(t, l, f)
		if what != "" {
			asked = append(asked, what)
		}
		if !more {
			return asked
		}
	}
	t.Fatalf("follower still asking after 20 requests: %v", asked)
	return nil
}

// pumpOne delivers one request of f to l and its answer back; more is false
// if f had nothing to ask or the fetch had to wait.
func pumpOne(t *testing.T, l, f *harness) (what string, more bool) {
	t.Helper()
	s, ok := f.findSend(func(s Send) bool { return s.To == l.b.cfg.BrokerID })
	if !ok {
		return "", false
	}
	req := s.Req.(kmsg.Request)
	switch r := req.(type) {
	case *kmsg.OffsetForLeaderEpochRequest:
		what = sprintf("epoch %d", r.Topics[0].Partitions[0].LeaderEpoch)
	case *kmsg.FetchRequest:
		what = sprintf("fetch@%d", r.Topics[0].Partitions[0].FetchOffset)
	default:
		t.Fatalf("follower sent %s", kmsg.NameForKey(req.Key()))
	}
	conn := l.request(req)
	reply, ok := l.reply(conn)
	if !ok {
		what += " waits"
		l.tick(l.now + int64(req.(*kmsg.FetchRequest).MaxWaitMillis))
		if reply, ok = l.reply(conn); !ok {
			t.Fatalf("%s: no answer after its max wait", what)
		}
	}
	f.respond(s.ID, reply.Resp)
	return what, !strings.HasSuffix(what, " waits")
}

func ev(epoch int32, values string) []epochValue {
	var out []epochValue
	for _, v := range strings.Fields(values) {
		out = append(out, epochValue{epoch, v})
	}
	return out
}

func join(parts ...[]epochValue) []epochValue { return slices.Concat(parts...) }

// TestFollowerTruncatesByEpoch: a replica that becomes a follower (here a
// broker starting on the log an earlier run left) first asks the leader
// where its latest epoch ends (OffsetForLeaderEpoch, KIP-101, with KIP-279's
// further rounds for an epoch the leader never had), truncates there, and
// only then fetches; so a diverged suffix is replaced by the leader's,
// never kept.
func TestFollowerTruncatesByEpoch(t *testing.T) {
	for _, tc := range []struct {
		name           string
		leader         []epochValue
		follower       []epochValue
		followerHW     int64
		epoch          int32    // the new leader epoch
		wantAsked      []string // what the follower asks the leader, in order
		wantTruncateTo int64    // the follower's LEO when it starts fetching
	}{
		{
			name:   "diverged suffix from an epoch the leader lacks",
			leader: join(ev(0, "a b"), ev(2, "c d e")), follower: join(ev(0, "a b"), ev(1, "x y")), epoch: 2,
			wantAsked: []string{"epoch 1", "fetch@2", "fetch@5 waits"}, wantTruncateTo: 2,
		},
		{
			name:   "two rounds: the leader answers an epoch the follower never had",
			leader: join(ev(0, "a b"), ev(2, "c")), follower: join(ev(0, "a b"), ev(1, "x"), ev(3, "y")), epoch: 4,
			wantAsked: []string{"epoch 3", "epoch 1", "fetch@2", "fetch@3 waits"}, wantTruncateTo: 2,
		},
		{
			name:   "same epoch, the follower's suffix is longer",
			leader: ev(0, "a b"), follower: ev(0, "a b z"), epoch: 1,
			wantAsked: []string{"epoch 0", "fetch@2 waits"}, wantTruncateTo: 2,
		},
		{
			name:   "follower behind: nothing to drop",
			leader: ev(0, "a b c"), follower: ev(0, "a"), epoch: 1,
			wantAsked: []string{"epoch 0", "fetch@1", "fetch@3 waits"}, wantTruncateTo: 1,
		},
		{
			// Not even the follower's HW is kept: the leader has none of it.
			name:   "the leader lost its whole log",
			leader: nil, follower: ev(0, "a b"), followerHW: 2, epoch: 2,
			wantAsked: []string{"epoch 0", "fetch@0 waits"}, wantTruncateTo: 0,
		},
		{
			name:   "empty follower: nothing to ask",
			leader: ev(0, "a b"), follower: nil, epoch: 1,
			wantAsked: []string{"fetch@0", "fetch@2 waits"}, wantTruncateTo: 0,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newHarness(t, testConfig(1), seeded(t, tc.leader...))
			l.partition(1, tc.epoch, 0, 1)
			f := newHarness(t, testConfig(2), seededHW(t, tc.followerHW, tc.follower...))
			f.partition(1, tc.epoch, 0, 1)
			if info := f.info(); info.Role != "follower" || info.LeaderEpoch != tc.epoch {
				t.Fatalf("broker 2 is %s in epoch %d", info.Role, info.LeaderEpoch)
			}
			// An empty follower has nothing to truncate and starts fetching
			// at its next event.
			f.tick(f.now + 1)

			asked := pump(t, l, f)
			if !slices.Equal(asked, tc.wantAsked) {
				t.Fatalf("follower asked %v, want %v", asked, tc.wantAsked)
			}
			if got, want := f.values(), l.values(); !slices.Equal(got, want) {
				t.Fatalf("follower log %v, want the leader's %v", got, want)
			}
			var truncated bool
			for _, e := range f.take() {
				if lg, ok := e.(Log); ok && strings.Contains(lg.Line, "truncated by leader epoch") {
					truncated = true
					if want := sprintf("to %d ", tc.wantTruncateTo); !strings.Contains(lg.Line, want) {
						t.Fatalf("%q, want truncation %s", lg.Line, want)
					}
				}
			}
			if wantTruncated := tc.wantTruncateTo < int64(len(tc.follower)); truncated != wantTruncated {
				t.Fatalf("truncated: %v, want %v", truncated, wantTruncated)
			}
		})
	}
}

// TestFollowerRetriesOffsetForLeaderEpoch: a failed OffsetForLeaderEpoch is
// asked again after retry.backoff, and the follower does not fetch
// meanwhile.
func TestFollowerRetriesOffsetForLeaderEpoch(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func(h *harness, id uint64)
	}{
		{"timeout", func(h *harness, id uint64) { h.fail(id, errors.New("request timed out")) }},
		{"leader not ready", func(h *harness, id uint64) {
			resp := kmsg.NewPtrOffsetForLeaderEpochResponse()
			rt := kmsg.NewOffsetForLeaderEpochResponseTopic()
			rt.Topic = testTopic
			rp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			rp.ErrorCode = kerr.UnknownLeaderEpoch.Code
			rt.Partitions = append(rt.Partitions, rp)
			resp.Topics = append(resp.Topics, rt)
			h.respond(id, resp)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newHarness(t, testConfig(2), seeded(t, ev(0, "a b")...))
			f.partition(1, 1, 0, 1)
			s, ok := f.findSend(func(s Send) bool { _, ok := s.Req.(*kmsg.OffsetForLeaderEpochRequest); return ok })
			if !ok {
				t.Fatal("no OffsetForLeaderEpoch after becoming a follower")
			}
			start := f.now
			tc.answer(f, s.ID)
			f.tick(start + f.b.cfg.RetryBackoffMs - 1)
			if sends := sendKinds(f.take()); len(sends) != 0 {
				t.Fatalf("sent %v before the backoff passed", sends)
			}
			f.tick(start + f.b.cfg.RetryBackoffMs)
			if sends := sendKinds(f.take()); !slices.Equal(sends, []string{"OffsetForLeaderEpoch"}) {
				t.Fatalf("after the backoff sent %v, want [OffsetForLeaderEpoch]", sends)
			}
			if leo := f.info().LEO; leo != 2 {
				t.Fatalf("leo %d: truncated without an answer", leo)
			}
		})
	}
}

// sendKinds names the peer requests among effects.
func sendKinds(effects []Effect) []string {
	var out []string
	for _, e := range effects {
		if s, ok := e.(Send); ok && s.To != ControllerID {
			out = append(out, kmsg.NameForKey(s.Req.(kmsg.Request).Key()))
		}
	}
	return out
}

// TestFollowerServesOnlyDebugReads: a follower replica refuses consumers
// (the leader serves every client read) but a debug consumer reads its
// whole log, past its HW.
func TestFollowerServesOnlyDebugReads(t *testing.T) {
	f := newHarness(t, testConfig(2), seeded(t, ev(0, "a b")...))
	f.partition(1, 1, 0, 1, 2)
	if p := f.fetch(ConsumerReplicaID, 0, -1); p.ErrorCode != kerr.NotLeaderForPartition.Code {
		t.Fatalf("consumer read from a follower: %s, want NOT_LEADER_FOR_PARTITION", errName(p.ErrorCode))
	}
	p := f.fetch(DebugReplicaID, 0, -1)
	if got := strings.Join(recordValues(t, p.RecordBatches), " "); p.ErrorCode != 0 || got != "a b" {
		t.Fatalf("debug read %q (%s), want \"a b\"", got, errName(p.ErrorCode))
	}
	if p.HighWatermark != 0 {
		t.Fatalf("hw %d, want 0", p.HighWatermark)
	}
	r := f.call(listOffsetsReq(DebugReplicaID, -1)).(*kmsg.ListOffsetsResponse)
	if o := r.Topics[0].Partitions[0]; o.ErrorCode != 0 || o.Offset != 2 {
		t.Fatalf("debug latest offset %d (%s), want the leo 2", o.Offset, errName(o.ErrorCode))
	}
}

// TestFollowerTakesLeaderHW: a follower's HW is the leader's, bounded by
// its own LEO.
func TestFollowerTakesLeaderHW(t *testing.T) {
	l := newHarness(t, testConfig(1), seeded(t, ev(0, "a b c")...))
	l.partition(1, 1, 0, 1) // alone in the ISR: hw 3
	cfg := testConfig(2)
	cfg.ReplicaFetchMaxBytes = 1 // one batch per fetch
	f := newHarness(t, cfg, nil)
	f.partition(1, 1, 0, 1)
	f.tick(f.now + 1)
	for _, want := range []int64{1, 2, 3} {
		what, _ := pumpOne(t, l, f)
		if info := f.info(); info.LEO != want || info.HW != want {
			t.Fatalf("after %s: follower leo %d hw %d, want %d and %d", what, info.LEO, info.HW, want, want)
		}
	}
}
