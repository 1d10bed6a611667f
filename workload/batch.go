package workload

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/history"
)

// Record batches (magic v2), encoded and decoded here from the Kafka
// protocol's definition rather than with the broker's own code
// (broker/batch), for the reason frame.go gives.

// Where a v2 batch header keeps what the client must write or check
// itself; kmsg.RecordBatch does the rest.
const (
	batchLengthAt = 8  // int32: the bytes after this field
	batchMagicAt  = 16 // int8: 2
	batchCRCAt    = 17 // uint32: CRC-32C of everything from the attributes on
	batchAttrsAt  = 21
	// batchHeaderSize is the header up to the first record.
	batchHeaderSize = 61
	// compressionMask selects the compression codec in the attributes.
	compressionMask = 0x07
	// transactionalAttr marks a transactional producer's batch, controlAttr
	// a transaction's marker (KIP-98).
	transactionalAttr = 0x10
	controlAttr       = 0x20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodeBatch is values as one uncompressed batch with base offset 0, as a
// non-idempotent, non-transactional producer sends it: the broker assigns
// the offsets and stamps the leader epoch.
func encodeBatch(timestamp int64, values ...[]byte) []byte {
	return encodeProducerBatch(-1, -1, -1, timestamp, values...)
}

// encodeProducerBatch is encodeBatch from producer id with epoch, its first
// record numbered seq (KIP-98); -1 for each without idempotence.
func encodeProducerBatch(id int64, epoch int16, seq int32, timestamp int64, values ...[]byte) []byte {
	return encodeBatchAttrs(0, id, epoch, seq, timestamp, values...)
}

// encodeTxnBatch is encodeProducerBatch as a transactional producer sends
// it: its records wait for their transaction's marker.
func encodeTxnBatch(id int64, epoch int16, seq int32, timestamp int64, values ...[]byte) []byte {
	return encodeBatchAttrs(transactionalAttr, id, epoch, seq, timestamp, values...)
}

func encodeBatchAttrs(attrs int16, id int64, epoch int16, seq int32, timestamp int64, values ...[]byte) []byte {
	var recs []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Value: v}
		// A record's length prefix counts what follows it; encoded with
		// length 0, the prefix takes one byte.
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		recs = r.AppendTo(recs)
	}
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1,
		Magic:                2,
		Attributes:           attrs,
		LastOffsetDelta:      int32(len(values) - 1),
		FirstTimestamp:       timestamp,
		MaxTimestamp:         timestamp,
		ProducerID:           id,
		ProducerEpoch:        epoch,
		FirstSequence:        seq,
		NumRecords:           int32(len(values)),
		Records:              recs,
	}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[batchLengthAt:], uint32(len(raw)-batchLengthAt-4))
	binary.BigEndian.PutUint32(raw[batchCRCAt:], crc32.Checksum(raw[batchAttrsAt:], castagnoli))
	return raw
}

// decodeBatches is the records of the uncompressed batches in b, in order.
// A batch cut off at the end is left out: a fetch stops at its byte limit
// wherever that falls. A batch whose CRC does not match its bytes is an
// error, as it is to a Kafka consumer (check.crcs): its records cannot be
// told from garbage. A transaction's marker is no record of a consumer's:
// it is skipped.
func decodeBatches(b []byte) ([]history.Record, error) {
	recs, _, err := decodeFetched(b, nil)
	return recs, err
}

// decodeFetched is decodeBatches without the records of the aborted
// transactions a read_committed fetch names (each from its first offset
// to its producer's abort marker), as a Kafka consumer drops them, and
// with next, the offset after the last whole batch decoded (-1 if none
// was): where a consumer fetches next, past the markers and aborted
// records it skipped.
func decodeFetched(b []byte, aborted []kmsg.FetchResponseTopicPartitionAbortedTransaction) (out []history.Record, next int64, err error) {
	next = -1
	aborted = slices.Clone(aborted)
	slices.SortFunc(aborted, func(x, y kmsg.FetchResponseTopicPartitionAbortedTransaction) int {
		return cmp.Compare(x.FirstOffset, y.FirstOffset)
	})
	skipping := map[int64]bool{} // producers whose aborted transaction is being read
	for len(b) >= batchLengthAt+4 {
		size := int(int32(binary.BigEndian.Uint32(b[batchLengthAt:]))) + batchLengthAt + 4
		if size < batchHeaderSize {
			return out, next, fmt.Errorf("batch of %d bytes, shorter than its header", size)
		}
		if size > len(b) {
			break
		}
		raw := b[:size]
		b = b[size:]
		if raw[batchMagicAt] != 2 {
			return out, next, fmt.Errorf("batch with magic %d, not a v2 record batch", raw[batchMagicAt])
		}
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(raw); err != nil {
			return out, next, fmt.Errorf("batch: %w", err)
		}
		if got := crc32.Checksum(raw[batchAttrsAt:], castagnoli); got != uint32(rb.CRC) {
			return out, next, fmt.Errorf("batch at offset %d: CRC-32C %08x, the header says %08x", rb.FirstOffset, got, uint32(rb.CRC))
		}
		last := rb.FirstOffset + int64(rb.LastOffsetDelta)
		next = last + 1
		for len(aborted) > 0 && aborted[0].FirstOffset <= last {
			skipping[aborted[0].ProducerID] = true
			aborted = aborted[1:]
		}
		if rb.Attributes&controlAttr != 0 {
			// A marker ends its producer's transaction; one that aborts
			// ends the skipping of its records.
			delete(skipping, rb.ProducerID)
			continue
		}
		if rb.Attributes&transactionalAttr != 0 && skipping[rb.ProducerID] {
			continue
		}
		if rb.Attributes&compressionMask != 0 {
			return out, next, fmt.Errorf("batch at offset %d is compressed (attributes %#x); the workload never sends one", rb.FirstOffset, rb.Attributes)
		}
		recs := rb.Records
		for i := int32(0); i < rb.NumRecords; i++ {
			length, n := binary.Varint(recs)
			if n <= 0 || length < 0 || int64(len(recs)-n) < length {
				return out, next, fmt.Errorf("batch at offset %d: record %d overruns the batch", rb.FirstOffset, i)
			}
			var r kmsg.Record
			if err := r.ReadFrom(recs[:n+int(length)]); err != nil {
				return out, next, fmt.Errorf("batch at offset %d: record %d: %w", rb.FirstOffset, i, err)
			}
			out = append(out, history.Record{Offset: rb.FirstOffset + int64(r.OffsetDelta), Value: string(r.Value)})
			recs = recs[n+int(length):]
		}
	}
	return out, next, nil
}
