package core

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/broker/batch"
	"github.com/chaos-isr/chaos/broker/storage"
)

// idem is one batch of an idempotent producer: its id, epoch, first
// sequence and values (one record each).
type idem struct {
	pid    int64
	epoch  int16
	seq    int32
	values string // space-separated
}

func (b idem) raw() []byte {
	var vals [][]byte
	for _, v := range strings.Fields(b.values) {
		vals = append(vals, []byte(v))
	}
	return batch.BuildIdempotent(b.pid, b.epoch, b.seq, 0, vals...)
}

func (b idem) String() string {
	return fmt.Sprintf("pid %d epoch %d seq %d [%s]", b.pid, b.epoch, b.seq, b.values)
}

// produceIdem sends batch b with acks and returns what the client saw at
// once ("" if the answer waits).
func (h *harness) produceIdem(acks int16, b idem) string {
	h.t.Helper()
	return h.outcome(h.request(produceRaw(acks, 30000, b.raw())))
}

// producerState is a replica's producer state, one line per producer:
// "pid epoch E: f-l@o-p ..." with each cached batch's sequences and
// offsets.
func producerState(b *Broker) string {
	var lines []string
	for _, p := range b.Producers(testTopic, 0) {
		line := fmt.Sprintf("%d epoch %d:", p.ProducerID, p.Epoch)
		for _, x := range p.Batches {
			line += fmt.Sprintf(" %d-%d@%d-%d", x.FirstSequence, x.LastSequence, x.FirstOffset, x.LastOffset)
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

func initProducerID(h *harness, version int16, txnID *string) *kmsg.InitProducerIDResponse {
	h.t.Helper()
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version = version
	req.TransactionalID = txnID
	req.TransactionTimeoutMillis = 60000
	if version >= 3 {
		req.ProducerID, req.ProducerEpoch = 5*producerIDBrokers+1, 3 // a producer asking to keep its id
	}
	return h.call(req).(*kmsg.InitProducerIDResponse)
}

// TestInitProducerID: every answer is a new id with epoch 0, even to a
// producer naming its current id (v3+); ids end in the broker's id, so two
// brokers never hand out the same one; a broker that restarts later hands
// out ids above those it gave before, even many in one millisecond; a
// transactional id is refused.
func TestInitProducerID(t *testing.T) {
	logs := &storage.MemoryFactory{}
	seen := map[int64]bool{}
	var last int64
	take := func(h *harness, version int16) int64 {
		t.Helper()
		r := initProducerID(h, version, nil)
		if r.ErrorCode != 0 || r.ProducerEpoch != 0 || r.ProducerID <= 0 {
			t.Fatalf("v%d: id %d epoch %d %s, want a positive id, epoch 0", version, r.ProducerID, r.ProducerEpoch, errName(r.ErrorCode))
		}
		if want := int64(h.b.cfg.BrokerID); r.ProducerID%producerIDBrokers != want {
			t.Fatalf("id %d does not end in broker id %d", r.ProducerID, want)
		}
		if seen[r.ProducerID] {
			t.Fatalf("id %d handed out twice", r.ProducerID)
		}
		seen[r.ProducerID] = true
		return r.ProducerID
	}
	h1 := newHarness(t, testConfig(1), logs)
	h2 := newHarness(t, testConfig(2), nil)
	for v := int16(0); v <= 4; v++ {
		take(h1, v)
		take(h2, v)
	}
	for range 100 { // far more than producerIDsPerMs in one millisecond
		last = max(last, take(h1, 4))
	}
	// A restart a millisecond later: its counter restarts from the clock.
	h1 = newHarness(t, testConfig(1), logs)
	h1.tick(h1.now + 10)
	if id := take(h1, 4); id <= last {
		t.Fatalf("after a restart 10 ms later: id %d, not above the %d given before", id, last)
	}
	// A transactional id is its coordinator's to answer: a broker that
	// is not it (none is yet) gives no id.
	r := initProducerID(h1, 4, kmsg.StringPtr("txn"))
	if (r.ErrorCode != kerr.CoordinatorNotAvailable.Code && r.ErrorCode != kerr.NotCoordinator.Code) || r.ProducerID != -1 {
		t.Fatalf("transactional id: id %d %s, want no id from a broker that is not its coordinator", r.ProducerID, errName(r.ErrorCode))
	}
}

// TestBrokerIDBound: producer ids hold the broker id in their low bits, so
// a broker id that does not fit there is refused.
func TestBrokerIDBound(t *testing.T) {
	cfg := testConfig(producerIDBrokers - 1)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg.BrokerID = producerIDBrokers
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "below 1024") {
		t.Fatalf("broker id %d: %v", cfg.BrokerID, err)
	}
}

// TestIdempotentProduce runs scripts of batches against a leader alone in
// its ISR (acks=1): each step's answer, then the log and the producer state
// the leader keeps.
func TestIdempotentProduce(t *testing.T) {
	const p, q = 1025, 2049
	type step struct {
		b    idem
		want string // outcome: ok@offset or an error name
	}
	ok := func(off int) string { return fmt.Sprintf("ok@%d", off) }
	oos := errName(kerr.OutOfOrderSequenceNumber.Code)
	for _, tc := range []struct {
		name      string
		steps     []step
		wantLog   string
		wantState string
	}{
		{
			name: "a retry of any of the last five is answered with its offset",
			steps: []step{
				{idem{p, 0, 0, "a"}, ok(0)}, {idem{p, 0, 1, "b"}, ok(1)}, {idem{p, 0, 2, "c"}, ok(2)},
				{idem{p, 0, 3, "d"}, ok(3)}, {idem{p, 0, 4, "e"}, ok(4)}, {idem{p, 0, 5, "f"}, ok(5)},
				{idem{p, 0, 1, "b"}, ok(1)}, {idem{p, 0, 5, "f"}, ok(5)},
				// The sixth batch back is forgotten: not a retry, out of order.
				{idem{p, 0, 0, "a"}, oos},
				{idem{p, 0, 6, "g"}, ok(6)},
			},
			wantLog:   "a b c d e f g",
			wantState: "1025 epoch 0: 2-2@2-2 3-3@3-3 4-4@4-4 5-5@5-5 6-6@6-6",
		},
		{
			name: "multi-record batches: a retry matches first and last sequence",
			steps: []step{
				{idem{p, 0, 0, "a b c"}, ok(0)}, {idem{p, 0, 3, "d e"}, ok(3)},
				{idem{p, 0, 0, "a b c"}, ok(0)},
				{idem{p, 0, 0, "a b"}, oos}, // overlaps, but is no batch sent
				{idem{p, 0, 4, "e"}, oos},
				{idem{p, 0, 6, "f"}, oos}, // a gap
				{idem{p, 0, 5, "f"}, ok(5)},
			},
			wantLog:   "a b c d e f",
			wantState: "1025 epoch 0: 0-2@0-2 3-4@3-4 5-5@5-5",
		},
		{
			name: "epochs: an older one is fenced, a newer one starts at 0",
			steps: []step{
				{idem{p, 1, 0, "a"}, ok(0)}, {idem{p, 1, 1, "b"}, ok(1)},
				{idem{p, 0, 2, "x"}, errName(kerr.InvalidProducerEpoch.Code)},
				{idem{p, 2, 2, "x"}, oos},
				{idem{p, 2, 0, "c"}, ok(2)},
				// The old epoch's batches are forgotten: its retry is fenced.
				{idem{p, 1, 1, "b"}, errName(kerr.InvalidProducerEpoch.Code)},
				{idem{p, 2, 0, "c"}, ok(2)},
			},
			wantLog:   "a b c",
			wantState: "1025 epoch 2: 0-0@2-2",
		},
		{
			name: "an unknown producer may start anywhere; sequences wrap",
			steps: []step{
				{idem{p, 3, math.MaxInt32 - 1, "a b"}, ok(0)},
				{idem{p, 3, 0, "c"}, ok(2)},
				{idem{q, 0, 17, "d"}, ok(3)},
				{idem{p, 3, 2, "x"}, oos},
				{idem{p, 3, 1, "e"}, ok(4)},
			},
			wantLog:   "a b c d e",
			wantState: "1025 epoch 3: 2147483646-2147483647@0-1 0-0@2-2 1-1@4-4\n2049 epoch 0: 17-17@3-3",
		},
		{
			name: "non-idempotent batches are not tracked",
			steps: []step{
				{idem{-1, -1, -1, "a"}, ok(0)}, {idem{p, 0, 0, "b"}, ok(1)},
				{idem{-1, -1, -1, "a"}, ok(2)}, {idem{p, 0, 1, "c"}, ok(3)},
			},
			wantLog:   "a b a c",
			wantState: "1025 epoch 0: 0-0@1-1 1-1@3-3",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newLeader(t, 1, 1)
			for i, s := range tc.steps {
				if got := h.produceIdem(1, s.b); got != s.want {
					t.Fatalf("step %d, %s: %s, want %s", i, s.b, got, s.want)
				}
			}
			if got := strings.Join(h.values(), " "); got != tc.wantLog {
				t.Errorf("log %q, want %q", got, tc.wantLog)
			}
			if got := producerState(h.b); got != tc.wantState {
				t.Errorf("producer state:\n%s\nwant:\n%s", got, tc.wantState)
			}
		})
	}
}

// TestProduceRefusesMarkers: a control batch is refused as Kafka refuses
// one from a client (only a coordinator's WriteTxnMarkers writes one), and
// an idempotent producer's batch without a sequence number as Kafka
// refuses it; neither is written.
func TestProduceRefusesMarkers(t *testing.T) {
	h := newLeader(t, 1, 1)
	control := idem{1025, 0, 0, "a"}.raw()
	control[22] |= 0x30 // a transaction marker: transactional and control
	for _, tc := range []struct {
		raw  []byte
		want *kerr.Error
	}{{control, kerr.InvalidRecord}, {idem{1025, 0, -1, "a"}.raw(), kerr.InvalidRecord}} {
		restampCRC(tc.raw)
		if got := h.outcome(h.request(produceRaw(1, 1000, tc.raw))); got != errName(tc.want.Code) {
			t.Errorf("attributes %#x: %s, want %s", tc.raw[22], got, tc.want.Message)
		}
	}
	if got := h.values(); len(got) != 0 {
		t.Fatalf("written: %v", got)
	}
}

// restampCRC recomputes the CRC of a one-batch payload after a test
// changed a byte it covers (those from the attributes on).
func restampCRC(raw []byte) {
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
}

// TestProduceAllOrNothing: a partition's batches are judged together: one
// out of order refuses the request, and the batch before it is neither
// written nor remembered.
func TestProduceAllOrNothing(t *testing.T) {
	h := newLeader(t, 1, 1)
	payload := slices.Concat(idem{1025, 0, 0, "a"}.raw(), idem{1025, 0, 2, "c"}.raw())
	if got, want := h.outcome(h.request(produceRaw(1, 1000, payload))), errName(kerr.OutOfOrderSequenceNumber.Code); got != want {
		t.Fatalf("a gap in the second batch: %s, want %s", got, want)
	}
	if got := h.values(); len(got) != 0 || producerState(h.b) != "" {
		t.Fatalf("after a refusal: log %v, state %q", got, producerState(h.b))
	}
	payload = slices.Concat(idem{1025, 0, 0, "a"}.raw(), idem{1025, 0, 1, "b"}.raw())
	if got := h.outcome(h.request(produceRaw(1, 1000, payload))); got != "ok@0" {
		t.Fatalf("two batches in order: %s", got)
	}
	if got, want := producerState(h.b), "1025 epoch 0: 0-0@0-0 1-1@1-1"; got != want {
		t.Fatalf("state %q, want %q", got, want)
	}
}

// TestRetryWaitsForHW: under acks=-1 a retry of a batch not yet committed
// is answered with its offset once the HW covers it, as the first attempt
// is, and five produces in flight on one connection are answered in order.
func TestRetryWaitsForHW(t *testing.T) {
	h := newLeader(t, 1, 1, 2)
	first := h.request(produceRaw(-1, 30000, idem{1025, 0, 0, "a b"}.raw()))
	retry := h.request(produceRaw(-1, 30000, idem{1025, 0, 0, "a b"}.raw()))
	if a, b := h.outcome(first), h.outcome(retry); a != "" || b != "" {
		t.Fatalf("answered before the follower fetched: %q, %q", a, b)
	}
	h.follow(2, 1)
	if got := h.outcome(retry); got != "" {
		t.Fatalf("the retry answered at hw 1, before the batch (0..1) is committed: %q", got)
	}
	h.follow(2, 2)
	if a, b := h.outcome(first), h.outcome(retry); a != "ok@0" || b != "ok@0" {
		t.Fatalf("at hw 2: %q and %q, want ok@0 for both", a, b)
	}

	// Five in flight on one connection, as an idempotent producer may
	// have them: each appended in turn, all answered in order.
	h.conn++
	conn := h.conn
	for i := range 5 {
		h.b.Request(h.now, conn, int32(100+i), produceRaw(-1, 30000, idem{1025, 0, int32(2 + i), fmt.Sprint(i)}.raw()))
	}
	h.drain()
	if info := h.info(); info.LEO != 7 {
		t.Fatalf("leo %d after five produces in flight, want 7", info.LEO)
	}
	h.follow(2, 7)
	var got []string
	for _, e := range h.take() {
		if r, ok := e.(Reply); ok && r.Conn == conn {
			got = append(got, fmt.Sprintf("%d:ok@%d", r.Corr, produced(t, r.Resp).BaseOffset))
		}
	}
	if want := []string{"100:ok@2", "101:ok@3", "102:ok@4", "103:ok@5", "104:ok@6"}; !slices.Equal(got, want) {
		t.Fatalf("answers %v, want %v", got, want)
	}
}

// seedBatches appends raw batches to t-0 of logs, stamped at the log end
// in leader epoch epoch, as an earlier leader left them.
func seedBatches(t *testing.T, logs *storage.MemoryFactory, epoch int32, batches ...idem) {
	t.Helper()
	m, err := logs.OpenMemory(testTopic, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range batches {
		raw := b.raw()
		batch.Stamp(raw, m.LogEndOffset(), epoch)
		if err := m.Append(raw); err != nil {
			t.Fatal(err)
		}
	}
}

// TestProducerStateAtRestart: a broker that opens a log an earlier run left
// reads its producer state back from it, and dedups a retry of a batch the
// earlier run wrote.
func TestProducerStateAtRestart(t *testing.T) {
	logs := &storage.MemoryFactory{}
	h := newHarness(t, testConfig(1), logs)
	h.partition(1, 0, 0, 1)
	for i, v := range []string{"a", "b", "c", "d", "e", "f"} {
		h.produceIdem(1, idem{1025, 0, int32(i), v})
	}
	h.produceIdem(1, idem{-1, -1, -1, "x"})
	h.produceIdem(1, idem{2049, 4, 9, "y z"})
	before := producerState(h.b)
	if err := h.b.Close(); err != nil {
		t.Fatal(err)
	}

	h = newHarness(t, testConfig(1), logs)
	h.partition(1, 1, 0, 1)
	if got := producerState(h.b); got != before {
		t.Fatalf("after a restart:\n%s\nbefore:\n%s", got, before)
	}
	if got := h.produceIdem(1, idem{1025, 0, 4, "e"}); got != "ok@4" {
		t.Fatalf("a retry after the restart: %s, want ok@4", got)
	}
	if got := h.produceIdem(1, idem{2049, 4, 11, "w"}); got != "ok@9" {
		t.Fatalf("the next batch after the restart: %s, want ok@9", got)
	}
}

// TestFollowerProducerState: a follower learns the producer state from the
// batches it fetches, and once it leads it answers a retry of a batch the
// old leader wrote with that batch's offset instead of writing it again.
func TestFollowerProducerState(t *testing.T) {
	l := newLeader(t, 1, 1, 2)
	f := newHarness(t, testConfig(2), nil)
	f.partition(1, 0, 0, 1, 2)
	f.tick(f.now + 1)
	l.produceIdem(1, idem{1025, 0, 0, "a b"})
	l.produceIdem(1, idem{-1, -1, -1, "x"})
	l.produceIdem(1, idem{1025, 0, 2, "c"})
	pump(t, l, f)
	if got, want := producerState(f.b), producerState(l.b); got != want || want == "" {
		t.Fatalf("follower state:\n%s\nleader state:\n%s", got, want)
	}

	// Broker 2 leads epoch 1; the producer retries the batch whose answer
	// it never got, then goes on.
	f.partition(2, 1, 1, 2)
	if got := f.produceIdem(1, idem{1025, 0, 2, "c"}); got != "ok@3" {
		t.Fatalf("the retry at the new leader: %s, want ok@3", got)
	}
	if got := f.produceIdem(1, idem{1025, 0, 3, "d"}); got != "ok@4" {
		t.Fatalf("the next batch at the new leader: %s, want ok@4", got)
	}
	if got, want := strings.Join(f.values(), " "), "a b x c d"; got != want {
		t.Fatalf("new leader's log %q, want %q", got, want)
	}
}

// TestProducerStateAfterTruncation: a follower that truncates a suffix the
// leader does not have forgets the producer batches in it, and what it
// knew before them comes back from its log: the leader's retry of the
// truncated sequence is appended, not taken for a duplicate.
func TestProducerStateAfterTruncation(t *testing.T) {
	leaderLogs := &storage.MemoryFactory{}
	seedBatches(t, leaderLogs, 0, idem{1025, 0, 0, "a"}, idem{1025, 0, 1, "b"})
	followerLogs := &storage.MemoryFactory{}
	// The follower has two batches more of epoch 0, which leader 1 of
	// epoch 1 never got, and in an epoch the producer later bumped.
	seedBatches(t, followerLogs, 0, idem{1025, 0, 0, "a"}, idem{1025, 0, 1, "b"}, idem{1025, 1, 0, "x"}, idem{1025, 1, 1, "y"})

	l := newHarness(t, testConfig(1), leaderLogs)
	l.partition(1, 1, 0, 1)
	f := newHarness(t, testConfig(2), followerLogs)
	f.partition(1, 1, 0, 1)
	if got, want := producerState(f.b), "1025 epoch 1: 0-0@2-2 1-1@3-3"; got != want {
		t.Fatalf("follower state at open %q, want %q", got, want)
	}
	pump(t, l, f)
	if got, want := strings.Join(f.values(), " "), "a b"; got != want {
		t.Fatalf("follower log %q, want %q", got, want)
	}
	if got, want := producerState(f.b), "1025 epoch 0: 0-0@0-0 1-1@1-1"; got != want {
		t.Fatalf("follower state after truncation %q, want %q", got, want)
	}

	// It leads next: the epoch-1 batches it dropped are new to it.
	f.partition(2, 2, 1, 2)
	if got := f.produceIdem(1, idem{1025, 1, 0, "x"}); got != "ok@2" {
		t.Fatalf("epoch 1 sequence 0 after the truncation: %s, want ok@2", got)
	}
}
