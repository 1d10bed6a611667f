package workload

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/chaos-isr/chaos/broker/batch"
	"github.com/chaos-isr/chaos/history"
)

// Config describes a workload.
type Config struct {
	Bootstrap      []string      `json:"bootstrap"`
	Topic          string        `json:"topic"`
	Partitions     int32         `json:"partitions"`
	Acks           int16         `json:"acks"`
	Concurrency    int           `json:"concurrency"`      // producer processes
	Consumers      int           `json:"consumers"`        // consumer processes
	Rate           float64       `json:"rate"`             // target sends per second, all producers together; 0: unthrottled
	TimeLimit      time.Duration `json:"time_limit"`       // how long producers and consumers run
	Seed           uint64        `json:"seed"`             // drives partition choice and pacing jitter
	RequestTimeout time.Duration `json:"request_timeout"`  // the produce request timeout sent to brokers
	EndOffsetEvery int           `json:"end_offset_every"` // a consumer reads the end offset every N operations
}

// Validate refuses impossible workloads with the reason.
func (c Config) Validate() error {
	switch {
	case len(c.Bootstrap) == 0:
		return errors.New("no bootstrap brokers")
	case c.Topic == "":
		return errors.New("no topic")
	case c.Partitions < 1:
		return fmt.Errorf("partitions must be at least 1, got %d", c.Partitions)
	case c.Acks != 0 && c.Acks != 1 && c.Acks != -1:
		return fmt.Errorf("acks must be 0, 1 or -1, got %d", c.Acks)
	case c.Concurrency < 1:
		return fmt.Errorf("concurrency must be at least 1, got %d", c.Concurrency)
	case c.Consumers < 0:
		return fmt.Errorf("consumers must be >= 0, got %d", c.Consumers)
	case c.Rate < 0:
		return fmt.Errorf("rate must be >= 0, got %g", c.Rate)
	case c.TimeLimit <= 0:
		return fmt.Errorf("time limit must be positive, got %s", c.TimeLimit)
	case c.RequestTimeout <= 0:
		return fmt.Errorf("request timeout must be positive, got %s", c.RequestTimeout)
	}
	return nil
}

// Recorder appends operations to a history, stamping their time, and
// counts outcomes for progress displays. It is safe for concurrent use.
type Recorder struct {
	w     *history.Writer
	start time.Time
	mu    sync.Mutex
	stats Stats
	procs atomic.Int64
}

// Stats counts completed operations.
type Stats struct {
	Invokes int64
	OK      int64
	Fail    int64
	Info    int64
	Sends   int64 // completed sends
}

// NewRecorder records into w, with times relative to start.
func NewRecorder(w *history.Writer, start time.Time) *Recorder {
	return &Recorder{w: w, start: start}
}

// Stats returns the counts so far.
func (r *Recorder) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// Since is the time since the test started.
func (r *Recorder) Since() time.Duration { return time.Since(r.start) }

// NewProcess returns a process id never used before in this history.
func (r *Recorder) NewProcess() int { return int(r.procs.Add(1) - 1) }

// Record appends op (time stamped now) and returns it as written.
func (r *Recorder) Record(op history.Op) (history.Op, error) {
	// Stamping and appending under one lock keeps times in index order.
	r.mu.Lock()
	defer r.mu.Unlock()
	op.Time = time.Since(r.start).Nanoseconds()
	op, err := r.w.Append(op)
	if err != nil || op.Process == history.MonitorProcess {
		// The monitor's samples are not the workload's operations: progress
		// lines count what clients did.
		return op, err
	}
	switch op.Type {
	case history.Invoke:
		r.stats.Invokes++
	case history.OK:
		r.stats.OK++
	case history.Fail:
		r.stats.Fail++
	case history.Info:
		r.stats.Info++
	}
	if op.Type != history.Invoke && op.F == history.Send {
		r.stats.Sends++
	}
	return op, nil
}

