package workload

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/history"
)

// TCP is the Dialer of a real cluster reached at bootstrap: clients that
// speak the Kafka protocol over TCP themselves, retrying a send only as
// often as ClientOptions.Retries says (a Producer decides) and recording
// every attempt. A library client's own retries and batching would hide
// exactly the outcomes the checkers must see.
func TCP(bootstrap []string) Dialer {
	return func(o ClientOptions) Client { return newTCPClient(bootstrap, o) }
}

// tcpClient holds one connection per broker, dialled when first needed,
// and the metadata it last heard. The lanes of a pipelining producer
// session (max.in.flight above 1) send through one client at once: mu
// guards its state, and a produce takes its sequence number and is
// written under it, so that a broker reads a session's batches in the
// order they were numbered.
type tcpClient struct {
	bootstrap      []string
	timeout        time.Duration
	produceTimeout time.Duration
	format         *kmsg.RequestFormatter
	corr           atomic.Int32

	mu        sync.Mutex
	conns     map[int32]*tcpConn
	addrs     map[int32]string
	parts     map[history.Key]PartitionState
	epochs    map[history.Key]int32 // the highest leader epoch heard of each partition (Learn)
	refreshed time.Time
	producer  *Producer
}

func newTCPClient(bootstrap []string, o ClientOptions) *tcpClient {
	return &tcpClient{
		bootstrap: bootstrap, timeout: o.Timeout, produceTimeout: o.ProduceTimeout,
		format: kmsg.NewRequestFormatter(kmsg.FormatterClientID(o.ID)),
		conns:  map[int32]*tcpConn{}, addrs: map[int32]string{}, parts: map[history.Key]PartitionState{}, epochs: map[history.Key]int32{},
		producer: NewProducer(o.Retries, o.Idempotent),
	}
}

func (c *tcpClient) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, conn := range c.conns {
		conn.close()
		delete(c.conns, id)
	}
}

// tcpConn is one connection, on which requests may be pipelined: they are
// written in turn, and the answers, which a broker gives in the order it
// read the requests, are matched to them in that order. Whoever waits
// reads the next answer, for whichever request it belongs to. A failed
// connection fails every request still waiting on it: an answer cannot
// pass the one before it.
type tcpConn struct {
	nc net.Conn
	// mu guards waiting and err, and is held while a request is written.
	mu      sync.Mutex
	waiting []*tcpWaiter
	err     error
	// rmu is held by the one reading an answer.
	rmu sync.Mutex
	// most is the most requests that waited at once: what a pipelining
	// session achieved, for tests to check.
	most int
}

// tcpWaiter is a request written and not yet answered.
type tcpWaiter struct {
	req      kmsg.Request
	corr     int32
	deadline time.Time
	done     bool
	resp     kmsg.Response
	err      error
}

func newTCPConn(nc net.Conn) *tcpConn { return &tcpConn{nc: nc} }

// write sends req with corr. sent reports whether any byte of it may have
// reached the broker; the waiter is nil if no answer will come (acks=0).
// The end of ctx cuts the write short.
func (t *tcpConn) write(ctx context.Context, frame []byte, req kmsg.Request, corr int32, deadline time.Time) (w *tcpWaiter, sent bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		return nil, false, t.err
	}
	_ = t.nc.SetWriteDeadline(deadline)
	defer context.AfterFunc(ctx, func() { _ = t.nc.SetWriteDeadline(time.Now()) })()
	n, err := t.nc.Write(frame)
	if err != nil {
		t.failLocked(err)
		return nil, n > 0, err
	}
	if p, ok := req.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
		return nil, true, nil // no response will come
	}
	w = &tcpWaiter{req: req, corr: corr, deadline: deadline}
	t.waiting = append(t.waiting, w)
	t.most = max(t.most, len(t.waiting))
	return w, true, nil
}

