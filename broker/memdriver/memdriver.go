package memdriver

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/broker/bug"
	"github.com/chaos-isr/chaos/broker/control"
	"github.com/chaos-isr/chaos/broker/controller"
	"github.com/chaos-isr/chaos/broker/core"
	"github.com/chaos-isr/chaos/broker/storage"
	"github.com/chaos-isr/chaos/broker/wire"
	"github.com/chaos-isr/chaos/internal/clockfault"
)

// ClientID is the node id of test clients in link cuts and traces.
const ClientID int32 = -2000

// ControllerID is the controller's node id (as core.ControllerID).
const ControllerID = core.ControllerID

// Options configure a cluster.
type Options struct {
	Seed       uint64
	Brokers    int
	Controller controller.Config
	Broker     core.Config // BrokerID, Host, Port and Incarnation are set per broker
	MinDelayMs int64       // message delay range
	MaxDelayMs int64
	TickMs     int64
	Fsync      storage.Fsync
	// FsyncIntervalMs is FsyncInterval's interval (0: storage's default).
	FsyncIntervalMs int64
	// StorageBugs are the planted storage bugs of every broker's logs
	// (package bug); the broker's and the controller's own are in Broker
	// and Controller.
	StorageBugs bug.Set
	// NoTrace turns the trace off (Trace returns ""): a whole simulated
	// test delivers millions of messages, and formatting each one would
	// cost more time and memory than running the cluster.
	NoTrace bool
	// OnCrash, when set, hears of each node whose state machine panicked:
	// the driver recovers the panic and the node is down (see Crash).
	// Nil: a panic is not recovered.
	OnCrash func(Crash)
	// CrashLosesUnsynced: a broker that crashes loses its unsynced
	// writes, as a killed one does when it keeps them in memory.
	CrashLosesUnsynced bool
	// OnLog, when set, hears every line a node logs (node 0 the
	// controller, brokers by id), trace or not: what a search reads as the
	// cluster's own state transitions.
	OnLog func(node int32, line string)
	// OnViolation, when set, hears each breach of the invariant that every
	// in-sync replica holds the committed log (invariant.go), checked after
	// every step of every node; nil: not checked.
	OnViolation func(Violation)
	// Spill, when set, is where the brokers' logs move their full chunks
	// (storage.Spill): a long simulation then holds each log's last
	// chunk, not every record. Nil: the logs are held in memory.
	Spill *storage.Spill
}

// DefaultOptions is a 3-broker cluster with test-friendly timings.
func DefaultOptions(seed uint64) Options {
	cc := controller.DefaultConfig()
	cc.SessionTimeoutMs = 1000
	bc := core.DefaultConfig()
	bc.ReplicaLagTimeMaxMs = 1000
	bc.HeartbeatIntervalMs = 100
	bc.ReplicaFetchWaitMaxMs = 200
	bc.ControllerTimeoutMs = 500
	return Options{Seed: seed, Brokers: 3, Controller: cc, Broker: bc, MinDelayMs: 1, MaxDelayMs: 5, TickMs: 10}
}

var (
	errUnreachable = errors.New("connection refused")
	errTimeout     = errors.New("request timed out")
	errConnClosed  = errors.New("connection closed by the broker")
)

type node struct {
	id          int32
	b           *core.Broker
	logs        *storage.MemoryFactory
	up, paused  bool
	crashed     bool // down since its state machine panicked
	incarnation int
	backlog     []*msg                  // delivered while paused
	snapshot    *storage.MemorySnapshot // a copy of its disk (SnapshotDisk)
}

type msgKind int

const (
	kRequest  msgKind = iota // a client or peer request to a broker
	kReply                   // a broker's reply to a client
	kResponse                // an answer to a core.Send
	kControl                 // a request to the controller
	kTimeout                 // a core.Send's timeout
	kTimer                   // a callback of After: the simulation's own events
)

type msg struct {
	at, seq  int64
	kind     msgKind
	from, to int32
	conn     core.ConnID
	corr     int32
	req      any
	resp     any
	err      error
	sendID   uint64
	call     *Call
	fn       func() // kTimer
}

// Call is a client request in flight; Done says whether it was answered.
type Call struct {
	Broker int32
	Req    kmsg.Request
	Resp   kmsg.Response
	Done   bool
	Err    error // the broker was unreachable
	// done, when set (SendFunc), is called once Done is.
	done func(*Call)
}

