package sim

import (
	"context"
	"errors"
	"time"

	"github.com/chaos-isr/chaos/nemesis"
)

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
		Consumers:  s.phases, Clients: s.phases, Producers: s.phases,
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
