package storage

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// segFiles lists the segment file names of a partition directory.
func segFiles(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		if strings.HasSuffix(de.Name(), ".log") {
			names = append(names, de.Name())
		}
	}
	return names
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func openDisk(t *testing.T, f DiskFactory) *Disk {
	t.Helper()
	d, err := f.OpenDisk("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// batchSize is the size of every batch mk builds with two records, which
// these tests use to lay out segments exactly.
var batchSize = int64(len(mk(0, 0, 1, 2)))

func TestDiskSegmentRolling(t *testing.T) {
	f := DiskFactory{Dir: t.TempDir(), Options: Options{SegmentBytes: 3 * batchSize}}
	dir := PartitionDir(f.Dir, "t", 0)
	d := openDisk(t, f)
	for range 5 {
		fill(t, d, 0, 1, 2)
	}
	// Three batches fit in a segment; the fourth rolls.
	want := []string{segmentName(0), segmentName(6)}
	if got := segFiles(t, dir); !slices.Equal(got, want) {
		t.Fatalf("segments %v, want %v", got, want)
	}
	if s := fileSize(t, filepath.Join(dir, segmentName(0))); s != 3*batchSize {
		t.Fatalf("first segment %d bytes, want %d", s, 3*batchSize)
	}
	// An append larger than a segment goes whole into a new one.
	big := mk(10, 1, 1, 40)
	if err := d.Append(big); err != nil {
		t.Fatal(err)
	}
	fill(t, d, 1, 1, 2)
	want = append(want, segmentName(10), segmentName(50))
	if got := segFiles(t, dir); !slices.Equal(got, want) {
		t.Fatalf("segments %v, want %v", got, want)
	}
	all := readAll(t, d)
	checkValues(t, all, 0, 52)
	// A read spanning segments, limited by maxBytes, stops at a batch boundary.
	b, err := d.Read(2, 100, int(4*batchSize))
	if err != nil {
		t.Fatal(err)
	}
	checkValues(t, b, 2, 10)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	d = openDisk(t, f)
	if r := d.Recovery(); r.Segments != 4 || r.Batches != 7 || r.TruncatedAt != -1 || r.Reason != "" {
		t.Fatalf("recovery %+v", r)
	}
	if got := readAll(t, d); !bytes.Equal(got, all) {
		t.Fatal("read after reopen differs")
	}
	// Truncating into the second segment deletes the later ones and empties
	// it (7 is inside its first batch, [6, 8)).
	if err := d.Truncate(7); err != nil {
		t.Fatal(err)
	}
	want = want[:2]
	if got := segFiles(t, dir); !slices.Equal(got, want) {
		t.Fatalf("segments after truncate %v, want %v", got, want)
	}
	if s := fileSize(t, filepath.Join(dir, segmentName(6))); s != 0 {
		t.Fatalf("truncated segment %d bytes", s)
	}
	fill(t, d, 2, 1, 2, 2, 2, 2)
	want = append(want, segmentName(12))
	if got := segFiles(t, dir); !slices.Equal(got, want) {
		t.Fatalf("segments after refill %v, want %v", got, want)
	}
	all = readAll(t, d)
	checkValues(t, all, 0, 14)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = openDisk(t, f)
	if got := readAll(t, d); !bytes.Equal(got, all) || d.Recovery().TruncatedAt != -1 {
		t.Fatalf("after reopen: %d bytes, recovery %+v", len(got), d.Recovery())
	}
	if e := d.Epochs(); !slices.Equal(e, []EpochEntry{{0, 0}, {2, 6}}) {
		t.Fatalf("epochs %v", e)
	}
}

func TestDiskTornTail(t *testing.T) {
	next := mk(6, 0, 1, 2)
	tests := []struct {
		name string
		tail []byte
	}{
		{"garbage", []byte("this is not a record batch, it is garbage after a crash")},
		{"zeros", make([]byte, 4096)},
		{"a few header bytes", next[:30]},
		{"header only", next[:61]},
		{"half a batch", next[:len(next)/2]},
		{"all but one byte", next[:len(next)-1]},
		{"whole batch at the wrong offset", mk(9, 0, 1, 2)},
		{"whole batch with a bad crc", func() []byte { b := bytes.Clone(next); b[len(b)-2] ^= 0x40; return b }()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := DiskFactory{Dir: t.TempDir()}
			d := openDisk(t, f)
			good := fill(t, d, 0, 1, 2, 2, 2)
			d.SetHighWatermark(6)
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(PartitionDir(f.Dir, "t", 0), segmentName(0))
			if err := os.WriteFile(path, append(bytes.Clone(good), tt.tail...), 0o644); err != nil {
				t.Fatal(err)
			}
			d = openDisk(t, f)
			r := d.Recovery()
			if d.LogEndOffset() != 6 || r.TruncatedAt != 6 || r.TruncatedBytes != int64(len(tt.tail)) || r.Reason == "" {
				t.Fatalf("end %d, recovery %+v", d.LogEndOffset(), r)
			}
			if s := fileSize(t, path); s != int64(len(good)) {
				t.Fatalf("segment %d bytes after recovery, want %d", s, len(good))
			}
			if d.HighWatermark() != 6 {
				t.Fatalf("hw %d", d.HighWatermark())
			}
			fill(t, d, 1, 1, 2)
			checkValues(t, readAll(t, d), 0, 8)
			if err := d.Close(); err != nil {
				t.Fatal(err)
			}
			d = openDisk(t, f)
			if r := d.Recovery(); r.TruncatedAt != -1 || d.LogEndOffset() != 8 {
				t.Fatalf("second reopen: end %d, recovery %+v", d.LogEndOffset(), r)
			}
		})
	}
}

func TestDiskCorruptMiddle(t *testing.T) {
	f := DiskFactory{Dir: t.TempDir(), Options: Options{SegmentBytes: 3 * batchSize}}
	dir := PartitionDir(f.Dir, "t", 0)
	d := openDisk(t, f)
	// Four segments of three batches; each batch has its own epoch.
	for i := range 12 {
		fill(t, d, int32(i), 1, 2)
	}
	d.SetHighWatermark(24)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	// Flip the last byte (a record value) of the second batch of the
	// second segment: batch [8, 10).
	path := filepath.Join(dir, segmentName(6))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[2*batchSize-1] ^= 0xff
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	d = openDisk(t, f)
	r := d.Recovery()
	if d.LogEndOffset() != 8 || r.TruncatedAt != 8 || r.DeletedSegments != 2 || r.TruncatedBytes != 8*batchSize || !strings.Contains(r.Reason, "crc") {
		t.Fatalf("end %d, recovery %+v", d.LogEndOffset(), r)
	}
	if got := segFiles(t, dir); !slices.Equal(got, []string{segmentName(0), segmentName(6)}) {
		t.Fatalf("segments %v", got)
	}
	if hw := d.HighWatermark(); hw != 8 || !r.HighWatermarkClamped {
		t.Fatalf("hw %d clamped %v", hw, r.HighWatermarkClamped)
	}
	// The checkpoint had entries up to epoch 11; those beyond the log end
	// are dropped, the rest agree with the batches.
	want := []EpochEntry{{0, 0}, {1, 2}, {2, 4}, {3, 6}}
	if e := d.Epochs(); !slices.Equal(e, want) || r.EpochCheckpointDiffers {
		t.Fatalf("epochs %v, differs %v", e, r.EpochCheckpointDiffers)
	}
	checkValues(t, readAll(t, d), 0, 8)
	fill(t, d, 20, 1, 2)
	if e, o := d.EndOffsetForEpoch(3); e != 3 || o != 8 {
		t.Fatalf("EndOffsetForEpoch(3) = (%d, %d)", e, o)
	}
}

func TestDiskSegmentGap(t *testing.T) {
	f := DiskFactory{Dir: t.TempDir(), Options: Options{SegmentBytes: 3 * batchSize}}
	dir := PartitionDir(f.Dir, "t", 0)
	d := openDisk(t, f)
	fill(t, d, 0, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	// Losing the middle segment leaves a gap: the last one is unreachable.
	if err := os.Remove(filepath.Join(dir, segmentName(6))); err != nil {
		t.Fatal(err)
	}
	d = openDisk(t, f)
	if r := d.Recovery(); d.LogEndOffset() != 6 || r.DeletedSegments != 1 || r.TruncatedAt != 6 {
		t.Fatalf("end %d recovery %+v", d.LogEndOffset(), r)
	}
	if got := segFiles(t, dir); !slices.Equal(got, []string{segmentName(0)}) {
		t.Fatalf("segments %v", got)
	}
}

func TestDiskCheckpointFiles(t *testing.T) {
	f := DiskFactory{Dir: t.TempDir()}
	dir := PartitionDir(f.Dir, "t", 0)
	d := openDisk(t, f)
	fill(t, d, 0, 1, 2, 3)
	fill(t, d, 3, 1, 2)
	d.SetHighWatermark(7)
	if err := d.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if s := read(hwFile); s != "1\n7\n3058990603\n" {
		t.Fatalf("%s: %q", hwFile, s)
	}
	if s := read(epochFile); s != "0\n2\n0 0\n3 5\n" {
		t.Fatalf("%s: %q", epochFile, s)
	}
	// A stale checkpoint (before the epoch 3 batch) is a prefix: fine.
	fill(t, d, 4, 1, 1)
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	d = openDisk(t, f)
	if r := d.Recovery(); r.EpochCheckpointDiffers || !slices.Equal(d.Epochs(), []EpochEntry{{0, 0}, {3, 5}, {4, 7}}) {
		t.Fatalf("epochs %v, recovery %+v", d.Epochs(), r)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	// Unreadable checkpoints and a leftover temporary file do not stop the
	// log from opening; the batches are the truth.
	for name, content := range map[string]string{
		epochFile:             "0\n5\n1 2\n",
		hwFile:                "garbage",
		hwFile + tmpSuffix:    "0\n99\n",
		epochFile + tmpSuffix: "",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d = openDisk(t, f)
	if r := d.Recovery(); !r.EpochCheckpointDiffers || d.HighWatermark() != 0 || d.LogEndOffset() != 8 {
		t.Fatalf("hw %d end %d recovery %+v", d.HighWatermark(), d.LogEndOffset(), r)
	}
	if !slices.Equal(d.Epochs(), []EpochEntry{{0, 0}, {3, 5}, {4, 7}}) {
		t.Fatalf("epochs %v", d.Epochs())
	}
	for _, name := range []string{hwFile + tmpSuffix, epochFile + tmpSuffix} {
		if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Fatalf("%s not removed: %v", name, err)
		}
	}
	// An unchanged checkpoint is not rewritten.
	if err := d.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	st1, _ := os.Stat(filepath.Join(dir, hwFile))
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o755)
	if os.Geteuid() != 0 {
		if err := d.Checkpoint(); err != nil {
			t.Fatalf("unchanged checkpoint wrote: %v", err)
		}
		d.SetHighWatermark(3)
		if err := d.Checkpoint(); err == nil {
			t.Fatal("checkpoint into a read-only directory succeeded")
		}
	}
	os.Chmod(dir, 0o755)
	st2, _ := os.Stat(filepath.Join(dir, hwFile))
	if !st1.ModTime().Equal(st2.ModTime()) {
		t.Fatal("checkpoint rewritten")
	}
}

// Each case runs ops on a Disk that is then dropped without Close (a crash);
// the reopened log must end at wantEnd.
func TestDiskLoseUnsynced(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		ops     func(t *testing.T, d *Disk)
		wantEnd int64
	}{
		{
			name: "never: unsynced suffix lost",
			opts: Options{LoseUnsynced: true},
			ops: func(t *testing.T, d *Disk) {
				fill(t, d, 0, 1, 2, 2, 2)
				mustSync(t, d)
				fill(t, d, 1, 1, 2, 2)
			},
			wantEnd: 6,
		},
		{
			name: "never: nothing synced",
			opts: Options{LoseUnsynced: true},
			ops: func(t *testing.T, d *Disk) {
				fill(t, d, 0, 1, 2, 2, 2)
			},
			wantEnd: 0,
		},
		{
			name: "without LoseUnsynced a killed process loses nothing",
			opts: Options{},
			ops: func(t *testing.T, d *Disk) {
				fill(t, d, 0, 1, 2, 2, 2)
			},
			wantEnd: 6,
		},
		{
			name: "always keeps everything",
			opts: Options{LoseUnsynced: true, Fsync: FsyncAlways},
			ops: func(t *testing.T, d *Disk) {
				fill(t, d, 0, 1, 2, 2, 2, 2, 2)
				if err := d.Truncate(7); err != nil {
					t.Fatal(err)
				}
				fill(t, d, 1, 1, 2)
			},
			wantEnd: 8,
		},
		{
			name: "truncate within the unsynced part",
			opts: Options{LoseUnsynced: true},
			ops: func(t *testing.T, d *Disk) {
				fill(t, d, 0, 1, 2, 2)
				mustSync(t, d)
				fill(t, d, 0, 1, 2, 2, 2)
				if err := d.Truncate(7); err != nil {
					t.Fatal(err)
				}
				checkValues(t, readAll(t, d), 0, 6)
				fill(t, d, 1, 1, 2)
				checkValues(t, readAll(t, d), 0, 8)
			},
			wantEnd: 4,
		},
		{
			name: "truncate into the synced part, then sync",
			opts: Options{LoseUnsynced: true},
			ops: func(t *testing.T, d *Disk) {
				fill(t, d, 0, 1, 2, 2, 2)
				mustSync(t, d)
				fill(t, d, 0, 1, 2, 2)
				if err := d.Truncate(3); err != nil {
					t.Fatal(err)
				}
				fill(t, d, 1, 1, 2)
				mustSync(t, d)
				fill(t, d, 1, 1, 2)
				checkValues(t, readAll(t, d), 0, 6)
			},
			wantEnd: 4,
		},
		{
			name: "truncate into the synced part, new appends lost",
			opts: Options{LoseUnsynced: true},
			ops: func(t *testing.T, d *Disk) {
				fill(t, d, 0, 1, 2, 2, 2)
				mustSync(t, d)
				if err := d.Truncate(2); err != nil {
					t.Fatal(err)
				}
				fill(t, d, 1, 1, 2, 2)
			},
			wantEnd: 2,
		},
		{
			name: "rolled segments are synced",
			opts: Options{LoseUnsynced: true, SegmentBytes: 2 * batchSize},
			ops: func(t *testing.T, d *Disk) {
				fill(t, d, 0, 1, 2, 2, 2, 2, 2)
				checkValues(t, readAll(t, d), 0, 10)
			},
			wantEnd: 8,
		},
		{
			name: "interval: Append syncs once due",
			opts: Options{LoseUnsynced: true, Fsync: FsyncInterval, FsyncIntervalMs: 100},
			ops: func(t *testing.T, d *Disk) {
				*clock = 10
				fill(t, d, 0, 1, 2) // opened at 0: not due
				*clock = 99
				fill(t, d, 0, 1, 2)
				*clock = 100
				fill(t, d, 0, 1, 2) // due: [0, 6) synced at 100
				*clock = 150
				fill(t, d, 0, 1, 2)
				if err := d.MaybeSync(199); err != nil { // not due
					t.Fatal(err)
				}
			},
			wantEnd: 6,
		},
		{
			name: "interval: MaybeSync syncs once due",
			opts: Options{LoseUnsynced: true, Fsync: FsyncInterval, FsyncIntervalMs: 100},
			ops: func(t *testing.T, d *Disk) {
				*clock = 10
				fill(t, d, 0, 1, 2)
				for _, now := range []int64{50, 99, 100} { // due at 100: [0, 2)
					if err := d.MaybeSync(now); err != nil {
						t.Fatal(err)
					}
				}
				*clock = 120
				fill(t, d, 0, 1, 2)
				if err := d.MaybeSync(199); err != nil { // not due
					t.Fatal(err)
				}
			},
			wantEnd: 2,
		},
		{
			name: "MaybeSync does nothing under FsyncNever",
			opts: Options{LoseUnsynced: true},
			ops: func(t *testing.T, d *Disk) {
				fill(t, d, 0, 1, 2)
				if err := d.MaybeSync(1 << 40); err != nil {
					t.Fatal(err)
				}
			},
			wantEnd: 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			*clock = 0
			tt.opts.NowMs = func() int64 { return *clock }
			f := DiskFactory{Dir: t.TempDir(), Options: tt.opts}
			d := openDisk(t, f)
			d.SetHighWatermark(1)
			if err := d.Checkpoint(); err != nil {
				t.Fatal(err)
			}
			tt.ops(t, d)
			// The crash: d is dropped, never closed.
			d2 := openDisk(t, f)
			if d2.LogEndOffset() != tt.wantEnd {
				t.Fatalf("end after crash %d, want %d (recovery %+v)", d2.LogEndOffset(), tt.wantEnd, d2.Recovery())
			}
			if tt.wantEnd > 0 {
				checkValues(t, readAll(t, d2), 0, tt.wantEnd)
			}
			if d2.Recovery().TruncatedAt != -1 {
				t.Fatalf("losing unsynced writes left a torn tail: %+v", d2.Recovery())
			}
			if d2.HighWatermark() != min(1, tt.wantEnd) {
				t.Fatalf("hw %d", d2.HighWatermark())
			}
			// Unlike a crash, Close keeps everything.
			fill(t, d2, 5, 1, 2)
			if err := d2.Close(); err != nil {
				t.Fatal(err)
			}
			d3 := openDisk(t, f)
			if d3.LogEndOffset() != tt.wantEnd+2 {
				t.Fatalf("end after close %d, want %d", d3.LogEndOffset(), tt.wantEnd+2)
			}
		})
	}
}

