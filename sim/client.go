package sim

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/broker/memdriver"
	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/workload"
)

// client is one logical process's client in the simulated network: the
// TCP client's logic (package workload's tcpClient) with callbacks from
// the event loop where it would block. It knows what the TCP client knows
// (the metadata it heard, the brokers' addresses, a connection per broker)
// and learns nothing from the simulation it could not learn from a
// socket; its requests and their answers are package workload's, so it
// classifies every outcome with the same code. One call at a time, but
// for sends: the lanes of a producer session with several requests in
// flight send through one client at once.
type client struct {
	w              *world
	bootstrap      []string
	timeout        time.Duration
	produceTimeout time.Duration
	// conns are the connections it holds, by broker id. A connection
	// outlives neither a kill nor a restart.
	conns     map[int32]*conn
	addrs     map[int32]string
	parts     map[history.Key]workload.PartitionState
	epochs    map[history.Key]int32 // the highest leader epoch heard of each partition (workload.Learn)
	refreshed time.Duration
	producer  *workload.Producer
	// closed: the process was replaced; answers still on their way are
	// dropped.
	closed bool
}

func newClient(w *world, o workload.ClientOptions) *client {
	return &client{
		w: w, bootstrap: w.bootstrap(), timeout: o.Timeout, produceTimeout: o.ProduceTimeout,
		conns: map[int32]*conn{}, addrs: map[int32]string{}, parts: map[history.Key]workload.PartitionState{}, epochs: map[history.Key]int32{},
		refreshed: -workload.MetadataMaxAge - 1, producer: workload.NewProducer(o.Retries, o.Idempotent),
	}
}

func (c *client) close() { c.closed = true }

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
	p.done(resp, err)
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
// reset. Like the TCP client's, it does not retry.
func (c *client) roundTrip(id int32, req kmsg.Request, done func(kmsg.Response, error)) {
	c.roundTripWithin(id, req, c.timeout, done)
}

