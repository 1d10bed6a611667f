package core

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/chaos-isr/chaos/broker/bug"
)

// The planted bugs of the broker (package bug), one test or more each: the
// bug's observable effect with it on, and its absence with it off (the
// same steps, the correct answer). They pin that each switch works; whether
// the tester catches the bug is measured elsewhere.

// withBugs runs fn once without and once with bugs.
func withBugs(t *testing.T, bugs bug.Set, fn func(t *testing.T, on bool, cfg func(id int32) Config)) {
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprintf("bug=%v", on), func(t *testing.T) {
			fn(t, on, func(id int32) Config {
				cfg := testConfig(id)
				if on {
					cfg.Bugs = bugs
				}
				return cfg
			})
		})
	}
}

// leaderWith is newLeader with cfg.
func leaderWith(t *testing.T, cfg Config, minISR int32, isr ...int32) *harness {
	t.Helper()
	h := newHarness(t, cfg, nil)
	h.minISR = minISR
	h.partition(1, 0, 0, isr...)
	h.take()
	return h
}

func pick[T any](on bool, off, onv T) T {
	if on {
		return onv
	}
	return off
}

func TestConfigRefusesBugsOfOtherNodes(t *testing.T) {
	cfg := testConfig(1)
	cfg.Bugs = bug.Of(bug.UncleanWhenClean)
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "lives in the controller") {
		t.Fatalf("a controller bug in a broker config: %v", err)
	}
	cfg.Bugs = bug.Of(bug.AckBeforeReplicate, bug.OffsetReuse)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
}

// ack-before-replicate: with the bug an acks=-1 produce is answered at the
// append, before any follower fetched; without it, only once the HW passes
// the batch.
func TestBugAckBeforeReplicate(t *testing.T) {
	withBugs(t, bug.Of(bug.AckBeforeReplicate), func(t *testing.T, on bool, cfg func(int32) Config) {
		h := leaderWith(t, cfg(1), 1, 1, 2)
		conn := h.request(produceReq(-1, 30000, "a", "b"))
		if got, want := h.outcome(conn), pick(on, "", "ok@0"); got != want {
			t.Fatalf("after the append: %q, want %q", got, want)
		}
		if hw := h.info().HW; hw != 0 {
			t.Fatalf("hw %d before any fetch", hw)
		}
		h.follow(2, 2)
		if got, want := h.outcome(conn), pick(on, "ok@0", ""); got != want {
			t.Fatalf("after the follower caught up: %q, want %q", got, want)
		}
	})
}

// hw-ignores-isr: with the bug the HW is the leader's LEO at once, and a
// consumer reads what no follower has; without it the HW waits for the
// ISR.
func TestBugHWIgnoresISR(t *testing.T) {
	withBugs(t, bug.Of(bug.HWIgnoresISR), func(t *testing.T, on bool, cfg func(int32) Config) {
		h := leaderWith(t, cfg(1), 1, 1, 2, 3)
		h.produceOK("a", "b")
		h.follow(2, 1)
		if hw, want := h.info().HW, pick[int64](on, 0, 2); hw != want {
			t.Fatalf("hw %d, want %d", hw, want)
		}
		p := h.fetch(ConsumerReplicaID, 0, -1)
		if got, want := strings.Join(recordValues(t, p.RecordBatches), " "), pick(on, "", "a b"); got != want {
			t.Fatalf("consumer read %q, want %q", got, want)
		}
	})
}

// isr-early-rejoin: with the bug a follower far behind the HW is asked
// into the ISR at its first fetch; without it, not until it reaches the
// HW.
func TestBugISREarlyRejoin(t *testing.T) {
	withBugs(t, bug.Of(bug.ISREarlyRejoin), func(t *testing.T, on bool, cfg func(int32) Config) {
		h := leaderWith(t, cfg(1), 1, 1, 2)
		for _, v := range []string{"a", "b", "c"} {
			h.produceOK(v)
		}
		h.follow(2, 3) // hw 3
		h.follow(3, 0)
		_, ask, ok := h.alterISR()
		if ok != on {
			t.Fatalf("follower 3 at 0, hw 3: asked %v, want a request: %v", ask, on)
		}
		if ok && !slices.Equal(ask.ISR, []int32{1, 2, 3}) {
			t.Fatalf("asked for isr %v", ask.ISR)
		}
	})
}

