package memdriver

import (
	"errors"
	"math/rand/v2"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// What a whole-test simulation (package sim) needs beyond the data-driven
// tests: its own events on the cluster's clock, callbacks for client
// calls, a graceful stop, and the network faults of the real runtimes'
// fabrics (held links, slow links, resets). None of it changes what a
// script that does not use it sees: the traces stay byte for byte.

// errConnReset is what a DropAll reset gives the side that sent a request.
var errConnReset = errors.New("connection reset by peer")

// After calls fn from the event loop once ms more of virtual time have
// passed (at least none), in order with the messages due then: the way a
// simulation puts its own events (client timers, a nemesis's schedule, a
// monitor's ticks) on the cluster's clock, so that one loop orders every
// choice.
func (c *Cluster) After(ms int64, fn func()) {
	c.insert(&msg{kind: kTimer, fn: fn}, c.now+max(ms, 0))
}

// SendFunc is Send, calling done from the event loop once the call is
// Done: its answer arrived, the broker closed the connection instead, or
// the broker took an acks=0 produce, which has no answer.
func (c *Cluster) SendFunc(id int32, req kmsg.Request, done func(*Call)) *Call {
	call := c.Send(id, req)
	call.done = done
	return call
}

func (call *Call) finish() {
	call.Done = true
	if call.done != nil {
		call.done(call)
	}
}

// Up reports whether broker id runs (paused or not).
func (c *Cluster) Up(id int32) bool {
	n := c.node(id)
	return n != nil && n.up
}

// Paused reports whether broker id is paused.
func (c *Cluster) Paused(id int32) bool {
	n := c.node(id)
	return n != nil && n.up && n.paused
}

// Incarnation counts broker id's starts: a client's connection to an
// earlier incarnation died with it.
func (c *Cluster) Incarnation(id int32) int {
	if n := c.node(id); n != nil {
		return n.incarnation
	}
	return 0
}

// ControllerUp reports whether the controller runs.
func (c *Cluster) ControllerUp() bool { return c.ctrlUp }

// Stop shuts broker id down cleanly, as on SIGTERM: the broker closes its
// logs, which syncs and checkpoints them, and is down until Restart.
func (c *Cluster) Stop(id int32) {
	n := c.node(id)
	if n == nil || !n.up {
		return
	}
	var err error
	if !c.step(n, func() { err = n.b.Close() }) {
		return
	}
	if err != nil {
		c.tracef("b%d: closing logs: %v", id, err)
	}
	n.up, n.paused, n.backlog = false, false, nil
	c.tracef("b%d stopped", id)
}

// netFaults are the network faults beyond Cut, between nodes (clients are
// never touched), as the tester's fabrics inject them.
type netFaults struct {
	// blocked links hold their messages until Heal, like a blackholed TCP
	// stream that recovers (package proxy's Block, a drop rule's
	// retransmissions).
	blocked map[[2]int32]bool
	held    []heldMsg
	// slow adds delay to the connections one node opens to another: its
	// requests and their answers.
	slow map[[2]int32]int64
	// all adds delay to every message.
	all int64
	// drop resets the connection of a message with this probability.
	drop    float64
	dropRng *rand.Rand
}

type heldMsg struct {
	m     *msg
	after int64
}

func (c *Cluster) faults() *netFaults {
	if c.net == nil {
		c.net = &netFaults{blocked: map[[2]int32]bool{}, slow: map[[2]int32]int64{}}
	}
	return c.net
}

// Block holds every message from a to b until Heal, then delivers them:
// what a partition does to a TCP stream that survives it. Cut loses them
// instead.
func (c *Cluster) Block(a, b int32) {
	c.faults().blocked[[2]int32{a, b}] = true
	c.tracef("block %s -> %s", name(a), name(b))
}

// SlowLink delays both directions of the connections node from opens to
// node to by ms more: from's requests arrive late, and so do the answers.
// 0 removes the delay.
func (c *Cluster) SlowLink(from, to int32, ms int64) {
	c.faults().slow[[2]int32{from, to}] = ms
	c.tracef("slow %s -> %s by %dms", name(from), name(to), ms)
}

// DelayAll delays every message between nodes by ms more.
func (c *Cluster) DelayAll(ms int64) {
	c.faults().all = ms
	c.tracef("delay all by %dms", ms)
}

// DropAll resets the connection of each message between nodes with
// probability p, drawn from a stream of its own seeded with seed: the
// message is lost, and the side that sent the request gets a reset at
// once instead of waiting for its timeout.
func (c *Cluster) DropAll(p float64, seed uint64) {
	f := c.faults()
	f.drop, f.dropRng = p, rand.New(rand.NewPCG(seed, 0x64726f70))
	c.tracef("drop %.3f", p)
}

// healNet clears the network faults and delivers what blocked links held,
// in the order it was sent.
func (c *Cluster) healNet() {
	f := c.net
	if f == nil {
		return
	}
	c.net = nil
	for _, h := range f.held {
		c.insert(h.m, c.now+h.after)
	}
}

// dialer is the node that opened the connection m travels on.
func dialer(m *msg) [2]int32 {
	if m.kind == kResponse {
		return [2]int32{m.to, m.from}
	}
	return [2]int32{m.from, m.to}
}

// netFault applies the network faults to m, due after ms: it reports
// whether m was taken (held or reset), else the delay to use.
func (c *Cluster) netFault(m *msg, after int64) (int64, bool) {
	f := c.net
	if m.from == ClientID || m.to == ClientID {
		return after, false
	}
	after += f.all + f.slow[dialer(m)]
	if f.drop > 0 && f.dropRng.Float64() < f.drop {
		switch {
		case m.kind == kResponse:
			m.resp, m.err = nil, errConnReset
		case m.sendID != 0:
			c.insert(&msg{kind: kResponse, from: m.to, to: m.from, sendID: m.sendID, err: errConnReset}, c.now+after)
			return 0, true
		default:
			return 0, true
		}
	}
	if f.blocked[[2]int32{m.from, m.to}] {
		f.held = append(f.held, heldMsg{m, after})
		return 0, true
	}
	return after, false
}