// Run drives producers and consumers until the time limit or ctx ends. It
// returns the first history write error: a history that cannot be written
// makes the test meaningless. At the time limit an operation in flight
// runs to its honest outcome; the end of ctx (an interrupt) abandons it.
func Run(ctx context.Context, cfg Config, rec *Recorder) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	opCtx := ctx
	ctx, cancel := context.WithTimeout(ctx, cfg.TimeLimit)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, cfg.Concurrency+cfg.Consumers)
	for i := 0; i < cfg.Concurrency; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- producer(ctx, opCtx, cfg, rec, i)
		}()
	}
	for i := 0; i < cfg.Consumers; i++ {
		var parts []int32
		for p := int32(i); p < cfg.Partitions; p += int32(cfg.Consumers) {
			parts = append(parts, p)
		}
		if len(parts) == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- consumer(ctx, opCtx, cfg, rec, i, parts)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// producer sends unique values "<process>-<n>", one at a time, until ctx
// ends; each send runs under opCtx. After an info outcome the process's
// state is unknown, so (as in Jepsen) it continues under a fresh process
// id.
func producer(ctx, opCtx context.Context, cfg Config, rec *Recorder, slot int) error {
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(slot)+1))
	var interval time.Duration
	if cfg.Rate > 0 {
		interval = time.Duration(float64(cfg.Concurrency) / cfg.Rate * float64(time.Second))
	}
	proc := rec.NewProcess()
	cl := newClient(cfg.Bootstrap, cfg.RequestTimeout+2*time.Second, fmt.Sprintf("chaos-producer-%d", slot))
	defer cl.close()
	next := time.Now()
	for n := 1; ; n++ {
		if interval > 0 {
			// Jitter of up to half an interval keeps producers from marching
			// in lockstep; the seed fixes it.
			next = next.Add(interval + time.Duration(rng.Int64N(int64(interval)/2+1)) - interval/4)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Until(next)):
			}
		}
		if ctx.Err() != nil {
			return nil
		}
		k := history.Key{Topic: cfg.Topic, Partition: rng.Int32N(cfg.Partitions)}
		v := &history.Value{Topic: k.Topic, Partition: k.Partition, Value: fmt.Sprintf("%d-%d", proc, n)}
		if _, err := rec.Record(history.Op{Process: proc, Type: history.Invoke, F: history.Send, Value: v}); err != nil {
			return err
		}
		// The send itself is not cut short by the time limit: an operation
		// that was invoked gets its honest outcome.
		typ, off, errText := send(opCtx, cl, k, v.Value, cfg)
		done := *v
		if typ == history.OK {
			done.Offset = history.Int64(off)
		}
		if _, err := rec.Record(history.Op{Process: proc, Type: typ, F: history.Send, Value: &done, Error: errText}); err != nil {
			return err
		}
		switch typ {
		case history.Info:
			proc = rec.NewProcess()
			cl.close()
			n = 0
		case history.Fail:
			// Refusals come back at once; pausing keeps a partition that
			// is offline from flooding the history with them.
			pause(ctx, failBackoff)
		}
	}
}

// send produces one record and classifies the outcome.
func send(ctx context.Context, cl *client, k history.Key, value string, cfg Config) (history.Type, int64, string) {
	leader, err := cl.leader(ctx, k)
	if err != nil {
		return history.Fail, 0, err.Error()
	}
	req := kmsg.NewPtrProduceRequest()
	req.Version = 9
	req.Acks, req.TimeoutMillis = cfg.Acks, int32(cfg.RequestTimeout/time.Millisecond)
	t := kmsg.NewProduceRequestTopic()
	t.Topic = k.Topic
	p := kmsg.NewProduceRequestTopicPartition()
	p.Partition, p.Records = k.Partition, batch.Build(time.Now().UnixMilli(), []byte(value))
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	resp, err := cl.call(ctx, leader, req)
	switch {
	case errors.Is(err, errNotSent):
		cl.forget(k)
		return history.Fail, 0, err.Error()
	case err != nil:
		cl.forget(k)
		return history.Info, 0, err.Error()
	case cfg.Acks == 0:
		return history.Info, 0, "acks=0: no acknowledgement"
	}
	pr := resp.(*kmsg.ProduceResponse)
	if len(pr.Topics) != 1 || len(pr.Topics[0].Partitions) != 1 {
		return history.Info, 0, "malformed produce response"
	}
	rp := pr.Topics[0].Partitions[0]
	return classify(rp.ErrorCode, cfg.Acks, rp.BaseOffset, cl, k)
}

// classify maps a produce error code to an outcome. Only errors the broker
// returns before appending are fail; everything else is info.
func classify(code int16, acks int16, offset int64, cl *client, k history.Key) (history.Type, int64, string) {
	switch code {
	case 0:
		return history.OK, offset, ""
	case kerr.NotEnoughReplicas.Code, kerr.UnknownTopicOrPartition.Code, kerr.LeaderNotAvailable.Code,
		kerr.CorruptMessage.Code, kerr.InvalidRecord.Code, kerr.InvalidRequiredAcks.Code, kerr.MessageTooLarge.Code,
		kerr.RecordListTooLarge.Code, kerr.InvalidTopicException.Code:
		cl.forget(k)
		return history.Fail, 0, errorName(code)
	case kerr.NotLeaderForPartition.Code:
		cl.forget(k)
		if acks == 1 {
			// acks=1 answers right after the append: an answer without
			// one means no append happened.
			return history.Fail, 0, errorName(code)
		}
		// With acks=-1 it also ends a wait that began after the append,
		// when leadership moved.
		return history.Info, 0, errorName(code)
	default:
		cl.forget(k)
		return history.Info, 0, errorName(code)
	}
}

// failBackoff is how long a process waits after a failed operation.
const failBackoff = 50 * time.Millisecond

func pause(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