// isr-rejoin-before-epoch-start (KAFKA-7128): a new leader whose HW (1)
// lags the start of its epoch (2). With the bug a follower at the HW but
// short of the epoch start is asked in; without it, not. The bug keeps the
// HW rule: a follower below the HW is not asked in either way.
func TestBugISRRejoinBeforeEpochStart(t *testing.T) {
	withBugs(t, bug.Of(bug.ISRRejoinBeforeEpochStart), func(t *testing.T, on bool, cfg func(int32) Config) {
		for _, tc := range []struct {
			offset int64
			want   bool
		}{
			{0, false},
			{1, on},
			{2, true},
		} {
			h := newHarness(t, cfg(1), seededHW(t, 1, epochValue{0, "a"}, epochValue{0, "b"}))
			h.partition(1, 1, 0, 1, 2) // leader in epoch 1 from leo 2, hw 1
			if info := h.info(); info.LEO != 2 || info.HW != 1 {
				t.Fatalf("leo %d hw %d, want 2 and 1", info.LEO, info.HW)
			}
			h.follow(3, tc.offset)
			if _, ask, ok := h.alterISR(); ok != tc.want {
				t.Errorf("follower 3 at %d: asked %v, want a request: %v", tc.offset, ask, tc.want)
			}
		}
	})
}

// read-past-hw: with the bug a consumer reads past the HW to the log end;
// without it, up to the HW. The HW the response reports is the true one
// either way.
func TestBugReadPastHW(t *testing.T) {
	withBugs(t, bug.Of(bug.ReadPastHW), func(t *testing.T, on bool, cfg func(int32) Config) {
		h := leaderWith(t, cfg(1), 1, 1, 2)
		for _, v := range []string{"a", "b", "c", "d", "e"} {
			h.produceOK(v)
		}
		h.follow(2, 3) // hw 3
		p := h.fetch(ConsumerReplicaID, 0, -1)
		if got, want := strings.Join(recordValues(t, p.RecordBatches), " "), pick(on, "a b c", "a b c d e"); got != want {
			t.Fatalf("consumer read %q, want %q", got, want)
		}
		if p.HighWatermark != 3 {
			t.Fatalf("response hw %d, want 3", p.HighWatermark)
		}
	})
}

