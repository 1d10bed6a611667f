package checker

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/history"
)

// samples writes a sample of part every 250 ms for d, each seeing the
// given leader, epoch and ISR, and returns their completions' indexes.
func (b *hb) samples(part int32, d time.Duration, leader, epoch int32, isr ...int32) []int64 {
	var out []int64
	for end := b.t + int64(d); b.t < end; b.wait(250 * time.Millisecond) {
		out = append(out, b.monitor(part, leader, epoch, isr...))
	}
	return out
}

// aloneFor writes a second of healthy samples of partition 0, then d of
// samples with leader 1 alone in the ISR, in which write runs at the
// middle, then a second of healthy samples again. It returns the alone
// samples' indexes.
func (b *hb) aloneFor(d time.Duration, write func(b *hb)) []int64 {
	b.samples(0, time.Second, 1, 0, 1, 2, 3)
	alone := b.samples(0, d/2, 1, 0, 1)
	write(b)
	alone = append(alone, b.samples(0, d-d/2, 1, 0, 1)...)
	b.samples(0, time.Second, 1, 0, 1, 2, 3)
	return alone
}

func TestAckBelowMinISRFinds(t *testing.T) {
	b := &hb{}
	var ack int64
	alone := b.aloneFor(4*time.Second, func(b *hb) { ack = b.send(0, 0, "v", 7) })
	h := NewHistory(b.ops, strict)
	r := AckBelowMinISR(h)
	if r.Valid != Invalid || r.Count != 1 || r.Forbidden != 1 || r.Expected || r.Causes[Unexplained] != 1 {
		t.Fatalf("%+v", r)
	}
	// The examples: the ack, the last sample that completed more than a
	// second before the send, and the first one whose predecessor
	// completed more than a second after it.
	ti, td := b.ops[ack-1].Time, b.ops[ack].Time
	var before, after int64 = -1, -1
	for i, x := range alone {
		if b.ops[x].Time+int64(time.Second) < ti {
			before = x
		}
		if i > 0 && after < 0 && b.ops[alone[i-1]].Time-int64(time.Second) > td {
			after = x
		}
	}
	if want := []int64{before, ack, after}; !slices.Equal(r.Examples, want) {
		t.Errorf("examples %v, want %v (ack, then the samples around it)", r.Examples, want)
	}
	n := 0
	for _, x := range alone {
		if x >= before && x <= after {
			n++
		}
	}
	want := `value "v" acknowledged at offset 7 of t-0 (op ` + itoa(ack) + `, invoked at 3.000s, acknowledged at 3.000s) under acks=-1, while every monitor sample from op ` +
		itoa(before) + ` (` + secs(b.ops[before].Time) + `) to op ` + itoa(after) + ` (` + secs(b.ops[after].Time) + `), ` + itoa(int64(n)) +
		` samples, saw leader 1 (epoch 0) with isr [1], below min.insync.replicas 2`
	if len(r.Details) != 1 || r.Details[0] != want {
		t.Errorf("details %q\nwant %q", r.Details, want)
	}
	for k, v := range map[string]int64{"acknowledged": 1, "samples": int64(len(alone)) + 8, "samples-below-min": int64(len(alone)), "runs-below-min": 1, "runs-long-enough": 1} {
		if r.Stats[k] != v {
			t.Errorf("stat %s = %d, want %d (%v)", k, r.Stats[k], v, r.Stats)
		}
	}
	// Check runs it, and the verdict is invalid.
	if res := Check(b.ops, strict, Options{SkipLinearizability: true}); !slices.Contains(res.Unexpected, AckBelowMinISRName) {
		t.Errorf("Check: unexpected %v", res.Unexpected)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestAckBelowMinISRRules: what counts and what does not, one rule at a
// time. Each case writes partition 0's samples and sends; count is how
// many acknowledgements the checker must count.
func TestAckBelowMinISRRules(t *testing.T) {
	sec := time.Second
	send := func(b *hb) { b.send(0, 0, "v", 0) }
	// Each case's samples follow a second of healthy ones under the same
	// leader and epoch (rule 5), unless it says bare.
	cases := []struct {
		name  string
		cfg   func(c Config) Config
		build func(b *hb)
		count int
		bare  bool
	}{
		{"an ack amid samples below the minimum", nil, func(b *hb) { b.aloneFor(4*sec, send) }, 1, false},
		{"several acks, each counted", nil, func(b *hb) {
			b.aloneFor(4*sec, func(b *hb) { send(b); b.send(1, 0, "w", 1); b.send(0, 0, "x", 2) })
		}, 3, false},
		{"a failed or unknown send is no acknowledgement", nil, func(b *hb) {
			b.send(3, 0, "before", 0)
			b.aloneFor(4*sec, func(b *hb) { b.sendFail(0, 0, "f"); b.sendInfo(1, 0, "i"); b.invokeSend(2, 0, "o") })
		}, 0, false},
		{"too close to the run's first sample: the leader may not have heard of the shrink", nil, func(b *hb) {
			b.samples(0, sec, 1, 0, 1, 2, 3)
			b.samples(0, 750*time.Millisecond, 1, 0, 1)
			send(b)
			b.samples(0, 3*sec, 1, 0, 1)
		}, 0, false},
		{"too close to the run's end: the monitor may not have heard of an expansion", nil, func(b *hb) {
			b.samples(0, sec, 1, 0, 1, 2, 3)
			b.samples(0, 3*sec, 1, 0, 1)
			send(b)
			b.samples(0, 1250*time.Millisecond, 1, 0, 1)
			b.samples(0, sec, 1, 0, 1, 2, 3)
		}, 0, false},
		{"a shorter metadata lag lets the same ack count", func(c Config) Config { c.MetadataLagMs = 100; return c }, func(b *hb) {
			b.samples(0, sec, 1, 0, 1, 2, 3)
			b.samples(0, 750*time.Millisecond, 1, 0, 1)
			send(b)
			b.samples(0, 3*sec, 1, 0, 1)
		}, 1, false},
		{"no sample before the send", nil, func(b *hb) {
			send(b)
			b.samples(0, 4*sec, 1, 0, 1)
		}, 0, true},
		{"no sample after the send", nil, func(b *hb) {
			b.samples(0, 4*sec, 1, 0, 1)
			send(b)
		}, 0, false},
		{"a gap in the samples longer than MaxSampleGap", nil, func(b *hb) {
			b.samples(0, 2*sec, 1, 0, 1)
			b.wait(600 * time.Millisecond)
			send(b)
			b.wait(600 * time.Millisecond)
			b.samples(0, 2*sec, 1, 0, 1)
		}, 0, false},
		{"a gap no longer than MaxSampleGap", nil, func(b *hb) {
			b.samples(0, 2*sec, 1, 0, 1)
			b.wait(300 * time.Millisecond)
			send(b)
			b.wait(300 * time.Millisecond)
			b.samples(0, 2*sec, 1, 0, 1)
		}, 1, false},
		{"a sample that failed", nil, func(b *hb) {
			b.samples(0, 2*sec, 1, 0, 1)
			b.add(history.MonitorProcess, history.Invoke, history.Monitor, &history.Value{Topic: topic}, "")
			b.add(history.MonitorProcess, history.Fail, history.Monitor, &history.Value{Topic: topic}, "REQUEST_TIMED_OUT")
			b.wait(250 * time.Millisecond)
			send(b)
			b.samples(0, 2*sec, 1, 0, 1)
		}, 0, false},
		{"a sample that never completed", nil, func(b *hb) {
			b.samples(0, 2*sec, 1, 0, 1)
			b.add(history.MonitorProcess, history.Invoke, history.Monitor, &history.Value{Topic: topic}, "")
			b.wait(250 * time.Millisecond)
			send(b)
			b.samples(0, 2*sec, 1, 0, 1)
		}, 0, false},
		{"a sample without a leader", nil, func(b *hb) {
			b.samples(0, 2*sec, 1, 0, 1)
			b.monitor(0, -1, 1, 1)
			send(b)
			b.samples(0, 2*sec, 1, 0, 1)
		}, 0, false},
		{"a sample without a leader epoch", nil, func(b *hb) {
			b.samples(0, 2*sec, 1, 0, 1)
			b.add(history.MonitorProcess, history.Invoke, history.Monitor, &history.Value{Topic: topic}, "")
			b.add(history.MonitorProcess, history.OK, history.Monitor, &history.Value{Topic: topic, Sample: &history.Sample{Leader: history.Int32(1), ISR: []int32{1}}}, "")
			send(b)
			b.samples(0, 2*sec, 1, 0, 1)
		}, 0, false},
		{"the ISR back at the minimum in the middle", nil, func(b *hb) {
			b.samples(0, 2*sec, 1, 0, 1)
			send(b)
			b.monitor(0, 1, 0, 1, 2)
			b.samples(0, 2*sec, 1, 0, 1)
		}, 0, false},
		{"a new leader epoch in the middle, same leader", nil, func(b *hb) {
			b.samples(0, 2*sec, 1, 0, 1)
			send(b)
			b.samples(0, 2*sec, 1, 1, 1)
		}, 0, false},
		{"a new leader in the middle", nil, func(b *hb) {
			b.samples(0, 2*sec, 1, 0, 1)
			send(b)
			b.samples(0, 2*sec, 2, 1, 2)
		}, 0, false},
		{"an ISR that lacks its leader is no view", nil, func(b *hb) {
			b.samples(0, 2*sec, 1, 0, 2)
			send(b)
			b.samples(0, 2*sec, 1, 0, 2)
		}, 0, false},
		{"another partition's samples say nothing of this one", nil, func(b *hb) {
			b.samples(1, sec, 1, 0, 1, 2, 3)
			b.samples(1, 2*sec, 1, 0, 1)
			send(b)
			b.samples(1, 2*sec, 1, 0, 1)
		}, 0, false},
		{"a run that begins at an election: no earlier sample of the epoch", nil, func(b *hb) {
			b.samples(0, 2*sec, 1, 1, 1)
			send(b)
			b.samples(0, 2*sec, 1, 1, 1)
		}, 0, false},
		{"a run that begins at an election: the epoch before had the minimum", nil, func(b *hb) {
			b.samples(0, sec, 2, 0, 2, 1)
			b.samples(0, 2*sec, 1, 1, 1)
			send(b)
			b.samples(0, 2*sec, 1, 1, 1)
		}, 0, true},
		{"the epoch was seen at the minimum before a failed sample", nil, func(b *hb) {
			b.add(history.MonitorProcess, history.Invoke, history.Monitor, &history.Value{Topic: topic}, "")
			b.add(history.MonitorProcess, history.Fail, history.Monitor, &history.Value{Topic: topic}, "REQUEST_TIMED_OUT")
			b.wait(250 * time.Millisecond)
			b.samples(0, 2*sec, 1, 0, 1)
			send(b)
			b.samples(0, 2*sec, 1, 0, 1)
		}, 1, false},
		{"the epoch was seen below the minimum only, before a failed sample", nil, func(b *hb) {
			b.samples(0, sec, 1, 0, 1)
			b.add(history.MonitorProcess, history.Invoke, history.Monitor, &history.Value{Topic: topic}, "")
			b.add(history.MonitorProcess, history.Fail, history.Monitor, &history.Value{Topic: topic}, "REQUEST_TIMED_OUT")
			b.wait(250 * time.Millisecond)
			b.samples(0, 2*sec, 1, 0, 1)
			send(b)
			b.samples(0, 2*sec, 1, 0, 1)
		}, 0, true},
		{"the leader refused a send in the run: it was enforcing the minimum", nil, func(b *hb) {
			b.samples(0, 1500*time.Millisecond, 1, 0, 1)
			b.sendFail(1, 0, "refused")
			b.samples(0, 500*time.Millisecond, 1, 0, 1)
			send(b)
			b.samples(0, 2*sec, 1, 0, 1)
		}, 0, false},
		{"the leader refused a send after the ack, in the run", nil, func(b *hb) {
			b.samples(0, 2*sec, 1, 0, 1)
			send(b)
			b.samples(0, 1500*time.Millisecond, 1, 0, 1)
			b.invokeSend(1, 0, "late")
			b.doneSend(1, 0, "late", history.Info, 0)
			b.ops[len(b.ops)-1].Error = "NOT_ENOUGH_REPLICAS_AFTER_APPEND"
			b.samples(0, sec, 1, 0, 1)
		}, 0, false},
		{"the leader refused a send of another partition", nil, func(b *hb) {
			b.samples(0, 2*sec, 1, 0, 1)
			b.sendFail(1, 1, "other")
			send(b)
			b.samples(0, 2*sec, 1, 0, 1)
		}, 1, false},
		{"a refusal more than the lag before the run", nil, func(b *hb) {
			b.send(2, 0, "early", 5)
			b.sendFail(1, 0, "refused")
			b.samples(0, 1100*time.Millisecond, 1, 0, 1, 2)
			b.samples(0, 2*sec, 1, 0, 1)
			send(b)
			b.samples(0, 2*sec, 1, 0, 1)
		}, 1, false},
		{"a send that failed otherwise is no refusal", nil, func(b *hb) {
			b.samples(0, 2*sec, 1, 0, 1)
			b.invokeSend(1, 0, "gone")
			b.add(1, history.Fail, history.Send, &history.Value{Topic: topic, Value: "gone"}, "UNKNOWN_TOPIC_OR_PARTITION")
			send(b)
			b.samples(0, 2*sec, 1, 0, 1)
		}, 1, false},
		{"min.insync.replicas=3: an ISR of two is below", func(c Config) Config { c.MinInsyncReplicas = 3; return c }, func(b *hb) {
			b.samples(0, 2*sec, 1, 0, 1, 2)
			send(b)
			b.samples(0, 2*sec, 1, 0, 2, 1)
		}, 1, false},
		{"min.insync.replicas=3: an ISR shrinking from two to one is below throughout", func(c Config) Config { c.MinInsyncReplicas = 3; return c }, func(b *hb) {
			b.samples(0, 2*sec, 1, 0, 1, 2)
			send(b)
			b.samples(0, 2*sec, 1, 0, 1)
		}, 1, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := &hb{}
			if !c.bare {
				b.samples(0, sec, 1, 0, 1, 2, 3)
			}
			c.build(b)
			cfg := strict
			if c.cfg != nil {
				cfg = c.cfg(cfg)
			}
			r := AckBelowMinISR(NewHistory(b.ops, cfg))
			if r.Count != c.count || r.Forbidden != c.count {
				t.Fatalf("count %d (forbidden %d), want %d: %s %v", r.Count, r.Forbidden, c.count, r.Valid, r.Details)
			}
			want := Valid
			if c.count > 0 {
				want = Invalid
			}
			if r.Valid != want {
				t.Errorf("valid %s, want %s (%s)", r.Valid, want, r.NotChecked)
			}
		})
	}
}

// TestAckBelowMinISRBoundary: both margins are strict: a send that begins
// exactly the lag after the first sample completed, or ends exactly the
// lag before the last one's predecessor did, is not counted.
func TestAckBelowMinISRBoundary(t *testing.T) {
	lag := int64(DefaultMetadataLag)
	for _, c := range []struct {
		name       string
		ti, td     int64 // relative to the first sample's completion
		predOfLast int64 // completion of the last sample's predecessor, relative
		count      int
	}{
		{"inside", lag + 1, lag + 2, 2*lag + 3, 1},
		{"invoked exactly the lag after", lag, lag + 2, 2*lag + 3, 0},
		{"completed exactly the lag before", lag + 1, lag + 2, 2*lag + 2, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			const t0 = int64(time.Second)
			var ops []history.Op
			op := func(p int, typ history.Type, f string, at int64, v *history.Value) {
				ops = append(ops, history.Op{Time: t0 + at, Process: p, Type: typ, F: f, Value: v})
			}
			sample := func(inv, done int64) {
				op(history.MonitorProcess, history.Invoke, history.Monitor, inv, &history.Value{Topic: topic})
				op(history.MonitorProcess, history.OK, history.Monitor, done, &history.Value{Topic: topic,
					Sample: &history.Sample{Leader: history.Int32(1), Epoch: history.Int32(0), ISR: []int32{1}}})
			}
			op(0, history.Invoke, history.Send, c.ti, &history.Value{Topic: topic, Value: "v"})
			op(0, history.OK, history.Send, c.td, &history.Value{Topic: topic, Value: "v", Offset: history.Int64(0)})
			// Samples every quarter of the lag from the first (done at
			// 0) to the last one's predecessor, then the last.
			op(history.MonitorProcess, history.Invoke, history.Monitor, -lag/4-1, &history.Value{Topic: topic})
			op(history.MonitorProcess, history.OK, history.Monitor, -lag/4, &history.Value{Topic: topic,
				Sample: &history.Sample{Leader: history.Int32(1), Epoch: history.Int32(0), ISR: []int32{1, 2}}})
			sample(-1, 0)
			for at := lag / 4; at < c.predOfLast; at += lag / 4 {
				sample(at-1, at)
			}
			sample(c.predOfLast-1, c.predOfLast)
			sample(c.predOfLast+1, c.predOfLast+2)
			slices.SortStableFunc(ops, func(a, b history.Op) int { return cmpInt(a.Time, b.Time) })
			for i := range ops {
				ops[i].Index = int64(i)
			}
			r := AckBelowMinISR(NewHistory(ops, strict))
			if r.Count != c.count {
				t.Fatalf("count %d, want %d: %v", r.Count, c.count, r.Details)
			}
		})
	}
}

