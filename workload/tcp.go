package workload

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/history"
)

// TCP is the Dialer of a real cluster reached at bootstrap: clients that
// speak the Kafka protocol over TCP themselves, one request at a time,
// retrying a send only as often as ClientOptions.Retries says (a Producer
// decides) and recording every attempt. A library client's own retries and
// batching would hide exactly the outcomes the checkers must see.
func TCP(bootstrap []string) Dialer {
	return func(o ClientOptions) Client { return newTCPClient(bootstrap, o) }
}

// tcpClient holds one connection per broker, dialled when first needed,
// and the metadata it last heard.
type tcpClient struct {
	bootstrap      []string
	timeout        time.Duration
	produceTimeout time.Duration
	format         *kmsg.RequestFormatter
	conns          map[int32]net.Conn
	addrs          map[int32]string
	parts          map[history.Key]PartitionState
	corr           int32
	refreshed      time.Time
	producer       *Producer
}

func newTCPClient(bootstrap []string, o ClientOptions) *tcpClient {
	return &tcpClient{
		bootstrap: bootstrap, timeout: o.Timeout, produceTimeout: o.ProduceTimeout,
		format: kmsg.NewRequestFormatter(kmsg.FormatterClientID(o.ID)),
		conns:  map[int32]net.Conn{}, addrs: map[int32]string{}, parts: map[history.Key]PartitionState{},
		producer: NewProducer(o.Retries, o.Idempotent),
	}
}

func (c *tcpClient) Close() {
	for id, conn := range c.conns {
		conn.Close()
		delete(c.conns, id)
	}
}

// roundTrip sends req on conn and reads its response. sent reports whether
// any byte of the request may have reached the broker. The end of ctx
// abandons the request at once (a paused broker would otherwise hold an
// interrupted run for a whole request timeout); the error then says so.
func (c *tcpClient) roundTrip(ctx context.Context, conn net.Conn, req kmsg.Request) (resp kmsg.Response, sent bool, err error) {
	deadline := time.Now().Add(c.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = conn.SetDeadline(deadline)
	defer context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })()
	defer func() {
		if err != nil && ctx.Err() != nil {
			err = fmt.Errorf("%w: %v", context.Cause(ctx), err)
		}
	}()
	c.corr++
	n, err := conn.Write(c.format.AppendRequest(nil, req, c.corr))
	if err != nil {
		return nil, n > 0, err
	}
	if p, ok := req.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
		return nil, true, nil // no response will come
	}
	body, err := readFrame(conn)
	if err != nil {
		return nil, true, err
	}
	corr, resp, err := parseResponse(body, req)
	if err != nil {
		return nil, true, err
	}
	if corr != c.corr {
		return nil, true, fmt.Errorf("response correlation id %d, expected %d", corr, c.corr)
	}
	return resp, true, nil
}

func (c *tcpClient) dial(ctx context.Context, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: c.timeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotSent, err)
	}
	return conn, nil
}

// call sends req to broker id. A failed connection is dropped so that the
// next call redials.
func (c *tcpClient) call(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error) {
	conn := c.conns[id]
	if conn == nil {
		addr, ok := c.addrs[id]
		if !ok {
			return nil, fmt.Errorf("%w: broker %d unknown", ErrNotSent, id)
		}
		var err error
		if conn, err = c.dial(ctx, addr); err != nil {
			return nil, err
		}
		c.conns[id] = conn
	}
	resp, sent, err := c.roundTrip(ctx, conn, req)
	if err != nil {
		conn.Close()
		delete(c.conns, id)
		if !sent {
			err = fmt.Errorf("%w: %v", ErrNotSent, err)
		}
	}
	return resp, err
}

