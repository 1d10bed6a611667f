package batch

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Build encodes values as one uncompressed v2 batch with base offset 0, as a
// non-idempotent producer would send it. Tests and tools use it; the broker
// itself only stamps batches that clients built.
func Build(timestamp int64, values ...[]byte) []byte {
	return BuildIdempotent(NoProducerID, -1, -1, timestamp, values...)
}

// BuildIdempotent is Build as an idempotent producer sends it (KIP-98):
// its producer id and epoch, and the first record's sequence number.
func BuildIdempotent(producerID int64, epoch int16, baseSequence int32, timestamp int64, values ...[]byte) []byte {
	return build(0, producerID, epoch, baseSequence, timestamp, values...)
}

// BuildTransactional is BuildIdempotent as a transactional producer sends
// it: the same batch with the transactional attribute, so its records
// wait for the transaction's marker before read_committed sees them.
func BuildTransactional(producerID int64, epoch int16, baseSequence int32, timestamp int64, values ...[]byte) []byte {
	return build(attrTransactional, producerID, epoch, baseSequence, timestamp, values...)
}

func build(attributes int16, producerID int64, epoch int16, baseSequence int32, timestamp int64, values ...[]byte) []byte {
	var recs []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Value: v}
		body := r.AppendTo(nil)
		r.Length = int32(len(body) - 1) // placeholder length varint is one byte for 0
		recs = r.AppendTo(recs)
	}
	rb := kmsg.RecordBatch{
		Magic:           2,
		Attributes:      attributes,
		LastOffsetDelta: int32(len(values) - 1),
		FirstTimestamp:  timestamp,
		MaxTimestamp:    timestamp,
		ProducerID:      producerID,
		ProducerEpoch:   epoch,
		FirstSequence:   baseSequence,
		NumRecords:      int32(len(values)),
		Records:         recs,
	}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[offLength:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
	return b
}

// BuildControl is a transaction marker as a coordinator has a partition's
// leader write it (KIP-98): one control record whose key says commit or
// abort, in a batch of the producer's id and epoch, transactional and
// control, without a sequence.
func BuildControl(producerID int64, epoch int16, timestamp int64, commit bool, coordinatorEpoch int32) []byte {
	typ := int16(0) // abort
	if commit {
		typ = 1
	}
	key := binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(nil, 0), uint16(typ))
	value := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint16(nil, 0), uint32(coordinatorEpoch))
	r := kmsg.Record{Key: key, Value: value}
	r.Length = int32(len(r.AppendTo(nil)) - 1) // placeholder length varint is one byte for 0
	rb := kmsg.RecordBatch{
		Magic:          2,
		Attributes:     attrTransactional | attrControl,
		FirstTimestamp: timestamp,
		MaxTimestamp:   timestamp,
		ProducerID:     producerID,
		ProducerEpoch:  epoch,
		FirstSequence:  -1,
		NumRecords:     1,
		Records:        r.AppendTo(nil),
	}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[offLength:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[offCRC:], crc32.Checksum(b[offAttributes:], castagnoli))
	return b
}

// ControlCommit reads a control batch's marker: whether it commits (else
// it aborts); ok is false for a batch that is not a readable marker.
func ControlCommit(raw []byte) (commit, ok bool) {
	commit, _, ok = ControlMarker(raw)
	return commit, ok
}

// ControlMarker reads a control batch's marker: whether it commits, and
// the epoch of the coordinator that had it written (-1 where the value
// does not say); ok is false for a batch that is not a readable marker.
func ControlMarker(raw []byte) (commit bool, coordinatorEpoch int32, ok bool) {
	var rb kmsg.RecordBatch
	if rb.ReadFrom(raw) != nil || rb.Attributes&attrControl == 0 || rb.NumRecords < 1 {
		return false, -1, false
	}
	var r kmsg.Record
	length, n := binary.Varint(rb.Records)
	if n <= 0 || int(length)+n > len(rb.Records) || r.ReadFrom(rb.Records[:n+int(length)]) != nil || len(r.Key) < 4 {
		return false, -1, false
	}
	coordinatorEpoch = -1
	if len(r.Value) >= 6 {
		coordinatorEpoch = int32(binary.BigEndian.Uint32(r.Value[2:]))
	}
	switch binary.BigEndian.Uint16(r.Key[2:]) {
	case 0:
		return false, coordinatorEpoch, true
	case 1:
		return true, coordinatorEpoch, true
	}
	return false, -1, false
}

// Values decodes the record values of every uncompressed batch in b, paired
// with their offsets, as a consumer sees them: a transaction marker's
// control batch holds no value. It is for tests and debugging tools, not
// the data path.
func Values(b []byte) (offsets []int64, values [][]byte, err error) {
	_, werr := Walk(b, func(h Header, raw []byte) bool {
		if h.Control() {
			return true
		}
		if h.Attributes&0x7 != 0 {
			err = fmt.Errorf("batch: compressed batches are not decoded here")
			return false
		}
		var rb kmsg.RecordBatch
		if err = rb.ReadFrom(raw); err != nil {
			return false
		}
		recs := rb.Records
		for i := int32(0); i < rb.NumRecords; i++ {
			var r kmsg.Record
			length, n := binary.Varint(recs)
			if n <= 0 || int(length)+n > len(recs) {
				err = fmt.Errorf("batch: bad record length")
				return false
			}
			if err = r.ReadFrom(recs[:n+int(length)]); err != nil {
				return false
			}
			offsets = append(offsets, h.BaseOffset+int64(r.OffsetDelta))
			values = append(values, r.Value)
			recs = recs[n+int(length):]
		}
		return true
	})
	if err == nil && werr != nil {
		err = werr
	}
	return offsets, values, err
}
