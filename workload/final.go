package workload

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/chaos-isr/chaos/history"
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
	cl := newClient(cfg.Bootstrap, cfg.RequestTimeout+2*time.Second, "chaos-final")
	defer cl.close()
	start := time.Now()
	conv := Convergence{}
	for {
		why := converged(ctx, cl, cfg)
		if why == "" {
			conv.Converged = true
			break
		}
		if time.Since(start) > timeout || ctx.Err() != nil {
			conv.Why = why
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	conv.Waited = time.Since(start)
	proc := rec.NewProcess()
	for p := int32(0); p < cfg.Partitions; p++ {
		k := history.Key{Topic: cfg.Topic, Partition: p}
		if err := finalRead(ctx, cl, rec, proc, k); err != nil {
			return conv, err
		}
		replicas := slices.Clone(cl.replicas[k])
		sort.Slice(replicas, func(i, j int) bool { return replicas[i] < replicas[j] })
		for _, b := range replicas {
			if err := replicaRead(ctx, cl, rec, proc, k, b); err != nil {
				return conv, err
			}
		}
	}
	return conv, nil
}

func converged(ctx context.Context, cl *client, cfg Config) string {
	if err := cl.refresh(ctx, cfg.Topic); err != nil {
		return err.Error()
	}
	var bad []string
	for p := int32(0); p < cfg.Partitions; p++ {
		k := history.Key{Topic: cfg.Topic, Partition: p}
		leader, ok := cl.leaders[k]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("%s: unknown", k))
		case leader < 0:
			bad = append(bad, fmt.Sprintf("%s: no leader (isr %v)", k, cl.isr[k]))
		case len(cl.isr[k]) != len(cl.replicas[k]):
			bad = append(bad, fmt.Sprintf("%s: isr %v of replicas %v", k, cl.isr[k], cl.replicas[k]))
		}
	}
	return strings.Join(bad, "; ")
}

// readAll reads k from offset 0 on broker id until a fetch returns nothing
// (debug reads) or the HW is reached (consumer reads).
func readAll(ctx context.Context, cl *client, id, replica int32, k history.Key) ([]history.Record, int64, error) {
	var all []history.Record
	var hw int64 = -1
	next := int64(0)
	for i := 0; i < 1_000_000; i++ {
		recs, h, code, err := fetch(ctx, cl, id, replica, k, next, 0)
		if err != nil {
			return all, hw, err
		}
		if code != 0 {
			return all, hw, fmt.Errorf("%s at offset %d", errorName(code), next)
		}
		if hw < 0 {
			hw = h
		}
		if len(recs) == 0 || (replica == consumerReplica && recs[len(recs)-1].Offset+1 >= hw) {
			all = append(all, recs...)
			return all, hw, nil
		}
		all = append(all, recs...)
		next = recs[len(recs)-1].Offset + 1
	}
	return all, hw, fmt.Errorf("%s: log too long to read", k)
}

func finalRead(ctx context.Context, cl *client, rec *Recorder, proc int, k history.Key) error {
	v := &history.Value{Topic: k.Topic, Partition: k.Partition}
	if _, err := rec.Record(history.Op{Process: proc, Type: history.Invoke, F: history.FinalRead, Value: v}); err != nil {
		return err
	}
	done := *v
	typ, errText := history.OK, ""
	leader, err := cl.leader(ctx, k)
	if err == nil {
		var recs []history.Record
		var hw int64
		recs, hw, err = readAll(ctx, cl, leader, consumerReplica, k)
		done.Records, done.HW = recs, history.Int64(hw)
	}
	if err != nil {
		typ, errText = history.Fail, err.Error()
		done.Records, done.HW = nil, nil
	}
	_, err = rec.Record(history.Op{Process: proc, Type: typ, F: history.FinalRead, Value: &done, Error: errText})
	return err
}

func replicaRead(ctx context.Context, cl *client, rec *Recorder, proc int, k history.Key, broker int32) error {
	v := &history.Value{Topic: k.Topic, Partition: k.Partition, Broker: history.Int32(broker)}
	if _, err := rec.Record(history.Op{Process: proc, Type: history.Invoke, F: history.ReplicaRead, Value: v}); err != nil {
		return err
	}
	done := *v
	typ, errText := history.OK, ""
	recs, hw, err := readAll(ctx, cl, broker, debugReplica, k)
	if err != nil {
		typ, errText = history.Fail, err.Error()
	} else {
		done.Records, done.HW = recs, history.Int64(hw)
	}
	_, err = rec.Record(history.Op{Process: proc, Type: typ, F: history.ReplicaRead, Value: &done, Error: errText})
	return err
}