// TestAckBelowMinISRNotChecked: the check says why it judged nothing, and
// only a missing check the model forbids leaves the verdict open.
func TestAckBelowMinISRNotChecked(t *testing.T) {
	withSamples := &hb{}
	withSamples.aloneFor(4*time.Second, func(b *hb) { b.send(0, 0, "v", 0) })
	noSamples := &hb{}
	noSamples.send(0, 0, "v", 0)
	noAcks := &hb{}
	noAcks.aloneFor(4*time.Second, func(b *hb) { b.sendFail(0, 0, "v") })
	for _, c := range []struct {
		name     string
		ops      []history.Op
		cfg      Config
		why      string
		expected bool
	}{
		{"acks=1", withSamples.ops, Config{Acks: 1, MinInsyncReplicas: 2, ReplicationFactor: 3, MaxInFlight: 1}, "acks=1: min.insync.replicas binds only acks=-1 writes", true},
		{"acks=0", withSamples.ops, Config{Acks: 0, MinInsyncReplicas: 1, ReplicationFactor: 3, MaxInFlight: 1}, "acks=0: min.insync.replicas binds only acks=-1 writes", true},
		{"min.insync.replicas=1", withSamples.ops, Config{Acks: -1, MinInsyncReplicas: 1, ReplicationFactor: 3, MaxInFlight: 1}, "min.insync.replicas=1: an ISR always holds its leader, so it is never below", true},
		{"no samples", noSamples.ops, strict, "the history has no monitor samples (a partition's leader, leader epoch and ISR) to hold the acknowledgements against", false},
		{"no acknowledgement", noAcks.ops, strict, "no send was acknowledged", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := AckBelowMinISR(NewHistory(c.ops, c.cfg))
			if r.Valid != Unknown || r.NotChecked != c.why || r.Expected != c.expected || r.Count != 0 {
				t.Fatalf("%+v", r)
			}
		})
	}
}

