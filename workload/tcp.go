package workload

import (
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The TCP driver: the Env of a real cluster. A loop runs the machine's
// callbacks one at a time on a goroutine of its own, timers are the wall
// clock's, and each client's Wire holds a TCP connection per broker, whose
// reading and writing run beside the loop and hand every answer to it. The
// clients speak the Kafka protocol themselves, with franz-go's kmsg for
// the messages and their own framing and record batches (frame.go,
// batch.go): nothing here imports the broker, so a codec bug the broker
// has is not one the tester shares; and they retry and pipeline only as a
// Producer decides, recording every attempt (a library client's retries
// and batching would hide exactly the outcomes the checkers must see).

// loop is the TCP driver's Env: callbacks run one at a time, in the order
// they were posted, on the loop's goroutine.
type loop struct {
	since func() time.Duration

	mu     sync.Mutex
	queue  []func()
	closed bool
	wake   chan struct{}
	done   chan struct{}
	// wires are the wires not yet closed, closed with the loop. Only the
	// loop's goroutine touches it.
	wires map[*tcpWire]bool
}

// newLoop starts a loop whose clock is since.
func newLoop(since func() time.Duration) *loop {
	l := &loop{since: since, wake: make(chan struct{}, 1), done: make(chan struct{}), wires: map[*tcpWire]bool{}}
	go l.run()
	return l
}

func (l *loop) run() {
	defer close(l.done)
	for {
		l.mu.Lock()
		q, closed := l.queue, l.closed
		l.queue = nil
		l.mu.Unlock()
		for _, fn := range q {
			fn()
		}
		if len(q) > 0 {
			continue
		}
		if closed {
			return
		}
		<-l.wake
	}
}

// post runs fn on the loop; never blocks. After close, nothing runs.
func (l *loop) post(fn func()) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.queue = append(l.queue, fn)
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// do runs fn on the loop and waits for it; false if the loop is closed.
func (l *loop) do(fn func()) bool {
	ran := make(chan struct{})
	l.post(func() { fn(); close(ran) })
	select {
	case <-ran:
		return true
	case <-l.done:
		return false
	}
}

// close closes every wire still open and stops the loop once what was
// posted before has run.
func (l *loop) close() {
	l.do(func() {
		for w := range l.wires {
			w.Close()
		}
	})
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	<-l.done
}

func (l *loop) Now() time.Duration { return l.since() }

func (l *loop) Stamp() int64 { return time.Now().UnixMilli() }

func (l *loop) After(d time.Duration, fn func()) { time.AfterFunc(d, func() { l.post(fn) }) }

func (l *loop) NewWire(o ClientOptions) Wire {
	w := &tcpWire{l: l, format: kmsg.NewRequestFormatter(kmsg.FormatterClientID(o.ID)), timeout: o.Timeout,
		conns: map[int32]*tcpConn{}, once: map[*tcpConn]bool{}}
	l.wires[w] = true
	return w
}

// tcpWire is one client's connections: one kept per broker id, and the
// one-off connections of CallAddr. Only the loop's goroutine touches it.
type tcpWire struct {
	l       *loop
	format  *kmsg.RequestFormatter
	timeout time.Duration
	corr    int32
	conns   map[int32]*tcpConn
	once    map[*tcpConn]bool
	closed  bool
}

func (w *tcpWire) Close() {
	if w.closed {
		return
	}
	w.closed = true
	delete(w.l.wires, w)
	for id, c := range w.conns {
		c.fail(net.ErrClosed)
		delete(w.conns, id)
	}
	for c := range w.once {
		c.fail(net.ErrClosed)
	}
	clear(w.once)
}

// call is req framed with the wire's next correlation id, answered by a
// deadline of the wire's timeout from now.
func (w *tcpWire) call(req kmsg.Request, done func(kmsg.Response, error)) *tcpCall {
	w.corr++
	call := &tcpCall{frame: w.format.AppendRequest(nil, req, w.corr), req: req, corr: w.corr,
		deadline: time.Now().Add(w.timeout)}
	if p, ok := req.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
		call.noAnswer = true // no response will come
	}
	call.done = func(resp kmsg.Response, err error) {
		w.l.post(func() {
			if !w.closed {
				done(resp, err)
			}
		})
	}
	return call
}

func (w *tcpWire) Call(id int32, addr string, req kmsg.Request, done func(kmsg.Response, error)) {
	if w.closed {
		return
	}
	c := w.conns[id]
	if c != nil && (c.addr != addr || c.failed()) {
		// The broker moved to another address, or the connection failed
		// and its failure is still on its way to the loop: a new one.
		delete(w.conns, id)
		c.fail(net.ErrClosed)
		c = nil
	}
	if c == nil {
		c = dialTCP(addr, w.timeout)
		w.conns[id] = c
	}
	c.send(w.call(req, func(resp kmsg.Response, err error) {
		if err != nil && w.conns[id] == c {
			delete(w.conns, id)
		}
		done(resp, err)
	}))
}

func (w *tcpWire) CallAddr(addr string, req kmsg.Request, done func(kmsg.Response, error)) {
	if w.closed {
		return
	}
	c := dialTCP(addr, w.timeout)
	w.once[c] = true
	c.send(w.call(req, func(resp kmsg.Response, err error) {
		delete(w.once, c)
		c.fail(net.ErrClosed)
		done(resp, err)
	}))
}

