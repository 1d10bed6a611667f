package checker

import (
	"testing"
	"time"

	"github.com/chaos-isr/chaos/history"
)

// bounded is strict with a 10 s liveness bound.
var bounded = func() Config { c := strict; c.LivenessBoundMs = 10_000; return c }()

func (b *hb) converge(ok bool, why string) {
	b.add(97, history.Invoke, history.Converge, &history.Value{Topic: topic}, "")
	typ := history.OK
	if !ok {
		typ = history.Fail
	}
	b.add(97, typ, history.Converge, &history.Value{Topic: topic}, why)
}

func (b *hb) stuckFinal(part int32, from, hw int64) {
	b.invokeRead(99, history.FinalRead, part, 0)
	b.add(99, history.Fail, history.FinalRead, &history.Value{Topic: topic, Partition: part, From: history.Int64(from), HW: history.Int64(hw)},
		history.StuckRead+" at offset 0: the leader returned no records below its high watermark 1")
}

func liveness(t *testing.T, cfg Config, b *hb) map[string]Result {
	t.Helper()
	h := NewHistory(b.ops, cfg)
	if p := h.Problems(); len(p) > 0 {
		t.Fatalf("the test history is malformed: %v", p)
	}
	out := map[string]Result{}
	for _, c := range []func(*History) Result{NoConvergence, StuckPartition, StuckConsumer} {
		r := c(h)
		out[r.Name] = r
	}
	return out
}

