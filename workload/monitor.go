package workload

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/chaos-isr/chaos/history"
)

// Monitor samples every partition's leader, leader epoch, ISR, replicas
// and high watermark every interval until ctx ends, and records each sample
// as a monitor operation (process history.MonitorProcess), so that a report
// can plot how the ISR and HW reacted to the faults.
//
// It asks through the same protocol a client would: Metadata from a broker
// (the one that answered last, else any), then ListOffsets from the leader.
// A broker's metadata is the controller's view as that broker last heard
// it, so a broker cut off from the controller may report a stale ISR; the
// monitor prefers the broker that answered last, and a report reads the
// samples as "what clients were told", which is what matters to them.
// Requests time out after timeout so that a paused broker delays a sample
// rather than stopping the monitor; Monitor returns as soon as ctx ends
// (a request in flight is abandoned and its sample stays an open invoke),
// so it does not hold up a run's shutdown.
func Monitor(ctx context.Context, cfg Config, rec *Recorder, interval, timeout time.Duration) error {
	if interval <= 0 {
		return fmt.Errorf("monitor interval must be positive, got %s", interval)
	}
	cl := TCP(cfg.Bootstrap)(ClientOptions{ID: "chaos-monitor", Timeout: timeout})
	defer cl.Close()
	return monitor(ctx, cfg, rec, cl, interval)
}

func monitor(ctx context.Context, cfg Config, rec *Recorder, cl Client, interval time.Duration) error {
	m := &sampler{cfg: cfg, rec: rec, cl: cl}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := m.sample(ctx); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

type sampler struct {
	cfg   Config
	rec   *Recorder
	cl    Client
	peers MonitorPeers
}

// sample records one invoke and one completion per partition. The
// metadata is fetched once per sample, inside the first partition's
// operation, so that the operations' times bracket what they report.
func (m *sampler) sample(ctx context.Context) error {
	var md Metadata
	var mdErr error
	for p := int32(0); p < m.cfg.Partitions; p++ {
		if ctx.Err() != nil {
			return nil
		}
		inv := SampleInvoke(m.cfg, p)
		if _, err := m.rec.Record(inv); err != nil {
			return err
		}
		if p == 0 {
			md, mdErr = m.cl.Metadata(ctx, m.cfg.Topic, m.peers.Addrs(m.cfg.Bootstrap)...)
			m.peers.Heard(md, mdErr)
		}
		var hw *int64
		if SampleLeader(md, mdErr, p) && ctx.Err() == nil {
			// A leader that does not answer leaves the HW unknown: the
			// sample still says who was supposed to lead. The client asks
			// the leader this metadata named, rather than asking the
			// brokers again, a paused one first if it has the lowest id.
			if off, err := m.cl.EndOffset(ctx, inv.Key()); err == nil {
				hw = history.Int64(off)
			}
		}
		if ctx.Err() != nil {
			// Stopped during the sample: what it got may be cut short by
			// the stop rather than by the cluster, so the invoke stays
			// open (unknown), as a history's last operations may, instead
			// of a failure that a report would draw as "no answer".
			return nil
		}
		if _, err := m.rec.Record(SampleDone(inv, md, mdErr, hw)); err != nil {
			return err
		}
	}
	return nil
}

// SampleInvoke is the invocation of a monitor sample of partition p.
func SampleInvoke(cfg Config, p int32) history.Op {
	v := &history.Value{Topic: cfg.Topic, Partition: p}
	return history.Op{Process: history.MonitorProcess, Type: history.Invoke, F: history.Monitor, Value: v}
}

// SampleLeader says whether the sample of partition p has a leader to ask
// for the HW: the metadata answer (md, or the error mdErr) names one.
func SampleLeader(md Metadata, mdErr error, p int32) bool {
	s, known := md.Partitions[p]
	return mdErr == nil && known && s.Leader >= 0
}

// SampleDone is the completion of the sample invoked as inv, from the
// sample's metadata answer (md, or the error mdErr) and the leader's HW
// (nil when unknown).
func SampleDone(inv history.Op, md Metadata, mdErr error, hw *int64) history.Op {
	done := *inv.Value
	typ, errText := history.OK, ""
	if s, known := md.Partitions[inv.Value.Partition]; mdErr != nil || !known {
		typ = history.Fail
		if errText = "partition not in metadata"; mdErr != nil {
			errText = mdErr.Error()
		}
	} else {
		done.Sample = &history.Sample{Leader: history.Int32(s.Leader), Epoch: history.Int32(s.Epoch),
			ISR: slices.Clone(s.ISR), Replicas: slices.Clone(s.Replicas)}
		done.HW = hw
	}
	return history.Op{Process: history.MonitorProcess, Type: typ, F: history.Monitor, Value: &done, Error: errText}
}

// MonitorPeers are whom the monitor asks for metadata: the broker that
// answered last first, then every broker any answer listed, by id, then
// the bootstrap brokers. A dead or paused broker costs a timeout per
// sample only until another one answers. Each sample reports its own
// answer alone: a partition missing from it must not be reported with
// old values.
type MonitorPeers struct {
	last  string
	known map[int32]string
}

// Addrs are the addresses to ask, in order.
func (m *MonitorPeers) Addrs(bootstrap []string) []string {
	var addrs []string
	if m.last != "" {
		addrs = append(addrs, m.last)
	}
	for _, id := range slices.Sorted(maps.Keys(m.known)) {
		addrs = append(addrs, m.known[id])
	}
	return append(addrs, bootstrap...)
}

// Heard takes a metadata answer in (or the error of a request no one
// answered).
func (m *MonitorPeers) Heard(md Metadata, err error) {
	if err != nil {
		return
	}
	if m.known == nil {
		m.known = map[int32]string{}
	}
	maps.Copy(m.known, md.Brokers)
	m.last = md.From
}
