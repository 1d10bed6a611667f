package storage

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/chaos-isr/chaos/broker/batch"
)

// impl is one Log implementation under the shared suite.
type impl struct {
	name string
	// fresh returns a factory over empty storage.
	fresh func(t *testing.T) Factory
	// crashed returns the factory a restarted process would use after the
	// process that used f died without closing anything.
	crashed func(t *testing.T, f Factory) Factory
}

var impls = []impl{
	{
		name:    "memory",
		fresh:   func(*testing.T) Factory { return &MemoryFactory{} },
		crashed: func(_ *testing.T, f Factory) Factory { return f },
	},
	{
		name:  "disk",
		fresh: func(t *testing.T) Factory { return DiskFactory{Dir: t.TempDir()} },
		// DiskFactory is a value: the same value is a new factory over the
		// same directory, and the old Disk objects are simply dropped.
		crashed: func(_ *testing.T, f Factory) Factory { return f },
	},
	{
		// Small segments, so that every suite test also crosses segments.
		name: "disk-small-segments",
		fresh: func(t *testing.T) Factory {
			return DiskFactory{Dir: t.TempDir(), Options: Options{SegmentBytes: 200}}
		},
		crashed: func(_ *testing.T, f Factory) Factory { return f },
	},
	{
		// LoseUnsynced without a crash must behave exactly like the others.
		name: "disk-lose-unsynced",
		fresh: func(t *testing.T) Factory {
			return DiskFactory{Dir: t.TempDir(), Options: Options{LoseUnsynced: true, SegmentBytes: 300, Fsync: FsyncAlways}}
		},
		crashed: func(_ *testing.T, f Factory) Factory { return f },
	},
}

func forEach(t *testing.T, fn func(t *testing.T, im impl)) {
	for _, im := range impls {
		t.Run(im.name, func(t *testing.T) { fn(t, im) })
	}
}

// mk builds a batch of n records stamped at base, whose values are "v<offset>".
func mk(base int64, epoch int32, ts int64, n int) []byte {
	vals := make([][]byte, n)
	for i := range vals {
		vals[i] = fmt.Appendf(nil, "v%06d", base+int64(i))
	}
	b := batch.Build(ts, vals...)
	batch.Stamp(b, base, epoch)
	return b
}

