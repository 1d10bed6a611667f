package integration

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestIdempotentProducer: the producer side of KIP-98 with real clients and
// real processes. franz-go's default producer (idempotent, acks=all) and
// sarama's idempotent one get producer ids and write batches that carry
// them; the same produce bytes sent again, on the same connection or a new
// one, are written once and answered with the first offset, also by a new
// leader after the old one is killed and by brokers restarted on their
// logs; five produces pipelined on one connection are answered in order;
// transactions are refused.
func TestIdempotentProducer(t *testing.T) {
	tc := startCluster(t, clusterOpts{})

	for _, c := range []struct {
		client  string
		produce func(t *testing.T, tc *testCluster, topic string, values []string) map[string]acked
		consume func(t *testing.T, tc *testCluster, topic string) []consumed
	}{
		{"kgo-default", func(t *testing.T, tc *testCluster, topic string, values []string) map[string]acked {
			return kgoProduce(t, tc, topic, -1, values) // kgo's defaults: idempotent, acks=all
		}, kgoConsume},
		{"sarama-idempotent", func(t *testing.T, tc *testCluster, topic string, values []string) map[string]acked {
			cfg := saramaConfig(-1)
			cfg.Version = sarama.V2_1_0_0
			cfg.Producer.Idempotent = true
			cfg.Producer.Retry.Max = 5
			cfg.Net.MaxOpenRequests = 1
			return saramaProduceWith(t, tc, topic, cfg, values)
		}, saramaConsume},
	} {
		t.Run(c.client, func(t *testing.T) {
			tc := tc.with(t)
			topic := "idem-" + c.client
			tc.createTopic(topic, 3, 3, nil)
			sent := uniqueValues(topic, 60)
			offsets := c.produce(t, tc, topic, sent)
			tc.waitEnd(topic, len(sent))
			tc.checkProducerIDs(topic, 3)
			checkExactlyOnce(t, sent, c.consume(t, tc, topic), offsets)
		})
	}

	t.Run("replay", func(t *testing.T) {
		tc := tc.with(t)
		const topic = "idem-replay"
		leader, pid, epoch := tc.producerTopic(topic)

		frames := map[string][]byte{} // the produce of each value, as sent
		send := func(c net.Conn, value string) int64 {
			t.Helper()
			frame := frames[value]
			if frame == nil {
				seq := int32(len(frames))
				frame = newFormatter().AppendRequest(nil, produceRequest(topic, 0, -1, producerBatch(pid, epoch, seq, value)), 7)
				frames[value] = frame
			}
			off, err := writeProduce(c, frame)
			if err != nil {
				t.Fatalf("produce %q: %v", value, err)
			}
			return off
		}
		c := dial(t, tc.addr(leader))
		first := send(c, "a")
		if again := send(c, "a"); again != first {
			t.Fatalf("the same bytes again on the same connection: offset %d, want %d", again, first)
		}
		if again := send(dial(t, tc.addr(leader)), "a"); again != first {
			t.Fatalf("the same bytes again on a new connection: offset %d, want %d", again, first)
		}
		send(c, "b")
		tc.waitLogsEqual(topic, 0, 5*time.Second)

		// The leader dies: its successor has the producer's batches from
		// fetching them, and answers the retry with their offset.
		if err := tc.Kill(int(leader)); err != nil {
			t.Fatal(err)
		}
		var s partitionState
		waitFor(t, 3*sessionTimeout, "a new leader", func() (bool, string) {
			s = tc.mustState(topic, 0, otherThan(tc.brokerIDs(), leader)...)
			return s.leader >= 0 && s.leader != leader, s.String()
		})
		waitFor(t, 5*time.Second, "the retry at the new leader", func() (bool, string) {
			off, err := writeProduce(dial(t, tc.addr(s.leader)), frames["b"])
			return err == nil && off == first+1, fmt.Sprintf("offset %d, %v", off, err)
		})
		if err := tc.Restart(context.Background(), int(leader)); err != nil {
			t.Fatal(err)
		}
		tc.waitISR(topic, 0, 3, 15*time.Second)

		// Every broker restarts on its log: whoever leads then read the
		// producer state back from its disk.
		for _, id := range tc.brokerIDs() {
			if err := tc.Stop(int(id), 5*time.Second); err != nil {
				t.Fatal(err)
			}
		}
		for _, id := range tc.brokerIDs() {
			if err := tc.Restart(context.Background(), int(id)); err != nil {
				t.Fatal(err)
			}
		}
		s = tc.waitISR(topic, 0, 3, 15*time.Second)
		waitFor(t, 5*time.Second, "the retry after the restart", func() (bool, string) {
			off, err := writeProduce(dial(t, tc.addr(s.leader)), frames["a"])
			return err == nil && off == first, fmt.Sprintf("offset %d, %v", off, err)
		})
		final := tc.waitLogsEqual(topic, 0, 5*time.Second)
		var values []string
		for _, r := range final {
			values = append(values, r.value)
		}
		if got := strings.Join(values, " "); got != "a b" {
			t.Fatalf("log %q, want \"a b\": each batch once", got)
		}
	})

	t.Run("five-in-flight", func(t *testing.T) {
		tc := tc.with(t)
		const topic = "idem-inflight"
		leader, pid, epoch := tc.producerTopic(topic)
		c := dial(t, tc.addr(leader))
		_ = c.SetDeadline(time.Now().Add(rawTimeout))
		var out []byte
		req := produceRequest(topic, 0, -1, nil)
		f := newFormatter()
		for i := range 5 {
			req.Topics[0].Partitions[0].Records = producerBatch(pid, epoch, int32(i), fmt.Sprint(i))
			// AppendRequest writes the size at dst[0]: one frame at a time.
			out = append(out, f.AppendRequest(nil, req, int32(i+1))...)
		}
		if _, err := c.Write(out); err != nil {
			t.Fatal(err)
		}
		for i := range 5 {
			corr, resp, err := readResponse(c, req)
			if err != nil {
				t.Fatalf("answer %d: %v", i, err)
			}
			p := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
			if corr != int32(i+1) || p.ErrorCode != 0 || p.BaseOffset != int64(i) {
				t.Fatalf("answer %d: correlation id %d, %v, offset %d; want %d, no error, offset %d",
					i, corr, kerr.ErrorForCode(p.ErrorCode), p.BaseOffset, i+1, i)
			}
		}
	})
}