// Cluster is the simulated cluster.
type Cluster struct {
	opts   Options
	now    int64
	rng    *rand.Rand
	seq    int64
	queue  msgHeap
	trace  strings.Builder
	ctrl   *controller.Controller
	ctrlUp bool
	// ctrlCrashed: the controller is down since it panicked.
	ctrlCrashed bool
	ctrlMD      *control.Snapshot // what the controller persisted
	nodes       []*node
	cut         map[[2]int32]bool
	// sends awaiting an answer, by (broker, incarnation, send id): an answer
	// after a restart or a timeout is dropped, as a dead socket would.
	open      map[sendKey]bool
	calls     map[core.ConnID]*Call
	peerConns map[core.ConnID]peerSend
	nextConn  core.ConnID
	nextCorr  int32
	// net holds the network faults of sim.go; nil without any.
	net *netFaults
	// inv is the invariant watch, nil unless Options.OnViolation is set.
	inv *invariantWatch
	// clocks are the nodes' clock faults (SetClock), by node id.
	clocks map[int32]clockfault.Clock
}

type sendKey struct {
	broker      int32
	incarnation int
	id          uint64
}

type peerSend struct {
	from int32
	key  sendKey
}

// New starts a cluster: the controller and every broker are up.
func New(opts Options) *Cluster {
	c := &Cluster{
		opts: opts, rng: rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)),
		cut: map[[2]int32]bool{}, open: map[sendKey]bool{}, calls: map[core.ConnID]*Call{},
		peerConns: map[core.ConnID]peerSend{},
	}
	if opts.OnViolation != nil {
		c.inv = &invariantWatch{parts: map[tpKey]*partWatch{}, arena: opts.Spill.Arena()}
	}
	c.ctrl = controller.New(opts.Controller, nil)
	c.ctrlUp = true
	for i := 1; i <= opts.Brokers; i++ {
		n := &node{id: int32(i), logs: &storage.MemoryFactory{Fsync: opts.Fsync, FsyncIntervalMs: opts.FsyncIntervalMs, Bugs: opts.StorageBugs, Spill: opts.Spill}}
		c.nodes = append(c.nodes, n)
		c.startBroker(n)
	}
	return c
}

// SetClock gives node id (a broker, or ControllerID) the clock fault f
// from now on; the zero Fault gives it the true time again. Its timers
// still fire on the virtual clock, as a real process's do on the
// monotonic one.
func (c *Cluster) SetClock(id int32, f clockfault.Fault) {
	if f.True() {
		delete(c.clocks, id)
		c.tracef("node %d clock set right", id)
		return
	}
	if c.clocks == nil {
		c.clocks = map[int32]clockfault.Clock{}
	}
	c.clocks[id] = clockfault.Clock{Since: c.now, Fault: f}
	c.tracef("node %d clock %v, rate %g", id, f.Offset, f.Rate)
}

// clockOf is node id's time: the virtual time as its clock fault shows it.
func (c *Cluster) clockOf(id int32) int64 {
	if k, ok := c.clocks[id]; ok {
		return k.Read(c.now)
	}
	return c.now
}

// Now is the virtual time in milliseconds.
func (c *Cluster) Now() int64 { return c.now }

// Trace returns everything traced so far.
func (c *Cluster) Trace() string { return c.trace.String() }

func (c *Cluster) tracef(format string, args ...any) {
	if c.opts.NoTrace {
		return
	}
	fmt.Fprintf(&c.trace, "%6d ", c.now)
	fmt.Fprintf(&c.trace, format, args...)
	c.trace.WriteByte('\n')
}

// Node returns broker id's state machine, or nil if it is down.
func (c *Cluster) Node(id int32) *core.Broker {
	n := c.node(id)
	if n == nil || !n.up {
		return nil
	}
	return n.b
}

// Logs returns broker id's storage (which outlives restarts).
func (c *Cluster) Logs(id int32) *storage.MemoryFactory { return c.node(id).logs }

// Controller returns the controller's state machine.
func (c *Cluster) Controller() *controller.Controller { return c.ctrl }

func (c *Cluster) node(id int32) *node {
	if id < 1 || int(id) > len(c.nodes) {
		return nil
	}
	return c.nodes[id-1]
}

