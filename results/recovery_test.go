package results

import (
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/internal/blocks"
	"github.com/chaos-isr/chaos/internal/intern"
	"github.com/chaos-isr/chaos/internal/offheap"
)

// hist builds a history from hand-made ops, numbering them in order.
type hist struct{ ops []history.Op }

func (h *hist) add(ms int64, proc int, typ history.Type, f string, v *history.Value, errs ...string) {
	op := history.Op{Index: int64(len(h.ops)), Time: ms * int64(time.Millisecond), Process: proc, Type: typ, F: f, Value: v}
	if len(errs) > 0 {
		op.Error = errs[0]
	}
	h.ops = append(h.ops, op)
}

func (h *hist) nemesis(ms int64, f, fault string, killed ...int32) {
	h.add(ms, history.NemesisProcess, history.Invoke, f, nil)
	h.add(ms, history.NemesisProcess, history.Info, f, &history.Value{FaultInfo: &history.FaultInfo{Fault: fault, KilledBrokers: killed}})
}

func (h *hist) send(proc int, from, to int64, typ history.Type) {
	h.add(from, proc, history.Invoke, history.Send, &history.Value{Topic: "t", Value: "v"})
	h.add(to, proc, typ, history.Send, &history.Value{Topic: "t", Value: "v"})
}

func (h *hist) sample(ms int64, part int32, leader, epoch int32, isr ...int32) {
	h.add(ms, history.MonitorProcess, history.OK, history.Monitor, &history.Value{Topic: "t", Partition: part,
		Sample: &history.Sample{Leader: history.Int32(leader), Epoch: history.Int32(epoch), ISR: isr, Replicas: []int32{1, 2, 3}}})
}

func dur(d *Duration) string {
	if d == nil {
		return "nil"
	}
	return time.Duration(*d).String()
}

func TestRecoveriesKill(t *testing.T) {
	var h hist
	h.sample(0, 0, 1, 1, 1, 2, 3)
	h.send(0, 10, 20, history.OK)
	h.nemesis(1000, "start-kill", "kill", 1)
	h.send(0, 1001, 3000, history.Info) // the leader died under it
	h.sample(1250, 0, -1, 1, 2, 3)
	h.send(1, 3000, 3500, history.Fail)
	h.send(2, 3500, 3600, history.OK)
	h.sample(3700, 0, 2, 2, 2, 3)
	h.nemesis(5000, "stop-kill", "kill")
	h.sample(5100, 0, 2, 2, 2, 3)
	h.sample(6400, 0, 2, 2, 1, 2, 3)
	rs := Recoveries(h.ops)
	if len(rs) != 1 {
		t.Fatalf("%d windows, want 1: %+v", len(rs), rs)
	}
	w := rs[0]
	if w.Fault != "kill" || time.Duration(w.Start) != time.Second || dur(w.Stop) != "5s" {
		t.Errorf("window %+v", w)
	}
	if strings.Join(w.Bit, ",") != "kill,leader-change,isr-shrink,send-errors,stall" {
		t.Errorf("bit %v", w.Bit)
	}
	if dur(w.FirstAck) != "2.6s" || w.FirstAckUnobserved != "" {
		t.Errorf("first ack %s (%s), want 2.6s", dur(w.FirstAck), w.FirstAckUnobserved)
	}
	if dur(w.FullISR) != "1.4s" || w.FullISRUnobserved != "" {
		t.Errorf("full ISR %s (%s), want 1.4s", dur(w.FullISR), w.FullISRUnobserved)
	}
}

// A fault that changed nothing the history shows did not bite; its
// recovery is immediate.
func TestRecoveriesToothless(t *testing.T) {
	var h hist
	h.sample(0, 0, 1, 1, 1, 2, 3)
	h.sample(0, 1, 2, 1, 1, 2, 3)
	h.nemesis(1000, "start-pause", "pause")
	h.send(0, 1000, 1010, history.OK)
	h.sample(1200, 0, 1, 1, 1, 2, 3)
	h.sample(1200, 1, 2, 1, 1, 2, 3)
	h.nemesis(2000, "stop-pause", "pause")
	h.sample(2100, 0, 1, 1, 1, 2, 3)
	h.sample(2150, 1, 2, 1, 1, 2, 3)
	w := Recoveries(h.ops)[0]
	if len(w.Bit) != 0 || dur(w.FirstAck) != "10ms" || dur(w.FullISR) != "150ms" {
		t.Errorf("window %+v, first ack %s, full ISR %s", w, dur(w.FirstAck), dur(w.FullISR))
	}
}

