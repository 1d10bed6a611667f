package storage

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chaos-isr/chaos/broker/batch"
	"github.com/chaos-isr/chaos/broker/bug"
)

// The planted storage bug (package bug), recovery-keeps-torn-tail: its
// effect with it on, and its absence with it off.

var tornBug = bug.Of(bug.RecoveryKeepsTornTail)

// badCRCs returns the base offsets of the batches in b that fail their CRC.
func badCRCs(t *testing.T, b []byte) []int64 {
	t.Helper()
	bad := []int64{}
	if _, err := batch.Walk(b, func(h batch.Header, raw []byte) bool {
		if batch.Verify(raw, h) != nil {
			bad = append(bad, h.BaseOffset)
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return bad
}

func torn(b []byte) []byte {
	b = bytes.Clone(b)
	tear(b)
	return b
}

// A damaged tail left by a crash: without the bug recovery cuts it; with
// it a batch whose header is sane and continues the log is kept, and
// served although it fails its CRC. What has no sane header, or is cut
// short, is cut either way.
func TestBugRecoveryKeepsTornTail(t *testing.T) {
	next := mk(6, 0, 1, 2)
	for _, tc := range []struct {
		name string
		tail []byte
		kept bool // with the bug
	}{
		{"records torn", torn(next), true},
		{"whole batch with a bad crc", func() []byte { b := bytes.Clone(next); b[len(b)-2] ^= 0x40; return b }(), true},
		{"half a batch", next[:len(next)/2], false},
		{"whole batch at the wrong offset", torn(mk(9, 0, 1, 2)), false},
		{"garbage", []byte("this is not a record batch, it is garbage after a crash"), false},
	} {
		for _, on := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/bug=%v", tc.name, on), func(t *testing.T) {
				f := DiskFactory{Dir: t.TempDir()}
				d := openDisk(t, f)
				good := fill(t, d, 0, 1, 2, 2, 2)
				if err := d.Close(); err != nil {
					t.Fatal(err)
				}
				path := filepath.Join(PartitionDir(f.Dir, "t", 0), segmentName(0))
				if err := os.WriteFile(path, append(bytes.Clone(good), tc.tail...), 0o644); err != nil {
					t.Fatal(err)
				}
				if on {
					f.Bugs = tornBug
				}
				d = openDisk(t, f)
				kept := on && tc.kept
				wantEnd, wantCut, wantBad := int64(6), int64(6), []int64{}
				if kept {
					wantEnd, wantCut, wantBad = 8, -1, []int64{6}
				}
				if d.LogEndOffset() != wantEnd || d.Recovery().TruncatedAt != wantCut {
					t.Fatalf("end %d, recovery %+v; want end %d, cut at %d", d.LogEndOffset(), d.Recovery(), wantEnd, wantCut)
				}
				if bad := badCRCs(t, readAll(t, d)); !slices.Equal(bad, wantBad) {
					t.Fatalf("batches at %v fail their crc, want %v", bad, wantBad)
				}
			})
		}
	}
}

// With --lose-unsynced the bug also makes a crash tear the unsynced
// batches (their headers on disk, their records not) rather than lose them:
// the buggy recovery serves them, a correct one cuts them. Without the bug
// they are lost cleanly, as always.
func TestBugRecoveryKeepsTornTailLoseUnsynced(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprintf("bug=%v", on), func(t *testing.T) {
			f := DiskFactory{Dir: t.TempDir(), Options: Options{LoseUnsynced: true}}
			if on {
				f.Bugs = tornBug
			}
			d := openDisk(t, f)
			fill(t, d, 0, 1, 2, 2, 2)
			mustSync(t, d)
			fill(t, d, 1, 1, 2, 2)
			checkValues(t, readAll(t, d), 0, 10) // before the crash the log reads whole
			// The crash: d is dropped, never closed.
			d2 := openDisk(t, f)
			wantEnd, wantBad := int64(6), []int64{}
			if on {
				wantEnd, wantBad = 10, []int64{6, 8}
			}
			if d2.LogEndOffset() != wantEnd || d2.Recovery().TruncatedAt != -1 {
				t.Fatalf("end %d, recovery %+v; want end %d, nothing cut", d2.LogEndOffset(), d2.Recovery(), wantEnd)
			}
			if bad := badCRCs(t, readAll(t, d2)); !slices.Equal(bad, wantBad) {
				t.Fatalf("batches at %v fail their crc, want %v", bad, wantBad)
			}
			if !on {
				return
			}
			// The same files opened by a correct recovery: the torn batches
			// are cut.
			d3 := openDisk(t, DiskFactory{Dir: f.Dir, Options: Options{LoseUnsynced: true}})
			if r := d3.Recovery(); d3.LogEndOffset() != 6 || r.TruncatedAt != 6 || !strings.Contains(r.Reason, "crc") {
				t.Fatalf("correct recovery of torn batches: end %d, recovery %+v", d3.LogEndOffset(), r)
			}
		})
	}
}

