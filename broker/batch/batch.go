package batch

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
)

// HeaderSize is the size of a v2 record batch header in bytes.
const HeaderSize = 61

// Offsets of the header fields.
const (
	offBaseOffset      = 0
	offLength          = 8
	offLeaderEpoch     = 12
	offMagic           = 16
	offCRC             = 17
	offAttributes      = 21
	offLastOffsetDelta = 23
	offFirstTimestamp  = 27
	offMaxTimestamp    = 35
	offProducerID      = 43
	offProducerEpoch   = 51
	offBaseSequence    = 53
	offNumRecords      = 57
)

// Attribute bits the broker acts on (KIP-98): a transactional batch belongs
// to a transaction, which this broker does not support; a control batch is
// a transaction marker, which only a transaction coordinator writes.
const (
	attrTransactional = 0x10
	attrControl       = 0x20
)

// NoProducerID is the producer id of a batch from a non-idempotent producer.
const NoProducerID = -1

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrShort means the buffer ends inside a batch (a torn write or a truncated read).
var ErrShort = errors.New("batch: truncated")

// Header is the part of a batch header the broker uses.
type Header struct {
	BaseOffset      int64
	Length          int32 // bytes after the length field
	LeaderEpoch     int32
	Magic           int8
	CRC             uint32
	Attributes      int16
	LastOffsetDelta int32
	FirstTimestamp  int64
	MaxTimestamp    int64
	ProducerID      int64 // NoProducerID unless the producer is idempotent
	ProducerEpoch   int16
	BaseSequence    int32 // the first record's sequence number (KIP-98)
	NumRecords      int32
}

// Size is the whole batch's size in bytes.
func (h Header) Size() int { return int(h.Length) + 12 }

// LastOffset is the offset of the batch's last record.
func (h Header) LastOffset() int64 { return h.BaseOffset + int64(h.LastOffsetDelta) }

// NextOffset is the offset after the batch.
func (h Header) NextOffset() int64 { return h.LastOffset() + 1 }

// Count is the number of offsets the batch occupies.
func (h Header) Count() int64 { return int64(h.LastOffsetDelta) + 1 }

// LastSequence is the last record's sequence number (-1 for a batch
// without sequences). Sequences wrap from MaxInt32 to 0, as Kafka's
// producers number them.
func (h Header) LastSequence() int32 {
	if h.BaseSequence < 0 {
		return -1
	}
	return int32((int64(h.BaseSequence) + int64(h.LastOffsetDelta)) % (math.MaxInt32 + 1))
}

// Transactional says whether the batch belongs to a transaction.
func (h Header) Transactional() bool { return h.Attributes&attrTransactional != 0 }

// Control says whether the batch is a control batch (a transaction marker).
func (h Header) Control() bool { return h.Attributes&attrControl != 0 }

// Parse reads the header of the batch at the start of b. It checks that the
// whole batch is present and that the header is sane, but not the CRC.
func Parse(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, ErrShort
	}
	h := Header{
		BaseOffset:      int64(binary.BigEndian.Uint64(b[offBaseOffset:])),
		Length:          int32(binary.BigEndian.Uint32(b[offLength:])),
		LeaderEpoch:     int32(binary.BigEndian.Uint32(b[offLeaderEpoch:])),
		Magic:           int8(b[offMagic]),
		CRC:             binary.BigEndian.Uint32(b[offCRC:]),
		Attributes:      int16(binary.BigEndian.Uint16(b[offAttributes:])),
		LastOffsetDelta: int32(binary.BigEndian.Uint32(b[offLastOffsetDelta:])),
		FirstTimestamp:  int64(binary.BigEndian.Uint64(b[offFirstTimestamp:])),
		MaxTimestamp:    int64(binary.BigEndian.Uint64(b[offMaxTimestamp:])),
		ProducerID:      int64(binary.BigEndian.Uint64(b[offProducerID:])),
		ProducerEpoch:   int16(binary.BigEndian.Uint16(b[offProducerEpoch:])),
		BaseSequence:    int32(binary.BigEndian.Uint32(b[offBaseSequence:])),
		NumRecords:      int32(binary.BigEndian.Uint32(b[offNumRecords:])),
	}
	if h.Magic != 2 {
		return h, fmt.Errorf("batch: unsupported magic %d (only v2 record batches)", h.Magic)
	}
	if h.Length < HeaderSize-12 {
		return h, fmt.Errorf("batch: length %d shorter than a header", h.Length)
	}
	if h.LastOffsetDelta < 0 || h.NumRecords < 0 {
		return h, fmt.Errorf("batch: negative record count")
	}
	if len(b) < h.Size() {
		return h, ErrShort
	}
	return h, nil
}

// Verify checks the CRC of the batch at the start of b, whose header is h.
func Verify(b []byte, h Header) error {
	if got := crc32.Checksum(b[offAttributes:h.Size()], castagnoli); got != h.CRC {
		return fmt.Errorf("batch: crc mismatch at offset %d: stored %08x, computed %08x", h.BaseOffset, h.CRC, got)
	}
	return nil
}

// Stamp sets the base offset and the leader epoch of the batch at the start
// of b, in place. The CRC stays valid.
func Stamp(b []byte, baseOffset int64, leaderEpoch int32) {
	binary.BigEndian.PutUint64(b[offBaseOffset:], uint64(baseOffset))
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(leaderEpoch))
}

// Walk calls fn for each whole batch in b, in order, and returns the number of
// bytes those batches take. It stops at the first incomplete or malformed
// batch, returning its error (ErrShort for a torn tail); bytes before it are
// good. fn may stop the walk early by returning false.
func Walk(b []byte, fn func(h Header, raw []byte) bool) (int, error) {
	pos := 0
	for pos < len(b) {
		h, err := Parse(b[pos:])
		if err != nil {
			return pos, err
		}
		raw := b[pos : pos+h.Size()]
		if !fn(h, raw) {
			return pos + h.Size(), nil
		}
		pos += h.Size()
	}
	return pos, nil
}

// Validate checks a client's produce payload: one or more whole v2 batches
// with good CRCs. It returns the headers.
func Validate(b []byte) ([]Header, error) {
	var hs []Header
	var verr error
	n, err := Walk(b, func(h Header, raw []byte) bool {
		if verr = Verify(raw, h); verr != nil {
			return false
		}
		hs = append(hs, h)
		return true
	})
	if verr != nil {
		return nil, verr
	}
	if err != nil {
		return nil, err
	}
	if n != len(b) || len(hs) == 0 {
		return nil, errors.New("batch: no complete batch")
	}
	return hs, nil
}