// TestAckBelowMinISRPermission: forbidden wherever acks=-1 and the minimum
// is above one, under any election and faults; permitted elsewhere.
func TestAckBelowMinISRPermission(t *testing.T) {
	for _, c := range []struct {
		cfg       Config
		permitted bool
	}{
		{Config{Acks: -1, MinInsyncReplicas: 2}, false},
		{Config{Acks: -1, MinInsyncReplicas: 2, Election: "unclean"}, false},
		{Config{Acks: -1, MinInsyncReplicas: 2, LoseUnsynced: true, Declared: []FaultRun{{Kind: "kill-all", KilledBrokers: 3}}}, false},
		{Config{Acks: -1, MinInsyncReplicas: 2, ClientRetries: true, MaxInFlight: 5}, false},
		{Config{Acks: -1, MinInsyncReplicas: 1}, true},
		{Config{Acks: 1, MinInsyncReplicas: 2}, true},
		{Config{Acks: 0, MinInsyncReplicas: 2}, true},
	} {
		p := Permitted(c.cfg)[AckBelowMinISRName]
		if p.Permitted != c.permitted || p.All != c.permitted || p.Why == "" {
			t.Errorf("%+v: %+v", c.cfg, p)
		}
	}
	bad := strict
	bad.MetadataLagMs = -1
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "metadata lag") {
		t.Errorf("a negative metadata lag: %v", err)
	}
}

