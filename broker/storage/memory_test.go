package storage

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
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
func TestMemoryChunked(t *testing.T) {
	defer func(n int) { memChunk = n }(memChunk)
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
				if err := m.Truncate(m.idx.entries[k].base); err != nil {
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
				if n > 1 && m.idx.entries[k].seg != m.idx.entries[k+n-1].seg {
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
	}
	if spans < 100 {
		t.Fatalf("only %d reads spanned chunks: the test has no teeth", spans)
	}
}