func mustOpen(t *testing.T, f Factory) Log {
	t.Helper()
	l, err := f.Open("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// fill appends one batch per count, at the log end, and returns all bytes
// appended.
func fill(t *testing.T, l Log, epoch int32, ts int64, counts ...int) []byte {
	t.Helper()
	var all []byte
	for _, n := range counts {
		b := mk(l.LogEndOffset(), epoch, ts, n)
		if err := l.Append(b); err != nil {
			t.Fatalf("append at %d: %v", l.LogEndOffset(), err)
		}
		all = append(all, b...)
	}
	return all
}

// checkValues decodes b and checks it holds exactly offsets from..to-1.
func checkValues(t *testing.T, b []byte, from, to int64) {
	t.Helper()
	offs, vals, err := batch.Values(b)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(offs)) != to-from {
		t.Fatalf("read offsets %v, want [%d, %d)", offs, from, to)
	}
	for i, o := range offs {
		if o != from+int64(i) || string(vals[i]) != fmt.Sprintf("v%06d", o) {
			t.Fatalf("record %d: offset %d value %q, want offset %d", i, o, vals[i], from+int64(i))
		}
	}
}

func readAll(t *testing.T, l Log) []byte {
	t.Helper()
	b, err := l.Read(l.LogStartOffset(), l.LogEndOffset(), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestAppendRead(t *testing.T) {
	forEach(t, func(t *testing.T, im impl) {
		f := im.fresh(t)
		l := mustOpen(t, f)
		if l.LogStartOffset() != 0 || l.LogEndOffset() != 0 || l.HighWatermark() != 0 || len(l.Epochs()) != 0 {
			t.Fatalf("fresh log: start %d end %d hw %d epochs %v", l.LogStartOffset(), l.LogEndOffset(), l.HighWatermark(), l.Epochs())
		}
		if b, err := l.Read(0, 100, 1000); b != nil || err != nil {
			t.Fatalf("read of empty log: %v %v", b, err)
		}
		want := fill(t, l, 0, 10, 3, 1, 5)
		// Two batches in one Append.
		two := append(mk(9, 1, 20, 2), mk(11, 1, 20, 4)...)
		if err := l.Append(two); err != nil {
			t.Fatal(err)
		}
		want = append(want, two...)
		if l.LogEndOffset() != 15 {
			t.Fatalf("log end offset %d, want 15", l.LogEndOffset())
		}
		got := readAll(t, l)
		if !bytes.Equal(got, want) {
			t.Fatalf("read back %d bytes, appended %d", len(got), len(want))
		}
		checkValues(t, got, 0, 15)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = mustOpen(t, f)
		if got := readAll(t, l); !bytes.Equal(got, want) || l.LogEndOffset() != 15 {
			t.Fatalf("after reopen: %d bytes, end %d", len(got), l.LogEndOffset())
		}
		if e := l.Epochs(); !slices.Equal(e, []EpochEntry{{0, 0}, {1, 9}}) {
			t.Fatalf("epochs after reopen %v", e)
		}
		fill(t, l, 1, 30, 2)
		checkValues(t, readAll(t, l), 0, 17)
	})
}

func TestAppendRefused(t *testing.T) {
	badCRC := mk(4, 0, 1, 2)
	badCRC[len(badCRC)-1] ^= 1
	good := mk(4, 0, 1, 2)
	tests := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"gap", mk(5, 0, 1, 1)},
		{"overlap", mk(3, 0, 1, 1)},
		{"bad crc", badCRC},
		{"half a batch", good[:len(good)/2]},
		{"trailing garbage", append(bytes.Clone(good), 1, 2, 3)},
		{"second batch not contiguous", append(bytes.Clone(good), mk(7, 0, 1, 1)...)},
		{"second batch bad crc", append(bytes.Clone(good), badCRC...)},
		{"bad magic", func() []byte { b := bytes.Clone(good); b[16] = 1; return b }()},
	}
	forEach(t, func(t *testing.T, im impl) {
		l := mustOpen(t, im.fresh(t))
		want := fill(t, l, 0, 1, 4)
		for _, tt := range tests {
			err := l.Append(tt.b)
			if !errors.Is(err, ErrInvalidBatch) {
				t.Errorf("%s: err %v, want ErrInvalidBatch", tt.name, err)
			}
			if l.LogEndOffset() != 4 || !bytes.Equal(readAll(t, l), want) {
				t.Fatalf("%s: refused append changed the log (end %d)", tt.name, l.LogEndOffset())
			}
		}
		if err := l.Append(good); err != nil {
			t.Fatalf("good append after refusals: %v", err)
		}
	})
}

func TestReadRules(t *testing.T) {
	// Batches [0,3) [3,4) [4,9) [9,11).
	counts := []int{3, 1, 5, 2}
	bases := []int64{0, 3, 4, 9}
	var sizes []int
	for i, n := range counts {
		sizes = append(sizes, len(mk(bases[i], 0, 1, n)))
	}
	tests := []struct {
		name         string
		offset, upTo int64
		maxBytes     int
		from, to     int64 // offsets returned; from == to: nil
		err          error
	}{
		{name: "all", offset: 0, upTo: 100, maxBytes: 1 << 20, from: 0, to: 11},
		{name: "from middle of batch", offset: 5, upTo: 100, maxBytes: 1 << 20, from: 4, to: 11},
		{name: "last offset of batch", offset: 2, upTo: 100, maxBytes: 1 << 20, from: 0, to: 11},
		{name: "upTo at a base excludes that batch", offset: 0, upTo: 4, maxBytes: 1 << 20, from: 0, to: 4},
		{name: "upTo inside a batch includes it", offset: 0, upTo: 5, maxBytes: 1 << 20, from: 0, to: 9},
		{name: "offset at upTo", offset: 4, upTo: 4, maxBytes: 1 << 20},
		{name: "offset after upTo", offset: 6, upTo: 4, maxBytes: 1 << 20},
		{name: "offset inside batch containing upTo", offset: 5, upTo: 6, maxBytes: 1 << 20, from: 4, to: 9},
		{name: "maxBytes zero: first batch whole", offset: 4, upTo: 100, maxBytes: 0, from: 4, to: 9},
		{name: "maxBytes below first batch", offset: 0, upTo: 100, maxBytes: 10, from: 0, to: 3},
		{name: "maxBytes exactly two", offset: 0, upTo: 100, maxBytes: sizes[0] + sizes[1], from: 0, to: 4},
		{name: "maxBytes one short of two", offset: 0, upTo: 100, maxBytes: sizes[0] + sizes[1] - 1, from: 0, to: 3},
		{name: "maxBytes exactly all", offset: 0, upTo: 100, maxBytes: sizes[0] + sizes[1] + sizes[2] + sizes[3], from: 0, to: 11},
		{name: "at log end", offset: 11, upTo: 100, maxBytes: 1 << 20},
		{name: "past log end", offset: 12, upTo: 100, maxBytes: 1 << 20, err: ErrOffsetOutOfRange},
		{name: "negative", offset: -1, upTo: 100, maxBytes: 1 << 20, err: ErrOffsetOutOfRange},
	}
	forEach(t, func(t *testing.T, im impl) {
		l := mustOpen(t, im.fresh(t))
		fill(t, l, 0, 1, counts...)
		for _, tt := range tests {
			b, err := l.Read(tt.offset, tt.upTo, tt.maxBytes)
			if !errors.Is(err, tt.err) {
				t.Errorf("%s: err %v, want %v", tt.name, err, tt.err)
				continue
			}
			if tt.from == tt.to {
				if b != nil {
					t.Errorf("%s: got %d bytes, want nil", tt.name, len(b))
				}
				continue
			}
			t.Run(tt.name, func(t *testing.T) { checkValues(t, b, tt.from, tt.to) })
		}
	})
}

func TestTruncate(t *testing.T) {
	// Batches [0,3) [3,4) [4,9) [9,11) with epochs 1, 1, 2, 4.
	tests := []struct {
		name       string
		offset     int64
		wantEnd    int64
		wantEpochs []EpochEntry
	}{
		{"beyond end", 20, 11, []EpochEntry{{1, 0}, {2, 4}, {4, 9}}},
		{"at end", 11, 11, []EpochEntry{{1, 0}, {2, 4}, {4, 9}}},
		{"last offset", 10, 9, []EpochEntry{{1, 0}, {2, 4}}},
		{"mid batch", 6, 4, []EpochEntry{{1, 0}}},
		{"at batch base", 4, 4, []EpochEntry{{1, 0}}},
		{"inside first epoch", 3, 3, []EpochEntry{{1, 0}}},
		{"everything", 0, 0, nil},
	}
	forEach(t, func(t *testing.T, im impl) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				f := im.fresh(t)
				l := mustOpen(t, f)
				fill(t, l, 1, 1, 3, 1)
				fill(t, l, 2, 1, 5)
				fill(t, l, 4, 1, 2)
				l.SetHighWatermark(8)
				if err := l.Truncate(tt.offset); err != nil {
					t.Fatal(err)
				}
				check := func(when string) {
					t.Helper()
					if l.LogEndOffset() != tt.wantEnd {
						t.Fatalf("%s: end %d, want %d", when, l.LogEndOffset(), tt.wantEnd)
					}
					if e := l.Epochs(); !slices.Equal(e, tt.wantEpochs) {
						t.Fatalf("%s: epochs %v, want %v", when, e, tt.wantEpochs)
					}
					if hw := l.HighWatermark(); hw != min(8, tt.wantEnd) {
						t.Fatalf("%s: hw %d, want %d", when, hw, min(8, tt.wantEnd))
					}
					b, err := l.Read(0, 100, 1<<20)
					if err != nil {
						t.Fatal(err)
					}
					if tt.wantEnd == 0 {
						if b != nil {
							t.Fatalf("%s: read %d bytes from an empty log", when, len(b))
						}
					} else {
						checkValues(t, b, 0, tt.wantEnd)
					}
					if _, err := l.Read(tt.wantEnd+1, 100, 1<<20); !errors.Is(err, ErrOffsetOutOfRange) {
						t.Fatalf("%s: read past the new end: %v", when, err)
					}
				}
				check("after truncate")
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				l = mustOpen(t, f)
				check("after reopen")
				// The log continues at the new end with a new epoch.
				fill(t, l, 7, 1, 2)
				checkValues(t, readAll(t, l), 0, tt.wantEnd+2)
				if e := l.Epochs(); e[len(e)-1] != (EpochEntry{7, tt.wantEnd}) {
					t.Fatalf("epochs after append %v", e)
				}
			})
		}
		t.Run("below log start", func(t *testing.T) {
			l := mustOpen(t, im.fresh(t))
			if err := l.Truncate(-1); err == nil {
				t.Fatal("truncate to -1 succeeded")
			}
		})
	})
}

