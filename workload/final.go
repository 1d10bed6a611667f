package workload

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chaos-isr/chaos/history"
	waitfor "github.com/chaos-isr/chaos/internal/wait"
)

// Convergence says whether the cluster healed before the final reads: every
// partition has a leader and its whole replica set in the ISR.
type Convergence struct {
	Converged bool          `json:"converged"`
	Waited    time.Duration `json:"waited"`
	Why       string        `json:"why,omitempty"` // what was still wrong when the wait gave up
}

// Final waits up to timeout for the cluster to converge, then records a
// final read of every partition from its leader and a read of every
// replica's whole log. Reads happen even if the cluster did not converge
// (the checkers then judge what could be read) and the Convergence says why.
// With a liveness bound (cfg.LivenessBound) it gathers what the liveness
// checks need (see liveness.go): the wait, recorded as a converge
// operation, lasts at least until the bound after the last fault has
// passed; a probe send to every partition is tried until one is
// acknowledged; and a final read that fails is tried again, each until
// the bound and a margin have passed.
func Final(ctx context.Context, cfg Config, rec *Recorder, timeout time.Duration) (Convergence, error) {
	cl := TCP(cfg.Bootstrap)(ClientOptions{ID: "chaos-final", Timeout: cfg.RequestTimeout + 2*time.Second})
	defer cl.Close()
	return final(ctx, cfg, rec, cl, TCP(cfg.Bootstrap), timeout)
}

func final(ctx context.Context, cfg Config, rec *Recorder, cl Client, dial Dialer, timeout time.Duration) (Convergence, error) {
	start := time.Now()
	conv := Convergence{}
	// md is the last metadata heard: the replicas to read are those it
	// names, even if the wait gave up.
	var md Metadata
	why := ""
	proc := rec.NewProcess()
	inv := ConvergeInvoke(proc, cfg.Topic)
	if _, err := rec.Record(inv); err != nil {
		return conv, err
	}
	err := waitfor.Until(ctx, 200*time.Millisecond, cfg.ConvergeWait(timeout, rec.LastFault(), rec.Since()), func() (bool, error) {
		why = converged(ctx, cl, cfg.Topic, cfg.Partitions, &md)
		return why == "", nil
	})
	conv.Converged = err == nil
	if !conv.Converged {
		conv.Why = why
	}
	conv.Waited = time.Since(start)
	if _, err := rec.Record(ConvergeDone(inv, conv)); err != nil {
		return conv, err
	}
	if cfg.Probes() {
		if err := probe(ctx, cfg, rec, dial); err != nil {
			return conv, err
		}
	}
	until := cfg.TryUntil(rec.LastFault(), rec.Since())
	for _, fr := range FinalReads(cfg, md) {
		readUntil, stuck := until, false
		for {
			r, err := readOnce(rec, fr.Invoke(proc), func() (Read, error) {
				if fr.Broker == nil {
					return cl.FinalRead(ctx, fr.Key)
				}
				return cl.ReplicaRead(ctx, fr.Key, *fr.Broker)
			})
			if err != nil {
				return conv, err
			}
			var se *StuckReadError
			if errors.As(r, &se) && !stuck && cfg.LivenessBound > 0 {
				stuck, readUntil = true, max(readUntil, cfg.StuckUntil(rec.Since()))
			}
			if fr.Broker != nil || !RetryFinalReadLater(r) || rec.Since() >= readUntil || ctx.Err() != nil {
				break
			}
			sleep(ctx, ProbeBackoff)
		}
	}
	return conv, nil
}

