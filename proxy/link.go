package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Direction is a set of directions on a link.
type Direction uint8

const (
	// Forward is From's bytes to To: the requests of the node that dialed.
	Forward Direction = 1 << iota
	// Backward is To's bytes to From: the responses.
	Backward
	// Both is Forward and Backward.
	Both = Forward | Backward
)

func (d Direction) String() string {
	switch d {
	case 0:
		return "none"
	case Forward:
		return "forward"
	case Backward:
		return "backward"
	case Both:
		return "both"
	}
	return fmt.Sprintf("Direction(%d)", uint8(d))
}

// has reports whether d includes direction index i (0 forward, 1 backward).
func (d Direction) has(i int) bool { return d&(Forward<<i) != 0 }

// BufferLimit is the most bytes a link holds for one connection in one
// direction (blocked or delayed). At the limit the proxy stops reading, so
// the sender feels TCP backpressure rather than an error.
const BufferLimit = 4 << 20

// bufSize is the read size. Large reads keep a healthy link far from being
// a bottleneck; small reads are copied out so that a blocked stream of tiny
// requests does not pin a large buffer each.
const bufSize = 64 << 10

// dialTimeout bounds the dial to the target, whose failure resets the
// client; a target that is down refuses at once, so this only matters for
// one that does not answer.
const dialTimeout = 5 * time.Second

// Faults is the fault state of a link. The zero value is a healthy link.
type Faults struct {
	Blocked       Direction     // directions whose bytes are held back
	ForwardDelay  time.Duration // added to every Forward chunk
	BackwardDelay time.Duration // added to every Backward chunk
	ForwardDrop   float64       // per-chunk probability of resetting the connection
	BackwardDrop  float64
	// Jitter spreads each delayed chunk's delay uniformly over the delay
	// ± the jitter (never below zero), drawn from the link's jitter seed.
	ForwardJitter  time.Duration
	BackwardJitter time.Duration
}

func (f Faults) delay(i int) time.Duration {
	if i == 0 {
		return f.ForwardDelay
	}
	return f.BackwardDelay
}

func (f Faults) jitter(i int) time.Duration {
	if i == 0 {
		return f.ForwardJitter
	}
	return f.BackwardJitter
}

func (f Faults) drop(i int) float64 {
	if i == 0 {
		return f.ForwardDrop
	}
	return f.BackwardDrop
}

// String describes the faults in effect, "healthy" if none.
func (f Faults) String() string {
	if f == (Faults{}) {
		return "healthy"
	}
	s := ""
	add := func(x string) {
		if s != "" {
			s += " "
		}
		s += x
	}
	if f.Blocked != 0 {
		add("blocked=" + f.Blocked.String())
	}
	if f.ForwardDelay != 0 {
		add("delay-forward=" + f.ForwardDelay.String())
	}
	if f.BackwardDelay != 0 {
		add("delay-backward=" + f.BackwardDelay.String())
	}
	if f.ForwardJitter != 0 {
		add("jitter-forward=" + f.ForwardJitter.String())
	}
	if f.BackwardJitter != 0 {
		add("jitter-backward=" + f.BackwardJitter.String())
	}
	if f.ForwardDrop != 0 {
		add(fmt.Sprintf("drop-forward=%g", f.ForwardDrop))
	}
	if f.BackwardDrop != 0 {
		add(fmt.Sprintf("drop-backward=%g", f.BackwardDrop))
	}
	return s
}

// state is an immutable snapshot of a link's faults. changed is closed when
// it is replaced: one close wakes every goroutine waiting on the old state,
// so a fault change reaches all connections without the link tracking who
// waits.
type state struct {
	f       Faults
	changed chan struct{}
	// jitterSeed seeds each connection's jitter draws (with the
	// connection's number on the link and the direction), so that a seed
	// gives every connection the same sequence of jitters whatever the
	// others do. jitterGen counts the calls to Jitter: each one starts
	// every connection's sequence afresh, so a connection that lives
	// through several fault windows draws the same in each.
	jitterSeed, jitterGen uint64
}

// Stats counts a link's traffic, for logs.
type Stats struct {
	Accepted      int64 // connections accepted since the link started
	Open          int64 // connections open now
	ForwardBytes  int64 // bytes delivered From -> To
	BackwardBytes int64 // bytes delivered To -> From
	Held          int64 // bytes read but not yet delivered (blocked or delayed)
	Resets        int64 // connections reset by Drop
	DialErrors    int64 // dials to the target that failed
}

