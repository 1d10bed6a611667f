package core

import (
	"errors"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/broker/batch"
)

// code extracts the one error code a test request's response carries.
type code func(t *testing.T, resp kmsg.Response) int16

func produceCode(t *testing.T, resp kmsg.Response) int16 { return produced(t, resp).ErrorCode }

func fetchCode(t *testing.T, resp kmsg.Response) int16 {
	return resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode
}

func listOffsetsCode(t *testing.T, resp kmsg.Response) int16 {
	return resp.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode
}

func offsetForEpochCode(t *testing.T, resp kmsg.Response) int16 {
	return resp.(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0].ErrorCode
}

func describeConfigsCode(t *testing.T, resp kmsg.Response) int16 {
	return resp.(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode
}

func createTopicsCode(t *testing.T, resp kmsg.Response) int16 {
	return resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode
}

func metadataCode(t *testing.T, resp kmsg.Response) int16 {
	return resp.(*kmsg.MetadataResponse).Topics[0].ErrorCode
}

// mutate returns a good one-record batch changed by f.
func mutate(f func(b []byte) []byte) []byte { return f(batch.Build(0, []byte("v"))) }

func withTopic(req *kmsg.ProduceRequest, topic string, partition int32) *kmsg.ProduceRequest {
	req.Topics[0].Topic, req.Topics[0].Partitions[0].Partition = topic, partition
	return req
}

func fetchAt(topic string, partition int32, offset int64, epoch int32, replicaID int32) *kmsg.FetchRequest {
	req := fetchReq(replicaID, offset, epoch)
	req.Topics[0].Topic, req.Topics[0].Partitions[0].Partition = topic, partition
	return req
}

func describeConfigs(typ kmsg.ConfigResourceType, name string) *kmsg.DescribeConfigsRequest {
	req := kmsg.NewPtrDescribeConfigsRequest()
	res := kmsg.NewDescribeConfigsRequestResource()
	res.ResourceType, res.ResourceName = typ, name
	req.Resources = append(req.Resources, res)
	return req
}

func createTopic(f func(*kmsg.CreateTopicsRequestTopic)) *kmsg.CreateTopicsRequest {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 4
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = "new", 1, 1
	f(&t)
	req.Topics = append(req.Topics, t)
	return req
}

// TestBadRequestsGetErrors: malformed or unanswerable requests get an
// error in their response, never a panic, and change no log. Broker 1
// leads t-0 in leader epoch 3 and holds one record.
func TestBadRequestsGetErrors(t *testing.T) {
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		name string
		req  kmsg.Request
		code code
		want *kerr.Error
	}{
		{"acks=2", produceReq(2, 1000, "a"), produceCode, kerr.InvalidRequiredAcks},
		{"no records", produceRaw(1, 1000, nil), produceCode, kerr.CorruptMessage},
		{"garbage records", produceRaw(1, 1000, []byte("not a record batch")), produceCode, kerr.CorruptMessage},
		{"bad crc", produceRaw(1, 1000, mutate(func(b []byte) []byte { b[len(b)-1] ^= 1; return b })), produceCode, kerr.CorruptMessage},
		{"torn batch", produceRaw(1, 1000, mutate(func(b []byte) []byte { return b[:len(b)-1] })), produceCode, kerr.CorruptMessage},
		{"trailing bytes", produceRaw(1, 1000, mutate(func(b []byte) []byte { return append(b, 0, 0, 0) })), produceCode, kerr.CorruptMessage},
		{"magic 1", produceRaw(1, 1000, mutate(func(b []byte) []byte { b[16] = 1; return b })), produceCode, kerr.CorruptMessage},
		{"negative last offset delta", produceRaw(-1, 1000, mutate(func(b []byte) []byte { b[23] = 0xff; return b })), produceCode, kerr.CorruptMessage},
		{"produce to an unknown topic", withTopic(produceReq(1, 1000, "a"), "nope", 0), produceCode, kerr.UnknownTopicOrPartition},
		{"produce to an unknown partition", withTopic(produceReq(-1, 1000, "a"), testTopic, 7), produceCode, kerr.UnknownTopicOrPartition},
		{"produce to a negative partition", withTopic(produceReq(0, 1000, "a"), testTopic, -1), nil, nil}, // acks=0: the connection closes
		{"fetch past the leo", fetchAt(testTopic, 0, 2, -1, ConsumerReplicaID), fetchCode, kerr.OffsetOutOfRange},
		{"fetch at a negative offset", fetchAt(testTopic, 0, -1, -1, ConsumerReplicaID), fetchCode, kerr.OffsetOutOfRange},
		{"fetch in an older epoch", fetchAt(testTopic, 0, 0, 2, ConsumerReplicaID), fetchCode, kerr.FencedLeaderEpoch},
		{"fetch in a newer epoch", fetchAt(testTopic, 0, 0, 4, ConsumerReplicaID), fetchCode, kerr.UnknownLeaderEpoch},
		{"fetch by a broker that is no replica", fetchAt(testTopic, 0, 0, 3, 9), fetchCode, kerr.NotLeaderForPartition},
		{"fetch of an unknown topic", fetchAt("nope", 0, 0, -1, ConsumerReplicaID), fetchCode, kerr.UnknownTopicOrPartition},
		{"fetch of a negative partition", fetchAt(testTopic, -1, 0, -1, ConsumerReplicaID), fetchCode, kerr.UnknownTopicOrPartition},
		{"list offsets of an unknown topic", func() kmsg.Request {
			r := listOffsetsReq(ConsumerReplicaID, -1)
			r.Topics[0].Topic = "nope"
			return r
		}(), listOffsetsCode, kerr.UnknownTopicOrPartition},
		{"offset for an epoch newer than the leader's", offsetForEpochReq(2, 4, 3), offsetForEpochCode, kerr.UnknownLeaderEpoch},
		{"describe another broker's configs", describeConfigs(kmsg.ConfigResourceTypeBroker, "9"), describeConfigsCode, kerr.InvalidRequest},
		{"describe an unknown topic", describeConfigs(kmsg.ConfigResourceTypeTopic, "nope"), describeConfigsCode, kerr.UnknownTopicOrPartition},
		{"create a topic with a replica assignment", createTopic(func(t *kmsg.CreateTopicsRequestTopic) {
			t.NumPartitions, t.ReplicationFactor = -1, -1
			t.ReplicaAssignment = []kmsg.CreateTopicsRequestTopicReplicaAssignment{{Partition: 0, Replicas: []int32{1}}}
		}), createTopicsCode, kerr.InvalidReplicaAssignment},
		{"create a topic with min.insync.replicas=0", createTopic(func(t *kmsg.CreateTopicsRequestTopic) {
			t.Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: "min.insync.replicas", Value: str("0")}}
		}), createTopicsCode, kerr.InvalidConfig},
		{"create a topic with a bad election flag", createTopic(func(t *kmsg.CreateTopicsRequestTopic) {
			t.Configs = []kmsg.CreateTopicsRequestTopicConfig{{Name: "unclean.leader.election.enable", Value: str("maybe")}}
		}), createTopicsCode, kerr.InvalidConfig},
		{"metadata by an unknown topic id", func() kmsg.Request {
			r := kmsg.NewPtrMetadataRequest()
			r.Version = 12
			r.Topics = []kmsg.MetadataRequestTopic{{TopicID: [16]byte{1}}}
			return r
		}(), metadataCode, kerr.UnknownTopicID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newLeader(t, 1, 1)
			h.partition(1, 3, 1, 1)
			h.produceOK("a")
			h.take()
			r, ok := h.reply(h.request(tc.req))
			switch {
			case !ok:
				t.Fatal("no reply")
			case tc.code == nil:
				if !r.Close {
					t.Fatalf("reply %+v, want the connection closed", r)
				}
			case r.Resp == nil:
				t.Fatalf("empty reply %+v", r)
			case r.Resp.Key() != tc.req.Key():
				t.Fatalf("answered with a %s", kmsg.NameForKey(r.Resp.Key()))
			default:
				if got := tc.code(t, r.Resp); got != tc.want.Code {
					t.Fatalf("error %s, want %s", errName(got), errName(tc.want.Code))
				}
			}
			if _, ok := h.findSend(func(Send) bool { return true }); ok {
				t.Fatal("a refused request was sent on")
			}
			if info := h.info(); info.LEO != 1 || info.HW != 1 {
				t.Fatalf("leo %d hw %d, want 1 and 1: the log changed", info.LEO, info.HW)
			}
		})
	}
}

