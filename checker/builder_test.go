package checker

import (
	"os"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/internal/offheap"
)

// hb builds histories tersely. Every op gets the next index and a time 10
// ns after the previous one, so ops written in sequence do not overlap
// unless a test opens several (Invoke) before completing them.
type hb struct {
	ops []history.Op
	t   int64
}

const topic = "t"

func (b *hb) add(p int, typ history.Type, f string, v *history.Value, errText string) int64 {
	b.t += 10
	i := int64(len(b.ops))
	b.ops = append(b.ops, history.Op{Index: i, Time: b.t, Process: p, Type: typ, F: f, Value: v, Error: errText})
	return i
}

// invoke opens an op; done completes it. Together they write concurrent
// operations.
func (b *hb) invokeSend(p int, part int32, val string) int64 {
	return b.add(p, history.Invoke, history.Send, &history.Value{Topic: topic, Partition: part, Value: val}, "")
}

func (b *hb) doneSend(p int, part int32, val string, typ history.Type, off int64) int64 {
	v := &history.Value{Topic: topic, Partition: part, Value: val}
	errText := ""
	switch typ {
	case history.OK:
		v.Offset = history.Int64(off)
	case history.Fail:
		errText = "NOT_ENOUGH_REPLICAS"
	case history.Info:
		errText = "REQUEST_TIMED_OUT"
	}
	return b.add(p, typ, history.Send, v, errText)
}

// send writes an ok send of val at off and returns the completion index.
func (b *hb) send(p int, part int32, val string, off int64) int64 {
	b.invokeSend(p, part, val)
	return b.doneSend(p, part, val, history.OK, off)
}

func (b *hb) sendInfo(p int, part int32, val string) int64 {
	b.invokeSend(p, part, val)
	return b.doneSend(p, part, val, history.Info, 0)
}

func (b *hb) sendFail(p int, part int32, val string) int64 {
	b.invokeSend(p, part, val)
	return b.doneSend(p, part, val, history.Fail, 0)
}

// recs parses "0=a 1=b" into records.
func recs(s string) []history.Record {
	var out []history.Record
	for _, f := range strings.Fields(s) {
		off, val, _ := strings.Cut(f, "=")
		o, err := strconv.ParseInt(off, 10, 64)
		if err != nil {
			panic(err)
		}
		out = append(out, history.Record{Offset: o, Value: val})
	}
	return out
}

func (b *hb) invokeRead(p int, f string, part int32, from int64) int64 {
	v := &history.Value{Topic: topic, Partition: part}
	if f == history.Poll {
		v.From = history.Int64(from)
	}
	return b.add(p, history.Invoke, f, v, "")
}

func (b *hb) doneRead(p int, f string, part int32, from, hw int64, rs string) int64 {
	v := &history.Value{Topic: topic, Partition: part, Records: recs(rs), HW: history.Int64(hw)}
	if f == history.Poll {
		v.From = history.Int64(from)
	}
	return b.add(p, history.OK, f, v, "")
}

// poll writes an ok poll from from returning rs ("0=a 1=b") with hw.
func (b *hb) poll(p int, part int32, from, hw int64, rs string) int64 {
	b.invokeRead(p, history.Poll, part, from)
	return b.doneRead(p, history.Poll, part, from, hw, rs)
}

// final writes an ok final read of part by process 99.
func (b *hb) final(part int32, hw int64, rs string) int64 {
	b.invokeRead(99, history.FinalRead, part, 0)
	return b.doneRead(99, history.FinalRead, part, 0, hw, rs)
}

// replica writes an ok replica read of broker's log by process 98.
func (b *hb) replica(part int32, broker int32, hw int64, rs string) int64 {
	b.add(98, history.Invoke, history.ReplicaRead, &history.Value{Topic: topic, Partition: part, Broker: history.Int32(broker)}, "")
	return b.add(98, history.OK, history.ReplicaRead, &history.Value{Topic: topic, Partition: part, Broker: history.Int32(broker), Records: recs(rs), HW: history.Int64(hw)}, "")
}

func (b *hb) invokeEnd(p int, part int32) int64 {
	return b.add(p, history.Invoke, history.EndOffset, &history.Value{Topic: topic, Partition: part}, "")
}