func (s Stats) String() string {
	return fmt.Sprintf("conns=%d open=%d fwd=%dB bwd=%dB held=%dB resets=%d dial-errors=%d",
		s.Accepted, s.Open, s.ForwardBytes, s.BackwardBytes, s.Held, s.Resets, s.DialErrors)
}

// Link is a fault-injecting TCP proxy for the connections one node opens to
// another. Its methods are safe for concurrent use.
type Link struct {
	name, from, to, target string
	ln                     *net.TCPListener
	ctx                    context.Context // canceled by Close; aborts dials
	cancel                 context.CancelFunc

	state atomic.Pointer[state]

	mu     sync.Mutex // guards the fields below and state replacement
	rng    *rand.Rand
	conns  map[*conn]struct{}
	closed bool

	wg sync.WaitGroup // every goroutine of the link

	accepted, dialErrors, resets atomic.Int64
	bytes, held                  [2]atomic.Int64
}

// NewLink starts a link named name carrying node from's connections to node
// to, listening on listenAddr ("127.0.0.1:0" or "" for a port chosen by the
// OS) and forwarding to target. The target need not be up yet: it is dialed
// for each connection the link accepts.
func NewLink(name, from, to, target, listenAddr string) (*Link, error) {
	if listenAddr == "" {
		listenAddr = "127.0.0.1:0"
	}
	addr, err := net.ResolveTCPAddr("tcp", listenAddr)
	if err != nil {
		return nil, fmt.Errorf("proxy: link %s: %w", name, err)
	}
	ln, err := net.ListenTCP("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("proxy: link %s: %w", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &Link{
		name: name, from: from, to: to, target: target,
		ln: ln, ctx: ctx, cancel: cancel,
		rng:   rand.New(rand.NewPCG(0, 0)),
		conns: make(map[*conn]struct{}),
	}
	l.state.Store(&state{changed: make(chan struct{})})
	l.wg.Go(l.acceptLoop)
	return l, nil
}

// Name returns the link's name.
func (l *Link) Name() string { return l.name }

// From returns the node that dials through the link.
func (l *Link) From() string { return l.from }

// To returns the node the link forwards to.
func (l *Link) To() string { return l.to }

// Target returns the address the link forwards to.
func (l *Link) Target() string { return l.target }

// Addr returns the address the link listens on, for From to dial.
func (l *Link) Addr() string { return l.ln.Addr().String() }

// Faults returns the faults in effect.
func (l *Link) Faults() Faults { return l.state.Load().f }

// Block holds back every byte in the given directions, and the
// establishment of new connections, until Unblock or Heal (see the package
// documentation).
func (l *Link) Block(dir Direction) { l.update(func(f *Faults) { f.Blocked |= dir }) }

// Unblock lifts Block in the given directions; held bytes flow again.
func (l *Link) Unblock(dir Direction) { l.update(func(f *Faults) { f.Blocked &^= dir }) }

// Delay delivers every chunk in the given directions d after it was read;
// d <= 0 removes the delay. It applies to bytes already held.
func (l *Link) Delay(dir Direction, d time.Duration) {
	d = max(d, 0)
	l.update(func(f *Faults) {
		if dir.has(0) {
			f.ForwardDelay = d
		}
		if dir.has(1) {
			f.BackwardDelay = d
		}
	})
}

// Jitter varies the delay in the given directions: each chunk's delay is
// drawn uniformly from the delay ± j (and never below zero) when it is
// read. Chunks still leave in the order they came, so a chunk drawn
// shorter than the one before it waits for that one: jitter never reorders
// a connection's bytes, as it would not for one TCP stream. The draws of
// connection k of the link (counting from 0 since the link started) in one
// direction follow from seed and k alone; j <= 0 removes the jitter. It
// applies to chunks read from now on.
func (l *Link) Jitter(dir Direction, j time.Duration, seed uint64) {
	j = max(j, 0)
	l.updateSeed(&seed, func(f *Faults) {
		if dir.has(0) {
			f.ForwardJitter = j
		}
		if dir.has(1) {
			f.BackwardJitter = j
		}
	})
}

// Drop resets a connection with probability p for each chunk about to be
// delivered in the given directions; p <= 0 removes it. The link's random
// source is reseeded with seed, so a run's drop decisions follow from its
// seed (though not byte for byte: TCP decides how bytes fall into chunks).
func (l *Link) Drop(dir Direction, p float64, seed uint64) {
	p = min(max(p, 0), 1)
	l.update(func(f *Faults) {
		l.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		if dir.has(0) {
			f.ForwardDrop = p
		}
		if dir.has(1) {
			f.BackwardDrop = p
		}
	})
}

