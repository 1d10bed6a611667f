package checker

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/chaos-isr/chaos/internal/heapmeter"
	"github.com/chaos-isr/chaos/internal/offheap"

	"github.com/chaos-isr/chaos/history"
)

// synthConfig shapes a synthetic history.
type synthConfig struct {
	ops        int // about this many operations
	producers  int
	consumers  int // each polls the partitions p with p % consumers == its slot
	partitions int
	endEvery   int // a consumer reads an end offset every endEvery operations
	// pollMax is the most records a poll returns (0: 8); 1 is a real
	// run's consumers, which keep up and get a record a poll.
	pollMax int64
	seed    uint64
}

// synth simulates a correct log: each operation takes effect at its
// completion, which lies inside its interval, so the history is
// linearizable and free of anomalies. About 1% of sends fail (not
// written) and 1% are unknown (half of those written anyway); an unknown
// send retires its process, like the workload does. It ends with a final
// read of every partition and three identical replica reads.
func synth(c synthConfig) []history.Op {
	rng := rand.New(rand.NewPCG(c.seed, 7))
	type actor struct {
		process int
		busy    bool
		part    int32
		value   string
		f       string
		next    int // consumer: which of its partitions to poll next
		n       int
	}
	logs := make([][]string, c.partitions)
	actors := make([]*actor, 0, c.producers+c.consumers)
	procs := 0
	for range c.producers + c.consumers {
		actors = append(actors, &actor{process: procs})
		procs++
	}
	pos := make(map[int64]int64) // consumer position per (process, partition)
	ops := make([]history.Op, 0, c.ops+8*c.partitions)
	var t int64
	emit := func(p int, typ history.Type, f string, v *history.Value, errText string) {
		t += 1 + rng.Int64N(2000)
		ops = append(ops, history.Op{Index: int64(len(ops)), Time: t, Process: p, Type: typ, F: f, Value: v, Error: errText})
	}
	seq := 0
	// The monitor samples every partition now and then: a healthy ISR.
	sample := func() {
		for p := range c.partitions {
			emit(history.MonitorProcess, history.Invoke, history.Monitor, &history.Value{Topic: topic, Partition: int32(p)}, "")
			emit(history.MonitorProcess, history.OK, history.Monitor, &history.Value{Topic: topic, Partition: int32(p),
				Sample: &history.Sample{Leader: history.Int32(1), Epoch: history.Int32(0), ISR: []int32{1, 2, 3}, Replicas: []int32{1, 2, 3}}}, "")
		}
	}
	for len(ops) < c.ops {
		if len(ops)%1000 == 0 {
			sample()
		}
		i := rng.IntN(len(actors))
		a := actors[i]
		producer := i < c.producers
		slot := i - c.producers
		if !a.busy {
			a.busy = true
			switch {
			case producer:
				a.f, a.part = history.Send, int32(rng.IntN(c.partitions))
				seq++
				a.value = fmt.Sprintf("%d-%d", a.process, seq)
				emit(a.process, history.Invoke, history.Send, &history.Value{Topic: topic, Partition: a.part, Value: a.value}, "")
			default:
				var mine []int32
				for p := slot % c.partitions; p < c.partitions; p += c.consumers {
					mine = append(mine, int32(p))
				}
				a.part = mine[a.next%len(mine)]
				a.next++
				a.n++
				if c.endEvery > 0 && a.n%c.endEvery == 0 {
					a.f = history.EndOffset
					emit(a.process, history.Invoke, history.EndOffset, &history.Value{Topic: topic, Partition: a.part}, "")
				} else {
					a.f = history.Poll
					from := pos[int64(a.process)<<32|int64(a.part)]
					emit(a.process, history.Invoke, history.Poll, &history.Value{Topic: topic, Partition: a.part, From: history.Int64(from)}, "")
				}
			}
			continue
		}
		a.busy = false
		log := logs[a.part]
		switch a.f {
		case history.Send:
			v := &history.Value{Topic: topic, Partition: a.part, Value: a.value}
			switch r := rng.IntN(200); {
			case r < 2:
				emit(a.process, history.Fail, history.Send, v, "NOT_ENOUGH_REPLICAS")
			case r < 4:
				if r == 3 {
					logs[a.part] = append(log, a.value)
				}
				emit(a.process, history.Info, history.Send, v, "REQUEST_TIMED_OUT")
				a.process = procs
				procs++
			default:
				logs[a.part] = append(log, a.value)
				v.Offset = history.Int64(int64(len(log)))
				emit(a.process, history.OK, history.Send, v, "")
			}
		case history.EndOffset:
			emit(a.process, history.OK, history.EndOffset, &history.Value{Topic: topic, Partition: a.part, Offset: history.Int64(int64(len(log)))}, "")
		case history.Poll:
			k := int64(a.process)<<32 | int64(a.part)
			from := pos[k]
			most := c.pollMax
			if most <= 0 {
				most = 8
			}
			n := min(int64(len(log))-from, 1+rng.Int64N(most))
			var rs []history.Record
			for o := from; o < from+n; o++ {
				rs = append(rs, history.Record{Offset: o, Value: log[o]})
			}
			pos[k] = from + max(n, 0)
			emit(a.process, history.OK, history.Poll, &history.Value{Topic: topic, Partition: a.part, From: history.Int64(from), Records: rs, HW: history.Int64(int64(len(log)))}, "")
		}
	}
	// Operations still open stay open, as when a test is cut short; the
	// final phase reads every partition and every replica.
	final := procs
	for p := range c.partitions {
		rs := make([]history.Record, len(logs[p]))
		for o, v := range logs[p] {
			rs[o] = history.Record{Offset: int64(o), Value: v}
		}
		hw := history.Int64(int64(len(rs)))
		emit(final, history.Invoke, history.FinalRead, &history.Value{Topic: topic, Partition: int32(p)}, "")
		emit(final, history.OK, history.FinalRead, &history.Value{Topic: topic, Partition: int32(p), Records: rs, HW: hw}, "")
		for br := int32(1); br <= 3; br++ {
			emit(final, history.Invoke, history.ReplicaRead, &history.Value{Topic: topic, Partition: int32(p), Broker: history.Int32(br)}, "")
			emit(final, history.OK, history.ReplicaRead, &history.Value{Topic: topic, Partition: int32(p), Broker: history.Int32(br), Records: rs, HW: hw}, "")
		}
	}
	return ops
}

