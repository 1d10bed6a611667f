package sim

import (
	"context"
	"errors"
	"time"

	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/nemesis"
	"github.com/chaos-isr/chaos/workload"
)

// monitor samples every partition's leader, ISR and HW into the history
// as workload.Monitor does, from the workload's start to the last final
// read: the metadata from the broker that answered last (else any), then
// each leader's HW, one partition after another; a sample every interval,
// on a ticker's timing.
type monitor struct {
	s       *simulation
	cl      *client
	peers   workload.MonitorPeers
	tick    *ticker
	stopped bool
	// The sample in progress: its metadata answer.
	md    workload.Metadata
	mdErr error
}

func newMonitor(s *simulation) *monitor {
	return &monitor{s: s, cl: newClient(s.w, workload.ClientOptions{ID: "chaos-monitor", Timeout: time.Second}),
		tick: newTicker(s.w.now(), s.spec.MonitorInterval)}
}

// stop ends the monitor: a sample in flight keeps its open invoke, as when
// a real monitor is stopped mid-sample.
func (m *monitor) stop() {
	m.stopped = true
	m.cl.close()
}

func (m *monitor) sample() { m.partition(0) }

func (m *monitor) partition(p int32) {
	if m.stopped {
		return
	}
	s := m.s
	inv := workload.SampleInvoke(s.cfg, p)
	if !s.record(inv) {
		return
	}
	if p > 0 {
		m.leaderHW(inv)
		return
	}
	m.cl.metadata(s.cfg.Topic, m.peers.Addrs(s.cfg.Bootstrap), func(md workload.Metadata, err error) {
		m.peers.Heard(md, err)
		m.md, m.mdErr = md, err
		m.leaderHW(inv)
	})
}

func (m *monitor) leaderHW(inv history.Op) {
	p := inv.Value.Partition
	if !workload.SampleLeader(m.md, m.mdErr, p) {
		m.done(inv, nil)
		return
	}
	m.cl.endOffset(inv.Key(), func(off int64, err error) {
		if err != nil {
			m.done(inv, nil)
			return
		}
		m.done(inv, history.Int64(off))
	})
}

func (m *monitor) done(inv history.Op, hw *int64) {
	if m.stopped || !m.s.record(workload.SampleDone(inv, m.md, m.mdErr, hw)) {
		return
	}
	if p := inv.Value.Partition + 1; p < m.s.cfg.Partitions {
		m.partition(p)
		return
	}
	now := m.s.w.now()
	m.s.w.after(m.tick.next(now)-now, m.sample)
}

// nemDriver carries out the nemesis's schedule as nemesis.Run does, one
// window after another: at its start the window's Opening is stepped
// (its waits on the virtual clock) until the fault has started, and at its
// end Close heals it. The nemesis itself makes every choice and records
// every operation.
type nemDriver struct {
	s        *simulation
	nem      *nemesis.Nemesis
	schedule nemesis.Schedule
	i        int              // the window due next, or open
	opening  *nemesis.Opening // a start in progress
	open     bool             // window i has started and not closed
	stopped  bool
	// others drive the other lanes of an overlapping schedule
	// (nemesis.Schedule.Lanes), each its lane's nemesis.
	others []*nemDriver
}

func newNemDriver(s *simulation) *nemDriver {
	st := s.spec.Settings
	n := nemesis.New(nemesis.Config{
		Brokers: s.spec.Nodes, Partitions: st.Partitions, Seed: s.spec.Seed,
		LagTimeMax: time.Duration(st.ReplicaLagTimeMaxMs) * time.Millisecond,
		Observe:    s.w.observe(s.cfg.Topic),
	}, runtime{s.w}, network{s.w}, s.w.leaders(s.cfg.Topic), s.rec)
	lanes := s.spec.Schedule().Lanes()
	d := &nemDriver{s: s, nem: n, schedule: lanes[0]}
	for i, l := range lanes[1:] {
		d.others = append(d.others, &nemDriver{s: s, nem: n.Lane(i + 1), schedule: l})
	}
	return d
}