// TestAckBelowMinISRManyInstances: every instance is counted; a few are
// described.
func TestAckBelowMinISRManyInstances(t *testing.T) {
	b := &hb{}
	b.aloneFor(4*time.Second, func(b *hb) {
		for i := range 25 {
			b.send(i%3, 0, "v"+strconv.Itoa(i), int64(i))
		}
	})
	r := AckBelowMinISR(NewHistory(b.ops, strict))
	if r.Count != 25 || r.Forbidden != 25 || len(r.Details) != MaxExamples || len(r.Examples) > MaxExamples {
		t.Fatalf("count %d forbidden %d, %d details, %d examples", r.Count, r.Forbidden, len(r.Details), len(r.Examples))
	}
}

// TestShrankInEpoch: the one pass says for each sample what a look back
// from it says, on random samples (views and not, few leaders and
// epochs, ISRs around the minimum).
func TestShrankInEpoch(t *testing.T) {
	h := &History{}
	lookBack := func(ss []sample, first int, minISR int32) bool {
		at := &ss[first]
		for k := first - 1; k >= 0; k-- {
			s := &ss[k]
			switch {
			case !s.view:
				continue
			case s.leader != at.leader || s.epoch != at.epoch:
				return false
			case int32(len(h.sampleISR(s))) >= minISR:
				return true
			}
		}
		return false
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 3000 {
		ss := make([]sample, rng.IntN(12))
		for k := range ss {
			if rng.IntN(4) > 0 {
				ss[k] = sample{view: true, leader: int32(rng.IntN(2)), epoch: int32(rng.IntN(2)), isr: h.lists.ID([]int32{1, 2, 3}[:rng.IntN(4)])}
			}
		}
		var tab table[sample]
		for _, s := range ss {
			tab.add(s)
		}
		got := shrankInEpoch(h, &tab, 2)
		for k := range ss {
			if want := lookBack(ss, k, 2); got[k] != want {
				t.Fatalf("sample %d of %+v: %v, want %v", k, ss, got[k], want)
			}
		}
	}
}
