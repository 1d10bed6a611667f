package report

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/results"
)

// synthRun simulates a run of about n operations the way chaos run
// records one: five producers at acks=1 over three partitions, one
// consumer per partition with end-offset reads, monitor samples every
// 250 ms, and fault windows alternating partition-leader (the leader of
// partition 0 cut off: what it acknowledges meanwhile is lost when a new
// leader truncates it) and kill (broker 2, leader of partition 2, which
// is leaderless for a while). A final phase reads every partition and
// every replica. The history is plausible, not exact: it is for reports.
func synthRun(n int, seed uint64) ([]history.Op, results.TestConfig) {
	rng := rand.New(rand.NewPCG(seed, 1))
	const parts = 3
	// About 1,560 operations a second: sends 1,150, polls and end
	// offsets 300, monitor 24, less while faults slow the producers.
	d := (time.Duration(float64(n)/1555*1e9) + time.Second).Round(time.Second)
	sec := func(s float64) int64 { return int64(s * 1e9) }
	var sched results.Schedule
	for i, t := 0, 4.0; sec(t+8) < int64(d); i, t = i+1, t+18 {
		f := "partition-leader"
		if i%2 == 1 {
			f = "kill"
		}
		sched = append(sched, results.PlannedFault{Fault: f, Start: time.Duration(sec(t)), End: time.Duration(sec(t + 8))})
	}
	in := func(t int64, fault string, from, to float64) (results.PlannedFault, bool) {
		for _, ev := range sched {
			if ev.Fault == fault && t >= int64(ev.Start)+sec(from) && t < int64(ev.End)+sec(to) {
				return ev, true
			}
		}
		return results.PlannedFault{}, false
	}
	type ev struct {
		t   int64
		seq int
		op  history.Op
	}
	var evs []ev
	emit := func(t int64, op history.Op) {
		op.Time = t
		evs = append(evs, ev{t, len(evs), op})
	}
	lat := func(base float64) int64 { return int64(base * 1e6 * math.Exp(rng.NormFloat64()*0.6)) }

	// Sends.
	type send struct {
		proc      int
		part      int32
		val       string
		inv, done int64
		typ       history.Type
		err       string
		lost      bool
		offset    int64
		invIdx    int
	}
	var sends []*send
	nextProc := 5
	for p := range 5 {
		proc := p
		t := int64(rng.IntN(10_000_000))
		for seq := 0; t < int64(d); seq++ {
			s := &send{proc: proc, part: int32(rng.IntN(parts)), val: fmt.Sprintf("%d-%d", proc, seq), inv: t, typ: history.OK}
			_, killed := in(t, "kill", 0, 0)
			_, leaderless := in(t, "kill", 0, -5)
			switch {
			case s.part == 2 && leaderless:
				s.typ, s.err, s.done = history.Fail, "NOT_LEADER_OR_FOLLOWER", t+lat(0.5)
			case killed && rng.IntN(100) < 2:
				s.typ, s.err, s.done = history.Info, "REQUEST_TIMED_OUT", t+sec(5)
			default:
				s.done = t + lat(1.5)
			}
			if _, ok := in(s.done, "partition-leader", 0, -6.5); ok && s.part == 0 && s.typ == history.OK {
				s.lost = true
			}
			sends = append(sends, s)
			t = s.done + int64(rng.IntN(12_000_000))
			if s.typ == history.Info {
				proc, nextProc = nextProc, nextProc+1
			}
		}
	}
	// Offsets in completion order; a cut-off leader's acknowledgements
	// take offsets the new leader reuses.
	type rec struct {
		off    int64
		val    string
		commit int64
	}
	logs := make([][]rec, parts)
	slices.SortFunc(sends, func(a, b *send) int { return cmp.Compare(a.done, b.done) })
	var stale [parts]int64
	for _, s := range sends {
		if s.typ != history.OK {
			continue
		}
		l := &logs[s.part]
		if s.lost {
			if stale[s.part] < int64(len(*l)) {
				stale[s.part] = int64(len(*l))
			}
			s.offset = stale[s.part]
			stale[s.part]++
			continue
		}
		stale[s.part] = 0
		s.offset = int64(len(*l))
		*l = append(*l, rec{s.offset, s.val, s.done})
	}
	for _, s := range sends {
		v := &history.Value{Topic: "chaos", Partition: s.part, Value: s.val}
		emit(s.inv, history.Op{Process: s.proc, Type: history.Invoke, F: history.Send, Value: v})
		done := *v
		if s.typ == history.OK {
			done.Offset = history.Int64(s.offset)
		}
		emit(s.done, history.Op{Process: s.proc, Type: s.typ, F: history.Send, Value: &done, Error: s.err})
	}
	committed := func(p int, t int64) int64 {
		return int64(slices.IndexFunc(logs[p], func(r rec) bool { return r.commit > t }))
	}
	hwAt := func(p int, t int64) int64 {
		if c := committed(p, t); c >= 0 {
			return c
		}
		return int64(len(logs[p]))
	}
	// Consumers: one per partition, reading what was committed.
	for c := range parts {
		proc := 100 + c
		t := int64(rng.IntN(10_000_000))
		var from int64
		for i := 0; t < int64(d); i++ {
			done := t + lat(1)
			if i%5 == 4 {
				emit(t, history.Op{Process: proc, Type: history.Invoke, F: history.EndOffset, Value: &history.Value{Topic: "chaos", Partition: int32(c)}})
				emit(done, history.Op{Process: proc, Type: history.OK, F: history.EndOffset, Value: &history.Value{Topic: "chaos", Partition: int32(c), Offset: history.Int64(hwAt(c, t))}})
			} else {
				hw := hwAt(c, t)
				var rs []history.Record
				for o := from; o < hw && len(rs) < 50; o++ {
					rs = append(rs, history.Record{Offset: o, Value: logs[c][o].val})
				}
				emit(t, history.Op{Process: proc, Type: history.Invoke, F: history.Poll, Value: &history.Value{Topic: "chaos", Partition: int32(c), From: history.Int64(from)}})
				emit(done, history.Op{Process: proc, Type: history.OK, F: history.Poll, Value: &history.Value{Topic: "chaos", Partition: int32(c), From: history.Int64(from), Records: rs, HW: history.Int64(hw)}})
				from += int64(len(rs))
			}
			t = done + int64(10_000_000+rng.IntN(5_000_000))
		}
	}
	// The monitor.
	leaders := [parts]int32{1, 3, 2}
	for t := int64(100_000_000); t < int64(d); t += 250_000_000 {
		for p := range parts {
			leader, epoch, isr := leaders[p], int32(0), []int32{1, 2, 3}
			for _, e := range sched {
				if t >= int64(e.Start) {
					epoch++ // every window moves some leadership; close enough
				}
			}
			if e, ok := in(t, "partition-leader", 0, 2); ok && p == 0 {
				switch {
				case t < int64(e.Start)+sec(3):
				case t < int64(e.End):
					leader, isr = 2, []int32{2, 3}
				default:
					leader, isr = 2, []int32{2, 3, 1}
				}
			}
			if e, ok := in(t, "kill", 0, 2); ok {
				switch {
				case p == 2 && t < int64(e.Start)+sec(3):
					leader, isr = -1, []int32{2}
				case p == 2:
					leader, isr = 3, []int32{3, 1}
				case t > int64(e.Start)+sec(1.5) && t < int64(e.End)+sec(1):
					isr = slices.DeleteFunc(isr, func(b int32) bool { return b == 2 })
				}
			}
			// One sample asks about each partition in turn, as the
			// monitor does: an invoke, then its completion.
			at := t + int64(p)*3_000_000
			v := &history.Value{Topic: "chaos", Partition: int32(p)}
			emit(at, history.Op{Process: history.MonitorProcess, Type: history.Invoke, F: history.Monitor, Value: v})
			ok := &history.Value{Topic: "chaos", Partition: int32(p), Sample: &history.Sample{Leader: history.Int32(leader), Epoch: history.Int32(epoch), ISR: isr, Replicas: []int32{1, 2, 3}}}
			if leader >= 0 {
				ok.HW = history.Int64(hwAt(p, t))
			}
			emit(at+2_000_000, history.Op{Process: history.MonitorProcess, Type: history.OK, F: history.Monitor, Value: ok})
		}
	}
	// The nemesis, as nemesis.Run records it.
	for _, e := range sched {
		target := []string{"broker-1"}
		if e.Fault == "kill" {
			target = []string{"broker-2"}
		}
		for _, x := range []struct {
			f string
			t int64
		}{{"start-" + e.Fault, int64(e.Start)}, {"stop-" + e.Fault, int64(e.End)}} {
			v := &history.Value{FaultInfo: &history.FaultInfo{Fault: e.Fault, Targets: target}}
			emit(x.t, history.Op{Process: history.NemesisProcess, Type: history.Invoke, F: x.f, Value: v})
			emit(x.t+1000, history.Op{Process: history.NemesisProcess, Type: history.Info, F: x.f, Value: v})
		}
	}
	// The final phase: a heal, then final reads and replica reads.
	t := int64(d) + sec(5.5)
	emit(int64(d)+sec(5), history.Op{Process: history.NemesisProcess, Type: history.Invoke, F: "heal", Value: &history.Value{FaultInfo: &history.FaultInfo{Fault: "all"}}})
	emit(int64(d)+sec(5)+1000, history.Op{Process: history.NemesisProcess, Type: history.Info, F: "heal", Value: &history.Value{FaultInfo: &history.FaultInfo{Fault: "all"}}})
	for p := range parts {
		var rs []history.Record
		for _, r := range logs[p] {
			rs = append(rs, history.Record{Offset: r.off, Value: r.val})
		}
		hw := int64(len(rs))
		emit(t, history.Op{Process: 1000, Type: history.Invoke, F: history.FinalRead, Value: &history.Value{Topic: "chaos", Partition: int32(p)}})
		t += sec(0.05)
		emit(t, history.Op{Process: 1000, Type: history.OK, F: history.FinalRead, Value: &history.Value{Topic: "chaos", Partition: int32(p), Records: rs, HW: history.Int64(hw)}})
		for b := int32(1); b <= 3; b++ {
			emit(t, history.Op{Process: 1001, Type: history.Invoke, F: history.ReplicaRead, Value: &history.Value{Topic: "chaos", Partition: int32(p), Broker: history.Int32(b)}})
			t += sec(0.05)
			emit(t, history.Op{Process: 1001, Type: history.OK, F: history.ReplicaRead, Value: &history.Value{Topic: "chaos", Partition: int32(p), Broker: history.Int32(b), Records: rs, HW: history.Int64(hw)}})
		}
	}
	slices.SortFunc(evs, func(a, b ev) int { return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.seq, b.seq)) })
	ops := make([]history.Op, len(evs))
	for i, e := range evs {
		ops[i] = e.op
		ops[i].Index = int64(i)
	}
	tc := results.TestConfig{
		Name: "acks1_isr2_clean_partition-leader+kill", Seed: seed, Start: time.Date(2026, 11, 29, 17, 0, 0, 0, time.UTC),
		Command:  []string{"/usr/local/bin/chaos", "run", "--acks", "1", "--nemesis", "partition-leader,kill", "--time-limit", d.Round(time.Second).String()},
		Versions: map[string]string{"chaos": "v0.0.0-synthetic", "go": "go1.26.8"},
		Cluster: results.ClusterConfig{Runtime: "local", Nodes: 3, ReplicationFactor: 3, MinInsyncReplicas: 2, Election: "clean",
			SessionTimeoutMs: 3000, ReplicaLagTimeMaxMs: 2000, ReplicaLagMaxMessage: 4000, Fsync: "never"},
		Workload: results.Workload{Topic: "chaos", Partitions: parts, Acks: 1, Concurrency: 5, Consumers: parts, Rate: 400, TimeLimit: d,
			RequestTimeout: 5 * time.Second, EndOffsetEvery: 5},
		Nemesis: []string{"partition-leader", "kill"}, Schedule: sched, Converge: time.Minute,
		Convergence: &results.Convergence{Converged: true, Waited: 1200 * time.Millisecond},
	}
	return ops, tc
}

// synthReport is synthRun judged by the checkers (without porcupine, whose
// time is not the report's).
func synthReport(n int, seed uint64) RunData {
	ops, tc := synthRun(n, seed)
	res := checker.Check(ops, tc.CheckerConfig(), checker.Options{SkipLinearizability: true})
	return RunData{Dir: "store/synthetic/20261129T170000.000Z", Config: &tc, Results: res, Ops: ops}
}