// The follower truncation bugs, each on a leader and a follower log that
// show it: without the bug the follower asks the leader where its epoch
// ends (KIP-101, with KIP-279's second round), truncates there and ends
// with the leader's log; with it, the follower keeps records the leader
// never had and the replicas diverge.
//
//   - truncate-to-hw (KIP-101's second scenario): the follower's HW covers
//     records of an epoch the leader never had; it keeps its log up to its
//     HW, asks nothing and appends the leader's records after them.
//   - no-follower-truncation: it keeps its whole log and fetches from its
//     end.
//   - epoch-truncation-single-round (KAFKA-6361): the leader answers about
//     an epoch (2) the follower never had; the follower truncates to the
//     leader's end of epoch 2 (3) instead of asking again about its own
//     epoch below it (1), and keeps x at offset 2.
func TestBugFollowerTruncation(t *testing.T) {
	for _, tc := range []struct {
		bug              bug.Bug
		leader, follower []epochValue
		followerHW       int64
		epoch            int32
		askedOff         []string // what the follower asks without the bug
		askedOn          []string // with it
		logOn            []string // the follower's log with it (without: the leader's)
	}{
		{
			bug: bug.TruncateToHW, leader: join(ev(0, "a b"), ev(2, "c d e")), follower: join(ev(0, "a b"), ev(1, "x y")), followerHW: 4, epoch: 2,
			askedOff: []string{"epoch 1", "fetch@2", "fetch@5 waits"}, askedOn: []string{"fetch@4", "fetch@5 waits"}, logOn: []string{"a", "b", "x", "y", "e"},
		},
		{
			bug: bug.NoFollowerTruncation, leader: join(ev(0, "a b"), ev(2, "c d e")), follower: join(ev(0, "a b"), ev(1, "x y")), epoch: 2,
			askedOff: []string{"epoch 1", "fetch@2", "fetch@5 waits"}, askedOn: []string{"fetch@4", "fetch@5 waits"}, logOn: []string{"a", "b", "x", "y", "e"},
		},
		{
			bug: bug.EpochTruncationSingleRound, leader: join(ev(0, "a b"), ev(2, "c")), follower: join(ev(0, "a b"), ev(1, "x"), ev(3, "y")), epoch: 4,
			askedOff: []string{"epoch 3", "epoch 1", "fetch@2", "fetch@3 waits"}, askedOn: []string{"epoch 3", "fetch@3 waits"}, logOn: []string{"a", "b", "x"},
		},
	} {
		t.Run(tc.bug.String(), func(t *testing.T) {
			withBugs(t, bug.Of(tc.bug), func(t *testing.T, on bool, cfg func(int32) Config) {
				l := newHarness(t, cfg(1), seeded(t, tc.leader...))
				l.partition(1, tc.epoch, 0, 1)
				f := newHarness(t, cfg(2), seededHW(t, tc.followerHW, tc.follower...))
				f.partition(1, tc.epoch, 0, 1)
				f.tick(f.now + 1)
				if asked, want := pump(t, l, f), pick(on, tc.askedOff, tc.askedOn); !slices.Equal(asked, want) {
					t.Fatalf("follower asked %v, want %v", asked, want)
				}
				if got, want := f.values(), pick(on, l.values(), tc.logOn); !slices.Equal(got, want) {
					t.Fatalf("follower log %v, want %v (leader %v)", got, want, l.values())
				}
			})
		})
	}
}

// truncation-index-out-of-range: a follower whose log ends with records
// its leader's epoch never had truncates them. A truncation that drops
// whole epochs names them either way; one that cuts into the follower's
// latest epoch panics with the bug, after the truncation (the log is as
// the truncation leaves it), and without it goes on to fetch.
func TestBugTruncationIndexOutOfRange(t *testing.T) {
	leader := join(ev(0, "a b"), ev(2, "c d e"))
	for _, tc := range []struct {
		name     string
		follower []epochValue
		panics   bool
	}{
		{"drops a whole epoch", join(ev(0, "a b"), ev(1, "x y")), false},
		{"cuts into the latest epoch", ev(0, "a b x y"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			withBugs(t, bug.Of(bug.TruncationIndexOutOfRange), func(t *testing.T, on bool, cfg func(int32) Config) {
				l := newHarness(t, cfg(1), seeded(t, leader...))
				l.partition(1, 2, 0, 1)
				f := newHarness(t, cfg(2), seeded(t, tc.follower...))
				f.partition(1, 2, 0, 1)
				f.tick(f.now + 1)
				var p any
				func() {
					defer func() { p = recover() }()
					pump(t, l, f)
				}()
				if want := on && tc.panics; (p != nil) != want {
					t.Fatalf("panic %v, want one: %v", p, want)
				}
				if p == nil {
					if got := f.values(); !slices.Equal(got, l.values()) {
						t.Fatalf("follower log %v, want the leader's %v", got, l.values())
					}
					return
				}
				if msg := fmt.Sprint(p); !strings.Contains(msg, "index out of range [1] with length 1") {
					t.Fatalf("panic %q, want an index out of range", msg)
				}
				if got := f.values(); !slices.Equal(got, []string{"a", "b"}) {
					t.Fatalf("follower log %v after the panic, want it truncated to a b", got)
				}
			})
		})
	}
}