func (c *Cluster) startBroker(n *node) {
	n.incarnation++
	cfg := c.opts.Broker
	cfg.BrokerID = n.id
	cfg.Host = fmt.Sprintf("b%d", n.id)
	cfg.Port = 9092
	cfg.Incarnation = fmt.Sprintf("b%d-%d", n.id, n.incarnation)
	n.up, n.paused, n.backlog, n.crashed = true, false, nil, false
	c.tracef("b%d start (incarnation %d)", n.id, n.incarnation)
	if c.step(n, func() {
		n.b = core.New(cfg, n.logs)
		n.b.Tick(c.clockOf(n.id))
	}) {
		c.drain(n)
	}
}

// Kill stops broker id abruptly; with loseUnsynced its unsynced writes are
// gone too (a power loss rather than a process crash).
func (c *Cluster) Kill(id int32, loseUnsynced bool) {
	n := c.node(id)
	if !n.up {
		return
	}
	n.up, n.paused, n.backlog = false, false, nil
	if loseUnsynced {
		n.logs.LoseUnsynced()
	}
	c.tracef("b%d killed (lose unsynced: %v)", id, loseUnsynced)
}

// Damage damages down broker id's storage as a disk fault does
// (storage.MemoryFactory.Damage), drawing the place from seed.
func (c *Cluster) Damage(id int32, what string, seed uint64) (string, error) {
	n := c.node(id)
	if n.up {
		return "", fmt.Errorf("b%d is up: only a down broker's disk is damaged", id)
	}
	did, err := n.logs.Damage(what, rand.New(rand.NewPCG(seed, 0x6469736b)))
	c.tracef("b%d disk: %s %v", id, did, err)
	return did, err
}

// SnapshotDisk keeps a copy of down broker id's storage; RestoreDisk puts
// it back.
func (c *Cluster) SnapshotDisk(id int32) error {
	n := c.node(id)
	if n.up {
		return fmt.Errorf("b%d is up: a disk is copied while its broker is down", id)
	}
	n.snapshot = n.logs.Snapshot()
	c.tracef("b%d disk copied", id)
	return nil
}

// RestoreDisk puts back the copy SnapshotDisk kept of down broker id's
// storage.
func (c *Cluster) RestoreDisk(id int32) error {
	n := c.node(id)
	switch {
	case n.up:
		return fmt.Errorf("b%d is up: a disk is restored while its broker is down", id)
	case n.snapshot == nil:
		return fmt.Errorf("b%d: no copy of its disk to restore", id)
	}
	n.logs.Restore(n.snapshot)
	c.tracef("b%d disk restored from its copy", id)
	return nil
}

// Restart starts a killed broker on its old storage.
func (c *Cluster) Restart(id int32) {
	if n := c.node(id); !n.up {
		c.startBroker(n)
	}
}

// Pause freezes broker id: it gets no ticks and its messages wait.
func (c *Cluster) Pause(id int32) {
	if n := c.node(id); n.up {
		n.paused = true
		c.tracef("b%d paused", id)
	}
}

// Resume unfreezes broker id and hands it what arrived meanwhile.
func (c *Cluster) Resume(id int32) {
	n := c.node(id)
	if !n.up || !n.paused {
		return
	}
	n.paused = false
	c.tracef("b%d resumed (%d waiting messages)", id, len(n.backlog))
	backlog := n.backlog
	n.backlog = nil
	for _, m := range backlog {
		c.deliver(m)
	}
}

// KillController and RestartController model a controller crash; it resumes
// from what it persisted.
func (c *Cluster) KillController() {
	c.ctrlUp = false
	c.tracef("controller killed")
}

// RestartController starts the controller from its persisted snapshot.
func (c *Cluster) RestartController() {
	c.ctrlUp, c.ctrlCrashed = true, false
	c.stepController(func() {
		c.ctrl = controller.New(c.opts.Controller, c.ctrlMD)
		c.tracef("controller restarted at metadata version %d", c.ctrl.Version())
	})
}

// Cut drops every message from a to b (one way). Node ids: brokers 1..n,
// ControllerID, ClientID.
func (c *Cluster) Cut(a, b int32) {
	c.cut[[2]int32{a, b}] = true
	c.tracef("cut %s -> %s", name(a), name(b))
}

// Isolate cuts id off from every other node, both ways.
func (c *Cluster) Isolate(id int32) {
	for _, o := range c.allIDs() {
		if o != id {
			c.cut[[2]int32{id, o}] = true
			c.cut[[2]int32{o, id}] = true
		}
	}
	c.tracef("isolate %s", name(id))
}

