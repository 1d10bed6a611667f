package integration

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The raw client below frames requests with kmsg and nothing from the broker
// tree: a codec bug shared by the broker and its tests would otherwise cancel
// out. It exists for what client libraries hide: one chosen broker, one
// attempt (no retries turning NOT_ENOUGH_REPLICAS into a timeout), replica id
// -2 (the debug consumer), and deliberately broken frames.

// rawTimeout bounds one raw round trip; it exceeds the produce timeout (5s) so
// that an acks=-1 produce waiting on a paused follower is answered, not cut.
const rawTimeout = 8 * time.Second

type wireConn struct {
	c    net.Conn
	corr int32
	f    *kmsg.RequestFormatter
}

func dialWire(addr string) (*wireConn, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return nil, err
	}
	return &wireConn{c: c, f: newFormatter()}, nil
}

func newFormatter() *kmsg.RequestFormatter {
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("integration-test"))
}

func (w *wireConn) Close() error { return w.c.Close() }

// roundTrip sends req and reads its response. An acks=0 produce has none.
func (w *wireConn) roundTrip(req kmsg.Request, timeout time.Duration) (kmsg.Response, error) {
	w.corr++
	if err := w.c.SetDeadline(time.Now().Add(timeout)); err != nil {
		return nil, err
	}
	if _, err := w.c.Write(w.f.AppendRequest(nil, req, w.corr)); err != nil {
		return nil, err
	}
	if p, ok := req.(*kmsg.ProduceRequest); ok && p.Acks == 0 {
		return nil, nil
	}
	corr, resp, err := readResponse(w.c, req)
	if err == nil && corr != w.corr {
		err = fmt.Errorf("response correlation id %d, sent %d", corr, w.corr)
	}
	return resp, err
}

// readResponse reads the answer to req from c, and its correlation id.
func readResponse(c net.Conn, req kmsg.Request) (int32, kmsg.Response, error) {
	frame, err := readFrame(c)
	if err != nil {
		return 0, nil, err
	}
	if len(frame) < 4 {
		return 0, nil, fmt.Errorf("response frame of %d bytes", len(frame))
	}
	corr := int32(binary.BigEndian.Uint32(frame))
	body := frame[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	// ApiVersions answers with a v0 response header even at flexible versions.
	if resp.IsFlexible() && req.Key() != 18 {
		if body, err = skipTags(body); err != nil {
			return corr, nil, err
		}
	}
	if err := resp.ReadFrom(body); err != nil {
		return corr, nil, fmt.Errorf("decoding %s response: %w", kmsg.NameForKey(req.Key()), err)
	}
	return corr, resp, nil
}

func readFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 0 || n > 64<<20 {
		return nil, fmt.Errorf("response frame size %d", n)
	}
	buf := make([]byte, n)
	_, err := io.ReadFull(r, buf)
	return buf, err
}

func skipTags(b []byte) ([]byte, error) {
	n, used := binary.Uvarint(b)
	if used <= 0 {
		return nil, errors.New("bad tag count")
	}
	b = b[used:]
	for range n {
		if _, used = binary.Uvarint(b); used <= 0 {
			return nil, errors.New("bad tag")
		}
		b = b[used:]
		size, used := binary.Uvarint(b)
		if used <= 0 || uint64(len(b)-used) < size {
			return nil, errors.New("bad tag size")
		}
		b = b[used+int(size):]
	}
	return b, nil
}

// request sends one request on a fresh connection.
func request(addr string, req kmsg.Request) (kmsg.Response, error) {
	w, err := dialWire(addr)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	return w.roundTrip(req, rawTimeout)
}

func metadata(addr string, topics ...string) (*kmsg.MetadataResponse, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 9
	if len(topics) > 0 {
		req.Topics = []kmsg.MetadataRequestTopic{}
		for _, t := range topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(t)
			req.Topics = append(req.Topics, rt)
		}
	}
	resp, err := request(addr, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.MetadataResponse), nil
}

// recordBatch encodes an uncompressed v2 batch of values with a correct CRC,
// as a non-idempotent producer would send it.
func recordBatch(values ...string) []byte {
	return producerBatch(-1, -1, -1, values...)
}

