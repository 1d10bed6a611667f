package workload

import (
	"context"
	"errors"
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
// speak the Kafka protocol over TCP themselves, one request at a time and
// no retries. A library client's retries and batching would hide exactly
// the outcomes the checkers must see.
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
}

func newTCPClient(bootstrap []string, o ClientOptions) *tcpClient {
	return &tcpClient{
		bootstrap: bootstrap, timeout: o.Timeout, produceTimeout: o.ProduceTimeout,
		format: kmsg.NewRequestFormatter(kmsg.FormatterClientID(o.ID)),
		conns:  map[int32]net.Conn{}, addrs: map[int32]string{}, parts: map[history.Key]PartitionState{},
	}
}

// Replica ids a fetch can carry: an ordinary consumer, and the debug
// consumer that may read any replica up to its log end.
const (
	consumerReplica int32 = -1
	debugReplica    int32 = -2
)

// Metadata older than this is asked for again before a request needs a
// leader: leadership moves under faults without the old leader saying so.
const metadataMaxAge = 5 * time.Second

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

func metadataRequest(topic string) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	req.Topics = []kmsg.MetadataRequestTopic{} // none; nil would ask for all
	if topic != "" {
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, t)
	}
	return req
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
	md, from, err := c.metadata(ctx, addrs, metadataRequest(topic))
	if err != nil {
		return Metadata{}, err
	}
	c.apply(topic, md)
	c.refreshed = time.Now()
	out := Metadata{From: from, Brokers: map[int32]string{}, Partitions: map[int32]PartitionState{}}
	if md.ClusterID != nil {
		out.ClusterID = *md.ClusterID
	}
	for _, b := range md.Brokers {
		out.Brokers[b.NodeID] = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
	}
	for _, t := range md.Topics {
		if t.Topic != nil && *t.Topic == topic {
			for _, p := range t.Partitions {
				out.Partitions[p.Partition] = partitionState(p)
			}
		}
	}
	return out, nil
}