var clock = new(int64)

func mustSync(t *testing.T, d *Disk) {
	t.Helper()
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
}

func TestOpenDiskErrors(t *testing.T) {
	if _, err := OpenDisk(t.TempDir(), Options{Fsync: Fsync(9)}); err == nil {
		t.Fatal("unknown fsync policy accepted")
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := (DiskFactory{Dir: file}).Open("t", 0); err == nil {
		t.Fatal("opened a log under a regular file")
	}
}

func TestParseFsync(t *testing.T) {
	tests := []struct {
		in     string
		want   Fsync
		ms     int64
		bad    bool
		format string
	}{
		{in: "never", want: FsyncNever, format: "never"},
		{in: " Always ", want: FsyncAlways, format: "always"},
		{in: "interval", want: FsyncInterval, ms: DefaultFsyncIntervalMs, format: "interval:1s"},
		{in: "interval:100ms", want: FsyncInterval, ms: 100, format: "interval:100ms"},
		{in: "interval:2s", want: FsyncInterval, ms: 2000, format: "interval:2s"},
		{in: "interval:1m30s", want: FsyncInterval, ms: 90000, format: "interval:1m30s"},
		{in: "250ms", bad: true}, // a bare duration: the policy is always named
		{in: "2s", bad: true},
		{in: "", bad: true},
		{in: "sometimes", bad: true},
		{in: "interval:", bad: true},
		{in: "0", bad: true},
		{in: "interval:0ms", bad: true},
		{in: "interval:-5ms", bad: true},
		{in: "interval:1.5ms", bad: true},
		{in: "interval:500us", bad: true},
		{in: "interval:never", bad: true},
	}
	for _, tt := range tests {
		p, ms, err := ParseFsync(tt.in)
		if tt.bad {
			if err == nil {
				t.Errorf("ParseFsync(%q) = (%v, %d), want an error", tt.in, p, ms)
			}
			continue
		}
		if err != nil || p != tt.want || ms != tt.ms {
			t.Errorf("ParseFsync(%q) = (%v, %d, %v), want (%v, %d)", tt.in, p, ms, err, tt.want, tt.ms)
			continue
		}
		s := FormatFsync(p, ms)
		if s != tt.format {
			t.Errorf("FormatFsync(%v, %d) = %q, want %q", p, ms, s, tt.format)
		}
		if p2, ms2, err := ParseFsync(s); err != nil || p2 != p || ms2 != ms {
			t.Errorf("ParseFsync(FormatFsync) of %q: (%v, %d, %v)", s, p2, ms2, err)
		}
	}
}

// TestDiskTailCache: what a Disk serves from the tail it keeps in memory
// is what its file holds, as the tail fills, drops its older half, meets
// a batch larger than itself, and is cut by a truncation and a roll: every
// read, from every offset, equals the same read of the directory opened
// afresh (which has no tail).
func TestDiskTailCache(t *testing.T) {
	defer func(n, c int) { tailLimit, tailChunkSize = n, c }(tailLimit, tailChunkSize)
	tailLimit, tailChunkSize = 4096, 1024
	dir := t.TempDir()
	f := DiskFactory{Dir: dir, Options: Options{SegmentBytes: 64 << 10}}
	l := mustOpen(t, f)
	check := func(what string) {
		t.Helper()
		fresh, err := OpenDisk(PartitionDir(dir, "t", 0), Options{SegmentBytes: 64 << 10})
		if err != nil {
			t.Fatal(err)
		}
		defer fresh.closeFiles()
		for off := l.LogStartOffset(); off < l.LogEndOffset(); off += 7 {
			got, err1 := l.Read(off, l.LogEndOffset(), 1<<20)
			want, err2 := fresh.Read(off, l.LogEndOffset(), 1<<20)
			if err1 != nil || err2 != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: read from %d: %d bytes (%v), the file %d (%v)", what, off, len(got), err1, len(want), err2)
			}
		}
	}
	// A reader after every append, as a leader's followers fetch.
	follow := func() {
		t.Helper()
		if _, err := l.Read(max(l.LogStartOffset(), l.LogEndOffset()-3), l.LogEndOffset(), 1<<20); err != nil {
			t.Fatal(err)
		}
	}
	sizes := []int{1, 3, 40, 2, 90, 1, 200, 5} // 200 records is a batch larger than the tail
	for i := range 60 {
		fill(t, l, 0, 1, sizes[i%len(sizes)])
		follow()
	}
	check("filled")
	if err := l.Truncate(l.LogEndOffset() - 150); err != nil {
		t.Fatal(err)
	}
	check("truncated")
	for i := range 200 {
		fill(t, l, 1, 2, sizes[i%len(sizes)])
		follow()
	}
	check("rolled")
	d := l.(*Disk)
	if len(d.segs) < 3 || len(d.tail) < 2 || d.tailBytes > tailLimit+tailChunkSize {
		t.Fatalf("%d segments, a tail of %d chunks and %d bytes: the test did not exercise the tail", len(d.segs), len(d.tail), d.tailBytes)
	}
	// A log nobody reads (a follower's) stops keeping a tail, and starts
	// again once read.
	for i := range unreadLimit + 1 {
		fill(t, l, 1, 3, sizes[i%len(sizes)])
	}
	if len(d.tail) != 0 {
		t.Fatalf("a tail of %d chunks after %d appends nobody read", len(d.tail), unreadLimit+1)
	}
	check("unread")
	for i := range 5 {
		fill(t, l, 1, 4, sizes[i%len(sizes)])
		follow()
	}
	if len(d.tail) == 0 {
		t.Fatal("no tail after reads resumed")
	}
	check("read again")
}
