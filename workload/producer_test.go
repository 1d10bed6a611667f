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
	d.Attempted(Outcome{Type: history.OK, Offset: 1}, nil)
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

// send makes d's next attempt and says what it carries.
func send(t *testing.T, d *Delivery) (int64, int32) {
	t.Helper()
	if !d.Ready() {
		t.Fatalf("send of %s is not ready", d.value)
	}
	id, _, seq := sent(t, d.Request(time.Second, 1))
	return id, seq
}

// answerWith answers d's attempt in flight with resp or err.
func answerWith(d *Delivery, resp *kmsg.ProduceResponse, err error) (again bool) {
	var r kmsg.Response
	if resp != nil {
		r = resp
	}
	o, _ := SendOutcome(r, err, d.Acks())
	return d.Attempted(o, err)
}

func TestPipelinedSendsTakeSequencesInOrder(t *testing.T) {
	p := NewProducer(5, true)
	_ = p.SetID(idAnswer(7), nil)
	a, b, c := p.Send(k0, "0-1", -1), p.Send(k0, "1-1", -1), p.Send(k0, "2-1", -1)
	if b.Ready() || c.Ready() {
		t.Fatal("a later send is ready before the earlier ones are on the wire")
	}
	for i, d := range []*Delivery{a, b, c} {
		if id, seq := send(t, d); id != 7 || seq != int32(i) {
			t.Fatalf("send %d carries id %d seq %d, want 7 %d", i, id, seq, i)
		}
	}
	// Another partition is not held up by k0's.
	if d := p.Send(history.Key{Topic: "t", Partition: 1}, "3-1", -1); !d.Ready() {
		t.Fatal("a send to another partition waits")
	}
	// a is refused (definitely not written): b and c meet a broker that
	// waits for seq 0, and follow it unchanged, without using a retry.
	if !answerWith(a, answer(kerr.NotEnoughReplicas.Code, -1), nil) {
		t.Fatal("no retry after NOT_ENOUGH_REPLICAS")
	}
	if !answerWith(b, answer(kerr.OutOfOrderSequenceNumber.Code, -1), nil) || !answerWith(c, answer(kerr.OutOfOrderSequenceNumber.Code, -1), nil) {
		t.Fatal("a send that waits for an earlier batch was not sent again")
	}
	if c.Ready() {
		t.Fatal("c's retry is ready before a's and b's")
	}
	for i, d := range []*Delivery{a, b, c} {
		if id, seq := send(t, d); id != 7 || seq != int32(i) {
			t.Fatalf("retry %d carries id %d seq %d, want 7 %d", i, id, seq, i)
		}
		answerWith(d, answer(0, int64(10+i)), nil)
	}
	if o := c.Outcome(); o.Type != history.OK || !slices.Equal(o.Retries, []string{"OUT_OF_ORDER_SEQUENCE_NUMBER"}) {
		t.Fatalf("c's outcome %+v, want ok after one wait", o)
	}
	if p.NeedsID() {
		t.Fatal("the session dropped its id though every batch was written")
	}
	if _, seq := send(t, p.Send(k0, "0-2", -1)); seq != 3 {
		t.Fatalf("the next batch has seq %d, want 3", seq)
	}
}

// twoInFlight is a session with producer id 7 and two batches to k0 on
// the wire, a (seq 0) and b (seq 1).
func twoInFlight(t *testing.T, retries int) (p *Producer, a, b *Delivery) {
	t.Helper()
	p = NewProducer(retries, true)
	_ = p.SetID(idAnswer(7), nil)
	a, b = p.Send(k0, "0-1", -1), p.Send(k0, "1-1", -1)
	send(t, a)
	send(t, b)
	return p, a, b
}

func TestPipelinedGapTakesANewID(t *testing.T) {
	p, a, b := twoInFlight(t, 1)
	// a is refused for good: seq 0 is a gap b cannot pass.
	if answerWith(a, answer(kerr.MessageTooLarge.Code, -1), nil) {
		t.Fatal("retried MESSAGE_TOO_LARGE")
	}
	if o := a.Outcome(); o.Type != history.Fail {
		t.Fatalf("a's outcome %+v, want fail", o)
	}
	if !p.NeedsID() {
		t.Fatal("the session kept an id with a gap in its sequence")
	}
	// A new send waits for b, the last batch under the old id.
	n := p.Send(k0, "0-2", -1)
	if n.Ready() {
		t.Fatal("a send under a new id is ready while an old batch is unresolved")
	}
	// b meets the gap: the broker lost nothing, but nothing earlier is
	// unresolved; b is the last batch of its id, never written: it goes
	// again under a new id.
	if !answerWith(b, answer(kerr.OutOfOrderSequenceNumber.Code, -1), nil) {
		t.Fatal("b, never written, was not re-sequenced")
	}
	if !b.Ready() || !b.NeedsID() || !p.AskID() || p.AskID() {
		t.Fatal("b does not ask for the new id, or two sends ask")
	}
	_ = p.SetID(idAnswer(8), nil)
	if id, seq := send(t, b); id != 8 || seq != 0 {
		t.Fatalf("b carries id %d seq %d, want 8 0", id, seq)
	}
	if id, seq := send(t, n); id != 8 || seq != 1 {
		t.Fatalf("the new send carries id %d seq %d, want 8 1", id, seq)
	}
}

func TestPipelinedBatchIsNotMovedPastALaterOne(t *testing.T) {
	p, a, b := twoInFlight(t, 5)
	// A leader that knew nothing of the producer took b first; a, the
	// oldest, meets OUT_OF_ORDER_SEQUENCE_NUMBER. Sent again under a new
	// id it would land after b: it ends unwritten instead.
	answerWith(b, answer(0, 4), nil)
	if answerWith(a, answer(kerr.OutOfOrderSequenceNumber.Code, -1), nil) {
		t.Fatal("a batch was re-sequenced past a later one")
	}
	if o := a.Outcome(); o.Type != history.Fail {
		t.Fatalf("a's outcome %+v, want fail", o)
	}
	if !p.NeedsID() {
		t.Fatal("the session kept an id the broker lost track of")
	}
}

func TestPipelinedInfoTakesANewID(t *testing.T) {
	p, a, b := twoInFlight(t, 0)
	answerWith(a, nil, errors.New("read: i/o timeout"))
	if o := a.Outcome(); o.Type != history.Info || !p.NeedsID() {
		t.Fatalf("outcome %+v, needs id %v; want info and a new id", o, p.NeedsID())
	}
	// b may follow a (if a was written) or not: unchanged, under its id.
	answerWith(b, answer(0, 5), nil)
	if o := b.Outcome(); o.Type != history.OK {
		t.Fatalf("b's outcome %+v, want ok", o)
	}
}

func TestPipelinedFailAtTheTailGivesItsSequenceBack(t *testing.T) {
	p, a, b := twoInFlight(t, 0)
	answerWith(b, answer(kerr.NotEnoughReplicas.Code, -1), nil)
	b.Outcome()
	answerWith(a, answer(0, 3), nil)
	if p.NeedsID() {
		t.Fatal("a refused last batch made the session take a new id")
	}
	if _, seq := send(t, p.Send(k0, "1-2", -1)); seq != 1 {
		t.Fatalf("the next batch has seq %d, want 1 (b's, given back)", seq)
	}
}
