package report

import (
	"io"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/chaos-isr/chaos/internal/heapmeter"
)

// TestReportMemorySlope measures what chaos report costs per operation
// of a stored run it reads, on synthetic runs of 300,000 and 900,000
// operations (both past the reader's read-ahead): the heap kept once the
// history is read (LoadRun: the history as a stream into the timeline),
// and the heap at its highest while the page is drawn from it. The
// timeline's table of operations is in a file (package offheap), and
// nothing else it keeps grows with the operations: the unavailability
// plot's lanes keep the long gaps between acknowledgements, not each
// one's time (which was 8 bytes an ok send); the latency plot reads a
// span of time at a time; the excerpt keeps sets of the ops it shows. A
// report that held the operations (several hundred bytes each), or any
// of those per send, fails it. (While the history is read, what the
// reader holds at once is its read-ahead, bounded in package history; the
// page's excerpt reads it again, and how full that read-ahead gets varies
// from run to run by 2-12 B/op here, hence the peak's looser bound.)
func TestReportMemorySlope(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and reads 1.2 million operations")
	}
	const maxKeptPerOp, maxPeakPerOp = 2, 20
	measure := func(n int) (kept, peak int64, ops int) {
		d := synthReport(n, 3)
		dir := t.TempDir()
		writeRun(t, dir, d.Config, historyBytes(t, d.Ops), d.Results)
		ops = len(d.Ops)
		d = RunData{}
		base := heapmeter.Live()
		loaded := LoadRun(dir)
		kept = int64(heapmeter.Live()) - int64(base)
		// Collected often, the heap at its peak is what is live, not
		// the collector's headroom, which varies with its timing.
		gc := debug.SetGCPercent(10)
		stop := heapmeter.Peak()
		if err := RenderRun(io.Discard, loaded); err != nil {
			t.Fatal(err)
		}
		peak = int64(stop()) - int64(base)
		debug.SetGCPercent(gc)
		if loaded.tl.len() != ops || len(loaded.Notes) > 0 {
			t.Fatalf("%d ops read of %d: %q", loaded.tl.len(), ops, loaded.Notes)
		}
		runtime.KeepAlive(loaded)
		return kept, peak, ops
	}
	k1, p1, n1 := measure(300_000)
	k4, p4, n4 := measure(900_000)
	keptSlope := float64(k4-k1) / float64(n4-n1)
	peakSlope := float64(p4-p1) / float64(n4-n1)
	mb := func(n int64) float64 { return float64(n) / (1 << 20) }
	t.Logf("kept %.1f MB -> %.1f MB (%.1f B/op); peak %.1f MB -> %.1f MB (%.1f B/op)", mb(k1), mb(k4), keptSlope, mb(p1), mb(p4), peakSlope)
	if keptSlope > maxKeptPerOp || peakSlope > maxPeakPerOp {
		t.Fatalf("the report grows with the history by %.1f B per operation kept (at most %d) and %.1f at the peak (at most %d)",
			keptSlope, maxKeptPerOp, peakSlope, maxPeakPerOp)
	}
}