var bigConfig = synthConfig{ops: 1_000_000, producers: 8, consumers: 4, partitions: 4, endEvery: 10, seed: 1}

var linConfig = synthConfig{ops: 10_000, producers: 5, consumers: 2, partitions: 1, endEvery: 5, seed: 2}

// bigOps caches bigHistory's operations between benchmarks of one run.
var bigOps []history.Op

func bigHistory() []history.Op {
	if bigOps == nil {
		bigOps = synth(bigConfig)
	}
	return bigOps
}

// TestSyntheticHistoriesAreValid: a correct log under concurrency, with
// unknown and failed sends, must raise no alarm at all; and a record cut
// from its final read must be found.
func TestSyntheticHistoriesAreValid(t *testing.T) {
	cfg := Config{Acks: -1, MinInsyncReplicas: 2, Faults: []string{"kill"}}
	for _, sc := range []synthConfig{
		{ops: 20_000, producers: 6, consumers: 3, partitions: 3, endEvery: 7, seed: 3},
		{ops: 5_000, producers: 5, consumers: 2, partitions: 1, endEvery: 3, seed: 4},
	} {
		ops := synth(sc)
		start := time.Now()
		res := Check(ops, cfg, Options{})
		t.Logf("%+v: checked in %v", sc, time.Since(start))
		if res.Valid != Valid {
			for _, r := range res.Results {
				if r.Valid != Valid {
					t.Errorf("%+v: %s %s %v", sc, r.Name, r.Valid, r.Details)
				}
			}
			continue
		}
		if r, _ := res.Get(NonlinearizableSendName); r.Stats["porcupine-ok"] != 1 || r.Stats["unknown-sends-modelled"] == 0 {
			t.Errorf("%+v: porcupine stats %v", sc, r.Stats)
		}
		// Cut one acknowledged record out of its final read.
		acked := map[string]bool{}
		for _, op := range ops {
			if op.F == history.Send && op.Type == history.OK {
				acked[op.Value.Value] = true
			}
		}
		i := slices.IndexFunc(ops, func(op history.Op) bool { return op.F == history.FinalRead && op.Type == history.OK })
		v := *ops[i].Value
		j := slices.IndexFunc(v.Records, func(r history.Record) bool { return acked[r.Value] })
		cut := v.Records[j]
		v.Records = slices.Delete(slices.Clone(v.Records), j, j+1)
		ops[i].Value = &v
		res = Check(ops, cfg, Options{})
		lw, _ := res.Get(LostWriteName)
		if res.Valid != Invalid || lw.Count != 1 || !strings.Contains(lw.Details[0], fmt.Sprintf("%q", cut.Value)) {
			t.Errorf("%+v: cut %v: verdict %s, lost-write %s %v", sc, cut, res.Valid, lw.Valid, lw.Details)
		}
	}
}

