package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"
	"testing/iotest"
)

func sized(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

func TestReadFrame(t *testing.T) {
	stream := append(sized([]byte("hello")), sized(nil)...)
	stream = append(stream, sized([]byte("world!"))...)
	r := iotest.OneByteReader(bytes.NewReader(stream))
	buf := make([]byte, 0, 16)
	for _, want := range []string{"hello", "", "world!"} {
		got, err := ReadFrame(r, 0, buf)
		if err != nil || string(got) != want {
			t.Fatalf("ReadFrame = %q, %v; want %q", got, err, want)
		}
		if len(got) > 0 && &got[0] != &buf[:1][0] {
			t.Fatal("buffer with room was not reused")
		}
	}
	if _, err := ReadFrame(r, 0, buf); err != io.EOF {
		t.Fatalf("clean end: err = %v, want io.EOF", err)
	}
}

func TestReadFrameCutShort(t *testing.T) {
	full := sized([]byte("hello"))
	for n := 1; n < len(full); n++ {
		if _, err := ReadFrame(bytes.NewReader(full[:n]), 0, nil); err != io.ErrUnexpectedEOF {
			t.Fatalf("%d of %d bytes: err = %v, want io.ErrUnexpectedEOF", n, len(full), err)
		}
	}
}

// A frame bigger than the first chunk takes the grow-as-it-arrives path.
func TestReadFrameLarge(t *testing.T) {
	body := make([]byte, 3*frameChunk+17)
	for i := range body {
		body[i] = byte(i * 7)
	}
	got, err := ReadFrame(iotest.HalfReader(bytes.NewReader(sized(body))), 0, make([]byte, 0, 64))
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("large frame: err %v, equal %v", err, bytes.Equal(got, body))
	}
}

// countingReader records how much the frame reader asked for.
type countingReader struct {
	r    io.Reader
	read int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read += n
	return n, err
}

// endless yields zero bytes forever: a peer that would keep sending.
type endless struct{}

func (endless) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func allocatedDuring(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestReadFrameRefusesOversizeBeforeAllocating(t *testing.T) {
	for _, size := range []uint32{0x7fffffff, 0x80000000, 0xffffffff, uint32(DefaultMaxFrameSize) + 1} {
		var err error
		var c *countingReader
		alloc := allocatedDuring(func() {
			for range 10 {
				c = &countingReader{r: io.MultiReader(bytes.NewReader(binary.BigEndian.AppendUint32(nil, size)), endless{})}
				_, err = ReadFrame(c, 0, nil)
			}
		})
		if !errors.Is(err, ErrFrameTooLarge) {
			t.Fatalf("size %#x: err = %v", size, err)
		}
		if c.read != 4 {
			t.Fatalf("size %#x: read %d bytes past the size", size, c.read-4)
		}
		if alloc > 64<<10 {
			t.Fatalf("size %#x: allocated %d bytes refusing 10 frames", size, alloc)
		}
	}
	// The limit is the caller's.
	if _, err := ReadFrame(bytes.NewReader(sized(make([]byte, 11))), 10, nil); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("11 bytes with limit 10: %v", err)
	}
	if _, err := ReadFrame(bytes.NewReader(sized(make([]byte, 10))), 10, nil); err != nil {
		t.Fatalf("10 bytes with limit 10: %v", err)
	}
}

// A peer announcing a large (allowed) frame and then stalling costs memory
// in proportion to what it sent, not to what it announced.
func TestReadFrameAllocatesAsBytesArrive(t *testing.T) {
	announce := binary.BigEndian.AppendUint32(nil, 64<<20)
	var err error
	alloc := allocatedDuring(func() {
		_, err = ReadFrame(io.MultiReader(bytes.NewReader(announce), bytes.NewReader(make([]byte, 100))), 0, nil)
	})
	if err != io.ErrUnexpectedEOF {
		t.Fatalf("err = %v", err)
	}
	if alloc > 2*frameChunk {
		t.Fatalf("allocated %d bytes for a 64 MiB announcement with 100 bytes sent", alloc)
	}
}