// tcpCall is one request on a connection.
type tcpCall struct {
	frame    []byte
	req      kmsg.Request
	corr     int32
	deadline time.Time
	noAnswer bool // an acks=0 produce: done once written
	done     func(kmsg.Response, error)
	over     bool
}

// tcpConn is one connection, on which requests may be pipelined: they are
// written in turn, by a goroutine of the connection's that dials first,
// and the answers, which a broker gives in the order it read the
// requests, are matched to them in that order by another, each answer read
// by the deadline of the request it belongs to. A connection that fails
// fails every request on it: an answer cannot pass the one before it.
type tcpConn struct {
	addr string

	mu      sync.Mutex
	nc      net.Conn
	out     []*tcpCall // not yet written
	waiting []*tcpCall // written, not yet answered
	err     error
	wrote   chan struct{} // wakes the writer
	read    chan struct{} // wakes the reader
	// most is the most requests that waited at once: what a pipelining
	// session achieved, for tests to check.
	most int
}

// dialTCP is a connection to addr, dialled in the background: requests
// sent before it is up wait for it.
func dialTCP(addr string, timeout time.Duration) *tcpConn {
	c := &tcpConn{addr: addr, wrote: make(chan struct{}, 1), read: make(chan struct{}, 1)}
	go c.writer(timeout)
	return c
}

func kick(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// send queues call to be written.
func (c *tcpConn) send(call *tcpCall) {
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		call.over = true
		call.done(nil, fmt.Errorf("%w: %v", ErrNotSent, err))
		return
	}
	c.out = append(c.out, call)
	c.mu.Unlock()
	kick(c.wrote)
}

func (c *tcpConn) failed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err != nil
}

// fail closes the connection: the requests never written end not sent,
// those written with err.
func (c *tcpConn) fail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failLocked(err)
}

func (c *tcpConn) failLocked(err error) {
	if c.err != nil {
		return
	}
	c.err = err
	for _, call := range c.out {
		c.finish(call, nil, fmt.Errorf("%w: %v", ErrNotSent, err))
	}
	for _, call := range c.waiting {
		c.finish(call, nil, err)
	}
	c.out, c.waiting = nil, nil
	if c.nc != nil {
		c.nc.Close()
	}
	kick(c.wrote)
	kick(c.read)
}

// finish ends call once; mu is held.
func (c *tcpConn) finish(call *tcpCall, resp kmsg.Response, err error) {
	if !call.over {
		call.over = true
		call.done(resp, err)
	}
}

// writer dials, then writes each request in turn until the connection
// fails.
func (c *tcpConn) writer(timeout time.Duration) {
	nc, err := net.DialTimeout("tcp", c.addr, timeout)
	c.mu.Lock()
	switch {
	case err != nil:
		c.failLocked(err)
	case c.err != nil:
		nc.Close()
	default:
		c.nc = nc
		go c.reader()
	}
	c.mu.Unlock()
	if err != nil {
		return
	}
	for {
		c.mu.Lock()
		for len(c.out) == 0 && c.err == nil {
			c.mu.Unlock()
			<-c.wrote
			c.mu.Lock()
		}
		if c.err != nil {
			c.mu.Unlock()
			return
		}
		call := c.out[0]
		c.out = c.out[1:]
		if !call.noAnswer {
			// Waiting before it is written: the answer may come before
			// the writer takes the lock again.
			c.waiting = append(c.waiting, call)
			c.most = max(c.most, len(c.waiting))
		}
		c.mu.Unlock()
		_ = nc.SetWriteDeadline(call.deadline)
		n, err := nc.Write(call.frame)
		c.mu.Lock()
		switch {
		case err != nil && n == 0 && call.noAnswer:
			c.finish(call, nil, fmt.Errorf("%w: %v", ErrNotSent, err))
			c.failLocked(err)
		case err != nil && n == 0:
			// Not a byte of it left: it was not sent, whatever became of
			// those before it. Unless the reader failed the connection
			// while this wrote (failLocked finished every waiting call,
			// this one too, and emptied the list), it is still the last
			// waiting.
			if k := len(c.waiting) - 1; k >= 0 && c.waiting[k] == call {
				c.waiting = c.waiting[:k]
				c.finish(call, nil, fmt.Errorf("%w: %v", ErrNotSent, err))
			}
			c.failLocked(err)
		case err != nil:
			c.failLocked(err)
		case call.noAnswer:
			c.finish(call, nil, nil)
		default:
			kick(c.read)
		}
		c.mu.Unlock()
	}
}

// reader reads the answers in turn, each by its request's deadline.
func (c *tcpConn) reader() {
	for {
		c.mu.Lock()
		for len(c.waiting) == 0 && c.err == nil {
			c.mu.Unlock()
			<-c.read
			c.mu.Lock()
		}
		if c.err != nil {
			c.mu.Unlock()
			return
		}
		head, nc := c.waiting[0], c.nc
		c.mu.Unlock()
		_ = nc.SetReadDeadline(head.deadline)
		body, err := readFrame(nc)
		var resp kmsg.Response
		if err == nil {
			var corr int32
			corr, resp, err = parseResponse(body, head.req)
			if err == nil && corr != head.corr {
				err = fmt.Errorf("response correlation id %d, expected %d", corr, head.corr)
			}
		}
		c.mu.Lock()
		if err != nil {
			c.failLocked(err)
		} else if len(c.waiting) > 0 && c.waiting[0] == head {
			c.waiting = c.waiting[1:]
			c.finish(head, resp, nil)
		}
		c.mu.Unlock()
	}
}