func TestEpochs(t *testing.T) {
	// Epochs 2 at 0, 5 at 3, (3 ignored: older), 7 at 6, (-1 ignored), 9 at 10.
	tests := []struct {
		epoch     int32
		wantEpoch int32
		wantEnd   int64
	}{
		{-1, -1, -1},
		{0, -1, -1},
		{1, -1, -1},
		{2, 2, 3},
		{3, 2, 3},
		{4, 2, 3},
		{5, 5, 6},
		{6, 5, 6},
		{7, 7, 10},
		{8, 7, 10},
		{9, 9, 12},
		{100, 9, 12},
	}
	forEach(t, func(t *testing.T, im impl) {
		f := im.fresh(t)
		l := mustOpen(t, f)
		if e, o := l.EndOffsetForEpoch(0); e != -1 || o != -1 {
			t.Fatalf("empty cache: (%d, %d)", e, o)
		}
		fill(t, l, 2, 1, 2, 1)
		fill(t, l, 5, 1, 1)
		fill(t, l, 3, 1, 2)
		fill(t, l, 7, 1, 3)
		fill(t, l, -1, 1, 1)
		fill(t, l, 9, 1, 2)
		want := []EpochEntry{{2, 0}, {5, 3}, {7, 6}, {9, 10}}
		for _, phase := range []string{"live", "reopened", "crashed"} {
			switch phase {
			case "reopened":
				if err := l.Close(); err != nil {
					t.Fatal(err)
				}
				l = mustOpen(t, f)
			case "crashed":
				// Epoch 11 appended after the last checkpoint.
				fill(t, l, 11, 1, 1)
				want = append(want, EpochEntry{11, 12})
				if err := l.Sync(); err != nil {
					t.Fatal(err)
				}
				l = mustOpen(t, im.crashed(t, f))
			}
			if e := l.Epochs(); !slices.Equal(e, want) {
				t.Fatalf("%s: epochs %v, want %v", phase, e, want)
			}
			for _, tt := range tests {
				if phase == "crashed" && tt.epoch >= 9 {
					continue
				}
				e, o := l.EndOffsetForEpoch(tt.epoch)
				if e != tt.wantEpoch || o != tt.wantEnd {
					t.Errorf("%s: EndOffsetForEpoch(%d) = (%d, %d), want (%d, %d)", phase, tt.epoch, e, o, tt.wantEpoch, tt.wantEnd)
				}
			}
		}
		if e, o := l.EndOffsetForEpoch(10); e != 9 || o != 12 {
			t.Errorf("EndOffsetForEpoch(10) = (%d, %d), want (9, 12)", e, o)
		}
		if e, o := l.EndOffsetForEpoch(11); e != 11 || o != 13 {
			t.Errorf("EndOffsetForEpoch(11) = (%d, %d), want (11, 13)", e, o)
		}
	})
}