// TestUnsupportedRequestAnswered: a request the core does not handle (the
// wire layer should have refused it) is answered with an empty response of
// its kind and version, so the client does not hang, and logged.
func TestUnsupportedRequestAnswered(t *testing.T) {
	h := newLeader(t, 1, 1)
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.Version = 3
	resp := h.call(req)
	if _, ok := resp.(*kmsg.CreatePartitionsResponse); !ok || resp.GetVersion() != 3 {
		t.Fatalf("answered %T v%d, want a CreatePartitionsResponse v3", resp, resp.GetVersion())
	}
	var logged bool
	for _, e := range h.take() {
		_, logged = e.(Log)
	}
	if !logged {
		t.Fatal("an unhandled request was not logged")
	}
}

// TestRequestsBeforeMetadata: a broker that knows no metadata yet, or is
// not even registered, answers every request it handles without panicking.
func TestRequestsBeforeMetadata(t *testing.T) {
	for _, registered := range []bool{false, true} {
		var h *harness
		if registered {
			h = newHarness(t, testConfig(1), nil)
		} else {
			h = &harness{t: t, b: New(testConfig(1), nil)}
		}
		for _, req := range []kmsg.Request{
			produceReq(-1, 1000, "a"),
			fetchReq(ConsumerReplicaID, 0, -1),
			fetchReq(2, 0, 0),
			listOffsetsReq(ConsumerReplicaID, -1),
			offsetForEpochReq(2, 0, 0),
			describeConfigs(kmsg.ConfigResourceTypeTopic, testTopic),
			kmsg.NewPtrMetadataRequest(),
			createTopic(func(*kmsg.CreateTopicsRequestTopic) {}),
		} {
			conn := h.request(req)
			if _, ok := h.reply(conn); !ok && req.Key() != kmsg.CreateTopics.Int16() {
				t.Errorf("registered %v: no reply to %s", registered, kmsg.NameForKey(req.Key()))
			}
		}
	}
}