// producerBatch is recordBatch as an idempotent producer (KIP-98) sends it:
// with its producer id and epoch and the first record's sequence number.
func producerBatch(producerID int64, epoch int16, sequence int32, values ...string) []byte {
	var recs []byte
	for i, v := range values {
		r := kmsg.Record{OffsetDelta: int32(i), Value: []byte(v)}
		r.Length = int32(len(r.AppendTo(nil)) - 1) // everything after the (1-byte, zero) length
		recs = r.AppendTo(recs)
	}
	now := time.Now().UnixMilli()
	b := kmsg.RecordBatch{
		PartitionLeaderEpoch: -1, Magic: 2, LastOffsetDelta: int32(len(values) - 1),
		FirstTimestamp: now, MaxTimestamp: now, ProducerID: producerID, ProducerEpoch: epoch, FirstSequence: sequence,
		NumRecords: int32(len(values)), Records: recs,
	}
	raw := b.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

func produceRequest(topic string, partition int32, acks int16, batch []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks = acks
	req.TimeoutMillis = 5000
	t := kmsg.NewProduceRequestTopic()
	t.Topic = topic
	p := kmsg.NewProduceRequestTopicPartition()
	p.Partition = partition
	p.Records = batch
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

// produceOnce sends one produce request to addr, with no retry, and returns
// the partition's error (nil on success) and base offset.
func produceOnce(addr, topic string, partition int32, acks int16, values ...string) (int64, error) {
	resp, err := request(addr, produceRequest(topic, partition, acks, recordBatch(values...)))
	if err != nil {
		return -1, fmt.Errorf("produce to %s: %w", addr, err)
	}
	if resp == nil {
		return -1, nil
	}
	return producedAt(resp)
}

// producedAt is the base offset and error of a one-partition produce
// response.
func producedAt(resp kmsg.Response) (int64, error) {
	pr := resp.(*kmsg.ProduceResponse)
	if len(pr.Topics) != 1 || len(pr.Topics[0].Partitions) != 1 {
		return -1, fmt.Errorf("produce response with %d topics", len(pr.Topics))
	}
	p := pr.Topics[0].Partitions[0]
	return p.BaseOffset, kerr.ErrorForCode(p.ErrorCode)
}

// record is one record as read back from a log.
type record struct {
	offset int64
	epoch  int32 // the batch's partition leader epoch
	value  string
}

// fetchOnce reads a partition from offset on w's broker as replicaID, in
// one fetch that waits for nothing.
func fetchOnce(w *wireConn, topic string, partition, replicaID int32, offset int64) (kmsg.FetchResponseTopicPartition, error) {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.ReplicaID = replicaID
	req.MaxWaitMillis = 0
	req.MinBytes = 0
	req.MaxBytes = 16 << 20
	req.SessionEpoch = -1
	t := kmsg.NewFetchRequestTopic()
	t.Topic = topic
	p := kmsg.NewFetchRequestTopicPartition()
	p.Partition = partition
	p.FetchOffset = offset
	p.PartitionMaxBytes = 16 << 20
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp, err := w.roundTrip(req, rawTimeout)
	if err != nil {
		return kmsg.FetchResponseTopicPartition{}, err
	}
	fr := resp.(*kmsg.FetchResponse)
	if fr.ErrorCode != 0 {
		return kmsg.FetchResponseTopicPartition{}, kerr.ErrorForCode(fr.ErrorCode)
	}
	if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
		return kmsg.FetchResponseTopicPartition{}, fmt.Errorf("fetch response with %d topics", len(fr.Topics))
	}
	rp := fr.Topics[0].Partitions[0]
	if rp.ErrorCode != 0 {
		return rp, fmt.Errorf("fetch %s-%d at %d from %s: %w", topic, partition, offset, w.c.RemoteAddr(), kerr.ErrorForCode(rp.ErrorCode))
	}
	return rp, nil
}

// readLog reads a partition from broker addr from offset 0: as a consumer
// (replicaID -1) up to the high watermark, or as the debug consumer (-2)
// up to the log end of whatever replica that broker has, leader or not.
func readLog(addr, topic string, partition, replicaID int32) (recs []record, hw int64, err error) {
	w, err := dialWire(addr)
	if err != nil {
		return nil, 0, err
	}
	defer w.Close()
	offset := int64(0)
	for {
		rp, err := fetchOnce(w, topic, partition, replicaID, offset)
		if err != nil {
			return nil, 0, err
		}
		hw = rp.HighWatermark
		got, err := decodeBatches(rp.RecordBatches)
		if err != nil {
			return nil, 0, err
		}
		if len(got) == 0 {
			return recs, hw, nil
		}
		for _, r := range got {
			if r.offset >= offset {
				recs = append(recs, r)
			}
		}
		offset = got[len(got)-1].offset + 1
	}
}

// decodeBatches decodes uncompressed v2 batches, checking each CRC; a
// partial batch at the end (cut at max bytes) is ignored.
func decodeBatches(data []byte) ([]record, error) {
	var out []record
	for len(data) >= 17 {
		size := int(int32(binary.BigEndian.Uint32(data[8:]))) + 12
		if size < 61 {
			return nil, fmt.Errorf("batch of %d bytes", size)
		}
		if size > len(data) {
			break
		}
		var b kmsg.RecordBatch
		if err := b.ReadFrom(data[:size]); err != nil {
			return nil, fmt.Errorf("batch at offset %d: %w", b.FirstOffset, err)
		}
		if crc := crc32.Checksum(data[21:size], crc32.MakeTable(crc32.Castagnoli)); int32(crc) != b.CRC {
			return nil, fmt.Errorf("batch at offset %d: crc %08x, header says %08x", b.FirstOffset, crc, uint32(b.CRC))
		}
		if b.Attributes&0x07 != 0 {
			return nil, fmt.Errorf("batch at offset %d is compressed (attributes %#x); produce uncompressed for raw reads", b.FirstOffset, b.Attributes)
		}
		recs := b.Records
		for i := int32(0); i < b.NumRecords; i++ {
			length, used := binary.Varint(recs)
			if used <= 0 || int(length) > len(recs)-used {
				return nil, fmt.Errorf("batch at offset %d: record %d truncated", b.FirstOffset, i)
			}
			var r kmsg.Record
			if err := r.ReadFrom(recs[:used+int(length)]); err != nil {
				return nil, fmt.Errorf("batch at offset %d: record %d: %w", b.FirstOffset, i, err)
			}
			out = append(out, record{offset: b.FirstOffset + int64(r.OffsetDelta), epoch: b.PartitionLeaderEpoch, value: string(r.Value)})
			recs = recs[used+int(length):]
		}
		data = data[size:]
	}
	return out, nil
}
