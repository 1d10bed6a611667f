package checker

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/chaos-isr/chaos/internal/heapmeter"
)

// TestStreamedMemorySlope measures what judging a history as it streams
// past from a file (chaos check's way: history.ScanFile into a Builder,
// then CheckHistory) costs per operation, on synthetic histories of
// 100,000 and 400,000 operations of two shapes, with the index in the
// heap and in a file (Builder.InFile, as chaos check keeps it): the heap
// the index keeps once the history is read, and the live heap at its
// highest while the history is read and judged. In the heap, what grows
// with the history is its index: each value written
// and where it was seen, each operation's fixed fields, each read's
// records as offsets and value ids (45-52 bytes per operation kept,
// 90-135 at the peak, garbage collection's headroom included; 350-450 at
// the peak while the history was held in memory; 102 and 95 kept before the
// index was made compact, 83 and 72 before values' strings moved into
// an arena, 70 and 59 before processes took a byte a line and reads'
// record lists lost their pointer, 66 and 55 before a send took 24
// bytes and most reads' records the offset table's ids). A checker that
// held the operations themselves (a kilobyte or more each, with their records)
// fails it. Checkers that keep only what must be remembered (the values
// and their sightings, not every operation) would bring the slope down to
// a few dozen bytes; the bounds are to come down with them.
func TestStreamedMemorySlope(t *testing.T) {
	if testing.Short() {
		t.Skip("judges a million and a half operations")
	}
	cfg := Config{Acks: -1, MinInsyncReplicas: 2, Faults: []string{"kill"}}
	measure := func(shape synthConfig, n int, inFile bool) (kept, peak int64) {
		shape.ops = n
		// On disk, as chaos check reads it: a history held in memory
		// would be live heap, and the collector's headroom with it.
		var buf bytes.Buffer
		for _, op := range synth(shape) {
			if err := encodeOp(&buf, op); err != nil {
				t.Fatal(err)
			}
		}
		path := filepath.Join(t.TempDir(), "history.jsonl")
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		buf = bytes.Buffer{}
		base := heapmeter.Live()
		stop := heapmeter.Peak()
		h := buildFromFile(t, cfg, path, inFile)
		kept = int64(heapmeter.Live()) - int64(base)
		res := CheckHistory(h, Options{})
		peak = int64(stop()) - int64(base)
		if res.Valid != Valid {
			t.Fatalf("%d ops: %s %v", n, res.Valid, res.Unexpected)
		}
		runtime.KeepAlive(h)
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
		return kept, peak
	}
	for _, tc := range []struct {
		name                       string
		shape                      synthConfig
		inFile                     bool
		maxKeptPerOp, maxPeakPerOp float64
	}{
		// Polls of up to 8 records, from 4 consumers of 4 partitions.
		{"batched polls", synthConfig{producers: 8, consumers: 4, partitions: 4, endEvery: 10, seed: 5}, false, 60, 800},
		// A real run's shape: a consumer per partition that keeps up,
		// a record a poll.
		{"a record a poll", synthConfig{producers: 5, consumers: 3, partitions: 3, endEvery: 5, pollMax: 1, seed: 5}, false, 55, 800},
		// The same with the index in a file (chaos check's and a run's
		// judge's way): the heap keeps next to nothing per operation
		// (-2 to 5 bytes: the operations kept whole), and peaks at
		// what a check holds at once (-7 to 44, the collector's timing).
		{"batched polls, in a file", synthConfig{producers: 8, consumers: 4, partitions: 4, endEvery: 10, seed: 5}, true, 10, 80},
		{"a record a poll, in a file", synthConfig{producers: 5, consumers: 3, partitions: 3, endEvery: 5, pollMax: 1, seed: 5}, true, 10, 80},
	} {
		k1, p1 := measure(tc.shape, 100_000, tc.inFile)
		k4, p4 := measure(tc.shape, 400_000, tc.inFile)
		keptSlope := float64(k4-k1) / 300_000
		peakSlope := float64(p4-p1) / 300_000
		mb := func(n int64) float64 { return float64(n) / (1 << 20) }
		t.Logf("%s: kept %.1f MB -> %.1f MB (%.1f B/op); peak %.1f MB -> %.1f MB (%.0f B/op)", tc.name, mb(k1), mb(k4), keptSlope, mb(p1), mb(p4), peakSlope)
		if keptSlope > tc.maxKeptPerOp || peakSlope > tc.maxPeakPerOp {
			t.Errorf("%s: memory grows with the history by %.0f B/op kept (at most %.0f) and %.0f B/op at the peak (at most %.0f)",
				tc.name, keptSlope, tc.maxKeptPerOp, peakSlope, tc.maxPeakPerOp)
		}
	}
}