// TestStrayResponses: answers to requests the broker never sent, or of the
// wrong type, are ignored.
func TestStrayResponses(t *testing.T) {
	h := newLeader(t, 1, 1)
	for id := uint64(1); id <= 20; id++ {
		h.b.Response(h.now, id, nil, errors.New("broken pipe"))
		h.b.Response(h.now, id, kmsg.NewPtrFetchResponse(), nil)
		h.b.Response(h.now, id, &kmsg.ProduceResponse{}, nil)
	}
	h.drain()
	if info := h.info(); info.Role != "leader" || info.LEO != 0 {
		t.Fatalf("state changed: %+v", info)
	}
}

// TestDescribeOwnBrokerConfigs: a broker describes its own replication
// settings, as Kafka does, so that a tester that did not start it knows
// how long to slow a follower for it to leave the ISR.
func TestDescribeOwnBrokerConfigs(t *testing.T) {
	h := newLeader(t, 1, 1)
	req := describeConfigs(kmsg.ConfigResourceTypeBroker, "1")
	req.Resources[0].ConfigNames = []string{"replica.lag.time.max.ms"}
	r, ok := h.reply(h.request(req))
	if !ok || r.Resp == nil {
		t.Fatalf("reply %+v", r)
	}
	res := r.Resp.(*kmsg.DescribeConfigsResponse).Resources[0]
	if res.ErrorCode != 0 || len(res.Configs) != 1 || res.Configs[0].Name != "replica.lag.time.max.ms" ||
		*res.Configs[0].Value != strconv.FormatInt(h.b.cfg.ReplicaLagTimeMaxMs, 10) {
		t.Fatalf("described %+v", res)
	}
}