// wait reads answers until w's has come, or the connection failed. Each
// answer is read by the deadline of the request it belongs to: one that
// does not come in time fails the connection.
func (t *tcpConn) wait(ctx context.Context, w *tcpWaiter) (kmsg.Response, error) {
	for {
		t.rmu.Lock()
		t.mu.Lock()
		if w.done {
			t.mu.Unlock()
			t.rmu.Unlock()
			return w.resp, w.err
		}
		head := t.waiting[0]
		t.mu.Unlock()
		_ = t.nc.SetReadDeadline(head.deadline)
		if ctx.Err() != nil {
			_ = t.nc.SetReadDeadline(time.Now())
		}
		body, err := readFrame(t.nc)
		var resp kmsg.Response
		if err == nil {
			var corr int32
			corr, resp, err = parseResponse(body, head.req)
			if err == nil && corr != head.corr {
				err = fmt.Errorf("response correlation id %d, expected %d", corr, head.corr)
			}
		}
		t.mu.Lock()
		if err != nil {
			t.failLocked(err)
		} else {
			head.resp, head.done = resp, true
			t.waiting = t.waiting[1:]
		}
		t.mu.Unlock()
		t.rmu.Unlock()
	}
}

func (t *tcpConn) failLocked(err error) {
	if t.err == nil {
		t.err = err
	}
	for _, w := range t.waiting {
		w.done, w.err = true, err
	}
	t.waiting = nil
	t.nc.Close()
}

func (t *tcpConn) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failLocked(net.ErrClosed)
}

// deadline is when an answer to a request sent now is given up on.
func (c *tcpClient) deadline(ctx context.Context) time.Time {
	deadline := time.Now().Add(c.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	return deadline
}

// roundTrip sends req on conn and reads its response. sent reports whether
// any byte of the request may have reached the broker. The end of ctx
// abandons the request at once (a paused broker would otherwise hold an
// interrupted run for a whole request timeout); the error then says so.
func (c *tcpClient) roundTrip(ctx context.Context, conn *tcpConn, req kmsg.Request) (resp kmsg.Response, sent bool, err error) {
	w, sent, err := c.write(ctx, conn, req)
	if err != nil || w == nil {
		return nil, sent, err
	}
	resp, err = c.await(ctx, conn, w)
	return resp, true, err
}

// write is roundTrip's first half: req on its way.
func (c *tcpClient) write(ctx context.Context, conn *tcpConn, req kmsg.Request) (w *tcpWaiter, sent bool, err error) {
	corr := c.corr.Add(1)
	w, sent, err = conn.write(ctx, c.format.AppendRequest(nil, req, corr), req, corr, c.deadline(ctx))
	return w, sent, causeOf(ctx, err)
}

// await is roundTrip's second half: w's answer.
func (c *tcpClient) await(ctx context.Context, conn *tcpConn, w *tcpWaiter) (kmsg.Response, error) {
	defer context.AfterFunc(ctx, func() { _ = conn.nc.SetDeadline(time.Now()) })()
	resp, err := conn.wait(ctx, w)
	return resp, causeOf(ctx, err)
}

// causeOf says why an error came when ctx ended.
func causeOf(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("%w: %v", context.Cause(ctx), err)
	}
	return err
}

func (c *tcpClient) dial(ctx context.Context, addr string) (*tcpConn, error) {
	d := net.Dialer{Timeout: c.timeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotSent, err)
	}
	return newTCPConn(conn), nil
}

// call sends req to broker id and waits for the answer.
func (c *tcpClient) call(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error) {
	c.mu.Lock()
	conn, w, err := c.send(ctx, id, req)
	c.mu.Unlock()
	if err != nil || w == nil {
		return nil, err
	}
	return c.answer(ctx, id, conn, w)
}

// send writes req to broker id on the client's connection to it, dialled
// if there is none; mu is held, so that requests go out in the order they
// were made. A failed connection is dropped so that the next call redials.
func (c *tcpClient) send(ctx context.Context, id int32, req kmsg.Request) (*tcpConn, *tcpWaiter, error) {
	conn := c.conns[id]
	if conn == nil {
		addr, ok := c.addrs[id]
		if !ok {
			return nil, nil, fmt.Errorf("%w: broker %d unknown", ErrNotSent, id)
		}
		var err error
		if conn, err = c.dial(ctx, addr); err != nil {
			return nil, nil, err
		}
		c.conns[id] = conn
	}
	w, sent, err := c.write(ctx, conn, req)
	if err != nil {
		c.dropLocked(id, conn)
		if !sent {
			err = fmt.Errorf("%w: %v", ErrNotSent, err)
		}
	}
	return conn, w, err
}