// What was not observed says why rather than giving a number.
func TestRecoveriesUnobserved(t *testing.T) {
	// The run ends inside the window: no stop, no acknowledgement.
	var h hist
	h.send(0, 0, 5, history.OK)
	h.sample(0, 0, 1, 1, 1, 2, 3)
	h.nemesis(1000, "start-partition", "partition")
	h.send(0, 1000, 4000, history.Info)
	w := Recoveries(h.ops)[0]
	if w.Stop != nil || w.FirstAck != nil || !strings.Contains(w.FirstAckUnobserved, "workload ended") ||
		w.FullISR != nil || !strings.Contains(w.FullISRUnobserved, "never healed") {
		t.Errorf("open window %+v", w)
	}

	// No samples at all, and acks=0: nothing is acknowledged.
	var z hist
	z.nemesis(100, "start-kill", "kill", 2)
	z.send(0, 150, 150, history.Info)
	z.nemesis(900, "stop-kill", "kill")
	w = Recoveries(z.ops)[0]
	if !strings.Contains(w.FirstAckUnobserved, "acks=0") || !strings.Contains(w.FullISRUnobserved, "no monitor sample") ||
		strings.Join(w.Bit, ",") != "kill" {
		t.Errorf("acks=0 window %+v", w)
	}

	// The ISR comes back only after the next window started, and the
	// first acknowledgement too; the send that times out in the second
	// window is that window's error.
	var n hist
	n.send(0, 0, 5, history.OK)
	n.sample(0, 0, 1, 1, 1, 2, 3)
	n.nemesis(1000, "start-partition", "partition")
	n.send(0, 1000, 4000, history.Info)
	n.sample(1500, 0, 1, 1, 1, 2)
	n.nemesis(2000, "stop-partition", "partition")
	n.sample(2500, 0, 1, 1, 1, 2)
	n.nemesis(3000, "start-pause", "pause")
	n.sample(3500, 0, 1, 1, 1, 2, 3)
	n.send(1, 4000, 4100, history.OK)
	n.nemesis(5000, "stop-pause", "pause")
	n.sample(5100, 0, 1, 1, 1, 2, 3)
	rs := Recoveries(n.ops)
	if len(rs) != 2 {
		t.Fatalf("%d windows", len(rs))
	}
	if w := rs[0]; !strings.Contains(w.FullISRUnobserved, "next window") || !strings.Contains(w.FirstAckUnobserved, "next window") ||
		strings.Join(w.Bit, ",") != "isr-shrink" {
		t.Errorf("first window %+v", w)
	}
	if w := rs[1]; dur(w.FirstAck) != "1.1s" || dur(w.FullISR) != "100ms" || strings.Join(w.Bit, ",") != "send-errors,stall" {
		t.Errorf("second window %+v: first ack %s, full ISR %s", w, dur(w.FirstAck), dur(w.FullISR))
	}
}

// A start that reported an error is no window; a send invoked before
// the start says nothing of writing under the fault.
func TestRecoveriesFailedStartAndEarlySend(t *testing.T) {
	var h hist
	h.add(0, history.NemesisProcess, history.Info, "start-kill", &history.Value{FaultInfo: &history.FaultInfo{Fault: "kill"}}, "no leader")
	h.add(10, history.NemesisProcess, history.Info, "stop-kill", &history.Value{FaultInfo: &history.FaultInfo{Fault: "kill"}})
	h.add(900, 0, history.Invoke, history.Send, &history.Value{Topic: "t"})
	h.nemesis(1000, "start-slow", "slow")
	h.add(1001, 0, history.OK, history.Send, &history.Value{Topic: "t"})
	h.send(0, 1001, 1300, history.OK)
	rs := Recoveries(h.ops)
	if len(rs) != 1 || rs[0].Fault != "slow" || dur(rs[0].FirstAck) != "300ms" {
		t.Fatalf("%+v", rs)
	}
}