func (c *client) roundTripWithin(id int32, req kmsg.Request, timeout time.Duration, done func(kmsg.Response, error)) {
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
func (c *client) dial(id int32) error {
	if !c.w.c.Up(id) {
		return fmt.Errorf("%w: dial %s: connection refused", workload.ErrNotSent, addrOf(id))
	}
	return nil
}

// call sends req to broker id on the client's connection to it, dialled
// if there is none. A connection to a process that has died since (or was
// replaced by a restart) is reset when used: the request was written, the
// answer is an error. A failed connection is dropped so that the next call
// redials.
func (c *client) call(id int32, req kmsg.Request, done func(kmsg.Response, error)) {
	cn, ok := c.conns[id]
	if !ok {
		if _, known := c.addrs[id]; !known {
			done(nil, fmt.Errorf("%w: broker %d unknown", workload.ErrNotSent, id))
			return
		}
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
func (c *client) turn(id int32, cn *conn, q *queuedCall, drop func()) {
	cn.busy = true
	c.roundTripWithin(id, q.req, c.timeout-(c.w.now()-q.written), func(resp kmsg.Response, err error) {
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

// metadata asks addrs in turn (each once) for topic's metadata, each on a
// connection of its own, until one answers; with no addresses, the
// brokers it knows by id, then the bootstrap brokers. The answer is
// learnt: where later calls send their requests.
func (c *client) metadata(topic string, addrs []string, done func(workload.Metadata, error)) {
	if len(addrs) == 0 {
		for _, id := range slices.Sorted(maps.Keys(c.addrs)) {
			addrs = append(addrs, c.addrs[id])
		}
		addrs = append(addrs, c.bootstrap...)
	}
	tried := map[string]bool{}
	var lastErr error
	var try func(i int)
	try = func(i int) {
		for ; i < len(addrs) && tried[addrs[i]]; i++ {
		}
		if i == len(addrs) {
			if lastErr == nil {
				lastErr = errors.New("no address")
			}
			done(workload.Metadata{}, fmt.Errorf("no broker answered a metadata request: %w", lastErr))
			return
		}
		addr := addrs[i]
		tried[addr] = true
		id, ok := brokerOf(addr)
		if !ok {
			lastErr = fmt.Errorf("%w: dial %s: no such host", workload.ErrNotSent, addr)
			try(i + 1)
			return
		}
		if err := c.dial(id); err != nil {
			lastErr = err
			try(i + 1)
			return
		}
		c.roundTrip(id, workload.MetadataRequest(topic), func(resp kmsg.Response, err error) {
			if err != nil {
				lastErr = err
				try(i + 1)
				return
			}
			md := resp.(*kmsg.MetadataResponse)
			c.apply(topic, md)
			c.refreshed = c.w.now()
			done(workload.MetadataAnswer(md, topic, addr), nil)
		})
	}
	try(0)
}

// converged asks for topic's metadata, takes the answer into md, and
// calls done with what keeps the partitions from being converged (a
// leader and the whole replica set in the ISR each), "" when nothing does:
// workload's convergence check over the simulated network.
func (c *client) converged(topic string, partitions int32, md *workload.Metadata, done func(why string)) {
	c.metadata(topic, nil, func(got workload.Metadata, err error) {
		if err != nil {
			done(err.Error())
			return
		}
		done(workload.Unconverged(md, got, topic, partitions))
	})
}

// apply learns brokers' addresses and topic's partitions from md; a
// partition the answer leaves out keeps what was known of it.
func (c *client) apply(topic string, md *kmsg.MetadataResponse) {
	for _, b := range md.Brokers {
		c.addrs[b.NodeID] = addrOf(b.NodeID)
	}
	got := workload.MetadataAnswer(md, topic, "")
	for _, p := range slices.Sorted(maps.Keys(got.Partitions)) {
		workload.Learn(c.parts, c.epochs, history.Key{Topic: topic, Partition: p}, got.Partitions[p])
	}
}

// leader is the partition's leader as last known, asking for metadata if
// it is unknown or stale.
func (c *client) leader(k history.Key, done func(int32, error)) {
	found := func() {
		p, ok := c.parts[k]
		if !ok || p.Leader < 0 {
			done(-1, fmt.Errorf("%w: no leader for %s", workload.ErrNotSent, k))
			return
		}
		done(p.Leader, nil)
	}
	if p, ok := c.parts[k]; ok && p.Leader >= 0 && c.w.now()-c.refreshed <= workload.MetadataMaxAge {
		found()
		return
	}
	c.metadata(k.Topic, nil, func(_ workload.Metadata, err error) {
		if err != nil {
			done(-1, err)
			return
		}
		found()
	})
}

// send produces value to k with acks, trying again as the process's
// producer session decides (workload.Producer), as the TCP client does.
func (c *client) send(k history.Key, value string, acks int16, done func(workload.Outcome)) {
	c.attempt(c.producer.Send(k, value, acks), done)
}

// attempt sends d once, asking for a producer id first if the session
// needs one, and again after workload.RetryBackoff while d says so; a send
// that must let an earlier one of its session go first waits
// workload.PipelineWait and tries again.
func (c *client) attempt(d *workload.Delivery, done func(workload.Outcome)) {
	next := func(again bool) {
		if !again {
			done(d.Outcome())
			return
		}
		c.w.after(workload.RetryBackoff, func() {
			if !c.closed {
				c.attempt(d, done)
			}
		})
	}
	wait := func() {
		c.w.after(workload.PipelineWait, func() {
			if !c.closed {
				c.attempt(d, done)
			}
		})
	}
	k := d.Key()
	c.leader(k, func(leader int32, err error) {
		if err != nil {
			next(d.NotSent(err))
			return
		}
		if !d.Ready() {
			wait()
			return
		}
		produce := func() {
			if !d.Ready() {
				wait()
				return
			}
			c.call(leader, d.Request(c.produceTimeout, c.w.c.Now()), func(resp kmsg.Response, err error) {
				o, forget := workload.SendOutcome(resp, err, d.Acks())
				if forget {
					delete(c.parts, k)
				}
				next(d.Attempted(o, err))
			})
		}
		if !d.NeedsID() {
			produce()
			return
		}
		if !c.producer.AskID() {
			wait()
			return
		}
		c.call(leader, workload.InitProducerIDRequest(c.produceTimeout), func(resp kmsg.Response, err error) {
			if err := c.producer.SetID(resp, err); err != nil {
				next(d.NotSent(fmt.Errorf("%w: %v", workload.ErrNotSent, err)))
				return
			}
			produce()
		})
	})
}

// fetch sends req, a fetch from offset, to broker id, and reads the
// answer as FetchAnswer does.
func (c *client) fetch(id int32, req *kmsg.FetchRequest, offset int64, done func([]history.Record, int64, int16, error)) {
	c.call(id, req, func(resp kmsg.Response, err error) {
		if err != nil {
			done(nil, -1, 0, err)
			return
		}
		done(workload.FetchAnswer(resp, offset))
	})
}

// poll fetches k from offset from as a consumer.
func (c *client) poll(k history.Key, from int64, done func(workload.Read, error)) {
	c.leader(k, func(leader int32, err error) {
		if err != nil {
			done(workload.Read{}, err)
			return
		}
		c.fetch(leader, workload.PollRequest(k, from), from, func(recs []history.Record, hw int64, code int16, err error) {
			r, err, forget := workload.PollOutcome(recs, hw, code, err)
			if forget {
				delete(c.parts, k)
			}
			done(r, err)
		})
	})
}

// endOffset is k's high watermark at its leader.
func (c *client) endOffset(k history.Key, done func(int64, error)) {
	c.leader(k, func(leader int32, err error) {
		if err != nil {
			done(-1, err)
			return
		}
		c.call(leader, workload.ListOffsetsRequest(k), func(resp kmsg.Response, err error) {
			off, err, forget := workload.EndOffsetAnswer(resp, err)
			if forget {
				delete(c.parts, k)
			}
			done(off, err)
		})
	})
}

// finalRead reads k from its leader, to the HW, asking again with fresh
// metadata (as the real client does) when the leader moved.
func (c *client) finalRead(k history.Key, done func(workload.Read, error)) {
	var attempt func(n int)
	attempt = func(n int) {
		c.leader(k, func(leader int32, err error) {
			retry := func(r workload.Read, err error) {
				if err == nil || !workload.RetryFinalRead(err) || n == workload.FinalReadAttempts {
					done(r, err)
					return
				}
				delete(c.parts, k)
				c.w.after(workload.FinalReadBackoff, func() { attempt(n + 1) })
			}
			if err != nil {
				retry(workload.Read{}, err)
				return
			}
			c.readAll(leader, workload.NewFinalRead(), k, retry)
		})
	}
	attempt(1)
}

// replicaRead reads broker's replica of k whole.
func (c *client) replicaRead(k history.Key, broker int32, done func(workload.Read, error)) {
	c.readAll(broker, workload.NewReplicaRead(), k, done)
}

func (c *client) readAll(id int32, r *workload.WholeRead, k history.Key, done func(workload.Read, error)) {
	req := r.Request(k)
	c.fetch(id, req, req.Topics[0].Partitions[0].FetchOffset, func(recs []history.Record, hw int64, code int16, err error) {
		if over, res, err := r.Add(k, recs, hw, code, err); over {
			done(res, err)
			return
		}
		c.readAll(id, r, k, done)
	})
}

// createTopic asks the cluster once to create spec's topic, through the
// broker with the lowest id, letting it take up to timeout.
func (c *client) createTopic(spec workload.TopicSpec, timeout time.Duration, done func(error)) {
	c.metadata(spec.Name, nil, func(_ workload.Metadata, err error) {
		if err != nil {
			done(fmt.Errorf("%w: %v", workload.ErrNotSent, err))
			return
		}
		id := slices.Min(slices.Collect(maps.Keys(c.addrs)))
		c.call(id, workload.CreateTopicsRequest(spec, timeout), func(resp kmsg.Response, err error) {
			if err != nil {
				done(err)
				return
			}
			done(workload.CreateTopicsAnswer(resp))
		})
	})
}