func TestOffsetForTimestamp(t *testing.T) {
	// Max timestamps per batch, not monotonic: [0,2):100 [2,3):300 [3,5):200 [5,6):400.
	tests := []struct {
		ts             int64
		wantOff, wantT int64
		ok             bool
	}{
		{0, 0, 100, true},
		{100, 0, 100, true},
		{101, 2, 300, true},
		{200, 2, 300, true}, // the first batch at or after 200 is the 300 one, not the later 200
		{300, 2, 300, true},
		{301, 5, 400, true},
		{400, 5, 400, true},
		{401, 0, 0, false},
	}
	forEach(t, func(t *testing.T, im impl) {
		l := mustOpen(t, im.fresh(t))
		if _, _, ok := l.OffsetForTimestamp(0); ok {
			t.Fatal("empty log found a timestamp")
		}
		fill(t, l, 0, 100, 2)
		fill(t, l, 0, 300, 1)
		fill(t, l, 0, 200, 2)
		fill(t, l, 0, 400, 1)
		for _, tt := range tests {
			o, ts, ok := l.OffsetForTimestamp(tt.ts)
			if ok != tt.ok || (ok && (o != tt.wantOff || ts != tt.wantT)) {
				t.Errorf("OffsetForTimestamp(%d) = (%d, %d, %v), want (%d, %d, %v)", tt.ts, o, ts, ok, tt.wantOff, tt.wantT, tt.ok)
			}
		}
	})
}

