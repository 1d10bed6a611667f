package core

import (
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/broker/batch"
	"github.com/chaos-isr/chaos/broker/control"
	"github.com/chaos-isr/chaos/broker/storage"
)

// The unit tests drive one Broker (or two, wired by hand) the way etcd
// raft's tests drive a raft node: they hand it events and look at the
// effects and the state it reports. The harness plays the controller and
// the clients; nothing here opens a socket or a file.

const (
	testTopic = "t"
	lagTimeMs = 1000
)

// testConfig is the broker config of the unit tests: the defaults, with
// the heartbeat every millisecond so that one is always in flight to carry
// the next metadata, and the ISR lag time short.
func testConfig(id int32) Config {
	cfg := DefaultConfig()
	cfg.BrokerID = id
	cfg.Host = fmt.Sprintf("b%d", id)
	cfg.Port = 9092
	cfg.Incarnation = fmt.Sprintf("b%d-1", id)
	cfg.HeartbeatIntervalMs = 1
	cfg.ReplicaLagTimeMaxMs = lagTimeMs
	cfg.ReplicaFetchWaitMaxMs = 200
	cfg.ReplicaLagMaxMessages = 0
	return cfg
}

// harness is one broker and what it asked for.
type harness struct {
	t    *testing.T
	b    *Broker
	logs *storage.MemoryFactory
	now  int64

	out      []Effect // effects not yet taken by the test
	hb       uint64   // the heartbeat in flight, 0 if none
	mdVer    int64
	minISR   int32
	conn     ConnID
	replicas []int32
}

// newHarness starts broker id on logs (a fresh in-memory factory if nil)
// and registers it with broker epoch 1. It knows no metadata yet.
func newHarness(t *testing.T, cfg Config, logs *storage.MemoryFactory) *harness {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if logs == nil {
		logs = &storage.MemoryFactory{}
	}
	h := &harness{t: t, b: New(cfg, logs), logs: logs, minISR: 1, replicas: []int32{1, 2, 3}}
	h.tick(0)
	reg := h.controllerSend(func(req any) bool { _, ok := req.(*control.RegisterRequest); return ok })
	h.respond(reg.ID, &control.RegisterResponse{BrokerEpoch: 1})
	if h.hb == 0 {
		t.Fatal("no heartbeat after registration")
	}
	h.take()
	return h
}

// newLeader is broker 1 leading partition t-0 (replicas 1, 2, 3) in leader
// epoch 0 with the given ISR and min.insync.replicas.
func newLeader(t *testing.T, minISR int32, isr ...int32) *harness {
	t.Helper()
	h := newHarness(t, testConfig(1), nil)
	h.minISR = minISR
	h.partition(1, 0, 0, isr...)
	h.take()
	return h
}

// drain moves the broker's effects to h.out, noting the heartbeat.
func (h *harness) drain() {
	for _, e := range h.b.Effects() {
		if s, ok := e.(Send); ok && s.To == ControllerID {
			if _, ok := s.Req.(*control.HeartbeatRequest); ok {
				h.hb = s.ID
				continue
			}
		}
		h.out = append(h.out, e)
	}
}

// take returns and forgets the effects so far.
func (h *harness) take() []Effect {
	out := h.out
	h.out = nil
	return out
}

func (h *harness) tick(now int64) {
	h.now = now
	h.b.Tick(now)
	h.drain()
}

func (h *harness) respond(id uint64, resp any) {
	h.b.Response(h.now, id, resp, nil)
	h.drain()
}

func (h *harness) fail(id uint64, err error) {
	h.b.Response(h.now, id, nil, err)
	h.drain()
}

// request delivers a client request on a new connection and returns it.
func (h *harness) request(req kmsg.Request) ConnID {
	h.conn++
	h.b.Request(h.now, h.conn, int32(h.conn), req)
	h.drain()
	return h.conn
}

// call is request followed by its reply, which must come at once.
func (h *harness) call(req kmsg.Request) kmsg.Response {
	h.t.Helper()
	conn := h.request(req)
	r, ok := h.reply(conn)
	if !ok {
		h.t.Fatalf("no reply to %s", kmsg.NameForKey(req.Key()))
	}
	return r.Resp
}

// reply takes the reply to conn from the effects, if there is one.
func (h *harness) reply(conn ConnID) (Reply, bool) {
	for i, e := range h.out {
		if r, ok := e.(Reply); ok && r.Conn == conn {
			h.out = slices.Delete(h.out, i, i+1)
			return r, true
		}
	}
	return Reply{}, false
}

