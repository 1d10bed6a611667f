package proxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"
)

func TestEcho(t *testing.T) {
	s := newServer(t, false)
	l := newLink(t, s.addr())
	c := dial(t, l.Addr())
	send(t, c, "hello")
	expect(t, c, "hello")
	send(t, c, " world")
	expect(t, c, " world")
	eventually(t, "byte counts", func() bool {
		st := l.Stats()
		return st.ForwardBytes == 11 && st.BackwardBytes == 11 && st.Accepted == 1 && st.Open == 1
	})
	if f := l.Faults(); f != (Faults{}) || f.String() != "healthy" {
		t.Errorf("faults of a new link: %v", f)
	}
}

func TestHalfClose(t *testing.T) {
	s := newServer(t, false)
	l := newLink(t, s.addr())
	c := dial(t, l.Addr())
	send(t, c, "last words")
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(waitLimit))
	got, err := io.ReadAll(c)
	if err != nil || string(got) != "last words" {
		t.Fatalf("after half-close read %q, %v", got, err)
	}
	eventually(t, "the connection to close", func() bool { return l.Stats().Open == 0 })
}

// A request sent into a Forward blackhole is never answered and never
// reaches the target, the connection stays open, and after the block lifts
// the held bytes arrive in order on the same connection.
func TestBlockForward(t *testing.T) {
	for _, heal := range []string{"unblock", "heal"} {
		t.Run(heal, func(t *testing.T) {
			s := newServer(t, false)
			l := newLink(t, s.addr())
			c := dial(t, l.Addr())
			send(t, c, "ping")
			expect(t, c, "ping")

			l.Block(Forward)
			send(t, c, "lost-1 ")
			send(t, c, "lost-2")
			expectSilence(t, c)
			if got := s.received.Load(); got != 4 {
				t.Fatalf("target received %d bytes during the block, want 4", got)
			}
			if heal == "unblock" {
				l.Unblock(Forward)
			} else {
				l.Heal()
			}
			expect(t, c, "lost-1 lost-2")
			send(t, c, "pong")
			expect(t, c, "pong")
			if s.accepted.Load() != 1 {
				t.Fatalf("target accepted %d connections, want 1", s.accepted.Load())
			}
		})
	}
}

// With Backward blocked, requests arrive and are acted on, but the answers
// are held until the block lifts.
func TestBlockBackward(t *testing.T) {
	s := newServer(t, false)
	l := newLink(t, s.addr())
	c := dial(t, l.Addr())
	send(t, c, "a")
	expect(t, c, "a")

	l.Block(Backward)
	send(t, c, "bc")
	eventually(t, "the request to reach the target", func() bool { return s.received.Load() == 3 })
	expectSilence(t, c)
	l.Heal()
	expect(t, c, "bc")
}

// A connection opened while either direction is blocked is accepted but
// not dialed through until both directions are open.
func TestBlockNewConnection(t *testing.T) {
	for _, dir := range []Direction{Forward, Backward, Both} {
		t.Run(dir.String(), func(t *testing.T) {
			s := newServer(t, false)
			l := newLink(t, s.addr())
			l.Block(dir)
			c := dial(t, l.Addr())
			send(t, c, "early")
			expectSilence(t, c)
			if got := s.accepted.Load(); got != 0 {
				t.Fatalf("target accepted %d connections during the block, want 0", got)
			}
			l.Unblock(dir)
			expect(t, c, "early")
			if got := s.accepted.Load(); got != 1 {
				t.Fatalf("target accepted %d connections, want 1", got)
			}
		})
	}
}

// A client that gives up on a connection that could not have been
// established leaves no trace at the target, even after the heal.
func TestBlockNewConnectionAbandoned(t *testing.T) {
	s := newServer(t, false)
	l := newLink(t, s.addr())
	l.Block(Forward)
	c := dial(t, l.Addr())
	send(t, c, "never")
	c.Close()
	eventually(t, "the abandoned connection to go", func() bool {
		st := l.Stats()
		return st.Accepted == 1 && st.Open == 0
	})
	l.Heal()
	c2 := dial(t, l.Addr())
	send(t, c2, "fresh")
	expect(t, c2, "fresh")
	if got, n := s.accepted.Load(), s.received.Load(); got != 1 || n != 5 {
		t.Fatalf("target accepted %d connections and %d bytes, want 1 and 5", got, n)
	}
}

