package workload

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

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
	m := &monitor{cfg: cfg, rec: rec, cl: newClient(cfg.Bootstrap, timeout, "chaos-monitor")}
	defer m.cl.close()
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

type monitor struct {
	cfg Config
	rec *Recorder
	cl  *client
	// last is the address that answered the last metadata request.
	last string
}

// sample records one invoke and one completion per partition. The
// metadata is fetched once per sample, inside the first partition's
// operation, so that the operations' times bracket what they report.
func (m *monitor) sample(ctx context.Context) error {
	var mdErr error
	for p := int32(0); p < m.cfg.Partitions; p++ {
		if ctx.Err() != nil {
			return nil
		}
		k := history.Key{Topic: m.cfg.Topic, Partition: p}
		v := &history.Value{Topic: k.Topic, Partition: k.Partition}
		if _, err := m.rec.Record(history.Op{Process: history.MonitorProcess, Type: history.Invoke, F: history.Monitor, Value: v}); err != nil {
			return err
		}
		if p == 0 {
			mdErr = m.metadata(ctx)
		}
		done := *v
		typ, errText := history.OK, ""
		if leader, known := m.cl.leaders[k]; mdErr != nil || !known {
			typ = history.Fail
			if errText = "partition not in metadata"; mdErr != nil {
				errText = mdErr.Error()
			}
		} else {
			done.Sample = &history.Sample{Leader: history.Int32(leader), Epoch: history.Int32(m.cl.epochs[k]),
				ISR: slices.Clone(m.cl.isr[k]), Replicas: slices.Clone(m.cl.replicas[k])}
			if leader >= 0 && ctx.Err() == nil {
				// A leader that does not answer leaves the HW unknown:
				// the sample still says who was supposed to lead.
				if hw, err := listLatest(ctx, m.cl, k); err == nil {
					done.HW = history.Int64(hw)
				}
			}
		}
		if ctx.Err() != nil {
			// Stopped during the sample: what it got may be cut short by
			// the stop rather than by the cluster, so the invoke stays
			// open (unknown), as a history's last operations may, instead
			// of a failure that a report would draw as "no answer".
			return nil
		}
		if _, err := m.rec.Record(history.Op{Process: history.MonitorProcess, Type: typ, F: history.Monitor, Value: &done, Error: errText}); err != nil {
			return err
		}
	}
	return nil
}

// metadata refreshes the client's view of the topic, asking the broker that
// answered last first: a dead or paused broker costs a timeout per sample
// only until another one answers.
func (m *monitor) metadata(ctx context.Context) error {
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 12
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(m.cfg.Topic)
	req.Topics = append(req.Topics, t)
	var addrs []string
	if m.last != "" {
		addrs = append(addrs, m.last)
	}
	ids := make([]int32, 0, len(m.cl.addrs))
	for id := range m.cl.addrs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		addrs = append(addrs, m.cl.addrs[id])
	}
	addrs = append(addrs, m.cfg.Bootstrap...)
	md, addr, err := m.cl.metadata(ctx, addrs, req)
	if err != nil {
		return err
	}
	// Forget what the previous sample knew: a partition missing from this
	// answer must not be reported with old values.
	m.cl.leaders = nil
	m.cl.apply(m.cfg.Topic, md)
	// Fresh, so listLatest finds the leader here rather than asking every
	// broker again, a paused one first if it has the lowest id.
	m.cl.refreshed = time.Now()
	m.last = addr
	return nil
}