// controllerSend takes the first controller request matching match.
func (h *harness) controllerSend(match func(any) bool) Send {
	h.t.Helper()
	s, ok := h.findSend(func(s Send) bool { return s.To == ControllerID && match(s.Req) })
	if !ok {
		h.t.Fatalf("no such controller request in %v", h.out)
	}
	return s
}

// findSend takes the first Send matching match from the effects.
func (h *harness) findSend(match func(Send) bool) (Send, bool) {
	for i, e := range h.out {
		if s, ok := e.(Send); ok && match(s) {
			h.out = slices.Delete(h.out, i, i+1)
			return s, true
		}
	}
	return Send{}, false
}

// alterISR takes the AlterISR request the broker sent, if any.
func (h *harness) alterISR() (Send, *control.AlterISRRequest, bool) {
	s, ok := h.findSend(func(s Send) bool { _, ok := s.Req.(*control.AlterISRRequest); return ok })
	if !ok {
		return Send{}, nil, false
	}
	return s, s.Req.(*control.AlterISRRequest), true
}

// snapshot is the metadata of brokers 1-3 and topic t with one partition.
func (h *harness) snapshot(leader, leaderEpoch, partitionEpoch int32, isr ...int32) *control.Snapshot {
	h.mdVer++
	md := &control.Snapshot{Version: h.mdVer}
	for id := int32(1); id <= 3; id++ {
		md.Brokers = append(md.Brokers, control.Broker{ID: id, Host: fmt.Sprintf("b%d", id), Port: 9092, Epoch: 1})
	}
	md.Topics = []control.Topic{{
		Name: testTopic, MinInsyncReplicas: h.minISR, Election: control.Clean,
		Partitions: []control.Partition{{
			Partition: 0, Leader: leader, LeaderEpoch: leaderEpoch, PartitionEpoch: partitionEpoch,
			Replicas: slices.Clone(h.replicas), ISR: slices.Clone(isr),
		}},
	}}
	return md
}

// partition tells the broker, through the heartbeat in flight, the state
// of partition t-0.
func (h *harness) partition(leader, leaderEpoch, partitionEpoch int32, isr ...int32) {
	h.t.Helper()
	if h.hb == 0 {
		h.tick(h.now + 1)
	}
	id := h.hb
	h.hb = 0
	h.respond(id, &control.HeartbeatResponse{Metadata: h.snapshot(leader, leaderEpoch, partitionEpoch, isr...)})
}

func (h *harness) info() ReplicaInfo {
	h.t.Helper()
	info, ok := h.b.Replica(testTopic, 0)
	if !ok {
		h.t.Fatal("no replica of t-0")
	}
	return info
}

// values reads the whole local log of t-0 from storage.
func (h *harness) values() []string {
	h.t.Helper()
	return logValues(h.t, h.logs)
}

func logValues(t *testing.T, logs *storage.MemoryFactory) []string {
	t.Helper()
	m, err := logs.OpenMemory(testTopic, 0)
	if err != nil {
		t.Fatal(err)
	}
	data, err := m.Read(m.LogStartOffset(), m.LogEndOffset(), 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	return recordValues(t, data)
}

func recordValues(t *testing.T, data []byte) []string {
	t.Helper()
	_, vals, err := batch.Values(data)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, v := range vals {
		out = append(out, string(v))
	}
	return out
}

// produceReq is one batch of values to t-0.
func produceReq(acks int16, timeoutMs int32, values ...string) *kmsg.ProduceRequest {
	vals := make([][]byte, len(values))
	for i, v := range values {
		vals[i] = []byte(v)
	}
	return produceRaw(acks, timeoutMs, batch.Build(0, vals...))
}

func produceRaw(acks int16, timeoutMs int32, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks, req.TimeoutMillis = acks, timeoutMs
	t := kmsg.NewProduceRequestTopic()
	t.Topic = testTopic
	p := kmsg.NewProduceRequestTopicPartition()
	p.Partition, p.Records = 0, records
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

// produced is the single partition's answer of a produce response.
func produced(t *testing.T, resp kmsg.Response) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	r, ok := resp.(*kmsg.ProduceResponse)
	if !ok || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		t.Fatalf("not a one-partition produce response: %#v", resp)
	}
	return r.Topics[0].Partitions[0]
}

