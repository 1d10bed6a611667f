package checker

import (
	"testing"

	"github.com/chaos-isr/chaos/history"
)

// TestGoneCopy: with client retries, a value seen at two offsets may be a
// retry's two copies. b's first attempt was written at offset 1 (a
// consumer read it there, its answer lost); its retry was acknowledged at
// offset 2, which c then took, and b survives at 1. The pair "b and c
// both took offset 2" needs b's copy at 2 truncated, and is judged by that
// copy alone: under acks=1 only an ack saw it, uncommitted, a truncation
// a kill permits; under acks=-1 that ack committed it, and a committed
// record truncated under clean election is forbidden.
func TestGoneCopy(t *testing.T) {
	b := &hb{}
	b.nemesis("start-kill", "kill")
	b.send(0, 0, "a", 0)
	b.invokeSend(1, 0, "b")
	b.poll(10, 0, 0, 2, "0=a 1=b")
	b.doneSend(1, 0, "b", history.OK, 2)
	b.send(0, 0, "c", 2)
	b.nemesis("stop-kill", "kill")
	b.final(0, 3, "0=a 1=b 2=c")
	for br := int32(1); br <= 3; br++ {
		b.replica(0, br, 3, "0=a 1=b 2=c")
	}
	for _, tc := range []struct {
		acks      int
		forbidden bool
	}{{1, false}, {-1, true}} {
		cfg := strict
		cfg.Acks, cfg.ClientRetries, cfg.Faults, cfg.FaultsRecorded = tc.acks, true, []string{"kill"}, true
		if tc.acks == 1 {
			cfg.MinInsyncReplicas = 1
		}
		var got *Result
		res := Check(b.ops, cfg, Options{})
		for i := range res.Results {
			if res.Results[i].Name == NonlinearizableSendName {
				got = &res.Results[i]
			}
		}
		if got == nil || got.Count == 0 {
			t.Fatalf("acks=%d: no nonlinearizable-send pair: %+v", tc.acks, got)
		}
		if (got.Forbidden > 0) != tc.forbidden {
			t.Errorf("acks=%d: %d of %d pairs forbidden (causes %v), want forbidden: %v", tc.acks, got.Forbidden, got.Count, got.Causes, tc.forbidden)
		}
	}
}
