package server

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/broker/control"
	"github.com/chaos-isr/chaos/broker/core"
	"github.com/chaos-isr/chaos/broker/storage"
	"github.com/chaos-isr/chaos/broker/wire"
)

// BrokerOptions configure a broker process.
type BrokerOptions struct {
	Core       core.Config // BrokerID, replication settings; Host/Port default to Listen
	Listen     string      // host:port for Kafka clients and peers
	Advertise  string      // host:port given to clients and peers; default Listen
	Controller string      // the controller's host:port
	// PeerAddrs overrides the address this broker dials for a peer broker
	// (by id) instead of the one the peer advertises: the tester routes
	// inter-broker links through fault-injecting proxies this way.
	PeerAddrs map[int32]string
	DataDir   string
	Storage   storage.Options
	TickMs    int64
	MaxFrame  int32
	Logger    *log.Logger
}

type inbound struct {
	conn  core.ConnID
	corr  int32
	req   kmsg.Request
	reply chan core.Reply
}

type peerResult struct {
	id   uint64
	resp any
	err  error
	// release, if set, hands the response's frame back to its lane for
	// the next response, once the core is done with it.
	release func()
}

// Broker is a running broker process.
type Broker struct {
	opts     BrokerOptions
	ln       net.Listener
	core     *core.Broker
	clock    *faultClock
	log      *log.Logger
	requests chan inbound
	results  chan peerResult
	closed   chan core.ConnID
	replies  map[core.ConnID]chan core.Reply
	lanes    map[string]*lane
	nextConn atomic.Uint64
	connsMu  sync.Mutex
	conns    map[net.Conn]struct{}
	wg       sync.WaitGroup
	// features are the cluster's finalized features as the loop last saw
	// them in the core's metadata, for the connections' ApiVersions
	// answers, which need no other state.
	features atomic.Pointer[map[string]int16]
}

// StartBroker opens the data directory, listens, and starts the event loop.
// The broker runs until ctx ends; Wait returns after it has shut down.
func StartBroker(ctx context.Context, opts BrokerOptions) (*Broker, error) {
	if opts.Logger == nil {
		opts.Logger = log.New(os.Stderr, fmt.Sprintf("broker %d: ", opts.Core.BrokerID), log.LstdFlags|log.Lmicroseconds)
	}
	if opts.TickMs <= 0 {
		opts.TickMs = 10
	}
	if opts.Advertise == "" {
		opts.Advertise = opts.Listen
	}
	host, portStr, err := net.SplitHostPort(opts.Advertise)
	if err != nil {
		return nil, fmt.Errorf("advertised address %q: %w", opts.Advertise, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("advertised port %q: %w", portStr, err)
	}
	if opts.Controller == "" {
		return nil, errors.New("the controller's address is required")
	}
	if opts.DataDir == "" {
		return nil, errors.New("a data directory is required")
	}
	cfg := opts.Core
	cfg.Host, cfg.Port = host, int32(port)
	cfg.Incarnation = incarnation()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := opts.Storage.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.DataDir, 0o755); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return nil, err
	}
	// The core's clock is the wall clock as of the start, then monotonic:
	// immune to clock steps while running, and forward across restarts,
	// which the producer ids the core hands out rely on.
	start := time.Now()
	startMs := start.UnixMilli()
	// A clock fault (clockfault) shows that time wrong.
	clock := newFaultClock(ctx, opts.DataDir, func() int64 { return startMs + time.Since(start).Milliseconds() }, opts.Logger)
	// The fsync interval is judged on the core's clock, whether the log
	// or the core's timer asks.
	opts.Storage.NowMs = clock.now
	b := &Broker{
		opts: opts, ln: ln, clock: clock, log: opts.Logger,
		core:     core.New(cfg, storage.DiskFactory{Dir: opts.DataDir, Options: opts.Storage}),
		requests: make(chan inbound), results: make(chan peerResult, 64), closed: make(chan core.ConnID, 64),
		replies: map[core.ConnID]chan core.Reply{}, lanes: map[string]*lane{}, conns: map[net.Conn]struct{}{},
	}
	b.log.Printf("listening on %s (advertised %s), cluster %s, controller %s, data %s, incarnation %s",
		ln.Addr(), opts.Advertise, cmp.Or(cfg.ClusterID, control.DefaultClusterID), opts.Controller, opts.DataDir, cfg.Incarnation)
	if bugs := cfg.Bugs | opts.Storage.Bugs; !bugs.Empty() {
		b.log.Printf("PLANTED BUGS: %s: this broker breaks replication rules on purpose", bugs)
	}
	b.wg.Add(2)
	go b.accept(ctx)
	go b.loop(ctx)
	return b, nil
}

// Addr is the address the broker listens on.
func (b *Broker) Addr() net.Addr { return b.ln.Addr() }

// Wait blocks until the broker has shut down.
func (b *Broker) Wait() { b.wg.Wait() }

func incarnation() string {
	var r [8]byte
	_, _ = rand.Read(r[:])
	return fmt.Sprintf("%d-%s", os.Getpid(), hex.EncodeToString(r[:]))
}

func (b *Broker) now() int64 { return b.clock.now() }

func (b *Broker) accept(ctx context.Context) {
	defer b.wg.Done()
	go func() {
		<-ctx.Done()
		b.ln.Close()
	}()
	for {
		c, err := b.ln.Accept()
		if err != nil {
			if ctx.Err() == nil {
				b.log.Printf("accept: %v", err)
			}
			return
		}
		b.connsMu.Lock()
		b.conns[c] = struct{}{}
		b.connsMu.Unlock()
		go b.serve(ctx, c)
	}
}

