package storage

import (
	"bytes"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"
)

func TestMemoryLoseUnsynced(t *testing.T) {
	tests := []struct {
		name    string
		factory MemoryFactory
		ops     func(t *testing.T, m *Memory)
		wantEnd int64
	}{
		{
			name: "never: unsynced suffix lost",
			ops: func(t *testing.T, m *Memory) {
				fill(t, m, 0, 1, 2, 2)
				m.Sync()
				fill(t, m, 0, 1, 2)
			},
			wantEnd: 4,
		},
		{
			name: "truncate below the sync point",
			ops: func(t *testing.T, m *Memory) {
				fill(t, m, 0, 1, 2, 2)
				m.Sync()
				m.Truncate(1)
				fill(t, m, 1, 1, 2)
			},
			wantEnd: 0,
		},
		{
			name:    "always keeps everything",
			factory: MemoryFactory{Fsync: FsyncAlways},
			ops: func(t *testing.T, m *Memory) {
				fill(t, m, 0, 1, 2, 2, 2)
			},
			wantEnd: 6,
		},
		{
			name:    "interval on the driver's clock",
			factory: MemoryFactory{Fsync: FsyncInterval, FsyncIntervalMs: 100},
			ops: func(t *testing.T, m *Memory) {
				fill(t, m, 0, 1, 2)
				m.MaybeSync(99)
				fill(t, m, 0, 1, 2)
				m.MaybeSync(100) // [0, 4)
				fill(t, m, 0, 1, 2)
				m.MaybeSync(150)
			},
			wantEnd: 4,
		},
		{
			name: "close syncs",
			ops: func(t *testing.T, m *Memory) {
				fill(t, m, 0, 1, 2, 2)
				m.Close()
			},
			wantEnd: 4,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &tt.factory
			m, err := f.OpenMemory("t", 0)
			if err != nil {
				t.Fatal(err)
			}
			other, _ := f.OpenMemory("u", 3)
			fill(t, other, 0, 1, 2)
			tt.ops(t, m)
			f.LoseUnsynced()
			l := mustOpen(t, f)
			if l != Log(m) {
				t.Fatal("the factory did not keep the log")
			}
			if l.LogEndOffset() != tt.wantEnd {
				t.Fatalf("end %d, want %d", l.LogEndOffset(), tt.wantEnd)
			}
			wantOther := int64(0)
			if tt.factory.Fsync == FsyncAlways {
				wantOther = 2
			}
			if other.LogEndOffset() != wantOther {
				t.Fatalf("the other partition's end %d, want %d", other.LogEndOffset(), wantOther)
			}
		})
	}
}