func partitionState(p kmsg.MetadataResponseTopicPartition) PartitionState {
	return PartitionState{Leader: p.Leader, Epoch: p.LeaderEpoch, ISR: p.ISR, Replicas: p.Replicas}
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
	if !ok || p.Leader < 0 || time.Since(c.refreshed) > metadataMaxAge {
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
	leader, err := c.leader(ctx, k)
	if err != nil {
		return Outcome{Type: history.Fail, Error: err.Error()}
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks, req.TimeoutMillis = acks, int32(c.produceTimeout/time.Millisecond)
	t := kmsg.NewProduceRequestTopic()
	t.Topic = k.Topic
	p := kmsg.NewProduceRequestTopicPartition()
	p.Partition, p.Records = k.Partition, encodeBatch(time.Now().UnixMilli(), []byte(value))
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp, err := c.call(ctx, leader, req)
	switch {
	case errors.Is(err, ErrNotSent):
		c.forget(k)
		return Outcome{Type: history.Fail, Error: err.Error()}
	case err != nil:
		c.forget(k)
		return Outcome{Type: history.Info, Error: err.Error()}
	case acks == 0:
		return Outcome{Type: history.Info, Error: "acks=0: no acknowledgement"}
	}
	pr := resp.(*kmsg.ProduceResponse)
	if len(pr.Topics) != 1 || len(pr.Topics[0].Partitions) != 1 {
		return Outcome{Type: history.Info, Error: "malformed produce response"}
	}
	rp := pr.Topics[0].Partitions[0]
	o := classify(rp.ErrorCode, acks)
	if o.Type == history.OK {
		o.Offset = rp.BaseOffset
	} else {
		c.forget(k)
	}
	return o
}

// classify maps a produce error code to an outcome. Only errors the broker
// returns before appending are fail; everything else is info.
func classify(code int16, acks int16) Outcome {
	switch code {
	case 0:
		return Outcome{Type: history.OK}
	case kerr.NotEnoughReplicas.Code, kerr.UnknownTopicOrPartition.Code, kerr.LeaderNotAvailable.Code,
		kerr.CorruptMessage.Code, kerr.InvalidRecord.Code, kerr.InvalidRequiredAcks.Code, kerr.MessageTooLarge.Code,
		kerr.RecordListTooLarge.Code, kerr.InvalidTopicException.Code:
		return Outcome{Type: history.Fail, Error: errorName(code)}
	case kerr.NotLeaderForPartition.Code:
		if acks == 1 {
			// acks=1 answers right after the append: an answer without
			// one means no append happened.
			return Outcome{Type: history.Fail, Error: errorName(code)}
		}
		// With acks=-1 it also ends a wait that began after the append,
		// when leadership moved.
		return Outcome{Type: history.Info, Error: errorName(code)}
	default:
		return Outcome{Type: history.Info, Error: errorName(code)}
	}
}

func (c *tcpClient) Poll(ctx context.Context, k history.Key, from int64) (Read, error) {
	leader, err := c.leader(ctx, k)
	if err != nil {
		return Read{}, err
	}
	recs, hw, code, err := c.fetch(ctx, leader, consumerReplica, k, from, 100*time.Millisecond)
	switch {
	case err != nil:
		c.forget(k)
		return Read{}, err
	case code == kerr.OffsetOutOfRange.Code && hw >= 0:
		return Read{}, &OutOfRangeError{HW: hw}
	case code != 0:
		c.forget(k)
		return Read{}, errors.New(errorName(code))
	}
	return Read{Records: recs, HW: hw}, nil
}

// fetch reads k from offset on broker id as replica (consumer or debug) and
// returns the records at or after offset, the HW the broker reported, and
// its error code.
func (c *tcpClient) fetch(ctx context.Context, id, replica int32, k history.Key, offset int64, wait time.Duration) ([]history.Record, int64, int16, error) {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.ReplicaID = replica
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = int32(wait/time.Millisecond), 1, 4<<20
	req.SessionEpoch = -1
	t := kmsg.NewFetchRequestTopic()
	t.Topic = k.Topic
	p := kmsg.NewFetchRequestTopicPartition()
	p.Partition, p.FetchOffset, p.PartitionMaxBytes, p.CurrentLeaderEpoch = k.Partition, offset, 4<<20, -1
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp, err := c.call(ctx, id, req)
	if err != nil {
		return nil, -1, 0, err
	}
	fr := resp.(*kmsg.FetchResponse)
	if fr.ErrorCode != 0 {
		return nil, -1, fr.ErrorCode, nil
	}
	if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
		return nil, -1, 0, errors.New("malformed fetch response")
	}
	fp := fr.Topics[0].Partitions[0]
	if fp.ErrorCode != 0 {
		return nil, fp.HighWatermark, fp.ErrorCode, nil
	}
	all, err := decodeBatches(fp.RecordBatches)
	if err != nil {
		// Kafka's name for it: the checkers count a read that got
		// corrupt records as a garbage read, so corruption is found, not
		// just a failed read.
		return nil, fp.HighWatermark, 0, fmt.Errorf("%s: the records do not decode: %w", history.CorruptRecords, err)
	}
	// A fetch returns whole batches, so the first may start before offset.
	recs := all[:0]
	for _, r := range all {
		if r.Offset >= offset {
			recs = append(recs, r)
		}
	}
	return recs, fp.HighWatermark, 0, nil
}

func (c *tcpClient) EndOffset(ctx context.Context, k history.Key) (int64, error) {
	leader, err := c.leader(ctx, k)
	if err != nil {
		return -1, err
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 4
	req.ReplicaID = consumerReplica
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = k.Topic
	p := kmsg.NewListOffsetsRequestTopicPartition()
	p.Partition, p.Timestamp, p.CurrentLeaderEpoch = k.Partition, -1, -1
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp, err := c.call(ctx, leader, req)
	if err != nil {
		c.forget(k)
		return -1, err
	}
	lr := resp.(*kmsg.ListOffsetsResponse)
	if len(lr.Topics) != 1 || len(lr.Topics[0].Partitions) != 1 {
		return -1, errors.New("malformed list offsets response")
	}
	lp := lr.Topics[0].Partitions[0]
	if lp.ErrorCode != 0 {
		c.forget(k)
		return -1, errors.New(errorName(lp.ErrorCode))
	}
	return lp.Offset, nil
}

func (c *tcpClient) FinalRead(ctx context.Context, k history.Key) (Read, error) {
	leader, err := c.leader(ctx, k)
	if err != nil {
		return Read{}, err
	}
	return c.readAll(ctx, leader, consumerReplica, k)
}

func (c *tcpClient) ReplicaRead(ctx context.Context, k history.Key, broker int32) (Read, error) {
	return c.readAll(ctx, broker, debugReplica, k)
}

// readAll reads k from offset 0 on broker id until a fetch returns nothing
// (debug reads) or the HW is reached (consumer reads). The HW is the one
// the first fetch reported.
func (c *tcpClient) readAll(ctx context.Context, id, replica int32, k history.Key) (Read, error) {
	var all []history.Record
	var hw int64 = -1
	next := int64(0)
	for i := 0; i < 1_000_000; i++ {
		recs, h, code, err := c.fetch(ctx, id, replica, k, next, 0)
		if err != nil {
			return Read{}, err
		}
		if code != 0 {
			return Read{}, fmt.Errorf("%s at offset %d", errorName(code), next)
		}
		if hw < 0 {
			hw = h
		}
		all = append(all, recs...)
		if len(recs) == 0 || (replica == consumerReplica && recs[len(recs)-1].Offset+1 >= hw) {
			return Read{Records: all, HW: hw}, nil
		}
		next = recs[len(recs)-1].Offset + 1
	}
	return Read{}, fmt.Errorf("%s: log too long to read", k)
}

func (c *tcpClient) CreateTopic(ctx context.Context, spec TopicSpec, timeout time.Duration) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 4
	req.TimeoutMillis = int32(timeout / time.Millisecond)
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = spec.Name, spec.Partitions, spec.ReplicationFactor
	for _, cfg := range [][2]string{
		{"min.insync.replicas", strconv.Itoa(int(spec.MinInsyncReplicas))},
		{"unclean.leader.election.enable", strconv.FormatBool(spec.Unclean)},
	} {
		t.Configs = append(t.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: cfg[0], Value: kmsg.StringPtr(cfg[1])})
	}
	req.Topics = append(req.Topics, t)
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
	r := resp.(*kmsg.CreateTopicsResponse)
	if len(r.Topics) != 1 {
		return errors.New("malformed create topics response")
	}
	if code := r.Topics[0].ErrorCode; code != 0 {
		err := kerr.ErrorForCode(code)
		if msg := r.Topics[0].ErrorMessage; msg != nil {
			return fmt.Errorf("%w: %s", err, *msg)
		}
		return err
	}
	return nil
}

func (c *tcpClient) DescribeTopic(ctx context.Context, topic string) (TopicDescription, error) {
	md, _, err := c.metadata(ctx, c.bootstrap, metadataRequest(topic))
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
