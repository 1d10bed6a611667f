package workload

import (
	"maps"
	"slices"
	"time"

	"github.com/chaos-isr/chaos/history"
)

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

// monitor samples every partition's leader, leader epoch, ISR, replicas
// and high watermark, and records each sample as a monitor operation
// (process history.MonitorProcess), so that a report can plot how the ISR
// and HW reacted to the faults.
//
// It asks through the same protocol a client would: Metadata from a broker
// (the one that answered last, else any: MonitorPeers), then ListOffsets
// from each leader, one partition after another, a sample every interval
// on a ticker's timing. A broker's metadata is the controller's view as
// that broker last heard it, so a broker cut off from the controller may
// report a stale ISR; a report reads the samples as "what clients were
// told", which is what matters to them. Requests time out after the
// client's timeout, so that a paused broker delays a sample rather than
// stopping the monitor.
type monitor struct {
	p       *Phases
	cl      *Client
	peers   MonitorPeers
	tick    *ticker
	stopped bool
	// The sample in progress: its metadata answer.
	md    Metadata
	mdErr error
}

// StartMonitor samples now and then every interval, until StopMonitor;
// each request waits up to timeout.
func (p *Phases) StartMonitor(interval, timeout time.Duration) {
	p.mon = &monitor{p: p, cl: p.newClient(ClientOptions{ID: "chaos-monitor", Timeout: timeout}),
		tick: newTicker(p.env.Now(), interval)}
	p.mon.sample()
}

// StopMonitor ends the monitor: a sample in flight keeps its open invoke,
// as what it got may be cut short by the stop rather than by the cluster.
func (p *Phases) StopMonitor() {
	if p.mon != nil {
		p.mon.stopped = true
		p.mon.cl.Close()
	}
}

func (m *monitor) sample() { m.partition(0) }

// partition records one invoke and one completion for partition p. The
// metadata is fetched once per sample, inside the first partition's
// operation, so that the operations' times bracket what they report.
func (m *monitor) partition(part int32) {
	if m.stopped {
		return
	}
	p := m.p
	inv := SampleInvoke(p.cfg, part)
	if !p.record(inv) {
		return
	}
	if part > 0 {
		m.leaderHW(inv)
		return
	}
	m.cl.Metadata(p.cfg.Topic, m.peers.Addrs(p.cfg.Bootstrap), func(md Metadata, err error) {
		m.peers.Heard(md, err)
		m.md, m.mdErr = md, err
		m.leaderHW(inv)
	})
}

// leaderHW asks the leader the sample's metadata named for its HW, rather
// than asking the brokers again. A leader that does not answer leaves the
// HW unknown: the sample still says who was supposed to lead.
func (m *monitor) leaderHW(inv history.Op) {
	if !SampleLeader(m.md, m.mdErr, inv.Value.Partition) {
		m.done(inv, nil)
		return
	}
	m.cl.EndOffset(inv.Key(), func(off int64, err error) {
		if err != nil {
			m.done(inv, nil)
			return
		}
		m.done(inv, history.Int64(off))
	})
}

func (m *monitor) done(inv history.Op, hw *int64) {
	p := m.p
	if m.stopped || !p.record(SampleDone(inv, m.md, m.mdErr, hw)) {
		return
	}
	if part := inv.Value.Partition + 1; part < p.cfg.Partitions {
		m.partition(part)
		return
	}
	now := p.env.Now()
	p.env.After(m.tick.next(now)-now, m.sample)
}