// Under the bug's crash model, a sync writes the real batches over their
// torn copies, and a truncation of unsynced batches takes their torn copies
// with them.
func TestBugTornCopiesFollowSyncAndTruncate(t *testing.T) {
	f := DiskFactory{Dir: t.TempDir(), Options: Options{LoseUnsynced: true, Bugs: tornBug}}
	d := openDisk(t, f)
	fill(t, d, 0, 1, 2, 2)
	mustSync(t, d)
	fill(t, d, 0, 1, 2, 2)
	if err := d.Truncate(6); err != nil {
		t.Fatal(err)
	}
	d2 := openDisk(t, f)
	if d2.LogEndOffset() != 6 {
		t.Fatalf("end %d, want 6: the truncated batch's torn copy stayed", d2.LogEndOffset())
	}
	if bad := badCRCs(t, readAll(t, d2)); !slices.Equal(bad, []int64{4}) {
		t.Fatalf("batches at %v fail their crc, want [4]: synced batches must be whole, the unsynced one torn", bad)
	}
}

// The in-memory log: LoseUnsynced without the bug cuts back to the last
// sync; with it the unsynced batches stay, torn, and a slice read before
// the crash keeps its bytes.
func TestBugRecoveryKeepsTornTailMemory(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprintf("bug=%v", on), func(t *testing.T) {
			f := &MemoryFactory{}
			if on {
				f.Bugs = tornBug
			}
			m, err := f.OpenMemory("t", 0)
			if err != nil {
				t.Fatal(err)
			}
			fill(t, m, 0, 1, 2, 2)
			m.Sync()
			fill(t, m, 1, 1, 2, 2)
			before := readAll(t, m)
			f.LoseUnsynced()
			m, err = f.OpenMemory("t", 0)
			if err != nil {
				t.Fatal(err)
			}
			wantEnd, wantBad := int64(4), []int64{}
			if on {
				wantEnd, wantBad = 8, []int64{4, 6}
			}
			if m.LogEndOffset() != wantEnd {
				t.Fatalf("end %d, want %d", m.LogEndOffset(), wantEnd)
			}
			if bad := badCRCs(t, readAll(t, m)); !slices.Equal(bad, wantBad) {
				t.Fatalf("batches at %v fail their crc, want %v", bad, wantBad)
			}
			checkValues(t, before, 0, 8)
			if epochs := m.Epochs(); on && (len(epochs) != 2 || epochs[1] != (EpochEntry{Epoch: 1, StartOffset: 4})) {
				t.Fatalf("epochs %v: the torn batches' headers still count", epochs)
			}
		})
	}
}

func TestOptionsRefuseBugsOfOtherNodes(t *testing.T) {
	o := Options{Bugs: bug.Of(bug.OffsetReuse)}
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "lives in the broker") {
		t.Fatalf("a broker bug in storage options: %v", err)
	}
	if _, err := OpenDisk(t.TempDir(), o); err == nil {
		t.Fatal("a log opened with a broker bug")
	}
	if err := (Options{Bugs: tornBug}).Validate(); err != nil {
		t.Fatal(err)
	}
}