// BenchmarkCheckAllButLinearizability runs every checker except porcupine
// on a synthetic 1,000,000-operation history (8 producers, 4 consumers, 4
// partitions, final and replica reads). Target: at most 0.5 s and 250 MB.
// peak-heap-MB is the heap at its highest during a check (garbage not yet
// collected included), history included; check-heap-MB is that minus the
// history itself. Each check starts from a collected heap, as chaos check
// does: otherwise the previous checks' garbage, and the collection of the
// 290 MB of operations the benchmark holds, fell in the next one's time
// and peak by chance (375-541 ms and 87-131 MB over 2-3 checks, 426-473
// ms and 260 MB over 10; 363-400 ms and 44 MB now, either way).
func BenchmarkCheckAllButLinearizability(b *testing.B) {
	ops := bigHistory()
	base := heapmeter.Live()
	cfg := Config{Acks: -1, MinInsyncReplicas: 2, Faults: []string{"kill"}}
	var peak uint64
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		runtime.GC()
		b.StartTimer()
		stop := heapmeter.Peak()
		res := Check(ops, cfg, Options{SkipLinearizability: true})
		peak = max(peak, stop())
		if res.Valid == Invalid {
			b.Fatalf("the synthetic history is invalid: %v", res.Unexpected)
		}
	}
	b.ReportMetric(float64(len(ops)), "ops")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(peak-min(peak, base))/(1<<20), "check-heap-MB")
}

// BenchmarkCheckStream is BenchmarkCheckAllButLinearizability as chaos
// check does it: the history as a JSON Lines file, decoded and indexed as
// it streams past (history.ScanFile into a Builder), never held whole.
// peak-heap-MB is the live heap at its highest (garbage not yet collected
// included), the whole of what the check holds.
func BenchmarkCheckStream(b *testing.B) {
	// Another benchmark's history left in the heap would raise the
	// garbage collector's target by its size, and the peak with it.
	bigOps = nil
	path := filepath.Join(b.TempDir(), "history.jsonl")
	func() {
		var buf bytes.Buffer
		for _, op := range synth(bigConfig) {
			if err := encodeOp(&buf, op); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			b.Fatal(err)
		}
	}()
	cfg := Config{Acks: -1, MinInsyncReplicas: 2, Faults: []string{"kill"}}
	// heap: the index in the heap; file: in a file (Builder.InFile), as
	// chaos check and a run's judge keep it.
	for _, inFile := range []bool{false, true} {
		name := map[bool]string{false: "heap", true: "file"}[inFile]
		b.Run(name, func(b *testing.B) {
			base := heapmeter.Live()
			var peak uint64
			for b.Loop() {
				stop := heapmeter.Peak()
				h := buildFromFile(b, cfg, path, inFile)
				res := CheckHistory(h, Options{SkipLinearizability: true})
				peak = max(peak, stop())
				h.Close()
				if res.Valid == Invalid {
					b.Fatalf("the synthetic history is invalid: %v", res.Unexpected)
				}
			}
			b.ReportMetric(float64(bigConfig.ops), "ops")
			b.ReportMetric(float64(peak-min(peak, base))/(1<<20), "peak-heap-MB")
		})
	}
}