// Heal restores every link: cuts, blocks (delivering what they held),
// delays and drops.
func (c *Cluster) Heal() {
	c.cut = map[[2]int32]bool{}
	c.healNet()
	c.tracef("heal")
}

func (c *Cluster) allIDs() []int32 {
	ids := []int32{ControllerID, ClientID}
	for _, n := range c.nodes {
		ids = append(ids, n.id)
	}
	return ids
}

func name(id int32) string {
	switch id {
	case ControllerID:
		return "controller"
	case ClientID:
		return "client"
	}
	return fmt.Sprintf("b%d", id)
}

func (c *Cluster) delay() int64 {
	lo, hi := c.opts.MinDelayMs, c.opts.MaxDelayMs
	if hi <= lo {
		return lo
	}
	return lo + c.rng.Int64N(hi-lo+1)
}

// enqueue schedules m unless its link is cut (then it is lost, like a
// blackholed packet stream).
func (c *Cluster) enqueue(m *msg, after int64) {
	if c.cut[[2]int32{m.from, m.to}] {
		return
	}
	if c.net != nil {
		var taken bool
		if after, taken = c.netFault(m, after); taken {
			return
		}
	}
	c.insert(m, c.now+after)
}

// insert puts m in the queue at time at, after everything already due then.
func (c *Cluster) insert(m *msg, at int64) {
	c.seq++
	m.at, m.seq = at, c.seq
	c.queue.push(m)
}

// Send issues a client request to broker id. Run the cluster to get the
// answer in the returned Call.
func (c *Cluster) Send(id int32, req kmsg.Request) *Call {
	call := &Call{Broker: id, Req: req}
	c.nextConn++
	c.nextCorr++
	conn := c.nextConn
	c.calls[conn] = call
	if !c.opts.NoTrace {
		c.tracef("client -> b%d %s", id, describe(req))
	}
	c.enqueue(&msg{kind: kRequest, from: ClientID, to: id, conn: conn, corr: c.nextCorr, req: req, call: call}, c.delay())
	return call
}

// Run advances virtual time by ms, delivering messages and ticking.
func (c *Cluster) Run(ms int64) {
	c.RunUntil(ms, func() bool { return false })
}

// RunUntil advances time until cond holds (checked after every event) or
// ms have passed; it reports whether cond held.
func (c *Cluster) RunUntil(ms int64, cond func() bool) bool {
	end := c.now + ms
	nextTick := c.now - c.now%c.opts.TickMs + c.opts.TickMs
	for {
		if cond() {
			return true
		}
		if len(c.queue) > 0 && c.queue[0].at <= nextTick && c.queue[0].at <= end {
			m := c.queue.pop()
			c.now = max(c.now, m.at)
			c.deliver(m)
			continue
		}
		if nextTick > end {
			c.now = end
			return cond()
		}
		c.now = nextTick
		nextTick += c.opts.TickMs
		c.tick()
	}
}

func (c *Cluster) tick() {
	if c.ctrlUp {
		c.stepController(func() {
			c.ctrl.Tick(c.clockOf(ControllerID))
			c.controllerStep()
		})
	}
	for _, n := range c.nodes {
		if n.up && !n.paused && c.step(n, func() { n.b.Tick(c.clockOf(n.id)) }) {
			c.drain(n)
		}
	}
}

// controllerStep persists and traces what the controller decided.
func (c *Cluster) controllerStep() {
	for _, e := range c.ctrl.Events() {
		c.tracef("controller: %s", e)
		if c.opts.OnLog != nil {
			c.opts.OnLog(0, e)
		}
	}
	if c.ctrlMD == nil || c.ctrl.Version() != c.ctrlMD.Version {
		c.ctrlMD = c.ctrl.Snapshot()
		c.checkController()
	}
}

