package report

import (
	"runtime"
	"runtime/metrics"
	"testing"
)

// TestReportMemorySlope measures what chaos report keeps per operation of
// a stored run it reads (LoadRun: the history as a stream into the
// timeline), on synthetic runs of 100,000 and 400,000 operations: about
// 20-25 bytes (the 20-byte op, its pair, the send table; 28-36 while the
// op was 24 bytes and the client operations a table of their own), where
// holding the operations took several hundred. A report that held them
// fails it.
func TestReportMemorySlope(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and reads half a million operations")
	}
	const maxPerOp = 45
	measure := func(n int) (kept uint64, ops int) {
		d := synthReport(n, 3)
		dir := t.TempDir()
		writeRun(t, dir, d.Config, historyBytes(t, d.Ops), d.Results)
		ops = len(d.Ops)
		d = RunData{}
		base := liveHeap()
		loaded := LoadRun(dir)
		kept = liveHeap() - base
		if loaded.tl.len() != ops || len(loaded.Notes) > 0 {
			t.Fatalf("%d ops read of %d: %q", loaded.tl.len(), ops, loaded.Notes)
		}
		runtime.KeepAlive(loaded)
		return kept, ops
	}
	k1, n1 := measure(100_000)
	k4, n4 := measure(400_000)
	slope := float64(int64(k4)-int64(k1)) / float64(n4-n1)
	t.Logf("kept %d MB -> %d MB (%.0f B/op)", k1>>20, k4>>20, slope)
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