// Heal clears every fault of the link; held bytes are delivered at once.
func (l *Link) Heal() { l.update(func(f *Faults) { *f = Faults{} }) }

// update replaces the fault state and wakes everyone waiting on the old one.
func (l *Link) update(edit func(*Faults)) { l.updateSeed(nil, edit) }

// updateSeed is update, also setting the jitter seed if seed is not nil.
func (l *Link) updateSeed(seed *uint64, edit func(*Faults)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	old := l.state.Load()
	next := &state{f: old.f, changed: make(chan struct{}), jitterSeed: old.jitterSeed, jitterGen: old.jitterGen}
	if seed != nil {
		next.jitterSeed, next.jitterGen = *seed, old.jitterGen+1
	}
	edit(&next.f)
	l.state.Store(next)
	close(old.changed)
}

// roll reports whether a chunk is dropped with probability p.
func (l *Link) roll(p float64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rng.Float64() < p
}

// Stats returns the link's counters.
func (l *Link) Stats() Stats {
	l.mu.Lock()
	open := len(l.conns)
	l.mu.Unlock()
	return Stats{
		Accepted:      l.accepted.Load(),
		Open:          int64(open),
		ForwardBytes:  l.bytes[0].Load(),
		BackwardBytes: l.bytes[1].Load(),
		Held:          l.held[0].Load() + l.held[1].Load(),
		Resets:        l.resets.Load(),
		DialErrors:    l.dialErrors.Load(),
	}
}

// String names the link and its addresses, for logs.
func (l *Link) String() string {
	return fmt.Sprintf("%s (%s -> %s via %s -> %s)", l.name, l.from, l.to, l.Addr(), l.target)
}

// Close stops the listener and resets every connection, then waits until
// all of the link's goroutines have returned.
func (l *Link) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		l.wg.Wait()
		return nil
	}
	l.closed = true
	conns := make([]*conn, 0, len(l.conns))
	for c := range l.conns {
		conns = append(conns, c)
	}
	l.mu.Unlock()
	err := l.ln.Close()
	l.cancel()
	for _, c := range conns {
		c.shutdown(true)
	}
	l.wg.Wait()
	return err
}

func (l *Link) acceptLoop() {
	for {
		nc, err := l.ln.AcceptTCP()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: back off rather
			// than spin, and keep serving once it passes.
			select {
			case <-l.ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		l.serve(nc)
	}
}

func (l *Link) serve(client *net.TCPConn) {
	c := &conn{l: l, client: client, done: make(chan struct{})}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		client.Close()
		return
	}
	l.conns[c] = struct{}{}
	id := uint64(l.accepted.Add(1) - 1)
	c.pipes[0] = newPipe(0, id)
	c.pipes[1] = newPipe(1, id)
	// Added under mu, and while acceptLoop holds a count, so that Close's
	// Wait cannot miss them.
	l.wg.Add(2)
	l.mu.Unlock()
	go func() {
		defer l.wg.Done()
		c.read(c.pipes[0], client)
	}()
	go func() {
		defer l.wg.Done()
		if c.establish() {
			c.write(c.pipes[0], c.target)
		}
	}()
}

// conn is one proxied connection: the client's (From's) side, the target's
// (To's) side once dialed, and a pipe per direction. Each pipe has a reader
// goroutine and a writer goroutine that delivers when faults allow, so
// delays and blocks never stall reading (up to BufferLimit). While the
// direction is healthy and nothing is held, the reader delivers itself.
type conn struct {
	l      *Link
	client *net.TCPConn
	pipes  [2]*pipe
	done   chan struct{} // closed by shutdown
	once   sync.Once
	halves atomic.Int32 // directions whose end of stream was delivered

	mu     sync.Mutex
	target *net.TCPConn // set once by establish
	closed bool

	// dialed is target again, for the forward reader's write-through,
	// which should not take mu on every read.
	dialed atomic.Pointer[net.TCPConn]
}

