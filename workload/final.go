package workload

import (
	"context"
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
func Final(ctx context.Context, cfg Config, rec *Recorder, timeout time.Duration) (Convergence, error) {
	cl := TCP(cfg.Bootstrap)(ClientOptions{ID: "chaos-final", Timeout: cfg.RequestTimeout + 2*time.Second})
	defer cl.Close()
	return final(ctx, cfg, rec, cl, timeout)
}

func final(ctx context.Context, cfg Config, rec *Recorder, cl Client, timeout time.Duration) (Convergence, error) {
	start := time.Now()
	conv := Convergence{}
	// md is the last metadata heard: the replicas to read are those it
	// names, even if the wait gave up.
	var md Metadata
	why := ""
	err := waitfor.Until(ctx, 200*time.Millisecond, timeout, func() (bool, error) {
		why = converged(ctx, cl, cfg.Topic, cfg.Partitions, &md)
		return why == "", nil
	})
	conv.Converged = err == nil
	if !conv.Converged {
		conv.Why = why
	}
	conv.Waited = time.Since(start)
	proc := rec.NewProcess()
	for p := int32(0); p < cfg.Partitions; p++ {
		k := history.Key{Topic: cfg.Topic, Partition: p}
		if err := read(rec, proc, history.FinalRead, k, nil, func() (Read, error) { return cl.FinalRead(ctx, k) }); err != nil {
			return conv, err
		}
		for _, b := range slices.Sorted(slices.Values(md.Partitions[p].Replicas)) {
			err := read(rec, proc, history.ReplicaRead, k, history.Int32(b), func() (Read, error) { return cl.ReplicaRead(ctx, k, b) })
			if err != nil {
				return conv, err
			}
		}
	}
	return conv, nil
}

// converged says what keeps topic's partitions from being converged, ""
// when nothing does. A metadata answer is kept in md.
func converged(ctx context.Context, cl Client, topic string, partitions int32, md *Metadata) string {
	got, err := cl.Metadata(ctx, topic)
	if err != nil {
		return err.Error()
	}
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

// read records one final-phase read of k (f, of broker's replica when
// broker is set) done by do.
func read(rec *Recorder, proc int, f string, k history.Key, broker *int32, do func() (Read, error)) error {
	v := &history.Value{Topic: k.Topic, Partition: k.Partition, Broker: broker}
	if _, err := rec.Record(history.Op{Process: proc, Type: history.Invoke, F: f, Value: v}); err != nil {
		return err
	}
	done := *v
	typ, errText := history.OK, ""
	if r, err := do(); err != nil {
		typ, errText = history.Fail, err.Error()
	} else {
		done.Records, done.HW = r.Records, history.Int64(r.HW)
	}
	_, err := rec.Record(history.Op{Process: proc, Type: typ, F: f, Value: &done, Error: errText})
	return err
}
