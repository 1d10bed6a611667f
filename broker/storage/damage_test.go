package storage

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/chaos-isr/chaos/broker/batch"
)

// TestMemoryDamageNeverServed: whatever a disk fault flips or cuts, the
// log reopened after it serves only batches that pass their CRC and
// continue the log, a prefix of what it had; with planted bug
// recovery-keeps-torn-tail some seed serves a corrupt batch.
func TestMemoryDamageNeverServed(t *testing.T) {
	for _, on := range []bool{false, true} {
		served := 0
		for seed := uint64(1); seed <= 200; seed++ {
			f := &MemoryFactory{}
			if on {
				f.Bugs = tornBug
			}
			m, err := f.OpenMemory("t", 0)
			if err != nil {
				t.Fatal(err)
			}
			fill(t, m, 0, 1, 3, 1, 2, 4)
			m.SetHighWatermark(m.LogEndOffset())
			m.Close()
			before := readAll(t, func() *Memory { m.closed = false; return m }())
			m.closed = true
			what := DamageCorrupt
			if seed%2 == 0 {
				what = DamageTruncate
			}
			if _, err := f.Damage(what, rand.New(rand.NewPCG(seed, 0))); err != nil {
				t.Fatal(err)
			}
			m, err = f.OpenMemory("t", 0)
			if err != nil {
				t.Fatal(err)
			}
			after := readAll(t, m)
			if bad := badCRCs(t, after); len(bad) > 0 {
				if !on {
					t.Fatalf("seed %d: batches at %v fail their crc after %s, and are served", seed, bad, what)
				}
				served++
				continue
			}
			if !on && !slices.Equal(maskEpochs(t, after), maskEpochs(t, before[:len(after)])) {
				t.Fatalf("seed %d: the log after %s is not a prefix of the one before", seed, what)
			}
			if m.HighWatermark() > m.LogEndOffset() {
				t.Fatalf("seed %d: hw %d past the end %d", seed, m.HighWatermark(), m.LogEndOffset())
			}
		}
		if on && served == 0 {
			t.Fatal("planted bug recovery-keeps-torn-tail: no damage was ever served")
		}
	}
}

// maskEpochs zeroes each batch's partition leader epoch, which Kafka's
// batch format leaves outside the CRC: a flip there cannot be told from
// the batch (Kafka has the same gap), so it is the one change a recovered
// log may show.
func maskEpochs(t *testing.T, b []byte) []byte {
	t.Helper()
	b = slices.Clone(b)
	for pos := 0; pos < len(b); {
		h, err := batch.Parse(b[pos:])
		if err != nil {
			t.Fatal(err)
		}
		clear(b[pos+12 : pos+16])
		pos += h.Size()
	}
	return b
}

// TestDamagedHWCheckpoint: a bit flipped in the HW checkpoint makes it
// fail its checksum, and the HW is read as none rather than another
// number.
func TestDamagedHWCheckpoint(t *testing.T) {
	dir := t.TempDir()
	d, err := OpenDisk(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fill(t, d, 0, 1, 2, 2, 2, 2, 2)
	d.SetHighWatermark(4)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, hwFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[2] ^= 0x0c // "4" becomes "8": a number, but not the one written
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	d, err = OpenDisk(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.HighWatermark() != 0 || !d.Recovery().HighWatermarkDamaged {
		t.Fatalf("hw %d, recovery %+v: want 0 and HighWatermarkDamaged", d.HighWatermark(), d.Recovery())
	}
}