func (b *hb) doneEnd(p int, part int32, off int64) int64 {
	return b.add(p, history.OK, history.EndOffset, &history.Value{Topic: topic, Partition: part, Offset: history.Int64(off)}, "")
}

// endOffset writes an ok end-offset read returning off.
func (b *hb) endOffset(p int, part int32, off int64) int64 {
	b.invokeEnd(p, part)
	return b.doneEnd(p, part, off)
}

func (b *hb) nemesis(f, fault string) int64 {
	return b.add(history.NemesisProcess, history.Info, f, &history.Value{FaultInfo: &history.FaultInfo{Fault: fault, Targets: []string{"broker-1"}}}, "")
}

// monitor writes an ok monitor sample of part: its leader, leader epoch
// and ISR (replicas 1, 2 and 3), and returns the completion's index.
func (b *hb) monitor(part int32, leader, epoch int32, isr ...int32) int64 {
	b.add(history.MonitorProcess, history.Invoke, history.Monitor, &history.Value{Topic: topic, Partition: part}, "")
	return b.add(history.MonitorProcess, history.OK, history.Monitor, &history.Value{Topic: topic, Partition: part,
		Sample: &history.Sample{Leader: history.Int32(leader), Epoch: history.Int32(epoch), ISR: isr, Replicas: []int32{1, 2, 3}}}, "")
}

// healthy writes one sample of each of parts with the whole ISR, so that
// ack-below-min-isr has samples to judge by.
func (b *hb) healthy(parts ...int32) {
	for _, p := range parts {
		b.monitor(p, 1, 0, 1, 2, 3)
	}
}

// wait moves the clock on by d.
func (b *hb) wait(d time.Duration) { b.t += int64(d) }

// strict is the configuration with the strongest promise: acks=-1,
// min.insync.replicas=2, clean election, no faults.
var strict = Config{Acks: -1, MinInsyncReplicas: 2, ReplicationFactor: 3, Election: "clean", MaxInFlight: 1}

// rssFile is the process's file-backed resident memory, from
// /proc/self/status.
func rssFile(t *testing.T) int64 {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if kb, ok := strings.CutPrefix(line, "RssFile:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(kb, "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n << 10
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}

// TestReleaserGivesBack: a pass's releaser gives back the pages of the
// index's arena and the pass's scratch arena once every releaseEvery
// entries, not before; and one for an index in the heap gives back
// nothing, and costs nothing.
func TestReleaserGivesBack(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/status")
	}
	h := NewBuilder(strict).h
	if h.releaser(nil) != nil {
		t.Fatal("an index in the heap has a releaser")
	}
	var none *releaser
	none.passed(releaseEvery)
	a, err := offheap.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if a.Err() != nil {
		t.Skipf("no arena here: %v", a.Err())
	}
	h.arena = a
	scratch := a.Sibling()
	defer scratch.Close()
	const size = 24 << 20 // each: within an arena's first 64 MB
	fill := func(a *offheap.Arena) {
		for i, l := 0, offheap.Make[byte](a, size); i < len(l); i += 4096 {
			l[i] = 1
		}
	}
	before := rssFile(t)
	fill(a)
	fill(scratch)
	r := h.releaser(scratch)
	r.passed(releaseEvery - 1)
	if got := rssFile(t) - before; got < 2*size*9/10 {
		t.Fatalf("given back before releaseEvery: %d MB of %d mapped", got>>20, 2*size>>20)
	}
	r.passed(1)
	if got := rssFile(t) - before; got > size/5 {
		t.Fatalf("%d MB still mapped after releaseEvery", got>>20)
	}
}