// start schedules every lane's first window.
func (d *nemDriver) start() {
	d.next()
	for _, o := range d.others {
		o.next()
	}
}

// virtualEpoch is the wall time a window's end is given on the virtual
// clock (the nemesis shows it as when the window is due to heal).
var virtualEpoch = time.Unix(0, 0).UTC()

func (d *nemDriver) next() {
	if d.i >= len(d.schedule) {
		return
	}
	ev := d.schedule[d.i]
	d.s.w.after(ev.Start-d.s.w.now(), func() {
		if d.stopped {
			return
		}
		d.opening = d.nem.Open(ev, virtualEpoch.Add(ev.End))
		d.step(context.Background())
	})
}

func (d *nemDriver) step(ctx context.Context) {
	s := d.s
	wait, over, err := d.opening.Step(ctx, s.w.now())
	if err != nil {
		s.err = err
		return
	}
	if !over {
		s.w.after(wait, func() {
			if !d.stopped {
				d.step(context.Background())
			}
		})
		return
	}
	d.opening, d.open = nil, true
	ev := d.schedule[d.i]
	s.w.after(ev.End-s.w.now(), func() {
		if d.stopped {
			return
		}
		d.open = false
		if err := d.nem.Close(context.Background(), ev.Fault); err != nil {
			s.err = err
			return
		}
		d.i++
		d.next()
	})
}

// stopped is a context that has ended: what a start in progress sees when
// the nemesis stops.
var stopped = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// stop ends the schedule when the workload ends, as a real run cancels
// the nemesis: a start in progress ends with the context's error, and a
// window still open is closed at once, its killed brokers left down for
// HealAll.
func (d *nemDriver) stop() error {
	var errs []error
	for _, o := range d.others {
		errs = append(errs, o.stop())
	}
	return errors.Join(append(errs, d.stopLane())...)
}

func (d *nemDriver) stopLane() error {
	d.stopped = true
	if d.opening != nil {
		if _, _, err := d.opening.Step(stopped, d.s.w.now()); err != nil {
			return err
		}
		d.opening, d.open = nil, true
	}
	if d.open {
		d.open = false
		return d.nem.CloseEarly(d.schedule[d.i].Fault)
	}
	return nil
}

// final is the final phase, as workload.Final does it: wait (on a
// ticker's timing, recorded as a converge operation) until every
// partition has a leader and its whole replica set in the ISR, or the
// wait (at least the liveness bound after the last fault) passes; then
// probe every partition with sends until one is acknowledged, and read
// every partition from its leader (again while it fails, until the bound
// has passed) and every replica's whole log.
func (s *simulation) final() {
	cl := newClient(s.w, workload.ClientOptions{ID: "chaos-final", Timeout: s.cfg.RequestTimeout + 2*time.Second})
	start := s.w.now()
	wait := s.cfg.ConvergeWait(s.spec.ConvergeTimeout, s.rec.LastFault(), start)
	logf(s.opts, "final phase: waiting up to %s for the cluster to converge", wait)
	deadline := start + wait
	tick := newTicker(start, 200*time.Millisecond)
	proc := s.rec.NewProcess()
	inv := workload.ConvergeInvoke(proc, s.cfg.Topic)
	if !s.record(inv) {
		return
	}
	var md workload.Metadata
	over := func() {
		if !s.record(workload.ConvergeDone(inv, s.conv)) {
			return
		}
		reads := func(probes map[int32]int64) { s.finalReads(cl, proc, md, probes) }
		if s.cfg.Probes() {
			s.probe(reads)
			return
		}
		reads(nil)
	}
	var try func()
	try = func() {
		cl.converged(s.cfg.Topic, s.cfg.Partitions, &md, func(why string) {
			now := s.w.now()
			switch next := tick.next(now); {
			case why == "":
				s.conv = workload.Convergence{Converged: true, Waited: now - start}
			case now >= deadline || next >= deadline:
				s.w.after(deadline-now, func() {
					s.conv = workload.Convergence{Waited: s.w.now() - start, Why: why, Unconverged: workload.UnconvergedPartitions(md, s.cfg.Partitions)}
					over()
				})
				return
			default:
				s.w.after(next-now, try)
				return
			}
			over()
		})
	}
	try()
}

