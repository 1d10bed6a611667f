package proxy

import (
	"io"
	"testing"
	"time"
)

// A broker replicating at ~50 MB/s must not notice the proxy: compare the
// throughput of a healthy link with a direct connection.
func BenchmarkThroughput(b *testing.B) {
	b.Run("direct", func(b *testing.B) {
		s := newServer(b, false)
		benchStream(b, s, s.addr())
	})
	b.Run("link", func(b *testing.B) {
		s := newServer(b, false)
		benchStream(b, s, newLink(b, s.addr()).Addr())
	})
}

// benchStream writes 1 MiB per iteration to an echo server through addr
// and reads it all back, so each byte crosses the proxy in both directions.
func benchStream(b *testing.B, s *server, addr string) {
	const size = 1 << 20
	c := dial(b, addr)
	c.SetDeadline(time.Now().Add(time.Hour))
	buf := make([]byte, size)
	done := make(chan error, 1)
	b.SetBytes(size)
	b.ResetTimer()
	go func() {
		_, err := io.CopyN(io.Discard, c, int64(b.N)*size)
		done <- err
	}()
	for range b.N {
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

// The latency a proxy hop adds to a small request and its answer.
func BenchmarkRoundTrip(b *testing.B) {
	b.Run("direct", func(b *testing.B) {
		s := newServer(b, false)
		benchPingPong(b, s.addr())
	})
	b.Run("link", func(b *testing.B) {
		s := newServer(b, false)
		benchPingPong(b, newLink(b, s.addr()).Addr())
	})
}

func benchPingPong(b *testing.B, addr string) {
	c := dial(b, addr)
	c.SetDeadline(time.Now().Add(time.Hour))
	msg := make([]byte, 100)
	for b.Loop() {
		if _, err := c.Write(msg); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, msg); err != nil {
			b.Fatal(err)
		}
	}
}

// A link delayed 50 ms each way is a delay line: its throughput stays at
// BufferLimit per delay (about 80 MB/s) rather than one read per delay,
// and a round trip costs the 100 ms and little more.
func BenchmarkDelayed(b *testing.B) {
	const d = 50 * time.Millisecond
	b.Run("throughput", func(b *testing.B) {
		s := newServer(b, false)
		l := newLink(b, s.addr())
		l.Delay(Both, d)
		benchStream(b, s, l.Addr())
	})
	b.Run("round-trip", func(b *testing.B) {
		s := newServer(b, false)
		l := newLink(b, s.addr())
		l.Delay(Both, d)
		benchPingPong(b, l.Addr())
	})
}
