package server

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/broker/core"
	"github.com/chaos-isr/chaos/broker/wire"
)

// lane is one outgoing connection to a peer broker or the controller,
// carrying requests one at a time in the order they were sent. A failed or
// timed-out request closes the connection; the next request redials.
type lane struct {
	addr    string
	control bool
	queue   chan core.Send
	results chan<- peerResult
	done    chan struct{}
	client  string
	// spare is a fetch response's frame the broker is done with, for the
	// next response to be read into: a follower's fetches are most of
	// what it reads, and a new frame for each is zeroed memory.
	spare chan []byte
}

func newLane(addr string, control bool, results chan<- peerResult, brokerID int32) *lane {
	l := &lane{addr: addr, control: control, queue: make(chan core.Send, 1024), results: results,
		done: make(chan struct{}), client: fmt.Sprintf("chaos-broker-%d", brokerID), spare: make(chan []byte, 1)}
	go l.run()
	return l
}

func (l *lane) send(s core.Send) {
	select {
	case l.queue <- s:
	default:
		// The core keeps few requests in flight per lane; a full queue means
		// the peer is hopeless. Fail fast rather than block the event loop.
		go func() { l.results <- peerResult{id: s.ID, err: errors.New("send queue full")} }()
	}
}

func (l *lane) close() { close(l.done) }

func (l *lane) run() {
	var c net.Conn
	var corr int32
	var buf []byte
	defer func() {
		if c != nil {
			c.Close()
		}
	}()
	for {
		var s core.Send
		select {
		case s = <-l.queue:
		case <-l.done:
			return
		}
		timeout := time.Duration(s.TimeoutMs) * time.Millisecond
		if timeout <= 0 {
			timeout = 5 * time.Second
		}
		deadline := time.Now().Add(timeout)
		var resp any
		var frame []byte
		var err error
		if c == nil {
			c, err = net.DialTimeout("tcp", l.addr, timeout)
			if err != nil {
				c = nil
			} else if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetNoDelay(true)
			}
		}
		if err == nil {
			_ = c.SetDeadline(deadline)
			corr++
			resp, frame, buf, err = l.roundTrip(c, corr, s.Req, buf)
			if err != nil {
				c.Close()
				c = nil
			}
		}
		res := peerResult{id: s.ID, resp: resp, err: err}
		if _, ok := resp.(*kmsg.FetchResponse); ok && cap(frame) <= 16<<20 {
			// The core copies what it keeps of a fetch's answer (the log
			// appends a copy of the records): once it has handled it, the
			// frame is free.
			res.release = func() {
				select {
				case l.spare <- frame[:0]:
				default:
				}
			}
		}
		select {
		case l.results <- res:
		case <-l.done:
			return
		}
	}
}

// roundTrip sends req and reads its response, which may alias frame, the
// buffer it was read into; buf is the request's, kept for the next.
func (l *lane) roundTrip(c net.Conn, corr int32, req any, buf []byte) (resp any, frame, _ []byte, err error) {
	if l.control {
		if err := writeControl(c, req); err != nil {
			return nil, nil, buf, err
		}
		resp, err := readControl(c)
		return resp, nil, buf, err
	}
	kr, ok := req.(kmsg.Request)
	if !ok {
		return nil, nil, buf, fmt.Errorf("peer request %T is not a Kafka request", req)
	}
	buf = wire.AppendRequest(buf[:0], corr, l.client, kr)
	if _, err := c.Write(buf); err != nil {
		return nil, nil, buf, err
	}
	var in []byte
	select {
	case in = <-l.spare:
	default:
	}
	frame, err = wire.ReadFrame(c, 0, in)
	if err != nil {
		return nil, nil, buf, err
	}
	got, resp, err := wire.ParseResponse(frame, kr)
	if err != nil {
		return nil, nil, buf, err
	}
	if got != corr {
		return nil, nil, buf, fmt.Errorf("response correlation id %d, expected %d", got, corr)
	}
	return resp, frame, buf, nil
}
