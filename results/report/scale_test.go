package report

import (
	"runtime"
	"runtime/metrics"
	"testing"
)

// TestReportMemorySlope measures what chaos report keeps per operation of
// a stored run it reads (LoadRun: the history as a stream into the
// timeline), on synthetic runs of 100,000 and 400,000 operations, in the
// heap: next to nothing, for the timeline's table of operations is in a
// file (package offheap) and what stays in the heap is the ok sends'
// times (20-25 bytes with the table in the heap; 28-36 while the op was
// 24 bytes and the client operations a table of their own), where holding
// the operations took several hundred. A report that held them, or its
// table in the heap, fails it.
func TestReportMemorySlope(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and reads half a million operations")
	}
	const maxPerOp = 12
	measure := func(n int) (kept int64, ops int) {
		d := synthReport(n, 3)
		dir := t.TempDir()
		writeRun(t, dir, d.Config, historyBytes(t, d.Ops), d.Results)
		ops = len(d.Ops)
		d = RunData{}
		base := liveHeap()
		loaded := LoadRun(dir)
		kept = int64(liveHeap()) - int64(base)
		if loaded.tl.len() != ops || len(loaded.Notes) > 0 {
			t.Fatalf("%d ops read of %d: %q", loaded.tl.len(), ops, loaded.Notes)
		}
		runtime.KeepAlive(loaded)
		return kept, ops
	}
	k1, n1 := measure(100_000)
	k4, n4 := measure(400_000)
	slope := float64(k4-k1) / float64(n4-n1)
	t.Logf("kept %.1f MB -> %.1f MB (%.1f B/op)", float64(k1)/(1<<20), float64(k4)/(1<<20), slope)
	if slope > maxPerOp {
		t.Fatalf("the report keeps %.0f B per operation (at most %d)", slope, maxPerOp)
	}
}

func liveHeap() uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}