// truncate-to-hw (KIP-101's first scenario): a follower whose HW lags its
// log end. With the bug it drops the records above its HW, which the
// leader may have committed; without it, it keeps what the leader's epoch
// has.
func TestBugTruncateToHWDropsRecords(t *testing.T) {
	withBugs(t, bug.Of(bug.TruncateToHW), func(t *testing.T, on bool, cfg func(int32) Config) {
		f := newHarness(t, cfg(2), seededHW(t, 1, ev(0, "a b c")...))
		f.partition(1, 1, 0, 1, 2)
		f.tick(f.now + 1)
		if leo, want := f.info().LEO, pick[int64](on, 3, 1); leo != want {
			t.Fatalf("follower leo %d before any answer, want %d", leo, want)
		}
		if kinds, want := sendKinds(f.take()), pick(on, []string{"OffsetForLeaderEpoch"}, []string{"Fetch"}); !slices.Equal(kinds, want) {
			t.Fatalf("follower sent %v, want %v", kinds, want)
		}
	})
}

// stale-epoch-fetch (KAFKA-6880): follower 3 fetches in leader epoch 1
// from the leader of epoch 2. Without the bug it is fenced
// (FENCED_LEADER_EPOCH) and its position not counted; with it, it is served
// and asked into the ISR. Consumers stay fenced either way.
func TestBugStaleEpochFetch(t *testing.T) {
	withBugs(t, bug.Of(bug.StaleEpochFetch), func(t *testing.T, on bool, cfg func(int32) Config) {
		h := newHarness(t, cfg(1), nil)
		h.partition(1, 2, 0, 1, 2)
		h.take()
		for _, v := range []string{"a", "b", "c"} {
			h.produceOK(v)
		}
		h.follow(2, 3) // hw 3
		p := h.fetch(3, 3, 1)
		if got, want := errName(p.ErrorCode), pick(on, errName(kerr.FencedLeaderEpoch.Code), "OK"); got != want {
			t.Fatalf("follower fetch in epoch 1: %s, want %s", got, want)
		}
		if _, ask, ok := h.alterISR(); ok != on {
			t.Fatalf("stale follower at the hw: asked %v, want a request: %v", ask, on)
		}
		if p := h.fetch(ConsumerReplicaID, 0, 1); p.ErrorCode != kerr.FencedLeaderEpoch.Code {
			t.Fatalf("consumer fetch in epoch 1: %s, want FENCED_LEADER_EPOCH", errName(p.ErrorCode))
		}
	})
}

// min-isr-ignored: with min.insync.replicas=2 and the ISR [1], an acks=-1
// write is refused before its append without the bug, and appended and
// acknowledged with it. Likewise when the ISR shrinks below the minimum
// while it waits: NOT_ENOUGH_REPLICAS_AFTER_APPEND without, ok with.
func TestBugMinISRIgnored(t *testing.T) {
	withBugs(t, bug.Of(bug.MinISRIgnored), func(t *testing.T, on bool, cfg func(int32) Config) {
		h := leaderWith(t, cfg(1), 2, 1)
		if got, want := h.outcome(h.request(produceReq(-1, 30000, "a"))), pick(on, errName(kerr.NotEnoughReplicas.Code), "ok@0"); got != want {
			t.Fatalf("isr [1]: %q, want %q", got, want)
		}
		if leo, want := h.info().LEO, pick[int64](on, 0, 1); leo != want {
			t.Fatalf("leo %d, want %d", leo, want)
		}

		h = leaderWith(t, cfg(1), 2, 1, 2)
		conn := h.request(produceReq(-1, 30000, "a"))
		h.partition(1, 0, 1, 1) // the controller shrank the ISR to [1]
		if got, want := h.outcome(conn), pick(on, errName(kerr.NotEnoughReplicasAfterAppend.Code), "ok@0"); got != want {
			t.Fatalf("isr shrank to [1] while waiting: %q, want %q", got, want)
		}
	})
}

