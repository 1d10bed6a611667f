package workload

import (
	"encoding/binary"
	"hash/crc32"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/broker/batch"
	"github.com/chaos-isr/chaos/history"
)

func values(vs ...string) [][]byte {
	out := make([][]byte, len(vs))
	for i, v := range vs {
		out[i] = []byte(v)
	}
	return out
}

// stamp sets a batch's base offset as a broker does; the CRC does not
// cover it.
func stamp(b []byte, base int64) []byte {
	binary.BigEndian.PutUint64(b, uint64(base))
	return b
}

func TestBatchRoundTrip(t *testing.T) {
	var log []byte
	log = append(log, stamp(encodeBatch(1, values("0-1", "", "a longer value, over 63 bytes so that its length varint takes two")...), 40)...)
	log = append(log, stamp(encodeBatch(2, values("1-1")...), 43)...)
	got, err := decodeBatches(log)
	if err != nil {
		t.Fatal(err)
	}
	want := []history.Record{{Offset: 40, Value: "0-1"}, {Offset: 41, Value: ""},
		{Offset: 42, Value: "a longer value, over 63 bytes so that its length varint takes two"}, {Offset: 43, Value: "1-1"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded %+v, want %+v", got, want)
	}
}

// TestBatchAgreesWithTheBroker: the broker's own codec, written apart,
// accepts what encodeBatch writes and reads the same values back, and
// decodeBatches reads what the broker's builder writes. A misreading of
// the format that both shared would pass, but not one only one side has.
func TestBatchAgreesWithTheBroker(t *testing.T) {
	vs := values("x", "yy", "")
	ours := encodeBatch(1700000000000, vs...)
	if _, err := batch.Validate(ours); err != nil {
		t.Fatalf("the broker refuses our batch: %v", err)
	}
	offs, got, err := batch.Values(ours)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(offs, []int64{0, 1, 2}) || len(got) != 3 || string(got[1]) != "yy" {
		t.Fatalf("the broker reads our batch as %v %q", offs, got)
	}
	recs, err := decodeBatches(batch.Build(1700000000000, vs...))
	if err != nil {
		t.Fatalf("the broker's batch: %v", err)
	}
	if want := []history.Record{{Offset: 0, Value: "x"}, {Offset: 1, Value: "yy"}, {Offset: 2, Value: ""}}; !reflect.DeepEqual(recs, want) {
		t.Fatalf("the broker's batch decodes as %+v", recs)
	}
}

func TestDecodeDetectsCorruptCRC(t *testing.T) {
	for name, corrupt := range map[string]func(b []byte){
		"a value byte":  func(b []byte) { b[len(b)-2] ^= 0x01 },
		"the timestamp": func(b []byte) { b[30] ^= 0x80 },
		"the CRC":       func(b []byte) { b[batchCRCAt] ^= 0xff },
	} {
		good := encodeBatch(1, values("intact")...)
		bad := encodeBatch(1, values("0-1", "0-2")...)
		corrupt(bad)
		_, err := decodeBatches(append(good, bad...))
		if err == nil || !strings.Contains(err.Error(), "CRC-32C") {
			t.Errorf("%s flipped: %v, want a CRC mismatch", name, err)
		}
	}
}

// TestDecodeDropsTornTail: a fetch cut at its byte limit ends inside a
// batch; the whole batches before it are the answer.
func TestDecodeDropsTornTail(t *testing.T) {
	whole := encodeBatch(1, values("a")...)
	next := stamp(encodeBatch(1, values("b", "c")...), 1)
	for cut := 1; cut < len(next); cut++ {
		got, err := decodeBatches(append(append([]byte{}, whole...), next[:cut]...))
		if err != nil || len(got) != 1 || got[0].Value != "a" {
			t.Fatalf("cut at %d of %d: %+v, %v", cut, len(next), got, err)
		}
	}
}

func TestDecodeRefusesWhatItCannotRead(t *testing.T) {
	recrc := func(b []byte) []byte {
		binary.BigEndian.PutUint32(b[batchCRCAt:], crc32.Checksum(b[batchAttrsAt:], castagnoli))
		return b
	}
	compressed := encodeBatch(1, values("a")...)
	compressed[batchAttrsAt+1] |= 1 // gzip
	magic1 := encodeBatch(1, values("a")...)
	magic1[batchMagicAt] = 1
	short := encodeBatch(1, values("a")...)
	binary.BigEndian.PutUint32(short[batchLengthAt:], 20)
	overrun := encodeBatch(1, values("a")...)
	binary.BigEndian.PutUint32(overrun[57:], 3) // three records, one there
	for name, b := range map[string][]byte{
		"compressed": recrc(compressed), "magic 1": magic1, "length below a header": short, "records past the end": recrc(overrun),
	} {
		if _, err := decodeBatches(b); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

// TestParseResponse: a flexible response's header carries tags to skip
// before the body; a non-flexible one has none; a truncated one is an
// error, not a panic.
func TestParseResponse(t *testing.T) {
	md := kmsg.NewPtrMetadataRequest()
	md.Version = 12
	resp := kmsg.NewPtrMetadataResponse()
	resp.Version = 12
	resp.ClusterID = kmsg.StringPtr("c1")
	resp.Brokers = []kmsg.MetadataResponseBroker{{NodeID: 3, Host: "h", Port: 9}}
	body := binary.BigEndian.AppendUint32(nil, 77)
	body = append(body, 1, 0, 2, 0xaa, 0xbb) // one tag, 0, of two bytes
	body = resp.AppendTo(body)
	corr, got, err := parseResponse(body, md)
	if err != nil || corr != 77 {
		t.Fatalf("corr %d, %v", corr, err)
	}
	if m := got.(*kmsg.MetadataResponse); *m.ClusterID != "c1" || len(m.Brokers) != 1 || m.Brokers[0].NodeID != 3 {
		t.Fatalf("decoded %+v", m)
	}

	lo := kmsg.NewPtrListOffsetsRequest()
	lo.Version = 4
	lresp := kmsg.NewPtrListOffsetsResponse()
	lresp.Version = 4
	lresp.Topics = []kmsg.ListOffsetsResponseTopic{{Topic: "t", Partitions: []kmsg.ListOffsetsResponseTopicPartition{{Offset: 12}}}}
	_, got, err = parseResponse(lresp.AppendTo(binary.BigEndian.AppendUint32(nil, 1)), lo)
	if err != nil || got.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].Offset != 12 {
		t.Fatalf("list offsets v4: %+v, %v", got, err)
	}

	full := resp.AppendTo(append(binary.BigEndian.AppendUint32(nil, 1), 0))
	for n := 0; n < len(full)-1; n++ {
		if _, _, err := parseResponse(full[:n], md); err == nil {
			t.Fatalf("a response cut to %d of %d bytes decoded", n, len(full))
		}
	}
}