// probe sends to every partition at once, each until a send is
// acknowledged or the final phase stops trying (Config.TryUntil): every
// attempt a send of its own, with a value of its own, in the history, and
// a new process (and client) after an attempt whose outcome is unknown, as
// the producers do.
func probe(ctx context.Context, cfg Config, rec *Recorder, dial Dialer) error {
	until := cfg.TryUntil(rec.LastFault(), rec.Since())
	errs := make(chan error, cfg.Partitions)
	for p := range cfg.Partitions {
		go func() {
			k := history.Key{Topic: cfg.Topic, Partition: p}
			cl := dial(ProbeOptions(cfg))
			defer func() { cl.Close() }()
			proc := rec.NewProcess()
			for n := 1; ; n++ {
				inv := ProbeInvoke(proc, k, n)
				if _, err := rec.Record(inv); err != nil {
					errs <- err
					return
				}
				done, _ := Complete(inv, Result{Send: cl.Send(ctx, k, inv.Value.Value, cfg.Acks)})
				if _, err := rec.Record(done); err != nil {
					errs <- err
					return
				}
				if done.Type == history.OK || rec.Since() >= until || ctx.Err() != nil {
					errs <- nil
					return
				}
				if done.Type == history.Info {
					cl.Close()
					cl, proc = dial(ProbeOptions(cfg)), rec.NewProcess()
				}
				sleep(ctx, ProbeBackoff)
			}
		}()
	}
	var first error
	for range cfg.Partitions {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// FinalRead is one read of the final phase: a partition from its leader
// (Broker nil), or one broker's replica of it.
type FinalRead struct {
	Key    history.Key
	Broker *int32
}

// FinalReads are the final phase's reads, in order: each partition from
// its leader, then each of its replicas (as md, the last metadata heard,
// lists them) by broker id.
func FinalReads(cfg Config, md Metadata) []FinalRead {
	var out []FinalRead
	for p := int32(0); p < cfg.Partitions; p++ {
		k := history.Key{Topic: cfg.Topic, Partition: p}
		out = append(out, FinalRead{Key: k})
		if cfg.NoReplicaReads {
			continue
		}
		for _, b := range slices.Sorted(slices.Values(md.Partitions[p].Replicas)) {
			out = append(out, FinalRead{Key: k, Broker: history.Int32(b)})
		}
	}
	return out
}

// Invoke is the read's invocation by process proc.
func (fr FinalRead) Invoke(proc int) history.Op {
	f := history.FinalRead
	if fr.Broker != nil {
		f = history.ReplicaRead
	}
	v := &history.Value{Topic: fr.Key.Topic, Partition: fr.Key.Partition, Broker: fr.Broker}
	return history.Op{Process: proc, Type: history.Invoke, F: f, Value: v}
}

// ReadDone is the completion of a final-phase read invoked as inv that
// read r, or failed with err.
func ReadDone(inv history.Op, r Read, err error) history.Op {
	done := *inv.Value
	typ, errText := history.OK, ""
	var stuck *StuckReadError
	if err != nil {
		typ, errText = history.Fail, err.Error()
		if errors.As(err, &stuck) {
			done.From, done.HW = history.Int64(stuck.Offset), history.Int64(stuck.HW)
		}
	} else {
		done.Records, done.HW = r.Records, history.Int64(r.HW)
	}
	return history.Op{Process: inv.Process, Type: typ, F: inv.F, Value: &done, Error: errText}
}

// converged says what keeps topic's partitions from being converged, ""
// when nothing does. A metadata answer is kept in md.
func converged(ctx context.Context, cl Client, topic string, partitions int32, md *Metadata) string {
	got, err := cl.Metadata(ctx, topic)
	if err != nil {
		return err.Error()
	}
	return Unconverged(md, got, topic, partitions)
}

// Unconverged takes a metadata answer into md, what is known of topic's
// partitions, and says what keeps them from being converged (a leader and
// the whole replica set in the ISR each), "" when nothing does.
func Unconverged(md *Metadata, got Metadata, topic string, partitions int32) string {
	// Partitions a previous answer named and this one leaves out are
	// still known, as they are to the client.
	if md.Partitions == nil {
		md.Partitions = map[int32]PartitionState{}
	}
	for p, s := range got.Partitions {
		md.Partitions[p] = s
	}
	var bad []string
	for p := int32(0); p < partitions; p++ {
		k := history.Key{Topic: topic, Partition: p}
		s, ok := md.Partitions[p]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("%s: unknown", k))
		case s.Leader < 0:
			bad = append(bad, fmt.Sprintf("%s: no leader (isr %v)", k, s.ISR))
		case len(s.ISR) != len(s.Replicas):
			bad = append(bad, fmt.Sprintf("%s: isr %v of replicas %v", k, s.ISR, s.Replicas))
		}
	}
	return strings.Join(bad, "; ")
}

// readOnce records the final-phase read inv, done by do, and returns the
// read's own error apart from the history's.
func readOnce(rec *Recorder, inv history.Op, do func() (Read, error)) (readErr, err error) {
	if _, err := rec.Record(inv); err != nil {
		return nil, err
	}
	r, readErr := do()
	_, err = rec.Record(ReadDone(inv, r, readErr))
	return readErr, err
}