// answer waits for the answer to w, sent to broker id on conn, without mu.
func (c *tcpClient) answer(ctx context.Context, id int32, conn *tcpConn, w *tcpWaiter) (kmsg.Response, error) {
	resp, err := c.await(ctx, conn, w)
	if err != nil {
		c.mu.Lock()
		c.dropLocked(id, conn)
		c.mu.Unlock()
	}
	return resp, err
}

func (c *tcpClient) dropLocked(id int32, conn *tcpConn) {
	conn.close()
	if c.conns[id] == conn {
		delete(c.conns, id)
	}
}

func (c *tcpClient) Metadata(ctx context.Context, topic string, addrs ...string) (Metadata, error) {
	if len(addrs) == 0 {
		// Known brokers first (by id, so that the order tried is the
		// same every time), then the bootstrap list.
		c.mu.Lock()
		for _, id := range slices.Sorted(maps.Keys(c.addrs)) {
			addrs = append(addrs, c.addrs[id])
		}
		c.mu.Unlock()
		addrs = append(addrs, c.bootstrap...)
	}
	md, from, err := c.metadata(ctx, addrs, MetadataRequest(topic))
	if err != nil {
		return Metadata{}, err
	}
	c.mu.Lock()
	c.apply(topic, md)
	c.refreshed = time.Now()
	c.mu.Unlock()
	return MetadataAnswer(md, topic, from), nil
}

// metadata asks each address in turn (each once) until one answers req,
// and returns the answer and who gave it. Each request has a connection of
// its own: the addresses are not yet tied to broker ids.
func (c *tcpClient) metadata(ctx context.Context, addrs []string, req *kmsg.MetadataRequest) (*kmsg.MetadataResponse, string, error) {
	tried := map[string]bool{}
	var lastErr error
	for _, addr := range addrs {
		if tried[addr] || ctx.Err() != nil {
			continue
		}
		tried[addr] = true
		conn, err := c.dial(ctx, addr)
		if err != nil {
			lastErr = err
			continue
		}
		resp, _, err := c.roundTrip(ctx, conn, req)
		conn.close()
		if err != nil {
			lastErr = err
			continue
		}
		return resp.(*kmsg.MetadataResponse), addr, nil
	}
	if lastErr == nil {
		lastErr = ctx.Err()
	}
	return nil, "", fmt.Errorf("no broker answered a metadata request: %w", lastErr)
}

// apply learns brokers' addresses and topic's partitions from md. A
// partition the answer leaves out keeps what was known of it. mu is held.
func (c *tcpClient) apply(topic string, md *kmsg.MetadataResponse) {
	for _, b := range md.Brokers {
		addr := net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
		if old, ok := c.addrs[b.NodeID]; ok && old != addr {
			if conn := c.conns[b.NodeID]; conn != nil {
				c.dropLocked(b.NodeID, conn)
			}
		}
		c.addrs[b.NodeID] = addr
	}
	for _, t := range md.Topics {
		if t.Topic == nil || *t.Topic != topic {
			continue
		}
		for _, p := range t.Partitions {
			Learn(c.parts, c.epochs, history.Key{Topic: topic, Partition: p.Partition}, partitionState(p))
		}
	}
}

// leader returns the partition's leader as last known, asking for metadata
// if it is unknown or stale.
func (c *tcpClient) leader(ctx context.Context, k history.Key) (int32, error) {
	c.mu.Lock()
	p, ok := c.parts[k]
	stale := time.Since(c.refreshed) > MetadataMaxAge
	c.mu.Unlock()
	if !ok || p.Leader < 0 || stale {
		if _, err := c.Metadata(ctx, k.Topic); err != nil {
			return -1, err
		}
		c.mu.Lock()
		p, ok = c.parts[k]
		c.mu.Unlock()
	}
	if !ok || p.Leader < 0 {
		return -1, fmt.Errorf("%w: no leader for %s", ErrNotSent, k)
	}
	return p.Leader, nil
}

