package workload

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/broker/batch"
	"github.com/chaos-isr/chaos/history"
)

// Replica ids a fetch can carry: an ordinary consumer, and the debug
// consumer that may read any replica up to its log end.
const (
	consumerReplica int32 = -1
	debugReplica    int32 = -2
)

// consumer polls its partitions in turn, each from where it left off, and
// now and then reads a partition's end offset, until ctx ends. An invoked
// operation runs under opCtx, to its end even when the time limit passes
// meanwhile: only new operations stop.
func consumer(ctx, opCtx context.Context, cfg Config, rec *Recorder, slot int, parts []int32) error {
	proc := rec.NewProcess()
	cl := newClient(cfg.Bootstrap, cfg.RequestTimeout+2*time.Second, fmt.Sprintf("chaos-consumer-%d", slot))
	defer cl.close()
	from := make([]int64, len(parts))
	for n := 0; ctx.Err() == nil; n++ {
		i := n % len(parts)
		k := history.Key{Topic: cfg.Topic, Partition: parts[i]}
		var err error
		var op history.Op
		if cfg.EndOffsetEvery > 0 && n%cfg.EndOffsetEvery == cfg.EndOffsetEvery-1 {
			op, err = endOffset(opCtx, cl, rec, proc, k)
		} else {
			from[i], op, err = poll(opCtx, cl, rec, proc, k, from[i])
		}
		if err != nil {
			return err
		}
		if op.Type == history.Fail {
			pause(ctx, failBackoff)
		}
	}
	return nil
}

// poll records one fetch of k from offset and returns where the next poll
// starts.
func poll(ctx context.Context, cl *client, rec *Recorder, proc int, k history.Key, from int64) (int64, history.Op, error) {
	v := &history.Value{Topic: k.Topic, Partition: k.Partition, From: history.Int64(from)}
	if _, err := rec.Record(history.Op{Process: proc, Type: history.Invoke, F: history.Poll, Value: v}); err != nil {
		return from, history.Op{}, err
	}
	next := from
	done := *v
	typ, errText := history.OK, ""
	leader, err := cl.leader(ctx, k)
	if err == nil {
		var recs []history.Record
		var hw int64
		var code int16
		recs, hw, code, err = fetch(ctx, cl, leader, consumerReplica, k, from, 100*time.Millisecond)
		switch {
		case err != nil:
			cl.forget(k)
		case code == kerr.OffsetOutOfRange.Code && hw >= 0:
			// Like auto.offset.reset=latest: a truncated log leaves the
			// consumer past its end, and it resumes at the HW.
			err = fmt.Errorf("%s: resuming at the high watermark %d", errorName(code), hw)
			next = hw
		case code != 0:
			cl.forget(k)
			err = errors.New(errorName(code))
		default:
			done.Records, done.HW = recs, history.Int64(hw)
			if len(recs) > 0 {
				next = recs[len(recs)-1].Offset + 1
			}
		}
	}
	if err != nil {
		// A read changes nothing: whatever went wrong, it did not happen.
		typ, errText = history.Fail, err.Error()
	}
	op, werr := rec.Record(history.Op{Process: proc, Type: typ, F: history.Poll, Value: &done, Error: errText})
	return next, op, werr
}

// fetch reads k from offset on broker id as replica (consumer or debug) and
// returns the records at or after offset, the HW the broker reported, and
// its error code.
func fetch(ctx context.Context, cl *client, id, replica int32, k history.Key, offset int64, wait time.Duration) ([]history.Record, int64, int16, error) {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.ReplicaID = replica
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = int32(wait/time.Millisecond), 1, 4<<20
	req.SessionEpoch = -1
	t := kmsg.NewFetchRequestTopic()
	t.Topic = k.Topic
	p := kmsg.NewFetchRequestTopicPartition()
	p.Partition, p.FetchOffset, p.PartitionMaxBytes, p.CurrentLeaderEpoch = k.Partition, offset, 4<<20, -1
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp, err := cl.call(ctx, id, req)
	if err != nil {
		return nil, -1, 0, err
	}
	fr := resp.(*kmsg.FetchResponse)
	if fr.ErrorCode != 0 {
		return nil, -1, fr.ErrorCode, nil
	}
	if len(fr.Topics) != 1 || len(fr.Topics[0].Partitions) != 1 {
		return nil, -1, 0, errors.New("malformed fetch response")
	}
	fp := fr.Topics[0].Partitions[0]
	if fp.ErrorCode != 0 {
		return nil, fp.HighWatermark, fp.ErrorCode, nil
	}
	offs, vals, err := batch.Values(fp.RecordBatches)
	if err != nil && !errors.Is(err, batch.ErrShort) {
		return nil, fp.HighWatermark, 0, fmt.Errorf("undecodable records: %w", err)
	}
	recs := make([]history.Record, 0, len(offs))
	for i, o := range offs {
		if o >= offset {
			recs = append(recs, history.Record{Offset: o, Value: string(vals[i])})
		}
	}
	return recs, fp.HighWatermark, 0, nil
}

// endOffset records a ListOffsets (latest) of k: the high watermark.
func endOffset(ctx context.Context, cl *client, rec *Recorder, proc int, k history.Key) (history.Op, error) {
	v := &history.Value{Topic: k.Topic, Partition: k.Partition}
	if _, err := rec.Record(history.Op{Process: proc, Type: history.Invoke, F: history.EndOffset, Value: v}); err != nil {
		return history.Op{}, err
	}
	done := *v
	typ, errText := history.OK, ""
	off, err := listLatest(ctx, cl, k)
	if err != nil {
		typ, errText = history.Fail, err.Error()
	} else {
		done.Offset = history.Int64(off)
	}
	return rec.Record(history.Op{Process: proc, Type: typ, F: history.EndOffset, Value: &done, Error: errText})
}

func listLatest(ctx context.Context, cl *client, k history.Key) (int64, error) {
	leader, err := cl.leader(ctx, k)
	if err != nil {
		return -1, err
	}
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = 4
	req.ReplicaID = consumerReplica
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = k.Topic
	p := kmsg.NewListOffsetsRequestTopicPartition()
	p.Partition, p.Timestamp, p.CurrentLeaderEpoch = k.Partition, -1, -1
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp, err := cl.call(ctx, leader, req)
	if err != nil {
		cl.forget(k)
		return -1, err
	}
	lr := resp.(*kmsg.ListOffsetsResponse)
	if len(lr.Topics) != 1 || len(lr.Topics[0].Partitions) != 1 {
		return -1, errors.New("malformed list offsets response")
	}
	lp := lr.Topics[0].Partitions[0]
	if lp.ErrorCode != 0 {
		cl.forget(k)
		return -1, errors.New(errorName(lp.ErrorCode))
	}
	return lp.Offset, nil
}
