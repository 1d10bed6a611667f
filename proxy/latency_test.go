package proxy

import (
	"io"
	"slices"
	"testing"
	"time"
)

// The acceptance test of issue #16's real latency: 50 ms each way on a
// link is latency, not a starved link. A request and its answer take about
// 100 ms more, and bulk bytes still flow at many MB/s, because the delay
// line keeps reading while it holds what it read. The bounds are loose so
// that a loaded machine passes; a link with no delay fails the first, and
// one that waits out the delay before reading the next chunk (or a rate
// limit standing in for the delay) fails the second by an order of
// magnitude.
func TestDelayIsLatencyNotStarvation(t *testing.T) {
	if testing.Short() {
		t.Skip("measures for seconds")
	}
	const d = 50 * time.Millisecond

	echo := newServer(t, false)
	l := newLink(t, echo.addr())
	c := dial(t, l.Addr())
	base := medianRTT(t, c, 20)
	l.Delay(Both, d)
	delayed := medianRTT(t, c, 20)
	t.Logf("median round trip: %v healthy, %v with %v each way", base, delayed, d)
	if delayed < 80*time.Millisecond || delayed > 250*time.Millisecond {
		t.Errorf("median round trip %v through %v each way, want 80ms..250ms", delayed, d)
	}

	const total = 64 << 20
	sink := newServer(t, true)
	healthy := newLink(t, sink.addr())
	fast := throughput(t, sink, healthy, total)
	slow := newLink(t, sink.addr())
	slow.Delay(Both, d)
	rate := throughput(t, sink, slow, total)
	t.Logf("throughput: %.0f MB/s healthy, %.0f MB/s with %v each way (held at most %d bytes)",
		fast/1e6, rate/1e6, d, BufferLimit)
	// A throttle that reads a 64 KiB chunk per delay moves 1.3 MB/s.
	if rate < 10e6 {
		t.Errorf("%.1f MB/s through %v each way: the link is starved, not delayed", rate/1e6, d)
	}
	if sink.badByte.Load() != 0 {
		t.Errorf("byte %d arrived out of order", sink.badByte.Load()-1)
	}
}

// medianRTT is the median of n round trips of a 100-byte message to an echo
// server over c.
func medianRTT(t *testing.T, c io.ReadWriter, n int) time.Duration {
	t.Helper()
	return roundTrips(t, c, n)[n/2]
}

// roundTrips times n round trips of a 100-byte message to an echo server
// over c, shortest first.
func roundTrips(t *testing.T, c io.ReadWriter, n int) []time.Duration {
	t.Helper()
	msg := make([]byte, 100)
	rtts := make([]time.Duration, n)
	for i := range rtts {
		start := time.Now()
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, msg); err != nil {
			t.Fatal(err)
		}
		rtts[i] = time.Since(start)
	}
	slices.Sort(rtts)
	return rtts
}

// throughput streams total pattern bytes through l to sink, on a fresh
// connection, and returns the rate in bytes per second until the last byte
// arrived. It also checks that the link never held more than its limit.
func throughput(t *testing.T, sink *server, l *Link, total int64) float64 {
	t.Helper()
	c := dial(t, l.Addr())
	c.SetDeadline(time.Now().Add(time.Minute))
	before := sink.received.Load()
	start := time.Now()
	errs := make(chan error, 1)
	go func() {
		const w = 256 << 10
		var err error
		for off := int64(0); off < total && err == nil; off += w {
			_, err = c.Write(pattern(off, w))
		}
		errs <- err
	}()
	var maxHeld int64
	deadline := start.Add(time.Minute)
	for sink.received.Load()-before < total {
		maxHeld = max(maxHeld, l.Stats().Held)
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d bytes arrived in a minute", sink.received.Load()-before, total)
		}
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	if maxHeld > BufferLimit+bufSize {
		t.Errorf("the link held %d bytes, over its limit of %d", maxHeld, BufferLimit)
	}
	return float64(total) / elapsed.Seconds()
}

// A seed gives each connection of a link the same jitters in each
// direction, whatever other connections draw, within ± the jitter; a new
// call to Jitter starts them again.
func TestJitterFollowsTheSeed(t *testing.T) {
	const d, j = 50 * time.Millisecond, 10 * time.Millisecond
	draws := func(st *state, p *pipe) []time.Duration {
		out := make([]time.Duration, 50)
		for i := range out {
			out[i] = p.drawJitter(st)
		}
		return out
	}
	st := &state{f: Faults{ForwardDelay: d, ForwardJitter: j, BackwardDelay: d, BackwardJitter: j}, jitterSeed: 7, jitterGen: 1}
	a := draws(st, newPipe(0, 3))
	b := newPipe(0, 3)
	draws(st, newPipe(0, 4)) // another connection drawing meanwhile
	if got := draws(st, b); !slices.Equal(a, got) {
		t.Fatalf("same seed and connection, different jitters:\n%v\n%v", a, got)
	}
	for _, x := range a {
		if x < -j || x > j {
			t.Fatalf("jitter %v outside ±%v", x, j)
		}
	}
	if slices.Equal(a, draws(st, newPipe(1, 3))) || slices.Equal(a, draws(st, newPipe(0, 4))) {
		t.Fatal("another direction or connection drew the same jitters")
	}
	other := *st
	other.jitterSeed = 8
	if slices.Equal(a, draws(&other, newPipe(0, 3))) {
		t.Fatal("another seed drew the same jitters")
	}
	again := *st
	again.jitterGen = 2
	if got := draws(&again, b); !slices.Equal(a, got) {
		t.Fatalf("a new Jitter call with the same seed did not start over:\n%v\n%v", a, got)
	}
	noDelay := *st
	noDelay.f.ForwardDelay = 0
	if x := newPipe(0, 3).drawJitter(&noDelay); x != 0 {
		t.Fatalf("jitter %v without a delay", x)
	}
}

// Jittered delays vary the round trip but never reorder a connection's
// bytes: a chunk drawn a shorter delay than the one before it waits.
func TestJitterKeepsOrder(t *testing.T) {
	const d, j = 20 * time.Millisecond, 15 * time.Millisecond
	echo := newServer(t, false)
	l := newLink(t, echo.addr())
	l.Jitter(Both, j, 1)
	l.Delay(Both, d)
	if f := l.Faults(); f.ForwardJitter != j || f.BackwardJitter != j {
		t.Fatalf("faults: %v", f)
	}
	c := dial(t, l.Addr())
	c.SetDeadline(time.Now().Add(time.Minute))
	rtts := roundTrips(t, c, 20)
	t.Logf("round trips through %v ± %v each way: %v .. %v", d, j, rtts[0], rtts[len(rtts)-1])
	if rtts[0] < 2*(d-j) {
		t.Errorf("round trip %v, under the least delay %v", rtts[0], 2*(d-j))
	}
	if rtts[len(rtts)-1]-rtts[0] < 3*time.Millisecond {
		t.Errorf("round trips %v .. %v: no jitter", rtts[0], rtts[len(rtts)-1])
	}

	sink := newServer(t, true)
	s := newLink(t, sink.addr())
	s.Jitter(Forward, 5*time.Millisecond, 2)
	s.Delay(Forward, 5*time.Millisecond)
	throughput(t, sink, s, 16<<20)
	if sink.badByte.Load() != 0 {
		t.Fatalf("byte %d arrived out of order", sink.badByte.Load()-1)
	}
}