func TestHighWatermark(t *testing.T) {
	forEach(t, func(t *testing.T, im impl) {
		f := im.fresh(t)
		l := mustOpen(t, f)
		fill(t, l, 0, 1, 4, 4, 4)
		l.SetHighWatermark(5)
		if err := l.Checkpoint(); err != nil {
			t.Fatal(err)
		}
		l.SetHighWatermark(9)
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		// A crash keeps the checkpointed HW, not the last one set.
		l = mustOpen(t, im.crashed(t, f))
		f = im.crashed(t, f)
		if hw := l.HighWatermark(); hw != 5 {
			t.Fatalf("hw after crash %d, want the checkpointed 5", hw)
		}
		// A clean close checkpoints.
		l.SetHighWatermark(12)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		l = mustOpen(t, f)
		if hw := l.HighWatermark(); hw != 12 {
			t.Fatalf("hw after close %d, want 12", hw)
		}
		// A checkpointed HW beyond the recovered log is clamped: checkpoint
		// 12, then truncate to 4 without checkpointing.
		if err := l.Truncate(6); err != nil {
			t.Fatal(err)
		}
		if hw := l.HighWatermark(); hw != 4 {
			t.Fatalf("hw after truncate %d, want 4", hw)
		}
		if err := l.Sync(); err != nil {
			t.Fatal(err)
		}
		l = mustOpen(t, im.crashed(t, f))
		if hw, end := l.HighWatermark(), l.LogEndOffset(); hw != 4 || end != 4 {
			t.Fatalf("after crash: hw %d end %d, want 4 and 4", hw, end)
		}
	})
}

func TestClosed(t *testing.T) {
	forEach(t, func(t *testing.T, im impl) {
		f := im.fresh(t)
		l := mustOpen(t, f)
		fill(t, l, 0, 1, 2)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatalf("second close: %v", err)
		}
		if err := l.Append(mk(2, 0, 1, 1)); !errors.Is(err, ErrClosed) {
			t.Errorf("append: %v", err)
		}
		if _, err := l.Read(0, 10, 100); !errors.Is(err, ErrClosed) {
			t.Errorf("read: %v", err)
		}
		if err := l.Truncate(0); !errors.Is(err, ErrClosed) {
			t.Errorf("truncate: %v", err)
		}
		if err := l.Sync(); !errors.Is(err, ErrClosed) {
			t.Errorf("sync: %v", err)
		}
		if err := l.Checkpoint(); !errors.Is(err, ErrClosed) {
			t.Errorf("checkpoint: %v", err)
		}
		if l = mustOpen(t, f); l.LogEndOffset() != 2 {
			t.Fatalf("reopened end %d", l.LogEndOffset())
		}
	})
}

func TestFactoryNames(t *testing.T) {
	bad := []struct {
		topic     string
		partition int32
	}{
		{"", 0}, {".", 0}, {"..", 0}, {"a/b", 0}, {"../x", 0}, {"a b", 0}, {"t", -1},
		{string(bytes.Repeat([]byte("x"), 250)), 0},
	}
	forEach(t, func(t *testing.T, im impl) {
		f := im.fresh(t)
		for _, b := range bad {
			if _, err := f.Open(b.topic, b.partition); err == nil {
				t.Errorf("Open(%q, %d) succeeded", b.topic, b.partition)
			}
		}
		// Partitions and topics are separate logs.
		a, _ := f.Open("a.b_c-1", 0)
		b, _ := f.Open("a.b_c-1", 1)
		c, _ := f.Open("a.b_c", 10)
		fill(t, a, 0, 1, 3)
		fill(t, b, 0, 1, 1)
		if a.LogEndOffset() != 3 || b.LogEndOffset() != 1 || c.LogEndOffset() != 0 {
			t.Fatalf("ends %d %d %d", a.LogEndOffset(), b.LogEndOffset(), c.LogEndOffset())
		}
	})
}

// TestReadStaysValid: the bytes a Read returned are not changed by later
// appends, truncations below them and appends over what was truncated (a
// broker answers a fetch after all three may have happened), whether the
// read was served from memory or from a file.
func TestReadStaysValid(t *testing.T) {
	forEach(t, func(t *testing.T, im impl) {
		l := mustOpen(t, im.fresh(t))
		fill(t, l, 1, 1, 3, 1, 5)
		var reads [][]byte
		var copies [][]byte
		for _, off := range []int64{0, 3, 4, 8} {
			b, err := l.Read(off, l.LogEndOffset(), 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			reads, copies = append(reads, b), append(copies, bytes.Clone(b))
		}
		fill(t, l, 1, 1, 2)
		if err := l.Truncate(2); err != nil {
			t.Fatal(err)
		}
		// The same offsets again, under another epoch and timestamp: other
		// bytes at the same positions.
		fill(t, l, 3, 9, 4, 6)
		for i := range reads {
			if !bytes.Equal(reads[i], copies[i]) {
				t.Fatalf("read %d changed after later appends and a truncation", i)
			}
		}
	})
}