// The in-memory driver may deliver a fetch response after the leader has
// truncated and appended again; the bytes it carries must not change.
func TestMemoryReadStable(t *testing.T) {
	m := NewMemory()
	fill(t, m, 0, 1, 2, 2, 2)
	old, err := m.Read(2, 100, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	saved := bytes.Clone(old)
	if cap(old) != len(old) {
		t.Fatal("an append to a read result would write into the log")
	}
	if err := m.Truncate(2); err != nil {
		t.Fatal(err)
	}
	fill(t, m, 5, 99, 3, 3, 3)
	if !bytes.Equal(old, saved) {
		t.Fatal("a read result changed after truncate and append")
	}
	checkValues(t, readAll(t, m), 0, 11)
}

// TestMemoryChunked: with chunks of a few batches (or less than one), a
// log that appends, truncates and is read at random returns what one
// buffer would: each read the bytes of the batches it serves, in order,
// whether they span chunks or not, and no result changes after it is
// returned. The Memory tests, and damage's, pass with such chunks too.
// All of it holds again with the full chunks in a spill file, and then
// only the last chunk is in memory.
func TestMemoryChunked(t *testing.T) {
	defer func(n int) { memChunk = n }(memChunk)
	for _, spill := range []bool{false, true} {
		if spill {
			s, err := NewSpill(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			testSpill = s
			t.Cleanup(func() { testSpill = nil; s.Close() })
		}
		testMemoryChunked(t, spill)
	}
	if err := testSpill.Err(); err != nil {
		t.Fatal(err)
	}
	if testSpill.Size() == 0 {
		t.Fatal("nothing was spilled: the test has no teeth")
	}
}

func testMemoryChunked(t *testing.T, spill bool) {
	spans := 0
	for _, chunk := range []int{1, 150, 400, 1 << 20} {
		memChunk = chunk
		t.Run("", func(t *testing.T) {
			TestMemoryLoseUnsynced(t)
			TestMemoryReadStable(t)
			TestMemoryDamageNeverServed(t)
		})
		rng := rand.New(rand.NewPCG(uint64(chunk), 7))
		m := NewMemory()
		var batches [][]byte // the log's batches, in order
		type result struct{ got, saved []byte }
		var results []result
		most := 0 // chunks the log held at most
		for range 3000 {
			most = max(most, len(m.chunks))
			switch r := rng.IntN(10); {
			case r < 5:
				for range 1 + rng.IntN(3) {
					b := mk(m.LogEndOffset(), 0, 1, 1+rng.IntN(5))
					if err := m.Append(b); err != nil {
						t.Fatal(err)
					}
					batches = append(batches, b)
				}
			case r < 6 && len(batches) > 0:
				// Truncate at a batch's start, as a follower does.
				k := rng.IntN(len(batches))
				if err := m.Truncate(m.idx.at(k).base); err != nil {
					t.Fatal(err)
				}
				batches = batches[:k]
			default:
				from := m.LogStartOffset() + rng.Int64N(m.LogEndOffset()-m.LogStartOffset()+1)
				maxBytes := 1 + rng.IntN(600)
				k, n, _ := m.idx.serve(from, m.LogEndOffset(), maxBytes)
				got, err := m.Read(from, m.LogEndOffset(), maxBytes)
				if err != nil {
					t.Fatal(err)
				}
				if want := slices.Concat(batches[k : k+n]...); !bytes.Equal(got, want) {
					t.Fatalf("chunks of %d: read from %d: %d bytes, want %d", chunk, from, len(got), len(want))
				}
				if cap(got) != len(got) {
					t.Fatalf("chunks of %d: an append to a read result would write into the log", chunk)
				}
				if n > 1 && m.idx.at(k).seg != m.idx.at(k+n-1).seg {
					spans++
				}
				results = append(results, result{got, bytes.Clone(got)})
			}
		}
		for i, r := range results {
			if !bytes.Equal(r.got, r.saved) {
				t.Fatalf("chunks of %d: read result %d changed after it was returned", chunk, i)
			}
		}
		if chunk < 1<<20 && most < 10 {
			t.Fatalf("chunks of %d: the log was never in more than %d chunks", chunk, most)
		}
		for k := range m.chunks {
			if c := &m.chunks[k]; spill && k < len(m.chunks)-1 && c.r == nil && len(c.b) > 0 {
				t.Fatalf("chunks of %d: chunk %d of %d is still in memory with a spill file", chunk, k, len(m.chunks))
			}
		}
	}
	if spans < 100 {
		t.Fatalf("only %d reads spanned chunks: the test has no teeth", spans)
	}
}

// TestOffsetForTimestampScan: on logs of random timestamps, truncated now
// and then, OffsetForTimestamp is a scan's answer: the first batch whose
// MaxTimestamp reaches ts, and that timestamp. An index entry keeps no
// batch's own MaxTimestamp (it is 40 bytes).
func TestOffsetForTimestampScan(t *testing.T) {
	if n := unsafe.Sizeof(entry{}); n != 40 {
		t.Fatalf("an index entry is %d bytes, want 40", n)
	}
	rng := rand.New(rand.NewPCG(3, 9))
	for range 200 {
		m := NewMemory()
		type b struct{ base, ts int64 }
		var bs []b
		for range 1 + rng.IntN(40) {
			if len(bs) > 0 && rng.IntN(8) == 0 {
				k := rng.IntN(len(bs))
				if err := m.Truncate(bs[k].base); err != nil {
					t.Fatal(err)
				}
				bs = bs[:k]
			}
			ts := rng.Int64N(100)
			bs = append(bs, b{m.LogEndOffset(), ts})
			if err := m.Append(mk(m.LogEndOffset(), 0, ts, 1+rng.IntN(3))); err != nil {
				t.Fatal(err)
			}
		}
		for ts := int64(-1); ts <= 101; ts++ {
			off, got, ok := m.OffsetForTimestamp(ts)
			i := slices.IndexFunc(bs, func(x b) bool { return x.ts >= ts })
			if ok != (i >= 0) || ok && (off != bs[i].base || got != bs[i].ts) {
				t.Fatalf("OffsetForTimestamp(%d) = (%d, %d, %v); a scan finds batch %d of %v", ts, off, got, ok, i, bs)
			}
		}
	}
}

// TestSpillLeavesNothing: the spill file is gone from its directory as
// soon as it is made (a killed process leaves nothing), yet it holds what
// is put in it until Close, after which a read fails and says so.
func TestSpillLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	s, err := NewSpill(dir)
	if err != nil {
		t.Fatal(err)
	}
	if es, _ := os.ReadDir(dir); len(es) != 0 {
		t.Fatalf("the spill file is in its directory: %v", es)
	}
	r, err := s.put([]byte("batch"))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := r.read(0, 5); err != nil || string(b) != "batch" {
		t.Fatalf("read back %q, %v", b, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.read(0, 5); err == nil || s.Err() == nil {
		t.Fatal("a read after Close did not fail")
	}
}

// TestSpillGivesBack: the regions of chunks no log holds any more (cut
// by a Truncate, or rewritten whole by a disk fault) give their space
// back, while a snapshot's still hold theirs; what is held reads the
// same.
func TestSpillGivesBack(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("holes are punched on Linux only")
	}
	defer func(n int) { memChunk = n }(memChunk)
	memChunk = 4096
	s, err := NewSpill(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	f := &MemoryFactory{Spill: s}
	m, err := f.OpenMemory("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	var all []byte
	for range 2000 {
		b := mk(m.LogEndOffset(), 0, 1, 3)
		if err := m.Append(b); err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	settle := func() {
		for range 5 {
			runtime.GC()
			time.Sleep(10 * time.Millisecond)
		}
	}
	written := s.Held()
	snap := f.Snapshot()
	if err := m.Truncate(m.LogEndOffset() / 2); err != nil {
		t.Fatal(err)
	}
	settle()
	if s.Held() != written {
		t.Fatalf("%d of %d bytes held after a Truncate: the snapshot's chunks must keep theirs", s.Held(), written)
	}
	runtime.KeepAlive(snap)
	snap = nil
	settle()
	if held := s.Held(); held > written*6/10 {
		t.Fatalf("%d of %d bytes held once the cut chunks are no one's", held, written)
	}
	got, err := m.Read(0, m.LogEndOffset(), len(all))
	if err != nil || !bytes.Equal(got, all[:len(got)]) || len(got) == 0 {
		t.Fatalf("the log's first half reads %d bytes, %v", len(got), err)
	}
}

// TestSpillReadGivesBackIndex: a log read whole from its spill file
// leaves few of its index's pages mapped, for each releaseEvery bytes
// read back give them back; with no give-back, the same read maps the
// index whole (the test's control), and the bytes read are the same.
func TestSpillReadGivesBackIndex(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/smaps")
	}
	defer func(n int, e int64) { memChunk, releaseEvery = n, e }(memChunk, releaseEvery)
	memChunk = 64 << 10
	s, err := NewSpill(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Arena() == nil || s.Arena().Err() != nil {
		t.Skip("no index arena here")
	}
	m, err := (&MemoryFactory{Spill: s}).OpenMemory("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	var all []byte
	for range 200_000 { // an index of 8 MB
		b := mk(m.LogEndOffset(), 0, 1, 1)
		if err := m.Append(b); err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	mapped := map[bool]int64{}
	for _, giveBack := range []bool{false, true} {
		releaseEvery = 1 << 40
		if giveBack {
			releaseEvery = 256 << 10
		}
		s.Arena().Release()
		got, err := m.Read(0, m.LogEndOffset(), len(all))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, all) {
			t.Fatalf("give-back %v: the log reads %d bytes, want %d", giveBack, len(got), len(all))
		}
		mapped[giveBack] = offheapRss(t)
	}
	if mapped[false] < 6<<20 || mapped[true] > 2<<20 {
		t.Errorf("index mapped after a whole read: %d KB with no give-back (want the index, 8 MB), %d KB with it (want under 2 MB)", mapped[false]>>10, mapped[true]>>10)
	}
}

// offheapRss is how much of the process's arenas' files is mapped.
func offheapRss(t *testing.T) int64 {
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	in := false
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			in = strings.Contains(line, ".chaos-offheap-")
			continue
		}
		if kb, ok := strings.CutPrefix(line, "Rss:"); ok && in {
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(kb, "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			sum += n << 10
		}
	}
	return sum
}
