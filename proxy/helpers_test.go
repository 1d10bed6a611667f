package proxy

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// waitLimit bounds every wait for something that should happen; the tests
// never sleep to assert that something happened.
const waitLimit = 10 * time.Second

// quiet is how long a test listens for something that must not happen
// (an answer through a blackhole). It only has to be long compared with a
// loopback round trip.
const quiet = 300 * time.Millisecond

// server is a test target on 127.0.0.1: it echoes what it reads, or with
// sink set discards it after checking that it is the pattern stream.
type server struct {
	ln       net.Listener
	sink     bool
	accepted atomic.Int64
	received atomic.Int64
	badByte  atomic.Int64 // offset+1 of the first byte off the pattern
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    []net.Conn
}

func newServer(tb testing.TB, sink bool) *server {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := &server{ln: ln, sink: sink}
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Go(func() { s.handle(c) })
		}
	})
	tb.Cleanup(s.close)
	return s
}

func (s *server) addr() string { return s.ln.Addr().String() }

func (s *server) handle(c net.Conn) {
	defer c.Close()
	buf := make([]byte, 64<<10)
	var off int64
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if s.sink {
				for i, b := range buf[:n] {
					if b != patternByte(off+int64(i)) && s.badByte.Load() == 0 {
						s.badByte.Store(off + int64(i) + 1)
					}
				}
			}
			off += int64(n)
			s.received.Add(int64(n))
			if !s.sink {
				if _, err := c.Write(buf[:n]); err != nil {
					return
				}
			}
		}
		if err != nil {
			if tc, ok := c.(*net.TCPConn); ok && errors.Is(err, io.EOF) {
				tc.CloseWrite()
			}
			return
		}
	}
}

func (s *server) close() {
	s.ln.Close()
	s.mu.Lock()
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// patternByte is byte i of the stream the order tests send: not periodic
// at any power of two, so a reordered or repeated chunk shows.
func patternByte(i int64) byte { return byte(i % 251) }

func pattern(off int64, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = patternByte(off + int64(i))
	}
	return b
}

func newLink(tb testing.TB, target string) *Link {
	tb.Helper()
	l, err := NewLink("a->b", "a", "b", target, "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	return l
}

func dial(tb testing.TB, addr string) *net.TCPConn {
	tb.Helper()
	c, err := net.DialTimeout("tcp", addr, waitLimit)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}

func send(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	c.SetWriteDeadline(time.Now().Add(waitLimit))
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatalf("write %q: %v", msg, err)
	}
}

// expect reads exactly want within waitLimit.
func expect(t *testing.T, c net.Conn, want string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(waitLimit))
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("reading %q: got %q, %v", want, got, err)
	}
	if string(got) != want {
		t.Fatalf("read %q, want %q", got, want)
	}
}

// expectSilence checks that nothing arrives for quiet and that the
// connection is still open (the read times out rather than failing).
func expectSilence(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(quiet))
	var b [1]byte
	n, err := c.Read(b[:])
	if n > 0 {
		t.Fatalf("read %q through a blackhole", b[:n])
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read through a blackhole: %v, want a timeout on an open connection", err)
	}
}

// eventually polls cond until it holds or waitLimit passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
