package batch

import (
	"bytes"
	"errors"
	"math"
	"testing"
)

func TestBuildParseStampValues(t *testing.T) {
	b := Build(1000, []byte("a"), []byte("bb"), []byte("ccc"))
	hs, err := Validate(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 1 || hs[0].Count() != 3 || hs[0].NumRecords != 3 || hs[0].Size() != len(b) {
		t.Fatalf("header %+v, len %d", hs, len(b))
	}
	Stamp(b, 40, 7)
	h, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.BaseOffset != 40 || h.LeaderEpoch != 7 || h.LastOffset() != 42 {
		t.Fatalf("stamped header %+v", h)
	}
	if err := Verify(b, h); err != nil {
		t.Fatalf("stamping broke the crc: %v", err)
	}
	offs, vals, err := Values(append(b, Build(1, []byte("d"))...))
	if err != nil {
		t.Fatal(err)
	}
	want := [][]byte{[]byte("a"), []byte("bb"), []byte("ccc"), []byte("d")}
	if len(vals) != 4 || offs[0] != 40 || offs[2] != 42 || offs[3] != 0 {
		t.Fatalf("offsets %v values %q", offs, vals)
	}
	for i := range want {
		if !bytes.Equal(vals[i], want[i]) {
			t.Fatalf("value %d = %q", i, vals[i])
		}
	}
}

func TestCorruptionAndTornTail(t *testing.T) {
	b := Build(1, []byte("hello"))
	bad := bytes.Clone(b)
	bad[len(bad)-1] ^= 0xff
	if _, err := Validate(bad); err == nil {
		t.Fatal("a flipped byte passed the crc")
	}
	two := append(bytes.Clone(b), b[:len(b)-3]...)
	n, err := Walk(two, func(Header, []byte) bool { return true })
	if !errors.Is(err, ErrShort) || n != len(b) {
		t.Fatalf("torn tail: n=%d err=%v", n, err)
	}
	if _, err := Validate(two); err == nil {
		t.Fatal("torn payload validated")
	}
	if _, err := Validate(nil); err == nil {
		t.Fatal("empty payload validated")
	}
}

// TestProducerFields: the idempotent producer's fields come back from the
// header, and the last sequence wraps from MaxInt32 to 0 as producers
// number records.
func TestProducerFields(t *testing.T) {
	b := BuildIdempotent(1<<40+3, 7, 10, 0, []byte("a"), []byte("b"), []byte("c"))
	h, err := Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(b, h); err != nil {
		t.Fatal(err)
	}
	if h.ProducerID != 1<<40+3 || h.ProducerEpoch != 7 || h.BaseSequence != 10 || h.LastSequence() != 12 {
		t.Fatalf("header %+v, last sequence %d", h, h.LastSequence())
	}
	if h.Transactional() || h.Control() {
		t.Fatalf("attributes %#x read as transactional or control", h.Attributes)
	}
	h, _ = Parse(BuildIdempotent(5, 0, math.MaxInt32-1, 0, []byte("a"), []byte("b"), []byte("c")))
	if h.LastSequence() != 0 {
		t.Fatalf("last sequence %d after MaxInt32-1 and three records, want 0 (wrapped)", h.LastSequence())
	}
	h, _ = Parse(Build(0, []byte("a")))
	if h.ProducerID != NoProducerID || h.ProducerEpoch != -1 || h.BaseSequence != -1 || h.LastSequence() != -1 {
		t.Fatalf("a non-idempotent batch: %+v, last sequence %d", h, h.LastSequence())
	}
	b[21+1] |= 0x10 // attributes' low byte: the transactional bit
	if h, _ = Parse(b); !h.Transactional() {
		t.Fatal("the transactional bit is not seen")
	}
}

// TestControlMarker: a marker says commit or abort, and is a valid
// transactional control batch of its producer.
func TestControlMarker(t *testing.T) {
	for _, commit := range []bool{true, false} {
		b := BuildControl(42, 3, 1000, commit, 7)
		hs, err := Validate(b)
		if err != nil || len(hs) != 1 {
			t.Fatalf("validate: %v", err)
		}
		h := hs[0]
		if !h.Control() || !h.Transactional() || h.ProducerID != 42 || h.ProducerEpoch != 3 || h.Count() != 1 {
			t.Fatalf("header %+v", h)
		}
		if got, ok := ControlCommit(b); !ok || got != commit {
			t.Fatalf("commit %v: read %v %v", commit, got, ok)
		}
	}
	if _, ok := ControlCommit(Build(0, []byte("x"))); ok {
		t.Fatal("an ordinary batch read as a marker")
	}
}
