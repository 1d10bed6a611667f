package workload

import (
	"time"

	"github.com/chaos-isr/chaos/history"
)

// Phases is a test's workload as one machine on its Env's loop: the
// workers that the Generator steps (StartWorkers), the monitor that
// samples the partitions throughout (StartMonitor), and the final phase
// after the faults heal (Final). Each is a chain of Client calls and
// timers, recorded into the history as it goes; both drivers run these
// same chains (Live in real time, package sim on its virtual clock), so
// that the rules of a run are written once.
//
// A history that cannot be written stops every phase: Err says why.
type Phases struct {
	env Env
	cfg Config
	rec *Recorder
	err error
	// onErr, if set, hears once that a history write failed.
	onErr func()

	// EndAtLimit: a worker waiting past the time limit stops at the
	// limit, as a real run's clock does not wait for it. A simulation
	// leaves it unset: its workers wake when their waits end, as they
	// always have, so that its seeds replay as they did.
	EndAtLimit bool

	gen     *Generator
	running int // workers that have not stopped
	workers []*slot
	members []*groupMember
	// lanesLeft counts the lanes of each session's client not yet
	// stopped.
	lanesLeft map[*Client]int
	stopped   bool // the workers were stopped (StopWorkers)
	mon       *monitor
	final     *finalPhase
}

// NewPhases is cfg's workload in env, recorded by rec.
func NewPhases(env Env, cfg Config, rec *Recorder) *Phases {
	return &Phases{env: env, cfg: cfg, rec: rec}
}

// Err is the first history write error, which stopped every phase.
func (p *Phases) Err() error { return p.err }

// record appends op to the history; a history that cannot be written
// stops every phase.
func (p *Phases) record(op history.Op) bool {
	if p.err != nil {
		return false
	}
	if _, err := p.rec.Record(op); err != nil {
		p.err = err
		if p.onErr != nil {
			p.onErr()
		}
		return false
	}
	return true
}

// newClient is a client of the test's cluster.
func (p *Phases) newClient(o ClientOptions) *Client { return NewClient(p.env, p.cfg.Bootstrap, o) }

// StartWorkers starts each worker of cfg's Generator: each steps it (Next,
// record, perform, record, Done) until it says stop, with a client of its
// own, and a new one for a process whose state became unknown, unless the
// worker is a lane of a producer session, whose client its lanes share
// and keep (the session's producer takes a new producer id itself after a
// send whose outcome is unknown, while the other lanes' requests go on).
// done is called once every worker has stopped.
func (p *Phases) StartWorkers(done func()) {
	p.gen = NewGenerator(p.cfg)
	p.running = p.gen.Workers()
	p.lanesLeft = map[*Client]int{}
	lanes := p.gen.Lanes()
	var sessions []*Client
	stopped := func() {
		if p.running--; p.running == 0 {
			done()
		}
	}
	for i := range p.gen.Workers() {
		if !p.gen.Producer(i) && p.cfg.Subscribe() {
			p.members = append(p.members, p.startMember(i, stopped))
			continue
		}
		wk := &slot{p: p, i: i, opts: ClientOptionsFor(p.cfg, p.gen, i), done: stopped}
		if p.gen.Producer(i) && lanes > 1 {
			if i%lanes == 0 {
				sessions = append(sessions, p.newClient(wk.opts))
			}
			wk.cl, wk.lane = sessions[i/lanes], true
			p.lanesLeft[wk.cl]++
		} else {
			wk.cl = p.newClient(wk.opts)
		}
		p.workers = append(p.workers, wk)
		wk.wake()
	}
}

// StopWorkers ends the workers at once, as an interrupted run must: their
// clients are closed, and an operation in flight keeps its open invoke
// (its outcome unknown, as docs/history.md allows a history's last
// operations). The done StartWorkers was given is not called.
func (p *Phases) StopWorkers() {
	p.stopped = true
	for _, wk := range p.workers {
		wk.cl.Close()
	}
	for _, m := range p.members {
		m.cl.Close()
	}
}

// slot is one worker of the generator with its client.
type slot struct {
	p    *Phases
	i    int
	opts ClientOptions
	cl   *Client
	lane bool
	done func()
}

func (wk *slot) wake() {
	p := wk.p
	if p.err != nil || p.stopped {
		return
	}
	now := p.env.Now()
	a := p.gen.Next(wk.i, now)
	switch a.Kind {
	case Stop:
		// A session's client is closed by the last of its lanes to stop:
		// the others may still have sends in flight on it.
		if p.lanesLeft[wk.cl]--; p.lanesLeft[wk.cl] <= 0 {
			wk.cl.Close()
		}
		wk.done()
	case Wait:
		until := a.Until
		if p.EndAtLimit {
			until = min(until, p.cfg.TimeLimit)
		}
		p.env.After(until-now, wk.wake)
	case Invoke:
		if p.record(a.Op) {
			wk.perform(a.Op)
		}
	}
}

// perform does the invoked operation op with the worker's client.
func (wk *slot) perform(op history.Op) {
	k := op.Key()
	done := func(r Result) { wk.complete(op, r) }
	switch op.F {
	case history.Send:
		wk.cl.Send(k, op.Value.Value, wk.p.cfg.Acks, func(o Outcome) { done(Result{Send: o}) })
	case history.Poll:
		wk.cl.Poll(k, *op.Value.From, func(r Read, err error) { done(Result{Read: r, Err: err}) })
	case history.EndOffset:
		wk.cl.EndOffset(k, func(off int64, err error) { done(Result{Offset: off, Err: err}) })
	default:
		panic("workload: the generator invoked " + op.F)
	}
}

func (wk *slot) complete(op history.Op, r Result) {
	p := wk.p
	done, c := Complete(op, r)
	if !p.record(done) {
		return
	}
	p.gen.Done(wk.i, p.env.Now(), c)
	if c.Type == history.Info && !wk.lane {
		wk.cl.Close()
		wk.cl = p.newClient(wk.opts)
	}
	wk.wake()
}

// ticker is time.Ticker's timing on the Env's clock, for the loops that
// wait on one (the monitor's samples, the final phase's convergence
// checks): ticks every period from start, and one tick that passes while
// its reader is busy waits for it; the others are dropped.
type ticker struct {
	start, period time.Duration
	// read is when the reader last took a tick (or the ticker started).
	read time.Duration
}

func newTicker(start, period time.Duration) *ticker {
	return &ticker{start: start, period: period, read: start}
}

// next is when a reader that asks at now gets its next tick: now if one
// passed since it took the last, else the next one. It takes that tick.
func (t *ticker) next(now time.Duration) time.Duration {
	k := (t.read-t.start)/t.period + 1
	tick := t.start + k*t.period
	if tick <= now {
		tick = now
	}
	t.read = tick
	return tick
}