// establish waits until a connection could be established (no direction
// blocked), dials the target and starts the backward pipe. It returns false
// if the connection is gone.
func (c *conn) establish() bool {
	for {
		st := c.l.state.Load()
		if st.f.Blocked == 0 {
			break
		}
		select {
		case <-st.changed:
		case <-c.pipes[0].ended:
			// The client gave up before its handshake could have
			// completed; the target must never see this connection.
			c.shutdown(false)
			return false
		case <-c.done:
			return false
		}
	}
	ctx, cancel := context.WithTimeout(c.l.ctx, dialTimeout)
	defer cancel()
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", c.l.target)
	if err != nil {
		c.l.dialErrors.Add(1)
		c.shutdown(true)
		return false
	}
	t := nc.(*net.TCPConn)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		t.Close()
		return false
	}
	c.target = t
	c.dialed.Store(t)
	c.mu.Unlock()
	c.l.wg.Add(2) // this goroutine holds a count
	go func() {
		defer c.l.wg.Done()
		c.read(c.pipes[1], t)
	}()
	go func() {
		defer c.l.wg.Done()
		c.write(c.pipes[1], c.client)
	}()
	return true
}

// read moves bytes from src into p until src ends or the connection is shut.
func (c *conn) read(p *pipe, src *net.TCPConn) {
	buf := getBuf()
	defer func() { putBuf(buf) }()
	for {
		if !p.waitSpace(c.done) {
			return
		}
		n, err := src.Read(*buf)
		if n > 0 && c.writeThrough(p, (*buf)[:n]) {
			n = 0
		}
		if n > 0 {
			ch := chunk{at: time.Now(), jitter: p.drawJitter(c.l.state.Load())}
			if n <= bufSize/2 {
				ch.data = append([]byte(nil), (*buf)[:n]...)
			} else {
				ch.data, ch.pooled = (*buf)[:n], buf
				buf = getBuf()
			}
			p.push(c.l, ch)
		}
		if err != nil {
			end := chunk{at: time.Now(), end: true}
			if !errors.Is(err, io.EOF) {
				end.err = err
			}
			p.push(c.l, end)
			return
		}
	}
}

// writeThrough delivers data straight from the reader when nothing could
// hold it back: the direction is healthy, the target is dialed and nothing
// is queued ahead of it. It saves a healthy link the handoff to the writer
// goroutine, which is about a third of the latency the proxy adds. Only the
// reader pushes, so an empty queue also means the writer is idle and the
// order holds. It reports whether data was dealt with (delivered, or the
// connection shut on a write error).
func (c *conn) writeThrough(p *pipe, data []byte) bool {
	l := c.l
	f := l.state.Load().f
	if f.Blocked.has(p.dir) || f.delay(p.dir) > 0 || f.drop(p.dir) > 0 {
		return false
	}
	dst := c.client
	if p.dir == 0 {
		dst = c.dialed.Load()
		if dst == nil {
			return false
		}
	}
	p.mu.Lock()
	idle := len(p.q) == 0 && !p.closed
	p.mu.Unlock()
	if !idle {
		return false
	}
	if _, err := dst.Write(data); err != nil {
		c.shutdown(true)
		return true
	}
	l.bytes[p.dir].Add(int64(len(data)))
	return true
}

// write delivers p's chunks to dst as the link's faults allow.
func (c *conn) write(p *pipe, dst *net.TCPConn) {
	l := c.l
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		ch, ok := p.peek()
		if !ok {
			select {
			case <-p.ready:
				continue
			case <-c.done:
				return
			}
		}
		st := l.state.Load()
		if st.f.Blocked.has(p.dir) {
			select {
			case <-st.changed:
				continue
			case <-c.done:
				return
			}
		}
		if d := st.f.delay(p.dir); d > 0 {
			// A draw below -d would deliver before the chunk was read.
			if wait := time.Until(ch.at.Add(d + max(ch.jitter, -d))); wait > 0 {
				if timer == nil {
					timer = time.NewTimer(wait)
				} else {
					timer.Reset(wait)
				}
				select {
				case <-timer.C:
				case <-st.changed:
				case <-c.done:
					return
				}
				timer.Stop()
				continue
			}
		}
		if ch.end {
			if ch.err != nil {
				// The sender's side was reset: pass the reset on.
				c.shutdown(true)
				return
			}
			if err := dst.CloseWrite(); err != nil {
				c.shutdown(true)
				return
			}
			if c.halves.Add(1) == 2 {
				c.shutdown(false)
			}
			return
		}
		if pr := st.f.drop(p.dir); pr > 0 && l.roll(pr) {
			l.resets.Add(1)
			c.shutdown(true)
			return
		}
		if _, err := dst.Write(ch.data); err != nil {
			c.shutdown(true)
			return
		}
		l.bytes[p.dir].Add(int64(len(ch.data)))
		p.pop(l)
	}
}