// forget drops what the client knows of a partition's leader, after an
// error that suggests it moved.
func (c *tcpClient) forget(k history.Key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forgetLocked(k)
}

func (c *tcpClient) forgetLocked(k history.Key) { delete(c.parts, k) }

func (c *tcpClient) Send(ctx context.Context, k history.Key, value string, acks int16) Outcome {
	return c.SendQueued(ctx, k, value, acks, nil)
}

func (c *tcpClient) SendQueued(ctx context.Context, k history.Key, value string, acks int16, queued func() bool) Outcome {
	c.mu.Lock()
	d := c.producer.Send(k, value, acks)
	if queued != nil && !queued() {
		o := d.Outcome()
		c.mu.Unlock()
		return o
	}
	c.mu.Unlock()
	for {
		again, wait := c.attempt(ctx, d)
		if !again {
			break
		}
		backoff := RetryBackoff
		if wait {
			backoff = PipelineWait
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
			continue
		}
		break
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return d.Outcome()
}

// attempt sends d once (asking for a producer id first if the session
// needs one) and says whether to send it again; wait: not yet sent, as an
// earlier send of the session must go first.
func (c *tcpClient) attempt(ctx context.Context, d *Delivery) (again, wait bool) {
	leader, err := c.leader(ctx, d.k)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		return d.NotSent(err), false
	}
	if !d.Ready() {
		return true, true
	}
	if d.NeedsID() {
		if !c.producer.AskID() {
			return true, true
		}
		conn, w, err := c.send(ctx, leader, InitProducerIDRequest(c.produceTimeout))
		var resp kmsg.Response
		if err == nil {
			c.mu.Unlock()
			resp, err = c.answer(ctx, leader, conn, w)
			c.mu.Lock()
		}
		if err := c.producer.SetID(resp, err); err != nil {
			return d.NotSent(fmt.Errorf("%w: %v", ErrNotSent, err)), false
		}
		if !d.Ready() {
			return true, true
		}
	}
	conn, w, err := c.send(ctx, leader, d.Request(c.produceTimeout, time.Now().UnixMilli()))
	var resp kmsg.Response
	if err == nil && w != nil {
		c.mu.Unlock()
		resp, err = c.answer(ctx, leader, conn, w)
		c.mu.Lock()
	}
	o, forget := SendOutcome(resp, err, d.acks)
	if forget {
		c.forgetLocked(d.k)
	}
	return d.Attempted(o, err), false
}

func (c *tcpClient) Poll(ctx context.Context, k history.Key, from int64) (Read, error) {
	leader, err := c.leader(ctx, k)
	if err != nil {
		return Read{}, err
	}
	r, err, forget := PollOutcome(c.fetch(ctx, leader, PollRequest(k, from), from))
	if forget {
		c.forget(k)
	}
	return r, err
}

// fetch sends req, a fetch from offset, to broker id and returns the
// records at or after offset, the HW the broker reported, and its error
// code.
func (c *tcpClient) fetch(ctx context.Context, id int32, req *kmsg.FetchRequest, offset int64) ([]history.Record, int64, int16, error) {
	resp, err := c.call(ctx, id, req)
	if err != nil {
		return nil, -1, 0, err
	}
	return FetchAnswer(resp, offset)
}

func (c *tcpClient) EndOffset(ctx context.Context, k history.Key) (int64, error) {
	leader, err := c.leader(ctx, k)
	if err != nil {
		return -1, err
	}
	off, err, forget := EndOffsetAnswer(c.call(ctx, leader, ListOffsetsRequest(k)))
	if forget {
		c.forget(k)
	}
	return off, err
}

func (c *tcpClient) FinalRead(ctx context.Context, k history.Key) (Read, error) {
	for attempt := 1; ; attempt++ {
		r, err := c.finalRead(ctx, k)
		if err == nil || !RetryFinalRead(err) || attempt == FinalReadAttempts {
			return r, err
		}
		c.forget(k)
		select {
		case <-ctx.Done():
			return r, err
		case <-time.After(FinalReadBackoff):
		}
	}
}

