package storage

import (
	"bytes"
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
