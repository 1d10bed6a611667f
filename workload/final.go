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
	// Unconverged are the partitions that were, then.
	Unconverged []int32 `json:"unconverged,omitempty"`
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
		conv.Why, conv.Unconverged = why, UnconvergedPartitions(md, cfg.Partitions)
	}
	conv.Waited = time.Since(start)
	if _, err := rec.Record(ConvergeDone(inv, conv)); err != nil {
		return conv, err
	}
	var probes map[int32]int64
	if cfg.Probes() {
		if probes, err = probe(ctx, cfg, rec, dial); err != nil {
			return conv, err
		}
	}
	reads := NewLeaderReads(cfg, rec.LastFault(), rec.Since(), probes)
	for {
		p, wait, ok := reads.Next(rec.Since())
		if !ok || ctx.Err() != nil {
			break
		}
		sleep(ctx, wait)
		k := history.Key{Topic: cfg.Topic, Partition: p}
		var r Read
		readErr, err := readOnce(rec, FinalRead{Key: k}.Invoke(proc), func() (Read, error) {
			var err error
			r, err = cl.FinalRead(ctx, k)
			return r, err
		})
		if err != nil {
			return conv, err
		}
		reads.Done(rec.Since(), r, readErr)
	}
	for _, fr := range FinalReads(cfg, md) {
		if fr.Broker == nil {
			continue
		}
		if _, err := readOnce(rec, fr.Invoke(proc), func() (Read, error) { return cl.ReplicaRead(ctx, fr.Key, *fr.Broker) }); err != nil {
			return conv, err
		}
	}
	return conv, nil
}

// probe sends to every partition at once, each until a send is
// acknowledged or the final phase stops trying (Config.TryUntil): every
// attempt a send of its own, with a value of its own, in the history, and
// a new process (and client) after an attempt whose outcome is unknown, as
// the producers do. It returns the offset each acknowledged probe got.
func probe(ctx context.Context, cfg Config, rec *Recorder, dial Dialer) (map[int32]int64, error) {
	until := cfg.TryUntil(rec.LastFault(), rec.Since())
	type acked struct {
		p      int32
		offset int64
		err    error
	}
	out := make(chan acked, cfg.Partitions)
	for p := range cfg.Partitions {
		go func() {
			k := history.Key{Topic: cfg.Topic, Partition: p}
			cl := dial(ProbeOptions(cfg))
			defer func() { cl.Close() }()
			proc := rec.NewProcess()
			for n := 1; ; n++ {
				inv := ProbeInvoke(proc, k, n)
				if _, err := rec.Record(inv); err != nil {
					out <- acked{p, -1, err}
					return
				}
				o := cl.Send(ctx, k, inv.Value.Value, cfg.Acks)
				done, _ := Complete(inv, Result{Send: o})
				if _, err := rec.Record(done); err != nil {
					out <- acked{p, -1, err}
					return
				}
				switch {
				case done.Type == history.OK:
					out <- acked{p, o.Offset, nil}
					return
				case rec.Since() >= until || ctx.Err() != nil:
					out <- acked{p, -1, nil}
					return
				case done.Type == history.Info:
					cl.Close()
					cl, proc = dial(ProbeOptions(cfg)), rec.NewProcess()
				}
				sleep(ctx, FinalReadBackoff)
			}
		}()
	}
	offsets := map[int32]int64{}
	var first error
	for range cfg.Partitions {
		a := <-out
		if a.err != nil && first == nil {
			first = a.err
		}
		if a.offset >= 0 {
			offsets[a.p] = a.offset
		}
	}
	return offsets, first
}

func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
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
		// An answer older than one heard (a zombie leader's) says nothing
		// of the partition now.
		if old, ok := md.Partitions[p]; !ok || s.Epoch >= old.Epoch {
			md.Partitions[p] = s
		}
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

// UnconvergedPartitions are the partitions of md (as Unconverged keeps it)
// without a leader and a full ISR, of the first partitions ones.
func UnconvergedPartitions(md Metadata, partitions int32) []int32 {
	var out []int32
	for p := int32(0); p < partitions; p++ {
		s, ok := md.Partitions[p]
		if !ok || s.Leader < 0 || len(s.ISR) != len(s.Replicas) {
			out = append(out, p)
		}
	}
	return out
}