// TestLiveness: each liveness check on both sides of its bound, and where
// the history cannot tell.
func TestLiveness(t *testing.T) {
	heal := func(b *hb) {
		b.nemesis("start-kill", "kill")
		b.wait(time.Second)
		b.nemesis("stop-kill", "kill")
	}
	cases := []struct {
		name  string
		cfg   Config
		build func(b *hb)
		want  map[string]Validity
	}{
		{"converged within the bound", bounded, func(b *hb) {
			heal(b)
			b.monitor(0, 1, 1, 1, 2)
			b.wait(9 * time.Second)
			b.monitor(0, 1, 1, 1, 2, 3)
			b.send(1, 0, "a", 0)
			b.final(0, 1, "0=a")
		}, map[string]Validity{NoConvergenceName: Valid, StuckPartitionName: Valid}},
		{"converged past the bound, seen unconverged at it", bounded, func(b *hb) {
			heal(b)
			b.monitor(0, 1, 1, 1, 2)
			b.wait(11 * time.Second)
			b.monitor(0, 1, 1, 1, 2)
			b.monitor(0, 1, 1, 1, 2, 3)
			b.final(0, 0, "")
		}, map[string]Validity{NoConvergenceName: Invalid}},
		{"first seen converged past the bound, nothing seen between", bounded, func(b *hb) {
			heal(b)
			b.monitor(0, 1, 1, 1, 2)
			b.wait(11 * time.Second)
			b.monitor(0, 1, 1, 1, 2, 3)
			b.final(0, 0, "")
		}, map[string]Validity{NoConvergenceName: Unknown}},
		{"the final phase alone saw it converge late", bounded, func(b *hb) {
			heal(b)
			b.wait(25 * time.Second)
			b.converge(true, "")
			b.final(0, 0, "")
		}, map[string]Validity{NoConvergenceName: Unknown}},
		{"converged, then lost its ISR for the whole final wait", bounded, func(b *hb) {
			heal(b)
			b.monitor(0, 1, 1, 1, 2, 3)
			b.add(97, history.Invoke, history.Converge, &history.Value{Topic: topic}, "")
			b.wait(11 * time.Second)
			b.add(97, history.Fail, history.Converge, &history.Value{Topic: topic, Unconverged: []int32{0}}, "t-0: isr [1 2] of replicas [1 2 3]")
		}, map[string]Validity{NoConvergenceName: Invalid}},
		{"the final wait gave up on another partition", bounded, func(b *hb) {
			heal(b)
			b.monitor(0, 1, 1, 1, 2, 3)
			b.add(97, history.Invoke, history.Converge, &history.Value{Topic: topic}, "")
			b.wait(11 * time.Second)
			b.add(97, history.Fail, history.Converge, &history.Value{Topic: topic, Unconverged: []int32{1}}, "t-1: isr [1 2] of replicas [1 2 3]")
		}, map[string]Validity{NoConvergenceName: Valid}},
		{"a stale broker's full ISR does not count", bounded, func(b *hb) {
			heal(b)
			b.monitor(0, 2, 2, 2, 3)
			b.monitor(0, 1, 1, 1, 2, 3) // epoch 1 after epoch 2: a zombie's view
			b.wait(11 * time.Second)
			b.monitor(0, 2, 2, 2, 3)
		}, map[string]Validity{NoConvergenceName: Invalid}},
		{"a window that never stopped", bounded, func(b *hb) {
			b.nemesis("start-kill", "kill")
			b.wait(11 * time.Second)
			b.monitor(0, 1, 1, 1, 2)
			b.sendFail(1, 0, "a")
			b.wait(11 * time.Second)
			b.sendFail(2, 0, "b")
		}, map[string]Validity{NoConvergenceName: Unknown, StuckPartitionName: Unknown}},
		{"a heal that failed", bounded, func(b *hb) {
			b.nemesis("start-kill", "kill")
			b.add(history.NemesisProcess, history.Info, "stop-kill", &history.Value{FaultInfo: &history.FaultInfo{Fault: "kill"}}, "restart broker-1: exit status 1")
			b.wait(11 * time.Second)
			b.monitor(0, 1, 1, 1, 2)
		}, map[string]Validity{NoConvergenceName: Unknown}},
		{"one late failure is no stuck partition", bounded, func(b *hb) {
			heal(b)
			b.converge(true, "")
			b.wait(11 * time.Second)
			b.sendFail(1, 0, "a")
			b.final(0, 0, "")
		}, map[string]Validity{StuckPartitionName: Unknown}},
		{"never converged, watched past the bound", bounded, func(b *hb) {
			heal(b)
			b.wait(11 * time.Second)
			b.monitor(0, 1, 1, 1, 2)
			b.converge(false, "t-0: isr [1 2] of replicas [1 2 3]")
		}, map[string]Validity{NoConvergenceName: Invalid}},
		{"never converged, history ends within the bound", bounded, func(b *hb) {
			heal(b)
			b.wait(5 * time.Second)
			b.monitor(0, 1, 1, 1, 2)
		}, map[string]Validity{NoConvergenceName: Unknown}},
		{"the final phase saw it converge, with no monitor", bounded, func(b *hb) {
			heal(b)
			b.sendFail(1, 0, "a")
			b.converge(true, "")
			b.final(0, 0, "")
		}, map[string]Validity{NoConvergenceName: Valid}},
		{"sends fail past the bound", bounded, func(b *hb) {
			heal(b)
			b.converge(true, "")
			b.sendFail(1, 0, "a")
			b.wait(11 * time.Second)
			b.sendFail(2, 0, "b")
			b.final(0, 0, "")
		}, map[string]Validity{StuckPartitionName: Invalid}},
		{"sends fail, then one is acknowledged", bounded, func(b *hb) {
			heal(b)
			b.converge(true, "")
			b.sendFail(1, 0, "a")
			b.wait(11 * time.Second)
			b.send(2, 0, "b", 0)
			b.final(0, 1, "0=b")
		}, map[string]Validity{StuckPartitionName: Valid}},
		{"sends fail, history ends within the bound", bounded, func(b *hb) {
			heal(b)
			b.converge(true, "")
			b.sendFail(1, 0, "a")
			b.final(0, 0, "")
		}, map[string]Validity{StuckPartitionName: Unknown}},
		{"under acks=0 sends are not judged", func() Config { c := bounded; c.Acks, c.MinInsyncReplicas = 0, 1; return c }(), func(b *hb) {
			heal(b)
			b.converge(true, "")
			b.sendInfo(1, 0, "a")
			b.wait(11 * time.Second)
			b.sendInfo(2, 0, "b")
			b.final(0, 0, "")
		}, map[string]Validity{StuckPartitionName: Valid}},
		{"a stall longer than the bound", bounded, func(b *hb) {
			b.send(1, 0, "a", 0)
			b.poll(10, 0, 0, 1, "")
			b.wait(11 * time.Second)
			b.poll(10, 0, 0, 1, "")
			b.final(0, 1, "0=a")
		}, map[string]Validity{StuckConsumerName: Invalid}},
		{"a stall shorter than the bound", bounded, func(b *hb) {
			b.send(1, 0, "a", 0)
			b.poll(10, 0, 0, 1, "")
			b.wait(9 * time.Second)
			b.poll(10, 0, 0, 1, "")
			b.poll(10, 0, 0, 1, "0=a")
			b.final(0, 1, "0=a")
		}, map[string]Validity{StuckConsumerName: Valid}},
		{"nothing to read is no stall", bounded, func(b *hb) {
			b.poll(10, 0, 0, 0, "")
			b.wait(11 * time.Second)
			b.poll(10, 0, 0, 0, "")
			b.final(0, 0, "")
		}, map[string]Validity{StuckConsumerName: Valid}},
		{"a stuck final read counts as a stall", bounded, func(b *hb) {
			b.send(1, 0, "a", 0)
			b.stuckFinal(0, 0, 1)
			b.wait(11 * time.Second)
			b.stuckFinal(0, 0, 1)
		}, map[string]Validity{StuckConsumerName: Invalid, StuckPartitionName: Invalid}},
		{"without a bound nothing applies", strict, func(b *hb) {
			heal(b)
			b.wait(time.Minute)
			b.monitor(0, 1, 1, 1)
		}, map[string]Validity{NoConvergenceName: Unknown, StuckPartitionName: Unknown, StuckConsumerName: Unknown}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := &hb{}
			c.build(b)
			got := liveness(t, c.cfg, b)
			for name, want := range c.want {
				r := got[name]
				if r.Valid != want {
					t.Errorf("%s: %s, want %s: %v %s", name, r.Valid, want, r.Details, r.NotChecked)
				}
				if want == Invalid && r.Forbidden != r.Count {
					t.Errorf("%s: %d of %d forbidden", name, r.Forbidden, r.Count)
				}
				if c.cfg.LivenessBoundMs == 0 && !r.NotApplicable {
					t.Errorf("%s: applies without a bound", name)
				}
			}
		})
	}
}

// TestLivenessSummary: results.json's liveness names the bound, the heal
// and each partition's time to converge.
func TestLivenessSummary(t *testing.T) {
	b := &hb{}
	b.nemesis("start-kill", "kill")
	b.wait(time.Second)
	b.nemesis("stop-kill", "kill")
	b.wait(2 * time.Second)
	b.monitor(0, 1, 1, 1, 2, 3)
	b.monitor(1, 1, 1, 1, 2)
	res := Check(b.ops, bounded, Options{})
	l := res.Liveness
	if l == nil || l.BoundMs != 10_000 || len(l.Partitions) != 2 {
		t.Fatalf("liveness %+v", l)
	}
	if p := l.Partitions[0]; p.Partition != "t-0" || p.AfterMs != 2000 {
		t.Errorf("partition 0: %+v", p)
	}
	if p := l.Partitions[1]; p.AfterMs != -1 {
		t.Errorf("partition 1 never converged: %+v", p)
	}
	if Check(b.ops, strict, Options{}).Liveness != nil {
		t.Error("a summary without a bound")
	}
}
