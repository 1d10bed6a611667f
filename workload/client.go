package workload

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/broker/wire"
	"github.com/chaos-isr/chaos/history"
)

// errNotSent marks a request that never left this process (no leader known,
// the connection could not be made): its effect definitely did not happen.
var errNotSent = errors.New("not sent")

// client is one logical process's connections: one per broker, one request
// at a time, no retries. It is not safe for concurrent use.
type client struct {
	bootstrap []string
	timeout   time.Duration
	id        string
	conns     map[int32]net.Conn
	addrs     map[int32]string
	leaders   map[history.Key]int32
	epochs    map[history.Key]int32
	replicas  map[history.Key][]int32
	isr       map[history.Key][]int32
	corr      int32
	refreshed time.Time
}

func newClient(bootstrap []string, timeout time.Duration, id string) *client {
	return &client{bootstrap: bootstrap, timeout: timeout, id: id, conns: map[int32]net.Conn{}, addrs: map[int32]string{}}
}

func (c *client) close() {
	for id, conn := range c.conns {
		conn.Close()
		delete(c.conns, id)
	}
}

// roundTrip sends req on conn and reads its response. sent reports whether
// any byte of the request may have reached the broker. The end of ctx
// abandons the request at once (a paused broker would otherwise hold an
// interrupted run for a whole request timeout); the error then says so.
func (c *client) roundTrip(ctx context.Context, conn net.Conn, req kmsg.Request) (resp kmsg.Response, sent bool, err error) {
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
	frame := wire.AppendRequest(nil, c.corr, c.id, req)
	n, err := conn.Write(frame)
	if err != nil {
		return nil, n > 0, err
	}
	if p, ok := req.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
		return nil, true, nil // no response will come
	}
	body, err := wire.ReadFrame(conn, 0, nil)
	if err != nil {
		return nil, true, err
	}
	corr, resp, err := wire.ParseResponse(body, req)
	if err != nil {
		return nil, true, err
	}
	if corr != c.corr {
		return nil, true, fmt.Errorf("response correlation id %d, expected %d", corr, c.corr)
	}
	return resp, true, nil
}

func (c *client) dial(ctx context.Context, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: c.timeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNotSent, err)
	}
	return conn, nil
}

// call sends req to broker id. A failed connection is dropped so that the
// next call redials.
func (c *client) call(ctx context.Context, id int32, req kmsg.Request) (kmsg.Response, error) {
	conn := c.conns[id]
	if conn == nil {
		addr, ok := c.addrs[id]
		if !ok {
			return nil, fmt.Errorf("%w: broker %d unknown", errNotSent, id)
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
			err = fmt.Errorf("%w: %v", errNotSent, err)
		}
	}
	return resp, err
}

// refresh asks any reachable broker for the metadata of topic.
func (c *client) refresh(ctx context.Context, topic string) error {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, t)
	// Known brokers first (sorted, for determinism of the order tried),
	// then the bootstrap list.
	var ids []int32
	for id := range c.addrs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	addrs := make([]string, 0, len(ids)+len(c.bootstrap))
	for _, id := range ids {
		addrs = append(addrs, c.addrs[id])
	}
	addrs = append(addrs, c.bootstrap...)
	md, _, err := c.metadata(ctx, addrs, req)
	if err != nil {
		return err
	}
	c.apply(topic, md)
	c.refreshed = time.Now()
	return nil
}

// metadata asks each address in turn (each once) until one answers req,
// and returns the answer and who gave it.
func (c *client) metadata(ctx context.Context, addrs []string, req *kmsg.MetadataRequest) (*kmsg.MetadataResponse, string, error) {
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

func (c *client) apply(topic string, md *kmsg.MetadataResponse) {
	for _, b := range md.Brokers {
		addr := net.JoinHostPort(b.Host, fmt.Sprint(b.Port))
		if old, ok := c.addrs[b.NodeID]; ok && old != addr {
			if conn := c.conns[b.NodeID]; conn != nil {
				conn.Close()
				delete(c.conns, b.NodeID)
			}
		}
		c.addrs[b.NodeID] = addr
	}
	if c.leaders == nil {
		c.leaders, c.epochs = map[history.Key]int32{}, map[history.Key]int32{}
		c.replicas, c.isr = map[history.Key][]int32{}, map[history.Key][]int32{}
	}
	for _, t := range md.Topics {
		if t.Topic == nil || *t.Topic != topic {
			continue
		}
		for _, p := range t.Partitions {
			k := history.Key{Topic: topic, Partition: p.Partition}
			c.leaders[k], c.epochs[k] = p.Leader, p.LeaderEpoch
			c.replicas[k], c.isr[k] = p.Replicas, p.ISR
		}
	}
}

// leader returns the partition's leader as last known, refreshing the
// metadata if it is unknown or stale.
func (c *client) leader(ctx context.Context, k history.Key) (int32, error) {
	id, ok := c.leaders[k]
	if !ok || id < 0 || time.Since(c.refreshed) > 5*time.Second {
		if err := c.refresh(ctx, k.Topic); err != nil {
			return -1, err
		}
		id, ok = c.leaders[k]
	}
	if !ok || id < 0 {
		return -1, fmt.Errorf("%w: no leader for %s", errNotSent, k)
	}
	return id, nil
}

// forget drops what the client knows of a partition's leader, after an
// error that suggests it moved.
func (c *client) forget(k history.Key) {
	delete(c.leaders, k)
}

// errorName is the Kafka name of an error code, as histories record it.
func errorName(code int16) string {
	if err := kerr.ErrorForCode(code); err != nil {
		var ke *kerr.Error
		if errors.As(err, &ke) {
			return ke.Message
		}
		return err.Error()
	}
	return "NONE"
}