func otherThan(ids []int32, not int32) []int32 {
	var out []int32
	for _, id := range ids {
		if id != not {
			out = append(out, id)
		}
	}
	return out
}

// producerTopic creates a topic of one partition and returns its leader
// and an idempotent producer's id and epoch, asked of the leader.
func (tc *testCluster) producerTopic(topic string) (int32, int64, int16) {
	tc.t.Helper()
	tc.createTopic(topic, 1, 3, nil)
	leader := tc.mustState(topic, 0).leader
	pid, epoch := tc.initProducerID(leader)
	return leader, pid, epoch
}

// initProducerID asks broker id for an idempotent producer's id and epoch.
func (tc *testCluster) initProducerID(id int32) (int64, int16) {
	tc.t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = 4
	resp, err := request(tc.addr(id), req)
	if err != nil {
		tc.t.Fatal(err)
	}
	r := resp.(*kmsg.InitProducerIDResponse)
	if r.ErrorCode != 0 || r.ProducerID < 0 || r.ProducerEpoch != 0 {
		tc.t.Fatalf("InitProducerId: id %d epoch %d, %v", r.ProducerID, r.ProducerEpoch, kerr.ErrorForCode(r.ErrorCode))
	}
	return r.ProducerID, r.ProducerEpoch
}

// writeProduce writes a framed acks=-1 produce request on c and returns
// the base offset of its answer.
func writeProduce(c net.Conn, frame []byte) (int64, error) {
	_ = c.SetDeadline(time.Now().Add(rawTimeout))
	if _, err := c.Write(frame); err != nil {
		return -1, err
	}
	_, resp, err := readResponse(c, produceRequest("", 0, -1, nil))
	if err != nil {
		return -1, err
	}
	return producedAt(resp)
}

// checkProducerIDs checks that every batch in a topic's partitions came
// from an idempotent producer: a producer id handed out by one of the
// brokers (its low ten bits are the broker's id) and epoch 0.
func (tc *testCluster) checkProducerIDs(topic string, partitions int32) {
	tc.t.Helper()
	batches := 0
	for p := range partitions {
		leader := tc.mustState(topic, p).leader
		hs, err := batchHeaders(tc.addr(leader), topic, p)
		if err != nil {
			tc.t.Fatal(err)
		}
		for _, h := range hs {
			batches++
			if h.ProducerID < 0 || h.ProducerID%1024 < 1 || h.ProducerID%1024 > int64(tc.opts.nodes) || h.ProducerEpoch != 0 || h.FirstSequence < 0 {
				tc.t.Errorf("%s-%d batch at %d: producer id %d epoch %d sequence %d, want an id from a broker, epoch 0",
					topic, p, h.FirstOffset, h.ProducerID, h.ProducerEpoch, h.FirstSequence)
			}
		}
	}
	if batches == 0 {
		tc.t.Errorf("%s: no batches", topic)
	}
}

// batchHeaders reads the batches of a partition from broker addr, as the
// debug consumer, and returns their headers (records not decoded, so
// compressed batches are fine).
func batchHeaders(addr, topic string, partition int32) ([]kmsg.RecordBatch, error) {
	w, err := dialWire(addr)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	var out []kmsg.RecordBatch
	for offset := int64(0); ; {
		rp, err := fetchOnce(w, topic, partition, -2, offset)
		if err != nil {
			return nil, err
		}
		data := rp.RecordBatches
		n := len(out)
		for len(data) >= 61 {
			size := int(int32(binary.BigEndian.Uint32(data[8:]))) + 12
			if size < 61 || size > len(data) {
				break // a batch cut at max bytes
			}
			var b kmsg.RecordBatch
			if err := b.ReadFrom(data[:size]); err != nil {
				return nil, fmt.Errorf("batch at offset %d: %w", offset, err)
			}
			out = append(out, b)
			offset = b.FirstOffset + int64(b.LastOffsetDelta) + 1
			data = data[size:]
		}
		if len(out) == n {
			return out, nil
		}
	}
}