// A sender writing into a blackhole is not failed: once the proxy holds
// BufferLimit its writes block, as over a real dead path. After the heal
// every byte arrives, in order.
func TestBlockBackpressure(t *testing.T) {
	s := newServer(t, true)
	l := newLink(t, s.addr())
	c := dial(t, l.Addr())
	var sent int64
	write := func(n int) error {
		m, err := c.Write(pattern(sent, n))
		sent += int64(m)
		return err
	}
	c.SetWriteDeadline(time.Now().Add(waitLimit))
	if err := write(1000); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the first bytes", func() bool { return s.received.Load() == 1000 })

	l.Block(Forward)
	// Writes must stall (time out), not fail, and not before the proxy
	// holds its limit: loopback kernel buffers add a few MiB on top.
	for {
		c.SetWriteDeadline(time.Now().Add(quiet))
		err := write(256 << 10)
		if sent > 1<<30 {
			t.Fatal("1 GiB written into a blackhole without blocking")
		}
		if err == nil {
			continue
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("writing into a blackhole: %v, want the write to block", err)
		}
		// A slow scheduler can stall a write before the proxy is full;
		// only a stall with the proxy full is the backpressure wanted.
		if l.Stats().Held >= BufferLimit {
			break
		}
	}
	if held := l.Stats().Held; held < BufferLimit || held > BufferLimit+bufSize {
		t.Fatalf("the proxy holds %d bytes, want about BufferLimit (%d)", held, BufferLimit)
	}
	if got := s.received.Load(); got != 1000 {
		t.Fatalf("target received %d bytes through a blackhole", got-1000)
	}

	l.Heal()
	c.SetWriteDeadline(time.Now().Add(waitLimit))
	if err := write(1000); err != nil {
		t.Fatalf("write after the heal: %v", err)
	}
	eventually(t, "every byte to arrive", func() bool { return s.received.Load() == sent })
	if bad := s.badByte.Load(); bad != 0 {
		t.Fatalf("byte %d arrived out of order", bad-1)
	}
	if held := l.Stats().Held; held != 0 {
		t.Fatalf("%d bytes still held after the heal", held)
	}
}