func (c *Cluster) deliver(m *msg) {
	switch m.kind {
	case kTimer:
		m.fn()
		return
	case kReply:
		m.call.Resp, m.call.Err = toResponse(m.resp), m.err
		delete(c.calls, m.conn)
		if !c.opts.NoTrace {
			c.tracef("client <- b%d %s", m.from, describeResp(m.call.Resp, m.err))
		}
		m.call.finish()
		return
	case kControl:
		if !c.ctrlUp {
			c.answer(m, nil, errUnreachable)
			return
		}
		var resp any
		if !c.stepController(func() {
			resp = c.ctrl.Handle(c.clockOf(ControllerID), m.req)
			if !c.opts.NoTrace {
				c.tracef("controller <- b%d %s", m.from, describe(m.req))
			}
			c.controllerStep()
		}) {
			return // it died before it answered
		}
		c.answer(m, resp, nil)
		return
	}
	n := c.node(m.to)
	if n == nil || !n.up {
		if m.kind == kRequest {
			c.answer(m, nil, errUnreachable)
		}
		return
	}
	if n.paused {
		n.backlog = append(n.backlog, m)
		return
	}
	switch m.kind {
	case kRequest:
		if !c.opts.NoTrace {
			c.tracef("b%d <- %s %s", n.id, name(m.from), describe(m.req))
		}
		if av, ok := m.req.(*kmsg.ApiVersionsRequest); ok {
			// Answered by the server's wire layer, as over TCP: the
			// versions the broker advertises need no state.
			var features map[string]int16
			if n.b != nil {
				features = n.b.FinalizedFeatures()
			}
			c.answer(m, wire.ApiVersionsResponse(av.Version, features), nil)
			return
		}
		if !c.step(n, func() { n.b.Request(c.clockOf(n.id), m.conn, m.corr, m.req.(kmsg.Request)) }) {
			return
		}
	case kResponse, kTimeout:
		k := sendKey{n.id, n.incarnation, m.sendID}
		if m.sendID == 0 || !c.open[k] {
			return
		}
		delete(c.open, k)
		if m.kind == kTimeout {
			m.err = errTimeout
		}
		if !c.opts.NoTrace {
			c.tracef("b%d <- %s answer #%d %s", n.id, name(m.from), m.sendID, describeResp(m.resp, m.err))
		}
		if !c.step(n, func() { n.b.Response(c.clockOf(n.id), m.sendID, m.resp, m.err) }) {
			return
		}
	}
	c.drain(n)
}

// answer routes the reply to a request message back to its sender.
func (c *Cluster) answer(req *msg, resp any, err error) {
	if req.call != nil {
		c.enqueue(&msg{kind: kReply, from: req.to, to: ClientID, conn: req.conn, resp: resp, err: err, call: req.call}, c.delay())
		return
	}
	c.enqueue(&msg{kind: kResponse, from: req.to, to: req.from, sendID: req.sendID, resp: resp, err: err}, c.delay())
}

// drain carries out a broker's effects.
func (c *Cluster) drain(n *node) {
	c.checkBroker(n)
	for _, e := range n.b.Effects() {
		switch e := e.(type) {
		case core.Log:
			c.tracef("b%d: %s", n.id, e.Line)
			if c.opts.OnLog != nil {
				c.opts.OnLog(n.id, e.Line)
			}
		case core.Reply:
			if e.Resp == nil {
				if call := c.calls[e.Conn]; call != nil {
					if e.Close {
						call.Err = errConnClosed
					}
					delete(c.calls, e.Conn)
					call.finish()
				}
				continue
			}
			if call := c.calls[e.Conn]; call != nil {
				c.enqueue(&msg{kind: kReply, from: n.id, to: ClientID, conn: e.Conn, resp: e.Resp, call: call}, c.delay())
			} else if ps, ok := c.peerConns[e.Conn]; ok {
				delete(c.peerConns, e.Conn)
				c.enqueue(&msg{kind: kResponse, from: n.id, to: ps.from, sendID: ps.key.id, resp: roundTrip(e.Resp)}, c.delay())
			}
		case core.Send:
			k := sendKey{n.id, n.incarnation, e.ID}
			c.open[k] = true
			c.enqueueTimeout(n.id, e.ID, e.TimeoutMs)
			if e.To == core.ControllerID {
				c.enqueue(&msg{kind: kControl, from: n.id, to: ControllerID, sendID: e.ID, req: e.Req}, c.delay())
				continue
			}
			c.nextConn++
			c.nextCorr++
			c.peerConns[c.nextConn] = peerSend{from: n.id, key: k}
			c.enqueue(&msg{kind: kRequest, from: n.id, to: e.To, conn: c.nextConn, corr: c.nextCorr, req: roundTripReq(e.Req.(kmsg.Request)), sendID: e.ID}, c.delay())
		}
	}
}

func (c *Cluster) enqueueTimeout(id int32, sendID uint64, timeout int64) {
	if timeout <= 0 {
		timeout = 1000
	}
	// A timeout is not a message on a link: cuts do not stop it.
	c.insert(&msg{kind: kTimeout, from: id, to: id, sendID: sendID}, c.now+timeout)
}
