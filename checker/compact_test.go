package checker

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/history"
)

// TestCompactIndexEdges: the index keeps reads compactly (a record alone
// in its list, reach derived from the records, the liveness checks' tries
// read from the reads, generations beside the polls); foreign histories
// at the edges of what it keeps are judged as they were when each read
// kept every field. Each case is judged from memory and streamed.
func TestCompactIndexEdges(t *testing.T) {
	member := func(b *hb, gen int32) {
		b.ops[len(b.ops)-1].Value.GroupInfo = &history.GroupInfo{Group: "g", Generation: gen, Member: "m"}
	}
	for _, tc := range []struct {
		name  string
		cfg   Config
		build func(b *hb)
		check func(t *testing.T, res *Results)
	}{
		{"a final read's offsets running past MaxInt64 reach MaxInt64", strict, func(b *hb) {
			b.send(1, 0, "x", 5)
			b.final(0, 0, "9223372036854775806=a 9223372036854775807=b -9223372036854775808=c")
			b.ops[len(b.ops)-1].Value.HW = nil
		}, func(t *testing.T, res *Results) {
			if r, _ := res.Get(LostWriteName); r.Forbidden != 1 {
				t.Errorf("lost-write %s, %d forbidden, want x lost: %v", r.Valid, r.Forbidden, r.Details)
			}
			if len(res.LostWrites) != 1 || res.LostWrites[0].Reach != math.MaxInt64 {
				t.Errorf("lost writes %+v, want x, reached MaxInt64", res.LostWrites)
			}
		}},
		{"an end-offset read's records explain a pair", Config{Acks: 1, MinInsyncReplicas: 1, ReplicationFactor: 3, Election: "unclean", MaxInFlight: 1}, func(b *hb) {
			b.invokeEnd(2, 0)
			b.doneEnd(2, 0, 10)
			b.ops[len(b.ops)-1].Value.Records = recs("5=a")
			b.send(1, 0, "a", 5)
			b.final(0, 6, "5=a")
		}, func(t *testing.T, res *Results) {
			// The read saw a's own record before a was sent: nothing
			// explains that.
			if r, _ := res.Get(NonlinearizableSendName); r.Forbidden != 1 {
				t.Errorf("nonlinearizable-send %s, %d forbidden: %v", r.Valid, r.Forbidden, r.Details)
			}
		}},
		{"a read from an offset with a negative HW is a read from there", Config{Acks: -1, MinInsyncReplicas: 2, ReplicationFactor: 3, Election: "clean", MaxInFlight: 1, LivenessBoundMs: 15}, func(b *hb) {
			b.send(1, 0, "a", 0)
			b.poll(2, 0, 0, 5, "")
			b.poll(2, 0, 3, -1, "") // got past offset 0: the stall ends
			b.wait(10 * time.Millisecond)
			b.poll(2, 0, 0, 5, "")
			b.wait(10 * time.Millisecond)
			b.poll(2, 0, 0, 5, "")
		}, func(t *testing.T, res *Results) {
			if r, _ := res.Get(StuckConsumerName); r.Valid != Valid {
				t.Errorf("stuck-consumer %s: %v", r.Valid, r.Details)
			}
		}},
		{"a group generation below zero is a generation", strict, func(b *hb) {
			b.send(1, 0, "a", 0)
			b.send(1, 0, "b", 1)
			b.poll(2, 0, 0, 2, "0=a 1=b")
			b.poll(2, 0, 0, 2, "0=a 1=b")
			member(b, -2)
		}, func(t *testing.T, res *Results) {
			if r, _ := res.Get(NonmonotonicPollName); r.Valid != Valid {
				t.Errorf("nonmonotonic-poll %s: %v", r.Valid, r.Details)
			}
		}},
		{"an unseen value sent to two partitions is judged by its first's final read", strict, func(b *hb) {
			b.sendInfo(1, 0, "d") // its home: partition 0
			b.send(2, 1, "d", 1)  // acknowledged in partition 1, which has no final read
			b.send(3, 0, "e", 0)
			b.final(0, 1, "0=e")
			for broker := range int32(3) {
				b.replica(0, broker+1, 1, "0=e")
			}
		}, func(t *testing.T, res *Results) {
			r, _ := res.Get(UnseenName)
			if r.Count != 1 || !strings.Contains(strings.Join(r.Details, "\n"), "the final read of t-0, where it was first sent,") {
				t.Errorf("unseen %s count %d: %v", r.Valid, r.Count, r.Details)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &hb{}
			tc.build(b)
			tc.check(t, Check(b.ops, tc.cfg, Options{}))
			sb := NewBuilder(tc.cfg)
			for i := range b.ops {
				op := b.ops[i]
				sb.Add(&op)
			}
			tc.check(t, CheckHistory(sb.History(), Options{}))
		})
	}
}