// results.json keeps the checker's fields at the top level, so that
// ReadResults reads what it always read, and adds the recovery.
func TestStoredResultsJSON(t *testing.T) {
	d := Duration(2 * time.Second)
	s := StoredResults{Results: &checker.Results{Valid: checker.Valid, Results: []checker.Result{{Name: "lost-write"}}},
		Recovery: []WindowRecovery{{Fault: "kill", FirstAck: &d, FullISRUnobserved: "no sample"}}}
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"valid":"true"`, `"results":[{"name":"lost-write"`, `"recovery":[{"fault":"kill","start":"0s","first_ack":"2s","full_isr_unobserved":"no sample"}]`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("%s lacks %s", data, want)
		}
	}
	dir := t.TempDir()
	r := &Run{Store: dir, Test: "t", Dir: dir}
	if err := r.WriteJSON(ResultsFile, s); err != nil {
		t.Fatal(err)
	}
	res, err := ReadResults(r.Path(ResultsFile))
	if err != nil || res.Valid != checker.Valid || len(res.Results) != 1 {
		t.Errorf("read back %+v, %v", res, err)
	}
	all, err := ReadStoredResults(r.Path(ResultsFile))
	if err != nil || len(all.Recovery) != 1 || dur(all.Recovery[0].FirstAck) != "2s" || all.Valid != checker.Valid || len(all.Results.Results) != 1 {
		t.Errorf("read back whole %+v, %v", all, err)
	}
	// A results.json from before the recovery reads with none.
	old, err := ReadStoredResults(filepath.Join("testdata", "stored", "results.json"))
	if err != nil || old.Recovery != nil || len(old.Results.Results) == 0 {
		t.Errorf("the stored results.json read as %+v, %v", old, err)
	}
}

func TestObserve(t *testing.T) {
	for _, c := range []struct {
		forbidden, permitted bool
		ran, bit             int
		known                bool
		want                 string
	}{
		{true, true, 3, 0, true, ObservedBroken},
		{false, true, 3, 0, true, ObservedPermitted},
		{false, false, 3, 1, true, ObservedKept},
		{false, false, 3, 0, false, ObservedKept}, // recovery unknown: started counts
		{false, false, 3, 0, true, ObservedToothless},
		{false, false, 0, 0, false, ObservedNoFaults},
	} {
		if got := ObserveCounts(c.forbidden, c.permitted, c.ran, c.bit, c.known); got != c.want {
			t.Errorf("%+v: %s", c, got)
		}
	}
	if Observe(nil, nil) != ObservedNone {
		t.Error("no results: want none")
	}
}

// TestFirstAcksAndSendErrors: the one-pass answers are those of looking
// at every send for every window, on random windows (equal starts among
// them) and sends (some completed before time 0).
func TestFirstAcksAndSendErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		var acks ackList
		var added []ack
		var errs blocks.List[int64]
		negative := rng.IntN(4) == 0
		for range rng.IntN(40) {
			inv := rng.Int64N(100)
			done := inv + rng.Int64N(30)
			if rng.IntN(8) == 0 {
				// Later than its latency's 32 bits reach.
				done += 1 << 33
			}
			if negative {
				// A foreign history's times, before 0.
				done -= 60
			}
			acks.Add(ack{invoked: inv, done: done})
			added = append(added, ack{invoked: inv, done: done})
			errs.Add(rng.Int64N(130))
		}
		starts := make([]int64, rng.IntN(8))
		stops := make([]int64, len(starts))
		for i := range starts {
			starts[i] = rng.Int64N(110)
			stops[i] = -1
			if rng.IntN(3) > 0 {
				stops[i] = starts[i] + rng.Int64N(20)
			}
		}
		if got := slices.Collect(acks.All()); !slices.Equal(got, added) {
			t.Fatalf("acknowledgements %v read back as %v", added, got)
		}
		firsts := firstAcks(&acks, starts)
		sorted := sortTimes(&errs)
		for i, s := range starts {
			want := int64(-1)
			for a := range acks.All() {
				if a.invoked >= s && (want < 0 || a.done < want) {
					want = a.done
				}
			}
			if firsts[i] != want {
				t.Fatalf("start %d of %v: first ack %d, want %d", s, starts, firsts[i], want)
			}
			in := false
			for e := range errs.All() {
				in = in || (e >= s && (stops[i] < 0 || e <= stops[i]))
			}
			if got := sorted.in(s, stops[i]); got != in {
				t.Fatalf("window %d-%d: a send error in it %v, want %v", s, stops[i], got, in)
			}
		}
	}
}

// TestSamplesFromWindowStart: a partition's samples in time order are
// found from where a window starts (and its first full ISR after a heal
// from a table); what that finds is what a scan of them all finds.
func TestSamplesFromWindowStart(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	a, err := offheap.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for i := range 2000 {
		var ss []sample
		var ls intern.Lists
		at := int64(0)
		for range rng.IntN(12) {
			at += rng.Int64N(4)
			isr := []int32{1, 2, 3}[:1+rng.IntN(3)]
			ss = append(ss, sample{at: at, leader: int32(rng.IntN(3)) - 1, epoch: int32(rng.IntN(2)),
				isr: ls.ID(isr), replicas: ls.ID([]int32{1, 2, 3}), full: len(isr) == 3})
		}
		start := rng.Int64N(at + 3)
		stop := int64(-1)
		if rng.IntN(3) > 0 {
			stop = start + rng.Int64N(8)
		}
		// Every other one in the arena's file.
		var l blocks.List[sample]
		in := a
		if i%2 == 0 {
			in = nil
		}
		l.In(in)
		for _, s := range ss {
			l.Add(s)
		}
		found := newPartSamples(&l, &ls, in)
		if !found.inOrder {
			t.Fatalf("%v: not in order", ss)
		}
		scanned := &partSamples{ss: &l, lists: &ls}
		l1, s1 := bit(found, start, stop)
		l2, s2 := bit(scanned, start, stop)
		if l1 != l2 || s1 != s2 {
			t.Fatalf("window %d-%d over %v: from its start %v %v, from the first %v %v", start, stop, ss, l1, s1, l2, s2)
		}
		d1, why1 := fullISRAfter([]*partSamples{found}, []string{"t-0"}, stop, -1)
		d2, why2 := fullISRAfter([]*partSamples{scanned}, []string{"t-0"}, stop, -1)
		if why1 != why2 || (d1 == nil) != (d2 == nil) || (d1 != nil && *d1 != *d2) {
			t.Fatalf("heal at %d over %v: from it %v %q, from the first %v %q", stop, ss, d1, why1, d2, why2)
		}
	}
}

// TestRecoveriesStreamed: the table made as a history streams past, from
// the first acknowledgement and send error after each place a window may
// start, is the table made from every acknowledgement and send error
// held; a history in time order is read once, and one out of order is
// read again (Again) to the same table.
func TestRecoveriesStreamed(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	faults := []string{"kill", "pause", "partition"}
	var readAgain, acked, erred int
	a, err := offheap.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for round := range 400 {
		var h hist
		disorder := round%3 == 0
		now := int64(0)
		inflight := map[int]int64{}
		open := map[string]bool{}
		for range 20 + rng.IntN(120) {
			now += rng.Int64N(3) // equal times too
			at := now
			if disorder && rng.IntN(6) == 0 {
				at -= rng.Int64N(40)
			}
			switch k := rng.IntN(10); {
			case k == 0:
				f := faults[rng.IntN(len(faults))]
				name := "start-" + f
				if open[f] {
					name = "stop-" + f
				}
				open[f] = !open[f]
				var errs []string
				if rng.IntN(6) == 0 {
					errs = []string{"refused"}
				}
				h.add(at, history.NemesisProcess, history.Invoke, name, nil)
				h.add(at, history.NemesisProcess, history.Info, name, &history.Value{FaultInfo: &history.FaultInfo{Fault: f}}, errs...)
			case k == 1:
				h.sample(at, int32(rng.IntN(2)), int32(rng.IntN(3))-1, int32(rng.IntN(2)), []int32{1, 2, 3}[:1+rng.IntN(3)]...)
			default:
				p := rng.IntN(4)
				if _, busy := inflight[p]; !busy {
					inflight[p] = at
					h.add(at, p, history.Invoke, history.Send, &history.Value{Topic: "t", Value: "v"})
					break
				}
				delete(inflight, p)
				typ := []history.Type{history.OK, history.OK, history.Fail, history.Info}[rng.IntN(4)]
				h.add(at, p, typ, history.Send, &history.Value{Topic: "t", Value: "v"})
			}
		}
		var once RecoveryReader
		if round%2 == 1 {
			// Its samples in a file: the same table.
			once.In(a)
		}
		for i := range h.ops {
			once.Add(&h.ops[i])
		}
		if again := once.Again(); again != nil {
			if !disorder {
				t.Fatalf("round %d: a history in time order is read again", round)
			}
			readAgain++
			// From a file, the history is read from it again.
			path := filepath.Join(t.TempDir(), "history.jsonl")
			w, err := history.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, op := range h.ops {
				if _, err := w.Append(op); err != nil {
					t.Fatal(err)
				}
			}
			w.Close()
			got, err := RecoveriesFile(path, &once)
			if err != nil {
				t.Fatal(err)
			}
			if want := Recoveries(h.ops); !slices.EqualFunc(got, want, func(a, b WindowRecovery) bool {
				aj, _ := json.Marshal(a)
				bj, _ := json.Marshal(b)
				return string(aj) == string(bj)
			}) {
				t.Fatalf("round %d: from the file %+v, want %+v", round, got, want)
			}
		}
		all := RecoveryReader{all: true}
		for i := range h.ops {
			all.Add(&h.ops[i])
		}
		want, got := all.Recoveries(), once.Recoveries()
		if once.Again() != nil {
			// Read again (checked above, from the file); the comparison
			// below is of the table made in one reading.
			got = Recoveries(h.ops)
		}
		if len(want) == 0 {
			continue
		}
		wj, _ := json.Marshal(want)
		gj, _ := json.Marshal(got)
		if string(wj) != string(gj) {
			t.Fatalf("round %d: streamed %s\nheld %s", round, gj, wj)
		}
		for _, w := range want {
			if w.FirstAck != nil {
				acked++
			}
			if slices.Contains(w.Bit, BitSendErrors) {
				erred++
			}
		}
	}
	if a.Mapped() == 0 {
		t.Fatal("the readers given the arena held no sample in its file")
	}
	if readAgain == 0 || acked < 100 || erred < 100 {
		t.Fatalf("too few cases: %d histories read again, %d windows acknowledged, %d with send errors", readAgain, acked, erred)
	}
}