func (c *tcpClient) Metadata(ctx context.Context, topic string, addrs ...string) (Metadata, error) {
	if len(addrs) == 0 {
		// Known brokers first (by id, so that the order tried is the
		// same every time), then the bootstrap list.
		for _, id := range slices.Sorted(maps.Keys(c.addrs)) {
			addrs = append(addrs, c.addrs[id])
		}
		addrs = append(addrs, c.bootstrap...)
	}
	md, from, err := c.metadata(ctx, addrs, MetadataRequest(topic))
	if err != nil {
		return Metadata{}, err
	}
	c.apply(topic, md)
	c.refreshed = time.Now()
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
		conn.Close()
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
// partition the answer leaves out keeps what was known of it.
func (c *tcpClient) apply(topic string, md *kmsg.MetadataResponse) {
	for _, b := range md.Brokers {
		addr := net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
		if old, ok := c.addrs[b.NodeID]; ok && old != addr {
			if conn := c.conns[b.NodeID]; conn != nil {
				conn.Close()
				delete(c.conns, b.NodeID)
			}
		}
		c.addrs[b.NodeID] = addr
	}
	for _, t := range md.Topics {
		if t.Topic == nil || *t.Topic != topic {
			continue
		}
		for _, p := range t.Partitions {
			c.parts[history.Key{Topic: topic, Partition: p.Partition}] = partitionState(p)
		}
	}
}

// leader returns the partition's leader as last known, asking for metadata
// if it is unknown or stale.
func (c *tcpClient) leader(ctx context.Context, k history.Key) (int32, error) {
	p, ok := c.parts[k]
	if !ok || p.Leader < 0 || time.Since(c.refreshed) > MetadataMaxAge {
		if _, err := c.Metadata(ctx, k.Topic); err != nil {
			return -1, err
		}
		p, ok = c.parts[k]
	}
	if !ok || p.Leader < 0 {
		return -1, fmt.Errorf("%w: no leader for %s", ErrNotSent, k)
	}
	return p.Leader, nil
}

// forget drops what the client knows of a partition's leader, after an
// error that suggests it moved.
func (c *tcpClient) forget(k history.Key) {
	delete(c.parts, k)
}

func (c *tcpClient) Send(ctx context.Context, k history.Key, value string, acks int16) Outcome {
	d := c.producer.Send(k, value, acks)
	for c.attempt(ctx, d) {
		select {
		case <-ctx.Done():
			return d.Outcome()
		case <-time.After(RetryBackoff):
		}
	}
	return d.Outcome()
}

// attempt sends d once (asking for a producer id first if the session
// needs one) and says whether to send it again.
func (c *tcpClient) attempt(ctx context.Context, d *Delivery) (again bool) {
	leader, err := c.leader(ctx, d.k)
	if err != nil {
		return d.NotSent(err)
	}
	if c.producer.NeedsID() {
		resp, err := c.call(ctx, leader, InitProducerIDRequest(c.produceTimeout))
		if err := c.producer.SetID(resp, err); err != nil {
			return d.NotSent(fmt.Errorf("%w: %v", ErrNotSent, err))
		}
	}
	resp, err := c.call(ctx, leader, d.Request(c.produceTimeout, time.Now().UnixMilli()))
	o, forget := SendOutcome(resp, err, d.acks)
	if forget {
		c.forget(d.k)
	}
	return d.Attempted(o, err)
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
	if _, err := c.Metadata(ctx, spec.Name); err != nil {
		return fmt.Errorf("%w: %v", ErrNotSent, err)
	}
	// Any broker forwards it to the controller; the lowest id, so that
	// retries go to the same one.
	var id int32 = -1
	for b := range c.addrs {
		if id < 0 || b < id {
			id = b
		}
	}
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
	c.apply(topic, md)
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
// min.insync.replicas and unclean.leader.election.enable. A broker that
// cannot say is an error: the test's promise depends on both.
func (c *tcpClient) describeConfigs(ctx context.Context, topic string) (map[string]string, error) {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version = 4
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeTopic, topic
	res.ConfigNames = []string{"min.insync.replicas", "unclean.leader.election.enable"}
	req.Resources = append(req.Resources, res)
	var lastErr error
	for _, b := range slices.Sorted(maps.Keys(c.addrs)) {
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
		for _, name := range res.ConfigNames {
			if _, ok := out[name]; !ok {
				return nil, fmt.Errorf("topic %s's configs do not say %s", topic, name)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("describing topic %s's configs (DescribeConfigs): %w", topic, lastErr)
}