func (c *tcpClient) finalRead(ctx context.Context, k history.Key) (Read, error) {
	leader, err := c.leader(ctx, k)
	if err != nil {
		return Read{}, err
	}
	return c.readAll(ctx, leader, NewFinalRead(), k)
}

func (c *tcpClient) ReplicaRead(ctx context.Context, k history.Key, broker int32) (Read, error) {
	return c.readAll(ctx, broker, NewReplicaRead(), k)
}

// readAll reads k from broker id, fetch by fetch, until w says it is over.
func (c *tcpClient) readAll(ctx context.Context, id int32, w *WholeRead, k history.Key) (Read, error) {
	for {
		req := w.Request(k)
		recs, hw, code, err := c.fetch(ctx, id, req, req.Topics[0].Partitions[0].FetchOffset)
		if done, r, err := w.Add(k, recs, hw, code, err); done {
			return r, err
		}
	}
}

func (c *tcpClient) CreateTopic(ctx context.Context, spec TopicSpec, timeout time.Duration) error {
	req := CreateTopicsRequest(spec, timeout)
	md, err := c.Metadata(ctx, spec.Name)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotSent, err)
	}
	// The broker the answer names as the controller takes it (a foreign
	// cluster may not forward it, as franz-go's kfake does not); else the
	// lowest id, so that retries go to the same one.
	id := md.Controller
	c.mu.Lock()
	if _, known := c.addrs[id]; !known {
		id = -1
		for b := range c.addrs {
			if id < 0 || b < id {
				id = b
			}
		}
	}
	c.mu.Unlock()
	resp, err := c.call(ctx, id, req)
	if err != nil {
		return err
	}
	return CreateTopicsAnswer(resp)
}

func (c *tcpClient) DescribeTopic(ctx context.Context, topic string) (TopicDescription, error) {
	md, _, err := c.metadata(ctx, c.bootstrap, MetadataRequest(topic))
	if err != nil {
		return TopicDescription{}, fmt.Errorf("describing topic %s: %w", topic, err)
	}
	if len(md.Topics) != 1 || md.Topics[0].ErrorCode == kerr.UnknownTopicOrPartition.Code {
		return TopicDescription{}, fmt.Errorf("topic %s does not exist", topic)
	}
	c.mu.Lock()
	c.apply(topic, md)
	c.mu.Unlock()
	desc := TopicDescription{Replicas: map[int32][]int32{}}
	for _, p := range md.Topics[0].Partitions {
		desc.Replicas[p.Partition] = p.Replicas
	}
	if desc.Configs, err = c.describeConfigs(ctx, topic); err != nil {
		return TopicDescription{}, err
	}
	return desc, nil
}

// describeConfigs asks the brokers in turn for the topic's
// min.insync.replicas and unclean.leader.election.enable, those it
// describes (topicDiffs decides what a missing one means).
func (c *tcpClient) describeConfigs(ctx context.Context, topic string) (map[string]string, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version = 4
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	res.ConfigNames = []string{"min.insync.replicas", "unclean.leader.election.enable"}
	req.Resources = append(req.Resources, res)
	var lastErr error
	c.mu.Lock()
	brokers := slices.Sorted(maps.Keys(c.addrs))
	c.mu.Unlock()
	for _, b := range brokers {
		resp, err := c.call(ctx, b, req)
		if err != nil {
			lastErr = err
			continue
		}
		r := resp.(*kmsg.DescribeConfigsResponse)
		if len(r.Resources) != 1 {
			return nil, fmt.Errorf("describing topic %s's configs: %d resources in the answer", topic, len(r.Resources))
		}
		if err := kerr.ErrorForCode(r.Resources[0].ErrorCode); err != nil {
			return nil, fmt.Errorf("describing topic %s's configs: %w", topic, err)
		}
		out := map[string]string{}
		for _, c := range r.Resources[0].Configs {
			if c.Value != nil {
				out[c.Name] = *c.Value
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("describing topic %s's configs (DescribeConfigs): %w", topic, lastErr)
}