// A delayed link adds the delay to each direction and keeps the order of
// bytes, with several connections streaming at once.
func TestDelay(t *testing.T) {
	const d = 40 * time.Millisecond
	s := newServer(t, false)
	l := newLink(t, s.addr())
	l.Delay(Both, d)
	if f := l.Faults(); f.ForwardDelay != d || f.BackwardDelay != d {
		t.Fatalf("faults: %v", f)
	}

	c := dial(t, l.Addr())
	start := time.Now()
	send(t, c, "x")
	expect(t, c, "x")
	if rtt := time.Since(start); rtt < 2*d {
		t.Fatalf("round trip took %v through a %v delay each way", rtt, d)
	}

	const conns, total = 4, 1 << 20
	var wg sync.WaitGroup
	errs := make(chan error, 2*conns)
	for range conns {
		c := dial(t, l.Addr())
		c.SetDeadline(time.Now().Add(waitLimit))
		wg.Go(func() {
			// Writes of every size from 1 byte up, so chunks of all
			// sizes are in flight at once.
			var off int64
			for n := 1; off < total; n = n%3001 + 1 {
				n = min(n, int(total-off))
				if _, err := c.Write(pattern(off, n)); err != nil {
					errs <- err
					return
				}
				off += int64(n)
			}
		})
		wg.Go(func() {
			got := make([]byte, total)
			if _, err := io.ReadFull(c, got); err != nil {
				errs <- err
				return
			}
			for i, b := range got {
				if b != patternByte(int64(i)) {
					errs <- fmt.Errorf("byte %d out of order", i)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// Faults switched on and off while bytes stream both ways never reorder,
// lose or repeat a byte: the hand-overs between writing through and
// queueing keep the order.
func TestFaultTogglingKeepsOrder(t *testing.T) {
	const total = 8 << 20
	s := newServer(t, false)
	l := newLink(t, s.addr())
	c := dial(t, l.Addr())
	c.SetDeadline(time.Now().Add(waitLimit))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		faults := []func(){
			func() { l.Block(Forward) },
			func() { l.Block(Backward) },
			func() { l.Delay(Both, time.Millisecond) },
			func() { l.Delay(Backward, 3*time.Millisecond) },
			func() { l.Unblock(Both) },
			l.Heal,
		}
		for i := 0; ; i++ {
			select {
			case <-stop:
				l.Heal()
				return
			case <-time.After(time.Millisecond):
			}
			faults[i%len(faults)]()
		}
	})
	errs := make(chan error, 1)
	wg.Go(func() {
		var off int64
		for n := 1; off < total; n = n*7%65521 + 1 {
			n = min(n, int(total-off))
			if _, err := c.Write(pattern(off, n)); err != nil {
				errs <- err
				return
			}
			off += int64(n)
		}
	})
	got := make([]byte, total)
	_, err := io.ReadFull(c, got)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
	for i, b := range got {
		if b != patternByte(int64(i)) {
			t.Fatalf("byte %d out of order", i)
		}
	}
}

// Heal releases bytes held by a delay at once, not when the delay ends.
func TestHealReleasesDelayed(t *testing.T) {
	s := newServer(t, false)
	l := newLink(t, s.addr())
	c := dial(t, l.Addr())
	send(t, c, "warm")
	expect(t, c, "warm")
	l.Delay(Forward, time.Hour)
	send(t, c, "slow")
	expectSilence(t, c)
	l.Heal()
	expect(t, c, "slow")
}

func TestDrop(t *testing.T) {
	s := newServer(t, false)
	l := newLink(t, s.addr())
	c := dial(t, l.Addr())
	send(t, c, "ok")
	expect(t, c, "ok")
	l.Drop(Forward, 1, 7)
	send(t, c, "doomed")
	c.SetReadDeadline(time.Now().Add(waitLimit))
	var b [1]byte
	if _, err := c.Read(b[:]); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read on a dropped connection: %v, want a reset", err)
	}
	if st := l.Stats(); st.Resets != 1 {
		t.Fatalf("resets = %d, want 1", st.Resets)
	}
	if got := s.received.Load(); got != 2 {
		t.Fatalf("target received %d bytes, want 2", got)
	}
	l.Heal()
	c2 := dial(t, l.Addr())
	send(t, c2, "again")
	expect(t, c2, "again")
}

func TestTargetDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	target := ln.Addr().String()
	ln.Close()
	l := newLink(t, target)
	// On loopback the reset can beat the client's connect to the finish,
	// so the dial may fail instead of the first read.
	c, err := net.DialTimeout("tcp", l.Addr(), waitLimit)
	if err == nil {
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(waitLimit))
		var b [1]byte
		_, err = c.Read(b[:])
	}
	if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("connection through a link to a dead target: %v, want a reset", err)
	}
	// The client sees the reset before the link forgets the connection.
	eventually(t, "the connection to go", func() bool { return l.Stats().Open == 0 })
	if st := l.Stats(); st.DialErrors != 1 {
		t.Fatalf("stats %v, want one dial error", st)
	}
}

// Close resets every connection, whatever state it is in, and leaves no
// goroutine behind.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	s := newServer(t, false)
	before := runtime.NumGoroutine()
	l, err := NewLink("a->b", "a", "b", s.addr(), "")
	if err != nil {
		t.Fatal(err)
	}
	healthy := dial(t, l.Addr())
	send(t, healthy, "1")
	expect(t, healthy, "1")
	l.Delay(Forward, time.Hour)
	delayed := dial(t, l.Addr())
	send(t, delayed, "2")
	l.Block(Both)
	blocked := dial(t, l.Addr())
	send(t, blocked, "3")
	eventually(t, "three connections", func() bool { return l.Stats().Open == 3 })

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for _, c := range []*net.TCPConn{healthy, delayed, blocked} {
		c.SetReadDeadline(time.Now().Add(waitLimit))
		if _, err := io.ReadAll(c); errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatal("a client connection outlived Close")
		}
		c.Close()
	}
	if _, err := net.DialTimeout("tcp", l.Addr(), waitLimit); err == nil {
		t.Fatal("dialed a closed link")
	}
	// The target's handlers end once the proxy's side is gone.
	eventually(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}

func TestFaultsString(t *testing.T) {
	f := Faults{Blocked: Backward, ForwardDelay: time.Second, ForwardJitter: time.Millisecond, BackwardDrop: 0.5}
	if got, want := f.String(), "blocked=backward delay-forward=1s jitter-forward=1ms drop-backward=0.5"; got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}
