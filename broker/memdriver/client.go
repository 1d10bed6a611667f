package memdriver

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/broker/batch"
	"github.com/chaos-isr/chaos/broker/control"
)

// Metadata is the controller's current view.
func (c *Cluster) Metadata() *control.Snapshot { return c.ctrlMD }

// Partition is the controller's view of one partition (nil if unknown).
func (c *Cluster) Partition(topic string, partition int32) *control.Partition {
	_, p := c.ctrlMD.Lookup(topic, partition)
	return p
}

// Await runs until call is answered or ms pass.
func (c *Cluster) Await(call *Call, ms int64) bool {
	return c.RunUntil(ms, func() bool { return call.Done })
}

// CreateTopic creates a topic through broker 1 (or the first live broker)
// and waits until every live replica knows its leader.
func (c *Cluster) CreateTopic(spec control.TopicSpec) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.Version = 4
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = spec.Name, spec.Partitions, spec.ReplicationFactor
	if t.NumPartitions == 0 {
		t.NumPartitions = -1
	}
	if t.ReplicationFactor == 0 {
		t.ReplicationFactor = -1
	}
	if spec.MinInsyncReplicas > 0 {
		v := fmt.Sprint(spec.MinInsyncReplicas)
		t.Configs = append(t.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: "min.insync.replicas", Value: &v})
	}
	if spec.Election != "" {
		v := fmt.Sprint(spec.Election == control.Unclean)
		t.Configs = append(t.Configs, kmsg.CreateTopicsRequestTopicConfig{Name: "unclean.leader.election.enable", Value: &v})
	}
	req.Topics = append(req.Topics, t)
	var via int32 = 1
	for _, n := range c.nodes {
		if n.up {
			via = n.id
			break
		}
	}
	call := c.Send(via, req)
	if !c.Await(call, 5000) || call.Err != nil {
		return fmt.Errorf("create topic %s: no answer (%v)", spec.Name, call.Err)
	}
	rt := call.Resp.(*kmsg.CreateTopicsResponse).Topics[0]
	if rt.ErrorCode != 0 {
		msg := ""
		if rt.ErrorMessage != nil {
			msg = *rt.ErrorMessage
		}
		return fmt.Errorf("create topic %s: %s: %s", spec.Name, errName(rt.ErrorCode), msg)
	}
	ok := c.RunUntil(5000, func() bool {
		t, _ := c.ctrlMD.Lookup(spec.Name, -1)
		if t == nil {
			return false
		}
		for _, p := range t.Partitions {
			for _, id := range p.Replicas {
				b := c.Node(id)
				if b == nil {
					continue
				}
				if info, ok := b.Replica(spec.Name, p.Partition); !ok || info.LeaderEpoch != p.LeaderEpoch {
					return false
				}
			}
		}
		return true
	})
	if !ok {
		return fmt.Errorf("create topic %s: replicas did not learn their roles", spec.Name)
	}
	return nil
}

// Produce sends values as one batch to the partition's current leader (as
// the controller sees it; a real client would ask Metadata) and returns the
// call. With acks=0 the call is Done without a response.
func (c *Cluster) Produce(topic string, partition int32, acks int16, timeoutMs int32, values ...string) *Call {
	leader := int32(1)
	if p := c.Partition(topic, partition); p != nil && p.Leader != control.NoLeader {
		leader = p.Leader
	}
	return c.ProduceTo(leader, topic, partition, acks, timeoutMs, values...)
}

// ProduceTo is Produce to a chosen broker.
func (c *Cluster) ProduceTo(broker int32, topic string, partition int32, acks int16, timeoutMs int32, values ...string) *Call {
	return c.ProduceRecords(broker, topic, partition, acks, timeoutMs, batch.Build(c.now, bytesOf(values)...))
}

func bytesOf(values []string) [][]byte {
	vals := make([][]byte, len(values))
	for i, v := range values {
		vals[i] = []byte(v)
	}
	return vals
}

// ProduceRecords sends record batches a client built (batch.Build,
// batch.BuildIdempotent) to a chosen broker. The request gets its own copy,
// as a wire would: a producer retrying sends the same bytes again.
func (c *Cluster) ProduceRecords(broker int32, topic string, partition int32, acks int16, timeoutMs int32, records []byte) *Call {
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks, req.TimeoutMillis = acks, timeoutMs
	t := kmsg.NewProduceRequestTopic()
	t.Topic = topic
	p := kmsg.NewProduceRequestTopicPartition()
	p.Partition, p.Records = partition, bytes.Clone(records)
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return c.Send(broker, req)
}