// TestAddRecordsTakenOrGivenBack: records given ahead of a client's ok
// read are its records in the index, the values not seen before interned
// in the order read; those given ahead of any other operation (here the
// nemesis's) are given back to it as records, as it would have held
// them, and none are left for the operation after.
func TestAddRecordsTakenOrGivenBack(t *testing.T) {
	k := history.Key{Topic: "t", Partition: 0}
	b := NewBuilder(Config{})
	add := func(op history.Op) { b.Add(&op) }
	add(history.Op{Index: 0, Process: 0, Type: history.Invoke, F: history.Send, Value: &history.Value{Topic: "t", Value: "a"}})
	add(history.Op{Index: 1, Process: 0, Type: history.OK, F: history.Send, Value: &history.Value{Topic: "t", Value: "a", Offset: history.Int64(0)}})
	b.AddRecords(k, true, []history.Record{{Offset: 0, Value: "a"}, {Offset: 1, Value: "b"}})
	b.AddRecords(k, true, []history.Record{{Offset: 2, Value: "c"}})
	add(history.Op{Index: 2, Process: history.NemesisProcess, Type: history.Info, F: "kill", Value: &history.Value{}})
	add(history.Op{Index: 3, Process: 1, Type: history.Invoke, F: history.FinalRead, Value: &history.Value{Topic: "t"}})
	b.AddRecords(k, false, []history.Record{{Offset: 0, Value: "a"}, {Offset: 1, Value: "c"}})
	add(history.Op{Index: 4, Process: 1, Type: history.OK, F: history.FinalRead, Value: &history.Value{Topic: "t", HW: history.Int64(2)}})
	add(history.Op{Index: 5, Process: history.NemesisProcess, Type: history.Info, F: "kill", Value: &history.Value{}})
	add(history.Op{Index: 6, Process: 1, Type: history.Invoke, F: history.FinalRead, Value: &history.Value{Topic: "t"}})
	add(history.Op{Index: 7, Process: 1, Type: history.OK, F: history.FinalRead, Value: &history.Value{Topic: "t", HW: history.Int64(2)}})
	h := b.History()
	want := []history.Record{{Offset: 0, Value: "a"}, {Offset: 1, Value: "b"}, {Offset: 2, Value: "c"}}
	if got := h.ops.op(2).Value.Records; !reflect.DeepEqual(got, want) {
		t.Fatalf("the nemesis's op holds %v, want %v", got, want)
	}
	if h.finals.len() != 2 {
		t.Fatalf("%d final reads", h.finals.len())
	}
	fr := h.finals.at(0)
	got, src := fr.recs, h.recsOf(fr.part)
	if got.len() != 2 || h.str(got.at(src, 0)) != "a" || h.str(got.at(src, 1)) != "c" {
		t.Fatalf("the final read holds %d records", got.len())
	}
	// "a" was sent first, "c" only read: their ids are in that order.
	if a, c := got.at(src, 0).vid, got.at(src, 1).vid; a != 0 || c != 1 {
		t.Fatalf("ids a=%d c=%d, want 0 and 1", a, c)
	}
	if rs := h.ops.op(5).Value.Records; len(rs) != 0 {
		t.Fatalf("the nemesis's op after the final read holds %v", rs)
	}
	if n := h.finals.at(1).recs.len(); n != 0 {
		t.Fatalf("the second final read holds %d records, given to the first", n)
	}
}

// TestLinearizabilityGivesBack: with the index in a file, linearizability
// gives back the index's pages as it passes its operations, not only at
// each partition: a pass that stopped giving back would hold a long run's
// partition mapped whole, which only the RSS of a long history shows.
func TestLinearizabilityGivesBack(t *testing.T) {
	defer func(n int) { releaseEvery = n }(releaseEvery)
	ops := synth(synthConfig{ops: 4000, producers: 4, consumers: 2, partitions: 2, endEvery: 5, seed: 3})
	gaveBack := func(every int) int {
		releaseEvery = every
		b := NewBuilder(strict)
		if err := b.InFile(t.TempDir()); err != nil {
			t.Fatal(err)
		}
		for i := range ops {
			op := ops[i]
			b.Add(&op)
		}
		h := b.History()
		defer h.Close()
		if !h.HeldInFile() {
			t.Skipf("no index in a file here: %v", h.InFileErr())
		}
		before := h.gaveBack
		Linearizability(h, Options{})
		return h.gaveBack - before
	}
	atPartitions, asItGoes := gaveBack(1<<30), gaveBack(50)
	if atPartitions < 2 || asItGoes < atPartitions+len(ops)/50/2 {
		t.Fatalf("given back %d times at each partition only, %d times every 50 entries, of %d operations", atPartitions, asItGoes, len(ops))
	}
}