// fetchReq reads t-0 from offset as replicaID (a follower's id, or
// ConsumerReplicaID or DebugReplicaID) in leader epoch epoch (-1: no
// opinion), answered at once.
func fetchReq(replicaID int32, offset int64, epoch int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = replicaID, 0, 1, 1<<20
	req.SessionEpoch = -1
	t := kmsg.NewFetchRequestTopic()
	t.Topic = testTopic
	p := kmsg.NewFetchRequestTopicPartition()
	p.Partition, p.FetchOffset, p.PartitionMaxBytes, p.CurrentLeaderEpoch = 0, offset, 1<<20, epoch
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

// fetch sends fetchReq and returns the partition's answer.
func (h *harness) fetch(replicaID int32, offset int64, epoch int32) kmsg.FetchResponseTopicPartition {
	h.t.Helper()
	r := h.call(fetchReq(replicaID, offset, epoch)).(*kmsg.FetchResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		h.t.Fatalf("not a one-partition fetch response: %#v", r)
	}
	return r.Topics[0].Partitions[0]
}

// follow is follower id fetching at offset in the leader's current epoch,
// as a follower does: its fetch offset is its log end offset.
func (h *harness) follow(id int32, offset int64) kmsg.FetchResponseTopicPartition {
	h.t.Helper()
	p := h.fetch(id, offset, h.info().LeaderEpoch)
	if p.ErrorCode != 0 {
		h.t.Fatalf("follower %d fetch at %d: %s", id, offset, errName(p.ErrorCode))
	}
	return p
}

// produceOK produces one batch of values with acks=1 and returns its base
// offset.
func (h *harness) produceOK(values ...string) int64 {
	h.t.Helper()
	p := produced(h.t, h.call(produceReq(1, 1000, values...)))
	if p.ErrorCode != 0 {
		h.t.Fatalf("produce %v: %s", values, errName(p.ErrorCode))
	}
	return p.BaseOffset
}

func listOffsetsReq(replicaID int32, timestamp int64) *kmsg.ListOffsetsRequest {
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 7
	req.ReplicaID = replicaID
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = testTopic
	p := kmsg.NewListOffsetsRequestTopicPartition()
	p.Partition, p.Timestamp, p.CurrentLeaderEpoch = 0, timestamp, -1
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

func offsetForEpochReq(replicaID, currentEpoch, epoch int32) *kmsg.OffsetForLeaderEpochRequest {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.Version = 4
	req.ReplicaID = replicaID
	t := kmsg.NewOffsetForLeaderEpochRequestTopic()
	t.Topic = testTopic
	p := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	p.Partition, p.CurrentLeaderEpoch, p.LeaderEpoch = 0, currentEpoch, epoch
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

// stamped is one batch of values at offset base, written in leader epoch
// epoch: what a leader would have appended.
func stamped(base int64, epoch int32, values ...string) []byte {
	vals := make([][]byte, len(values))
	for i, v := range values {
		vals[i] = []byte(v)
	}
	b := batch.Build(0, vals...)
	batch.Stamp(b, base, epoch)
	return b
}

// seedLog writes batches of one record each into t-0 of logs, with the
// leader epoch of each record, as an earlier run of the broker left it.
func seedLog(t *testing.T, logs *storage.MemoryFactory, records ...epochValue) {
	t.Helper()
	m, err := logs.OpenMemory(testTopic, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range records {
		if err := m.Append(stamped(m.LogEndOffset(), r.epoch, r.value)); err != nil {
			t.Fatal(err)
		}
	}
}

type epochValue struct {
	epoch int32
	value string
}

// errName is the name of a Kafka error code, as the tests compare them.
func errName(code int16) string {
	if e := kerr.TypedErrorForCode(code); e != nil {
		return e.Message
	}
	return "OK"
}

// seeded is a storage factory whose t-0 holds records already, with HW 0.
func seeded(t *testing.T, records ...epochValue) *storage.MemoryFactory {
	t.Helper()
	return seededHW(t, 0, records...)
}

// seededHW is seeded with a checkpointed HW.
func seededHW(t *testing.T, hw int64, records ...epochValue) *storage.MemoryFactory {
	t.Helper()
	f := &storage.MemoryFactory{}
	seedLog(t, f, records...)
	m, err := f.OpenMemory(testTopic, 0)
	if err != nil {
		t.Fatal(err)
	}
	m.SetHighWatermark(hw)
	if err := m.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	return f
}