// shutdown closes both sides (with a TCP reset if reset is set: the peers
// must see an abort, not an orderly end of stream) and drops held bytes.
func (c *conn) shutdown(reset bool) {
	c.once.Do(func() {
		close(c.done)
		c.mu.Lock()
		c.closed = true
		t := c.target
		c.mu.Unlock()
		for _, nc := range []*net.TCPConn{c.client, t} {
			if nc == nil {
				continue
			}
			if reset {
				nc.SetLinger(0)
			}
			nc.Close()
		}
		for _, p := range c.pipes {
			p.discard(c.l)
		}
		c.l.mu.Lock()
		delete(c.l.conns, c)
		c.l.mu.Unlock()
	})
}

// chunk is what one read returned, or the end of the stream.
type chunk struct {
	data   []byte
	pooled *[]byte // data's buffer, to return to the pool once written
	at     time.Time
	jitter time.Duration // added to the delay of this chunk
	end    bool
	err    error // with end: the stream was reset, not closed
}

// pipe is one direction of a connection: a FIFO of chunks between its
// reader and its writer.
type pipe struct {
	dir   int           // 0 forward, 1 backward
	id    uint64        // the connection's number on its link
	ready chan struct{} // a chunk was pushed (capacity 1: a pending wake-up)
	space chan struct{} // a chunk was popped
	ended chan struct{} // closed when the end of the stream was pushed

	mu     sync.Mutex
	q      []chunk
	n      int // bytes in q
	closed bool

	// Only the reader draws jitter, so these need no lock.
	rng    *rand.Rand
	rngGen uint64 // the jitterGen rng was seeded for
}

func newPipe(dir int, id uint64) *pipe {
	return &pipe{
		dir:   dir,
		id:    id,
		ready: make(chan struct{}, 1),
		space: make(chan struct{}, 1),
		ended: make(chan struct{}),
	}
}

// drawJitter is the jitter of the chunk just read: uniform in ±j of the
// direction's jitter j, from a source seeded by the link's jitter seed, the
// connection's number and the direction, so that each connection's
// sequence depends on the seed alone.
func (p *pipe) drawJitter(st *state) time.Duration {
	j := st.f.jitter(p.dir)
	if j <= 0 || st.f.delay(p.dir) <= 0 {
		return 0
	}
	if p.rng == nil || p.rngGen != st.jitterGen {
		p.rngGen = st.jitterGen
		p.rng = rand.New(rand.NewPCG(st.jitterSeed, p.id<<1|uint64(p.dir)))
	}
	return time.Duration(p.rng.Int64N(2*int64(j)+1)) - j
}

func (p *pipe) push(l *Link, ch chunk) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.q = append(p.q, ch)
	p.n += len(ch.data)
	p.mu.Unlock()
	l.held[p.dir].Add(int64(len(ch.data)))
	if ch.end {
		close(p.ended)
	}
	select {
	case p.ready <- struct{}{}:
	default:
	}
}

func (p *pipe) peek() (chunk, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.q) == 0 {
		return chunk{}, false
	}
	return p.q[0], true
}

// pop removes the chunk the writer just delivered and recycles its buffer.
func (p *pipe) pop(l *Link) {
	p.mu.Lock()
	if p.closed || len(p.q) == 0 {
		p.mu.Unlock()
		return
	}
	ch := p.q[0]
	p.q[0] = chunk{}
	p.q = p.q[1:]
	p.n -= len(ch.data)
	p.mu.Unlock()
	l.held[p.dir].Add(-int64(len(ch.data)))
	if ch.pooled != nil {
		putBuf(ch.pooled)
	}
	select {
	case p.space <- struct{}{}:
	default:
	}
}

// waitSpace waits until the pipe holds less than BufferLimit; false if the
// connection is shut meanwhile.
func (p *pipe) waitSpace(done chan struct{}) bool {
	for {
		p.mu.Lock()
		full, closed := p.n >= BufferLimit, p.closed
		p.mu.Unlock()
		if closed {
			return false
		}
		if !full {
			return true
		}
		select {
		case <-p.space:
		case <-done:
			return false
		}
	}
}

// discard drops the held chunks. Their buffers are left to the garbage
// collector rather than pooled: the writer may still be writing from one.
func (p *pipe) discard(l *Link) {
	p.mu.Lock()
	n := p.n
	p.q, p.n, p.closed = nil, 0, true
	p.mu.Unlock()
	l.held[p.dir].Add(-int64(n))
}

var bufPool = sync.Pool{New: func() any {
	b := make([]byte, bufSize)
	return &b
}}

func getBuf() *[]byte  { return bufPool.Get().(*[]byte) }
func putBuf(b *[]byte) { bufPool.Put(b) }
