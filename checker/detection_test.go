package checker

import (
	"slices"
	"testing"

	"github.com/chaos-isr/chaos/history"
)

// monitorSample writes a monitor sample of partition 0 and returns its
// completion's index.
func monitorSample(b *hb) int64 {
	b.add(history.MonitorProcess, history.Invoke, history.Monitor, &history.Value{Topic: topic}, "")
	return b.add(history.MonitorProcess, history.OK, history.Monitor, &history.Value{Topic: topic,
		Sample: &history.Sample{Leader: history.Int32(1), Epoch: history.Int32(1), ISR: []int32{1}, Replicas: []int32{1, 2, 3}}}, "")
}

// TestFirstDetectionForbiddenLoss: under acks=-1 a lost acknowledged
// write is forbidden; its first detection is its acknowledgement, with
// its time and the client operations completed by then.
func TestFirstDetectionForbiddenLoss(t *testing.T) {
	b := &hb{}
	b.send(0, 0, "a", 0)
	monitorSample(b)
	lost := b.send(0, 0, "b", 1)
	b.send(0, 0, "c", 2)
	b.final(0, 3, "0=a 2=c")
	res := Check(b.ops, strict, Options{SkipLinearizability: true})
	if res.Valid != Invalid {
		t.Fatalf("verdict %s", res.Valid)
	}
	d, ok := FirstDetection(b.ops, res)
	// Two client sends completed by then; the monitor's sample is not a
	// client operation.
	want := Detection{Anomaly: LostWriteName, Op: lost, Time: b.ops[lost].Time, Ops: 2}
	if !ok || d != want {
		t.Fatalf("first detection %+v %v, want %+v", d, ok, want)
	}
}

// TestFirstDetectionSkipsPermitted: under acks=1 an unread acknowledged
// write that is lost is permitted, one a consumer read is not; the first
// detection is the forbidden one's, though the permitted loss came first.
// It pins what ForbiddenOps reads from a result that mixes the two: the
// forbidden instances' details first, each naming its operation.
func TestFirstDetectionSkipsPermitted(t *testing.T) {
	cfg := Config{Acks: 1, MinInsyncReplicas: 1, ReplicationFactor: 3, Election: "clean", MaxInFlight: 1,
		Faults: []string{"partition-leader"}, FaultsRecorded: true}
	b := &hb{}
	b.nemesis("start", "partition-leader")
	b.send(0, 0, "a", 0)
	permitted := b.send(0, 0, "b", 1)
	forbidden := b.send(0, 0, "c", 2)
	b.poll(10, 0, 2, 3, "2=c")
	b.nemesis("stop", "partition-leader")
	b.final(0, 3, "0=a")
	res := Check(b.ops, cfg, Options{SkipLinearizability: true})
	r, _ := res.Get(LostWriteName)
	if r.Count != 2 || r.Forbidden != 1 || !slices.Contains(r.Examples, permitted) {
		t.Fatalf("lost-write %+v", r)
	}
	if got := r.ForbiddenOps(); !slices.Equal(got, []int64{forbidden}) {
		t.Fatalf("forbidden ops %v, want [%d] (examples %v, details %q)", got, forbidden, r.Examples, r.Details)
	}
	d, ok := FirstDetection(b.ops, res)
	if !ok || d.Op != forbidden || d.Anomaly != LostWriteName || d.Ops != 3 {
		t.Fatalf("first detection %+v %v, want op %d", d, ok, forbidden)
	}
}

// TestFirstDetectionClientOpsOnly: operations of the nemesis and the
// monitor that a forbidden instance names are context, not the failure;
// an invoke stands for its completion; nothing forbidden, no detection.
func TestFirstDetectionClientOpsOnly(t *testing.T) {
	b := &hb{}
	mon := monitorSample(b)
	inv := b.invokeSend(0, 0, "a")
	b.send(1, 0, "x", 0)
	done := b.doneSend(0, 0, "a", history.OK, 1)
	res := &Results{Results: []Result{
		{Name: LostWriteName, Count: 1, Forbidden: 0, Examples: []int64{0}},
		{Name: GarbageReadName, Count: 1, Forbidden: 1, Examples: []int64{mon, inv}},
	}}
	d, ok := FirstDetection(b.ops, res)
	if !ok || d.Op != done || d.Anomaly != GarbageReadName || d.Time != b.ops[done].Time || d.Ops != 2 {
		t.Fatalf("first detection %+v %v, want the completion op %d", d, ok, done)
	}
	res.Results[1].Forbidden = 0
	if d, ok := FirstDetection(b.ops, res); ok {
		t.Fatalf("a detection without a forbidden instance: %+v", d)
	}
}

// TestDetectorPairing: an invoke an anomaly names is detected at its
// completion, so an operation completed earlier comes first; an invoke
// never completed is detected where it is; in a history that breaks the
// pairing rule every operation stands for itself.
func TestDetectorPairing(t *testing.T) {
	op := func(i int, p int, typ history.Type, f string) history.Op {
		return history.Op{Index: int64(i), Time: int64(10 * i), Process: p, Type: typ, F: f}
	}
	paired := []history.Op{
		op(0, 1, history.Invoke, history.Send),
		op(1, 2, history.Invoke, history.Poll),
		op(2, 2, history.OK, history.Poll),
		op(3, 1, history.OK, history.Send),
	}
	named := func(idx ...int64) *Results {
		return &Results{Results: []Result{{Name: LostWriteName, Count: len(idx), Forbidden: len(idx), Examples: idx}}}
	}
	for _, c := range []struct {
		name string
		ops  []history.Op
		res  *Results
		want Detection
	}{
		{"completed earlier wins", paired, named(0, 2), Detection{Anomaly: LostWriteName, Op: 2, Time: 20, Ops: 1}},
		{"invoke stands for its completion", paired, named(0), Detection{Anomaly: LostWriteName, Op: 3, Time: 30, Ops: 2}},
		{"never completed", paired[:3], named(0), Detection{Anomaly: LostWriteName, Op: 0, Time: 0, Ops: 0}},
		{"malformed", append(slices.Clone(paired), op(4, 3, history.OK, history.Send)), named(0, 2), Detection{Anomaly: LostWriteName, Op: 0, Time: 0, Ops: 0}},
	} {
		d, ok := FirstDetection(c.ops, c.res)
		if !ok || d != c.want {
			t.Errorf("%s: %+v %v, want %+v", c.name, d, ok, c.want)
		}
	}
}
