package storage

import (
	"bytes"
	"testing"

	"github.com/chaos-isr/chaos/broker/batch"
)

// benchBatch is one batch of 100 records of 100 bytes each.
func benchBatch() []byte {
	vals := make([][]byte, 100)
	for i := range vals {
		vals[i] = bytes.Repeat([]byte{'x'}, 100)
	}
	return batch.Build(1, vals...)
}

func BenchmarkDiskAppend(b *testing.B) {
	d, err := OpenDisk(b.TempDir(), Options{Fsync: FsyncNever})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	bt := benchBatch()
	b.SetBytes(int64(len(bt)))
	b.ReportAllocs()
	for b.Loop() {
		batch.Stamp(bt, d.LogEndOffset(), 0)
		if err := d.Append(bt); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)*100/b.Elapsed().Seconds(), "records/s")
}

func BenchmarkDiskRead(b *testing.B) {
	const batches = 2000 // about 23 MB, in several segments
	d, err := OpenDisk(b.TempDir(), Options{SegmentBytes: 4 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	bt := benchBatch()
	for range batches {
		batch.Stamp(bt, d.LogEndOffset(), 0)
		if err := d.Append(bt); err != nil {
			b.Fatal(err)
		}
	}
	end := d.LogEndOffset()
	for _, bc := range []struct {
		name     string
		maxBytes int
	}{{"batch", 1}, {"1MiB", 1 << 20}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			var off, n int64
			for b.Loop() {
				r, err := d.Read(off, end, bc.maxBytes)
				if err != nil {
					b.Fatal(err)
				}
				n += int64(len(r))
				if off += 100 * int64(len(r)/len(bt)); off >= end {
					off = 0
				}
			}
			b.SetBytes(n / int64(b.N))
		})
	}
}
