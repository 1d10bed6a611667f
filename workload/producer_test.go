package workload

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/history"
)

// answer is a produce response with code and, if 0, base offset.
func answer(code int16, offset int64) *kmsg.ProduceResponse {
	resp := kmsg.NewPtrProduceResponse()
	t := kmsg.NewProduceResponseTopic()
	p := kmsg.NewProduceResponseTopicPartition()
	p.ErrorCode, p.BaseOffset = code, offset
	t.Partitions = append(t.Partitions, p)
	resp.Topics = append(resp.Topics, t)
	return resp
}

func idAnswer(id int64) *kmsg.InitProducerIDResponse {
	resp := kmsg.NewPtrInitProducerIDResponse()
	resp.ProducerID = id
	return resp
}

// sent is what the batch of req carries: producer id, epoch and sequence.
func sent(t *testing.T, req *kmsg.ProduceRequest) (int64, int16, int32) {
	t.Helper()
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(req.Topics[0].Partitions[0].Records); err != nil {
		t.Fatal(err)
	}
	return rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence
}

// attempt sends d once and answers it with resp or err.
func attempt(t *testing.T, d *Delivery, resp *kmsg.ProduceResponse, err error) (again bool) {
	t.Helper()
	d.Request(time.Second, 1)
	var r kmsg.Response
	if resp != nil {
		r = resp
	}
	o, _ := SendOutcome(r, err, d.Acks())
	return d.Attempted(o, err)
}

var k0 = history.Key{Topic: "t", Partition: 0}

func TestProducerWithoutRetriesTriesOnce(t *testing.T) {
	p := NewProducer(0, false)
	d := p.Send(k0, "0-1", -1)
	if attempt(t, d, answer(kerr.NotLeaderForPartition.Code, -1), nil) {
		t.Fatal("a producer without retries tried again")
	}
	o := d.Outcome()
	if o.Type != history.Info || o.Error != "NOT_LEADER_FOR_PARTITION" || len(o.Retries) != 0 {
		t.Fatalf("outcome %+v, want info NOT_LEADER_FOR_PARTITION with no retries", o)
	}
	if id, _, seq := sent(t, d.Request(time.Second, 1)); id != -1 || seq != -1 {
		t.Fatalf("a producer without idempotence sent id %d seq %d, want -1 -1", id, seq)
	}
}

func TestProducerRetriesUntilAcknowledged(t *testing.T) {
	p := NewProducer(3, false)
	d := p.Send(k0, "0-1", -1)
	if !attempt(t, d, nil, errors.New("read: i/o timeout")) {
		t.Fatal("no retry after a timeout")
	}
	if !attempt(t, d, answer(kerr.NotEnoughReplicas.Code, -1), nil) {
		t.Fatal("no retry after NOT_ENOUGH_REPLICAS")
	}
	if attempt(t, d, answer(0, 7), nil) {
		t.Fatal("a retry after an acknowledgement")
	}
	o := d.Outcome()
	if o.Type != history.OK || o.Offset != 7 || !slices.Equal(o.Retries, []string{"read: i/o timeout", "NOT_ENOUGH_REPLICAS"}) {
		t.Fatalf("outcome %+v, want ok at 7 after two retries", o)
	}
}

func TestProducerGivesUp(t *testing.T) {
	// Refused every time: nothing written, so fail.
	p := NewProducer(2, false)
	d := p.Send(k0, "0-1", -1)
	n := 1
	for attempt(t, d, answer(kerr.NotEnoughReplicas.Code, -1), nil) {
		n++
	}
	if o := d.Outcome(); n != 3 || o.Type != history.Fail || len(o.Retries) != 2 {
		t.Fatalf("%d attempts, outcome %+v; want 3 attempts ending in fail", n, o)
	}
	// Once an attempt may have been written, the send cannot fail.
	d = p.Send(k0, "0-2", -1)
	attempt(t, d, nil, errors.New("read: i/o timeout"))
	for attempt(t, d, answer(kerr.NotEnoughReplicas.Code, -1), nil) {
	}
	if o := d.Outcome(); o.Type != history.Info || o.Error != "NOT_ENOUGH_REPLICAS" {
		t.Fatalf("outcome %+v, want info after a timed-out attempt", o)
	}
	// An error that is not retriable ends the send at once.
	d = p.Send(k0, "0-3", -1)
	if attempt(t, d, answer(kerr.MessageTooLarge.Code, -1), nil) {
		t.Fatal("retried MESSAGE_TOO_LARGE")
	}
}

func TestIdempotentProducerKeepsSequenceAcrossRetries(t *testing.T) {
	p := NewProducer(5, true)
	if !p.NeedsID() {
		t.Fatal("an idempotent producer without an id does not ask for one")
	}
	if err := p.SetID(idAnswer(4097), nil); err != nil {
		t.Fatal(err)
	}
	d := p.Send(k0, "0-1", -1)
	attempt(t, d, answer(0, 0), nil)
	d = p.Send(k0, "0-2", -1)
	attempt(t, d, nil, errors.New("read: i/o timeout"))
	if id, epoch, seq := sent(t, d.Request(time.Second, 1)); id != 4097 || epoch != 0 || seq != 1 {
		t.Fatalf("retry sent id %d epoch %d seq %d, want 4097 0 1", id, epoch, seq)
	}
	attempt(t, d, answer(0, 1), nil)
	if _, _, seq := sent(t, p.Send(k0, "0-3", -1).Request(time.Second, 1)); seq != 2 {
		t.Fatalf("next send has seq %d, want 2", seq)
	}
	if _, _, seq := sent(t, p.Send(history.Key{Topic: "t", Partition: 1}, "0-4", -1).Request(time.Second, 1)); seq != 0 {
		t.Fatalf("another partition's first send has seq %d, want 0", seq)
	}
}

func TestIdempotentProducerStartsAgainWhenTheBrokerLostIt(t *testing.T) {
	p := NewProducer(5, true)
	_ = p.SetID(idAnswer(1), nil)
	attempt(t, p.Send(k0, "0-1", 1), answer(0, 0), nil)
	// The acks=1 write was truncated: the new leader does not know seq 0.
	d := p.Send(k0, "0-2", 1)
	if !attempt(t, d, answer(kerr.OutOfOrderSequenceNumber.Code, -1), nil) {
		t.Fatal("no retry after OUT_OF_ORDER_SEQUENCE_NUMBER on a send that wrote nothing")
	}
	if !p.NeedsID() {
		t.Fatal("the session kept the producer id the broker lost track of")
	}
	_ = p.SetID(idAnswer(2), nil)
	if id, _, seq := sent(t, d.Request(time.Second, 1)); id != 2 || seq != 0 {
		t.Fatalf("retry under the new session sent id %d seq %d, want 2 0", id, seq)
	}
	// A send that may already be written is never sent under a new id.
	d = p.Send(k0, "0-3", -1)
	attempt(t, d, nil, errors.New("read: i/o timeout"))
	if attempt(t, d, answer(kerr.OutOfOrderSequenceNumber.Code, -1), nil) {
		t.Fatal("a send that may be written was sent again under a new producer id")
	}
	if o := d.Outcome(); o.Type != history.Info {
		t.Fatalf("outcome %+v, want info", o)
	}
}