// probe sends to every partition at once, as workload.Final's probe does,
// each until a send is acknowledged or the phase stops trying, then calls
// next with the offsets of the probes acknowledged.
func (s *simulation) probe(next func(map[int32]int64)) {
	until := s.cfg.TryUntil(s.rec.LastFault(), s.w.now())
	left := int(s.cfg.Partitions)
	offsets := map[int32]int64{}
	for p := range s.cfg.Partitions {
		k := history.Key{Topic: s.cfg.Topic, Partition: p}
		cl, proc := newClient(s.w, workload.ProbeOptions(s.cfg)), s.rec.NewProcess()
		var attempt func(n int)
		attempt = func(n int) {
			inv := workload.ProbeInvoke(proc, k, n)
			if !s.record(inv) {
				return
			}
			cl.send(k, inv.Value.Value, s.cfg.Acks, func(o workload.Outcome) {
				done, _ := workload.Complete(inv, workload.Result{Send: o})
				if !s.record(done) {
					return
				}
				if done.Type == history.OK || s.w.now() >= until {
					if done.Type == history.OK {
						offsets[p] = o.Offset
					}
					if left--; left == 0 {
						next(offsets)
					}
					return
				}
				if done.Type == history.Info {
					cl.close()
					cl, proc = newClient(s.w, workload.ProbeOptions(s.cfg)), s.rec.NewProcess()
				}
				s.w.after(workload.FinalReadBackoff, func() { attempt(n + 1) })
			})
		}
		attempt(1)
	}
}

// finalReads records the final phase's reads (each partition from its
// leader, as workload.LeaderReads schedules them, then each replica's whole
// log), then stops the monitor and ends the simulation.
func (s *simulation) finalReads(cl *client, proc int, md workload.Metadata, probes map[int32]int64) {
	leaders := workload.NewLeaderReads(s.cfg, s.rec.LastFault(), s.w.now(), probes)
	var replicas []workload.FinalRead
	for _, fr := range workload.FinalReads(s.cfg, md) {
		if fr.Broker != nil {
			replicas = append(replicas, fr)
		}
	}
	var replica func(i int)
	var leader func()
	leader = func() {
		p, wait, ok := leaders.Next(s.w.now())
		if !ok {
			replica(0)
			return
		}
		s.w.after(wait, func() {
			inv := workload.FinalRead{Key: history.Key{Topic: s.cfg.Topic, Partition: p}}.Invoke(proc)
			if !s.record(inv) {
				return
			}
			cl.finalRead(inv.Key(), func(r workload.Read, err error) {
				if !s.record(workload.ReadDone(inv, r, err)) {
					return
				}
				leaders.Done(s.w.now(), r, err)
				leader()
			})
		})
	}
	replica = func(i int) {
		if i == len(replicas) {
			if s.mon != nil {
				s.mon.stop()
			}
			if s.conv.Converged {
				logf(s.opts, "converged after %s; final reads done", s.conv.Waited)
			} else {
				logf(s.opts, "did NOT converge within %s: %s", s.conv.Waited, s.conv.Why)
			}
			s.finished = true
			return
		}
		fr := replicas[i]
		inv := fr.Invoke(proc)
		if !s.record(inv) {
			return
		}
		cl.replicaRead(fr.Key, *fr.Broker, func(r workload.Read, err error) {
			if s.record(workload.ReadDone(inv, r, err)) {
				replica(i + 1)
			}
		})
	}
	leader()
}