// serve reads requests from one connection, one at a time: the next is
// read once the last is answered, as Kafka mutes a connection while one of
// its requests is in process. Requests a client pipelines (an idempotent
// producer may have five produces in flight) wait in the socket, and reach
// the core and are answered in the order sent, which the sequence checks
// and the clients' matching of answers to requests rely on.
func (b *Broker) serve(ctx context.Context, c net.Conn) {
	defer func() {
		b.connsMu.Lock()
		delete(b.conns, c)
		b.connsMu.Unlock()
		c.Close()
	}()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	reply := make(chan core.Reply, 1)
	var id core.ConnID
	registered := false
	defer func() {
		if registered {
			select {
			case b.closed <- id:
			case <-ctx.Done():
			}
		}
	}()
	var out []byte
	// in is the buffer the next request is read into. A produce's or a
	// fetch's is read into the last one's: once answered, nothing of
	// them is held (the log copies what it appends, and strings are
	// copied as they are decoded). Other requests may leave their bytes
	// in the broker's state (a group member's metadata), and get a new
	// buffer after them.
	var in []byte
	for {
		frame, err := wire.ReadFrame(c, b.opts.MaxFrame, in)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && ctx.Err() == nil {
				b.log.Printf("%s: closing: %v", c.RemoteAddr(), err)
			}
			return
		}
		req, err := wire.ParseRequest(frame)
		switch {
		case errors.Is(err, wire.ErrUnsupported):
			resp, ok := wire.UnsupportedResponse(req)
			if !ok {
				b.log.Printf("%s: closing: %s v%d is not supported", c.RemoteAddr(), kmsg.NameForKey(req.Key), req.Version)
				return
			}
			if !b.write(c, &out, req, resp) {
				return
			}
			continue
		case err != nil:
			b.log.Printf("%s: closing: %v", c.RemoteAddr(), err)
			return
		}
		if req.Key == 18 { // ApiVersions needs no state
			var features map[string]int16
			if f := b.features.Load(); f != nil {
				features = *f
			}
			if !b.write(c, &out, req, wire.ApiVersionsResponse(req.Version, features)) {
				return
			}
			continue
		}
		if !registered {
			registered = true
			id = core.ConnID(b.nextConn.Add(1))
		}
		select {
		case b.requests <- inbound{conn: id, corr: req.CorrelationID, req: req.Body, reply: reply}:
		case <-ctx.Done():
			return
		}
		var r core.Reply
		select {
		case r = <-reply:
		case <-ctx.Done():
			return
		}
		if r.Close {
			return
		}
		if r.Resp != nil && !b.write(c, &out, req, r.Resp) {
			return
		}
		in = nil
		if (req.Key == 0 || req.Key == 1) && cap(frame) <= 4<<20 {
			in = frame[:0]
		}
	}
}

func (b *Broker) write(c net.Conn, out *[]byte, req wire.Request, resp kmsg.Response) bool {
	*out = wire.AppendResponse((*out)[:0], req, resp)
	if _, err := c.Write(*out); err != nil {
		return false
	}
	if cap(*out) > 4<<20 {
		*out = nil // do not pin a large fetch response's buffer
	}
	return true
}

// loop owns the state machine: every event and every effect passes here.
func (b *Broker) loop(ctx context.Context) {
	defer b.wg.Done()
	tick := time.NewTicker(time.Duration(b.opts.TickMs) * time.Millisecond)
	defer tick.Stop()
	b.core.Tick(b.now())
	b.effects()
	for {
		select {
		case <-ctx.Done():
			b.shutdown()
			return
		case in := <-b.requests:
			b.replies[in.conn] = in.reply
			b.core.Request(b.now(), in.conn, in.corr, in.req)
		case r := <-b.results:
			b.core.Response(b.now(), r.id, r.resp, r.err)
			if r.release != nil {
				r.release()
			}
		case id := <-b.closed:
			delete(b.replies, id)
			b.core.ConnClosed(id)
		case <-tick.C:
			b.core.Tick(b.now())
		}
		b.effects()
	}
}

func (b *Broker) effects() {
	if f, old := b.core.FinalizedFeatures(), b.features.Load(); old == nil || !maps.Equal(f, *old) {
		b.features.Store(&f)
	}
	for _, e := range b.core.Effects() {
		switch e := e.(type) {
		case core.Log:
			b.log.Print(e.Line)
		case core.Reply:
			if ch := b.replies[e.Conn]; ch != nil {
				ch <- e // buffered: the connection waits for exactly one
			}
		case core.Send:
			addr := e.Addr
			if over, ok := b.opts.PeerAddrs[e.To]; ok {
				addr = over
			}
			key := e.Lane + "@" + addr
			if e.To == core.ControllerID {
				addr, key = b.opts.Controller, "controller"
			}
			l := b.lanes[key]
			if l == nil {
				l = newLane(addr, e.To == core.ControllerID, b.results, b.opts.Core.BrokerID)
				b.lanes[key] = l
			}
			l.send(e)
		}
	}
}

func (b *Broker) shutdown() {
	for _, l := range b.lanes {
		l.close()
	}
	b.connsMu.Lock()
	for c := range b.conns {
		c.Close()
	}
	b.connsMu.Unlock()
	if err := b.core.Close(); err != nil {
		b.log.Printf("closing logs: %v", err)
	}
	b.log.Printf("stopped")
}