// isr-shrink-without-controller: followers 2 and 3 stop fetching and the
// controller never answers. Without the bug the leader's ISR stays [1 2
// 3] and the acks=-1 write waits; with it the leader shrinks to [1] on its
// own and acknowledges the write alone.
func TestBugISRShrinkWithoutController(t *testing.T) {
	withBugs(t, bug.Of(bug.ISRShrinkWithoutController), func(t *testing.T, on bool, cfg func(int32) Config) {
		h := leaderWith(t, cfg(1), 1, 1, 2, 3)
		conn := h.request(produceReq(-1, 30000, "a"))
		var alter Send
		for now := int64(100); now <= 1600 && alter.ID == 0; now += 100 {
			h.tick(now)
			alter, _, _ = h.alterISR()
		}
		if alter.ID == 0 {
			t.Fatal("no AlterISR for followers silent for 1.6s")
		}
		h.fail(alter.ID, fmt.Errorf("request timed out"))
		h.tick(h.now + lagTimeMs)
		if isr, want := h.info().ISR, pick(on, []int32{1, 2, 3}, []int32{1}); !slices.Equal(isr, want) {
			t.Fatalf("isr %v, want %v", isr, want)
		}
		if got, want := h.outcome(conn), pick(on, "", "ok@0"); got != want {
			t.Fatalf("acks=-1 write: %q, want %q", got, want)
		}
	})
}

// offset-reuse: an acks=-1 write times out while follower 2 has it and
// follower 3 does not. Without the bug it stays in the leader's log and
// the next write gets offset 1; with it the leader takes it back and gives
// offset 0 again, which follower 2 holds with another value.
func TestBugOffsetReuse(t *testing.T) {
	withBugs(t, bug.Of(bug.OffsetReuse), func(t *testing.T, on bool, cfg func(int32) Config) {
		h := leaderWith(t, cfg(1), 1, 1, 2, 3)
		h.tick(1000)
		conn := h.request(produceReq(-1, 100, "a"))
		h.follow(2, 1)
		h.tick(1100)
		if got, want := h.outcome(conn), errName(kerr.RequestTimedOut.Code); got != want {
			t.Fatalf("at the timeout: %q, want %q", got, want)
		}
		if got, want := h.produceOK("b"), pick[int64](on, 1, 0); got != want {
			t.Fatalf("next write at offset %d, want %d", got, want)
		}
		if got, want := h.values(), pick(on, []string{"a", "b"}, []string{"b"}); !slices.Equal(got, want) {
			t.Fatalf("leader log %v, want %v", got, want)
		}
	})
}

// idempotence-no-dedup: an idempotent producer's batch is sent again (its
// answer was lost). Without the bug the leader answers with the offset it
// first wrote it at and writes nothing; with it the batch is written a
// second time. Either way the producer's next batch is in order.
func TestBugIdempotenceNoDedup(t *testing.T) {
	withBugs(t, bug.Of(bug.IdempotenceNoDedup), func(t *testing.T, on bool, cfg func(int32) Config) {
		h := leaderWith(t, cfg(1), 1, 1)
		if got := h.produceIdem(1, idem{1025, 0, 0, "a"}); got != "ok@0" {
			t.Fatalf("first send: %s", got)
		}
		if got, want := h.produceIdem(1, idem{1025, 0, 0, "a"}), pick(on, "ok@0", "ok@1"); got != want {
			t.Fatalf("the same batch again: %s, want %s", got, want)
		}
		if got, want := h.produceIdem(1, idem{1025, 0, 1, "b"}), pick(on, "ok@1", "ok@2"); got != want {
			t.Fatalf("the next batch: %s, want %s", got, want)
		}
		if got, want := h.values(), pick(on, []string{"a", "b"}, []string{"a", "a", "b"}); !slices.Equal(got, want) {
			t.Fatalf("leader log %v, want %v", got, want)
		}
	})
}