// InitProducerID asks broker id for an idempotent producer's id and epoch,
// as a producer does before its first send.
func (c *Cluster) InitProducerID(broker int32) (int64, int16, error) {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = 4
	call := c.Send(broker, req)
	if !c.Await(call, 2000) || call.Err != nil || call.Resp == nil {
		return -1, -1, fmt.Errorf("init producer id at b%d: no answer (%v)", broker, call.Err)
	}
	r := call.Resp.(*kmsg.InitProducerIDResponse)
	if r.ErrorCode != 0 {
		return -1, -1, fmt.Errorf("init producer id at b%d: %s", broker, errName(r.ErrorCode))
	}
	return r.ProducerID, r.ProducerEpoch, nil
}

// ProduceResult summarizes a produce call: "ok@offset", an error name,
// "no response" (acks=0), or what happened to the connection.
func ProduceResult(call *Call) string {
	switch {
	case !call.Done:
		return "pending"
	case call.Err != nil:
		return call.Err.Error()
	case call.Resp == nil:
		return "no response"
	}
	p := call.Resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		return errName(p.ErrorCode)
	}
	return fmt.Sprintf("ok@%d", p.BaseOffset)
}

// Values returns the values in broker id's replica log (all of it, up to its
// LEO), read straight from storage.
func (c *Cluster) Values(id int32, topic string, partition int32) []string {
	m, err := c.node(id).logs.OpenMemory(topic, partition)
	if err != nil {
		return nil
	}
	data, err := m.Read(m.LogStartOffset(), m.LogEndOffset(), 1<<30)
	if err != nil {
		return nil
	}
	_, vals, err := batch.Values(data)
	if err != nil {
		return []string{"corrupt: " + err.Error()}
	}
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = string(v)
	}
	return out
}

// Committed returns the values below the HW of the partition's leader: what
// a consumer can read.
func (c *Cluster) Committed(topic string, partition int32) []string {
	p := c.Partition(topic, partition)
	if p == nil || p.Leader == control.NoLeader || c.Node(p.Leader) == nil {
		return nil
	}
	info, _ := c.Node(p.Leader).Replica(topic, partition)
	vals := c.Values(p.Leader, topic, partition)
	return vals[:min(int(info.HW), len(vals))]
}

// State describes a partition: the controller's view and each replica's.
func (c *Cluster) State(topic string, partition int32) string {
	p := c.Partition(topic, partition)
	if p == nil {
		return "unknown partition\n"
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "controller: leader=%d epoch=%d isr=%v\n", p.Leader, p.LeaderEpoch, p.ISR)
	ids := slices.Clone(p.Replicas)
	slices.Sort(ids)
	for _, id := range ids {
		b := c.Node(id)
		if b == nil {
			fmt.Fprintf(&sb, "b%d: down\n", id)
			continue
		}
		info, ok := b.Replica(topic, partition)
		if !ok {
			fmt.Fprintf(&sb, "b%d: no replica\n", id)
			continue
		}
		paused := ""
		if c.node(id).paused {
			paused = " (paused)"
		}
		fmt.Fprintf(&sb, "b%d: %s epoch=%d leo=%d hw=%d%s\n", id, info.Role, info.LeaderEpoch, info.LEO, info.HW, paused)
	}
	return sb.String()
}

// Consume sends a consumer Fetch (replica id -1) from offset to the
// partition's leader and returns the values and the HW it reported.
func (c *Cluster) Consume(topic string, partition int32, offset int64) ([]string, int64, error) {
	p := c.Partition(topic, partition)
	if p == nil || p.Leader == control.NoLeader {
		return nil, -1, fmt.Errorf("no leader for %s-%d", topic, partition)
	}
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 0, 1, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = partition, offset, 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	call := c.Send(p.Leader, req)
	if !c.Await(call, 2000) || call.Err != nil || call.Resp == nil {
		return nil, -1, fmt.Errorf("fetch from b%d: no answer (%v)", p.Leader, call.Err)
	}
	fp := call.Resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
	if fp.ErrorCode != 0 {
		return nil, fp.HighWatermark, fmt.Errorf("fetch from b%d: %s", p.Leader, errName(fp.ErrorCode))
	}
	_, vals, err := batch.Values(fp.RecordBatches)
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = string(v)
	}
	return out, fp.HighWatermark, err
}

func callOffset(call *Call) int64 {
	r, ok := call.Resp.(*kmsg.ProduceResponse)
	if !ok || len(r.Topics) == 0 || len(r.Topics[0].Partitions) == 0 {
		return -1
	}
	return r.Topics[0].Partitions[0].BaseOffset
}
