package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/broker/memdriver"
	"github.com/chaos-isr/chaos/workload"
)

// The world is the Env the workload's machine runs in (workload.Env): the
// virtual clock, and wires that carry a client's requests through the
// simulated network.
var _ workload.Env = (*world)(nil)

// Now is the virtual time since the workload started.
func (w *world) Now() time.Duration { return w.now() }

// Stamp is the cluster's virtual clock, in milliseconds: what a batch's
// timestamp says.
func (w *world) Stamp() int64 { return w.c.Now() }

// After calls fn once d of virtual time has passed, rounded up to the
// clock's millisecond.
func (w *world) After(d time.Duration, fn func()) { w.after(d, fn) }

// NewWire is a client's connections through the simulated network.
func (w *world) NewWire(o workload.ClientOptions) workload.Wire {
	return &wire{w: w, timeout: o.Timeout, conns: map[int32]*conn{}}
}

// wire is one client's connections: what a socket would tell it and no
// more. A connection outlives neither a kill nor a restart of its broker.
type wire struct {
	w       *world
	timeout time.Duration
	conns   map[int32]*conn
	// closed: the process was replaced; answers still on their way are
	// dropped.
	closed bool
}

func (c *wire) Close() { c.closed = true }

// pending is a request in flight: done is called once, with the answer,
// or with why none came (the timeout, a reset connection).
type pending struct {
	w      *world
	broker int32
	done   func(kmsg.Response, error)
	over   bool
}

func (p *pending) complete(resp kmsg.Response, err error) {
	if p.over {
		return
	}
	p.over = true
	calls := p.w.open[p.broker]
	if i := slices.Index(calls, p); i >= 0 {
		p.w.open[p.broker] = slices.Delete(calls, i, i+1)
	}
	// The timeout's event holds p until it is due: dropping done lets
	// go of what the caller's callbacks hold. (A final read's fetches
	// each held the whole read's records: a 2-hour run's final phase, a
	// few seconds of virtual time, held every one of its 12 reads, about
	// 0.4 GB, until it ended.)
	done := p.done
	p.done = nil
	done(resp, err)
}

// conn is a connection to a broker: the broker's incarnation when it was
// dialled, and the requests written to it. The broker reads them one at a
// time, the next once it has answered the last (as a real broker mutes a
// connection while one of its requests is in process), so a request goes
// to the cluster only when the one before it is answered, and a
// pipelining producer's batches reach the broker in the order they were
// sent, whatever the delays the network draws for each message.
type conn struct {
	inc    int
	busy   bool
	queued []*queuedCall
}

// queuedCall is a request written behind another, waiting its turn. Its
// timeout runs from when it was written.
type queuedCall struct {
	req     kmsg.Request
	written time.Duration
	done    func(kmsg.Response, error)
}

// roundTrip sends req to broker id and calls done with the answer or why
// there is none: after timeout, an i/o timeout; if the broker dies first, a
// reset. Like a socket, it does not retry.
func (c *wire) roundTrip(id int32, req kmsg.Request, timeout time.Duration, done func(kmsg.Response, error)) {
	p := &pending{w: c.w, broker: id, done: func(resp kmsg.Response, err error) {
		if !c.closed {
			done(resp, err)
		}
	}}
	if pr, ok := req.(*kmsg.ProduceRequest); ok && pr.Acks == 0 {
		// No answer will come: written is all a client knows.
		c.w.c.Send(id, req)
		p.complete(nil, nil)
		return
	}
	c.w.open[id] = append(c.w.open[id], p)
	c.w.c.SendFunc(id, req, func(call *memdriver.Call) {
		if call.Err != nil {
			// The request reached a broker that was down: the connection
			// was reset.
			p.complete(nil, fmt.Errorf("read %s: %v", addrOf(id), call.Err))
			return
		}
		p.complete(call.Resp, nil)
	})
	c.w.after(timeout, func() { p.complete(nil, fmt.Errorf("read %s: i/o timeout", addrOf(id))) })
}

// dial opens a connection to broker id: refused if its process is down (a
// paused one's kernel still accepts).
func (c *wire) dial(id int32) error {
	if !c.w.c.Up(id) {
		return fmt.Errorf("%w: dial %s: connection refused", workload.ErrNotSent, addrOf(id))
	}
	return nil
}

// CallAddr sends req to the broker at addr, on a connection of its own.
func (c *wire) CallAddr(addr string, req kmsg.Request, done func(kmsg.Response, error)) {
	id, ok := brokerOf(addr)
	if !ok {
		done(nil, fmt.Errorf("%w: dial %s: no such host", workload.ErrNotSent, addr))
		return
	}
	if err := c.dial(id); err != nil {
		done(nil, err)
		return
	}
	c.roundTrip(id, req, c.timeout, done)
}

// Call sends req to broker id on the client's connection to it, dialled
// if there is none. A connection to a process that has died since (or was
// replaced by a restart) is reset when used: the request was written, the
// answer is an error. A failed connection is dropped so that the next call
// redials. The simulated brokers' addresses never change.
func (c *wire) Call(id int32, _ string, req kmsg.Request, done func(kmsg.Response, error)) {
	cn, ok := c.conns[id]
	if !ok {
		if err := c.dial(id); err != nil {
			done(nil, err)
			return
		}
		cn = &conn{inc: c.w.c.Incarnation(id)}
		c.conns[id] = cn
	}
	drop := func() {
		if c.conns[id] == cn {
			delete(c.conns, id)
		}
	}
	if !c.w.c.Up(id) || c.w.c.Incarnation(id) != cn.inc {
		c.w.c.After(c.w.delay(), func() {
			if !c.closed {
				drop()
				done(nil, fmt.Errorf("read %s: connection reset by peer", addrOf(id)))
			}
		})
		return
	}
	q := &queuedCall{req: req, written: c.w.now(), done: done}
	if cn.busy {
		cn.queued = append(cn.queued, q)
		return
	}
	c.turn(id, cn, q, drop)
}

// turn sends q, the request at the head of cn, and the next once it is
// answered. A request that failed fails those written behind it with the
// same error, as the connection is closed under them.
func (c *wire) turn(id int32, cn *conn, q *queuedCall, drop func()) {
	cn.busy = true
	c.roundTrip(id, q.req, c.timeout-(c.w.now()-q.written), func(resp kmsg.Response, err error) {
		cn.busy = false
		if err != nil {
			drop()
			queued := cn.queued
			cn.queued = nil
			q.done(nil, err)
			for _, b := range queued {
				b.done(nil, err)
			}
			return
		}
		// The next request is the broker's before anything this answer
		// sets off is written.
		if len(cn.queued) > 0 {
			next := cn.queued[0]
			cn.queued = cn.queued[1:]
			c.turn(id, cn, next, drop)
		}
		q.done(resp, nil)
	})
}
