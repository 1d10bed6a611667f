package report

import (
	"bytes"
	"io"
	"testing"
)

// BenchmarkRenderReport100k renders the report of a synthetic run of
// 100,000 operations (sends, polls, end offsets, monitor samples, fault
// windows, a few hundred lost writes, a final phase), from the files
// already read: what "chaos report" adds to a run once the checkers are
// done. It reports the size of the page as html-bytes.
func BenchmarkRenderReport100k(b *testing.B) {
	d := synthReport(100_000, 1)
	var buf bytes.Buffer
	if err := RenderRun(&buf, d); err != nil {
		b.Fatal(err)
	}
	size := buf.Len()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := RenderRun(io.Discard, d); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(size), "html-bytes")
}

// BenchmarkWriteReport100k is the whole of "chaos report DIR" on the same
// run: reading test.json, history.jsonl and results.json, rendering, and
// writing report.html.
func BenchmarkWriteReport100k(b *testing.B) {
	d := synthReport(100_000, 1)
	dir := b.TempDir()
	writeRun(b, dir, d.Config, historyBytes(b, d.Ops), d.Results)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := WriteRun(dir, nil); err != nil {
			b.Fatal(err)
		}
	}
}