// BenchmarkLinearizability judges the linearizability of a 10,000-operation
// history of 5 producers and 2 consumers (polls and end offsets) on one
// partition, the hardest shape: in-order, as the check does (each segment
// taken in the order of its tightened calls, searched only if that fails);
// search, with porcupine searching every segment. Target: at most 10 s.
func BenchmarkLinearizability(b *testing.B) {
	ops := synth(linConfig)
	h := NewHistory(ops, strict)
	for _, search := range []bool{false, true} {
		name := "in-order"
		if search {
			name = "search"
		}
		b.Run(name, func(b *testing.B) {
			defer func(v bool) { tryInOrder = v }(tryInOrder)
			tryInOrder = !search
			for b.Loop() {
				rs := Linearizability(h, Options{LinearizableTimeout: time.Minute})
				if r := rs[0]; r.Stats["porcupine-ok"] != 1 || (r.Stats["porcupine-chunks"] > 0) != search {
					b.Fatalf("not decided linearizable, or not as asked: %v %v", r.Stats, r.Details)
				}
			}
			b.ReportMetric(float64(len(ops)), "ops")
		})
	}
}

// BenchmarkLinearizabilityLargePartition judges one partition of 12 M
// model operations (a day-long soak's is about 50 M), past the 8.4 M at
// which tighten once stopped: a correct log's sends and reads, each
// interval around its linearization point and overlapping its
// neighbours', listed in call order, 1% of the sends unknown (they never
// return, so only tightening leaves an instant to cut the partition at).
// Its operations are in a file (offheap), as a judge's are. It fails
// unless every operation is tightened and judged; ns/model-op is the
// time per operation of tightening, cutting and judging.
func BenchmarkLinearizabilityLargePartition(b *testing.B) {
	const n = 12_000_000
	a, err := offheap.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	ops := offheap.Make[linOp](a, n)
	build := func() []linOp {
		rng := rand.New(rand.NewPCG(1, 2))
		leo := int64(0)
		for i := range ops {
			at := int64(i) * 10 // its linearization point
			op := linOp{call: at - rng.Int64N(60), ret: at + rng.Int64N(60), pos: int32(i)}
			switch k := rng.IntN(100); {
			case k == 0:
				op.kind, op.at, op.unknown, op.ret = linSend, leo, true, math.MaxInt64
				leo++
			case k <= 50:
				op.kind, op.at, op.commit = linSend, leo, true
				leo++
			default:
				// Every send so far is committed: the HW is the log end.
				op.kind, op.at, op.readBits = linRead, leo, hwChecked
			}
			ops[i] = op
		}
		slices.SortStableFunc(ops, func(x, y linOp) int { return cmpInt(x.call, y.call) })
		return ops
	}
	for b.Loop() {
		b.StopTimer()
		part := build()
		b.StartTimer()
		seg := 0
		skipped, inOrder, tightened := searchOps(part, build, bothChecks, &seg, func(*linOp) int { return 0 }, func(chunk []porcupine.Operation) bool {
			return porcupine.CheckOperations(linModel(nil, bothChecks), chunk)
		}, a, nil)
		if !tightened || skipped > 0 || inOrder == 0 {
			b.Fatalf("not judged: tightened %v, %d operations left out, %d segments in order", tightened, skipped, inOrder)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/model-op")
}

// sparseHistory is n acknowledged sends on one partition at offsets gap
// apart, each polled, with a final read and three replica reads holding
// them all: a broker may leave gaps (control batches, compaction, a bug).
func sparseHistory(n int, gap int64) []history.Op {
	b := &hb{}
	var all []history.Record
	for i := range n {
		v := fmt.Sprintf("v%d", i)
		off := int64(i) * gap
		b.send(i%4, 0, v, off)
		all = append(all, history.Record{Offset: off, Value: v})
	}
	end := int64(n) * gap
	b.invokeRead(10, history.Poll, 0, 0)
	b.add(10, history.OK, history.Poll, &history.Value{Topic: topic, From: history.Int64(0), Records: all, HW: history.Int64(end)}, "")
	b.invokeRead(99, history.FinalRead, 0, 0)
	b.add(99, history.OK, history.FinalRead, &history.Value{Topic: topic, Records: all, HW: history.Int64(end)}, "")
	for br := int32(1); br <= 3; br++ {
		b.add(98, history.Invoke, history.ReplicaRead, &history.Value{Topic: topic, Broker: history.Int32(br)}, "")
		b.add(98, history.OK, history.ReplicaRead, &history.Value{Topic: topic, Broker: history.Int32(br), Records: all, HW: history.Int64(end)}, "")
	}
	return b.ops
}

// allocated is how many bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestMemoryFollowsRecordsNotOffsets: judging the same number of records
// costs about the same whether their offsets are dense or 2,000 apart
// (finding 5 of the soundness review: 30k sends 2,000 apart took 1.2 GB,
// dense ones 73 MB).
func TestMemoryFollowsRecordsNotOffsets(t *testing.T) {
	cfg := Config{Acks: -1, MinInsyncReplicas: 2, ReplicationFactor: 3, MaxInFlight: 1}
	dense, sparse := sparseHistory(10_000, 1), sparseHistory(10_000, 2_000)
	var dres, sres *Results
	d := allocated(func() { dres = Check(dense, cfg, Options{SkipLinearizability: true}) })
	s := allocated(func() { sres = Check(sparse, cfg, Options{SkipLinearizability: true}) })
	t.Logf("dense: %d KB, sparse: %d KB", d>>10, s>>10)
	if s > 2*d+8<<20 {
		t.Fatalf("sparse offsets allocate %d MB, dense %d MB: memory follows the offset range", s>>20, d>>20)
	}
	if lw, _ := sres.Get(LostWriteName); lw.Valid != Valid || dres.Valid != sres.Valid {
		t.Fatalf("sparse: lost-write %s, verdicts %s vs %s", lw.Valid, dres.Valid, sres.Valid)
	}
}

// BenchmarkCheckSparseOffsets: 30,000 acknowledged sends 2,000 offsets
// apart, every checker but porcupine. check-heap-MB is the live heap at
// its highest during a check, less the history (1.2 GB before the offset
// table bounded its span by the observations).
func BenchmarkCheckSparseOffsets(b *testing.B) {
	ops := sparseHistory(30_000, 2_000)
	cfg := Config{Acks: -1, MinInsyncReplicas: 2, ReplicationFactor: 3, MaxInFlight: 1}
	base := heapmeter.Live()
	var peak uint64
	for b.Loop() {
		stop := heapmeter.Peak()
		Check(ops, cfg, Options{SkipLinearizability: true})
		peak = max(peak, stop())
		runtime.GC()
	}
	b.ReportMetric(float64(peak-min(peak, base))/(1<<20), "check-heap-MB")
}

// buildFromFile indexes the history at path as chaos check does, as it
// streams past, with the index in a file (Builder.InFile) if inFile.
func buildFromFile(tb testing.TB, cfg Config, path string, inFile bool) *History {
	tb.Helper()
	b := NewBuilder(cfg)
	if inFile {
		if err := b.InFile(tb.TempDir()); err != nil {
			tb.Fatal(err)
		}
	}
	// As chaos check reads it: a long read's records streamed.
	err := history.ScanReadsFile(path, func(op *history.Op) error { b.Add(op); return nil }, func(k history.Key, hinted bool, rs []history.Record) error {
		b.AddRecords(k, hinted, rs)
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return b.History()
}
