package workload

import (
	"errors"
	"time"

	"github.com/chaos-isr/chaos/history"
)

// Phases is a test's workload as one machine on its Env's loop: the
// workers of its Workload (StartWorkers), the monitor that
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

	wl      Workload
	holds   *Holds
	stopped bool // the workers were stopped (StopWorkers)
	mon     *monitor
	final   *Final
}

// NewPhases is workload w of cfg in env, recorded by rec.
func NewPhases(env Env, cfg Config, rec *Recorder, w Workload) *Phases {
	return &Phases{env: env, cfg: cfg, rec: rec, wl: w, holds: &Holds{}}
}

// Err is the first history write error, which stopped every phase.
func (p *Phases) Err() error { return p.err }

// record appends op to the history; a history that cannot be written
// stops every phase.
func (p *Phases) record(op history.Op) bool {
	if p.err != nil {
		closeSpool(op)
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

// closeSpool gives back the spool of a read that will not be recorded.
func closeSpool(op history.Op) {
	if op.Value != nil {
		_ = op.Value.Spool.Close() // its file is unlinked: nothing is lost
	}
}

// newClient is a client of the test's cluster.
func (p *Phases) newClient(o ClientOptions) *Client {
	cl := NewClient(p.env, p.cfg.Bootstrap, o)
	cl.holds = p.holds
	return cl
}

// StartWorkers starts the workload's workers (Workload.Start); done is
// called once every one has stopped at the time limit.
func (p *Phases) StartWorkers(done func()) { p.wl.Start(p, done) }

// StopWorkers ends the workers at once, as an interrupted run must: their
// clients are closed, and an operation in flight keeps its open invoke
// (its outcome unknown, as docs/history.md allows a history's last
// operations). The done StartWorkers was given is not called.
func (p *Phases) StopWorkers() {
	p.stopped = true
	p.wl.Stop()
}

// Stopped says whether the workers were stopped (StopWorkers) or a
// history write failed: a workload's workers do nothing more.
func (p *Phases) Stopped() bool { return p.stopped || p.err != nil }

// Env is the world the phases run in.
func (p *Phases) Env() Env { return p.env }

// Config is the workload's configuration.
func (p *Phases) Config() Config { return p.cfg }

// Recorder is the history's recorder (for new process ids).
func (p *Phases) Recorder() *Recorder { return p.rec }

// Record appends op to the history; false once a history write has
// failed, which stops every phase.
func (p *Phases) Record(op history.Op) bool { return p.record(op) }

// NewClient is a client of the test's cluster.
func (p *Phases) NewClient(o ClientOptions) *Client { return p.newClient(o) }

// Wait is d, or less if the phases end the workload at its time limit
// (EndAtLimit) and d would wait past it.
func (p *Phases) Wait(d time.Duration) time.Duration {
	if p.EndAtLimit {
		d = min(d, p.cfg.TimeLimit-p.env.Now())
	}
	return max(d, 0)
}

// The consumer group's members, when the workload has a group: what the
// nemesis's group faults act on (nemesis.Consumers).

// Members is how many members the workload's group has (0 without one).
func (p *Phases) Members() int {
	if g, ok := p.wl.(GroupMembers); ok {
		return g.Members()
	}
	return 0
}

// Crash crashes member i (see GroupMembers).
func (p *Phases) Crash(i int) (string, error) {
	if g, ok := p.wl.(GroupMembers); ok {
		return g.Crash(i)
	}
	return "", errNoGroup
}

// Restart restarts crashed member i (see GroupMembers).
func (p *Phases) Restart(i int) error {
	if g, ok := p.wl.(GroupMembers); ok {
		return g.Restart(i)
	}
	return errNoGroup
}

// Pause pauses member i (see GroupMembers).
func (p *Phases) Pause(i int) (string, error) {
	if g, ok := p.wl.(GroupMembers); ok {
		return g.Pause(i)
	}
	return "", errNoGroup
}

// Resume resumes paused member i (see GroupMembers).
func (p *Phases) Resume(i int) error {
	if g, ok := p.wl.(GroupMembers); ok {
		return g.Resume(i)
	}
	return errNoGroup
}

// Coordinator is the group's coordinator as its members know it (see
// GroupMembers).
func (p *Phases) Coordinator() (int32, error) {
	if g, ok := p.wl.(GroupMembers); ok {
		return g.Coordinator()
	}
	return -1, errNoGroup
}

var errNoGroup = errors.New("the workload has no consumer group (--sub-via subscribe)")

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

// The workload's transactional sessions, when it has them: what the
// nemesis's pause-producer acts on (nemesis.Producers).

var errNoSessions = errors.New("the workload has no transactional sessions (pause-producer needs --workload txn)")

// Sessions is how many transactional sessions the workload runs (0
// without any).
func (p *Phases) Sessions() int {
	if s, ok := p.wl.(TxnSessions); ok {
		return s.Sessions()
	}
	return 0
}

// Zombie pauses session i and starts its next incarnation (see
// TxnSessions).
func (p *Phases) Zombie(i int) (string, error) {
	if s, ok := p.wl.(TxnSessions); ok {
		return s.Zombie(i)
	}
	return "", errNoSessions
}

// Wake has the paused sessions of slot i go on (see TxnSessions).
func (p *Phases) Wake(i int) error {
	if s, ok := p.wl.(TxnSessions); ok {
		return s.Wake(i)
	}
	return errNoSessions
}
