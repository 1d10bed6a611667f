package nemesis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/chaos-isr/chaos/cluster"
	"github.com/chaos-isr/chaos/history"
	waitfor "github.com/chaos-isr/chaos/internal/wait"
	"github.com/chaos-isr/chaos/results"
)

// Runtime and Network are the cluster's: what process and network
// faults act on.
type (
	Runtime = cluster.Runtime
	Network = cluster.Network
)

// Recorder appends operations to the history.
type Recorder interface {
	Record(op history.Op) (history.Op, error)
}

// Leaders returns the current leader of each partition (-1: none).
type Leaders func(ctx context.Context) (map[int32]int32, error)

// Event is one fault window of a schedule: the type test.json keeps it
// as (results.PlannedFault), with its written form.
type Event = results.PlannedFault

// Schedule is the faults of a run, in start order, one at a time.
type Schedule []Event

// MinTimeLimit is the shortest time limit for which NewSchedule has a
// window, whatever the seed: a quiet period and a window of at least 3/4
// interval each, and half an interval after it for the cluster to heal
// while clients still run.
func MinTimeLimit(interval time.Duration) time.Duration { return 2 * interval }

// CoverTimeLimit is the shortest time limit whose schedule has a window
// for each of kinds fault kinds at interval, whatever the seed: window n
// ends by 2n periods of at most 1.25 intervals each, and must end half an
// interval before the limit. One kind needs MinTimeLimit only, as
// NewSchedule makes room for one window from there on.
func CoverTimeLimit(kinds int, interval time.Duration) time.Duration {
	if kinds <= 1 {
		return MinTimeLimit(interval)
	}
	return time.Duration(5*kinds+1) * interval / 2
}

// MinChosenInterval is the shortest interval FitInterval chooses: below a
// second a window is shorter than a broker's heartbeat and fetch rounds,
// and a fault that short tests little; a user may still ask for one.
const MinChosenInterval = time.Second

// chosenStep is the grain of a chosen interval: 5.7s, never 5.714285714s,
// so that the interval reads well in the run's header and its replay
// command.
const chosenStep = 100 * time.Millisecond

// FitInterval is the longest interval, at most longest, whose schedule
// gives each of kinds fault kinds a window within limit whatever the seed
// (CoverTimeLimit), in steps of 100ms below longest; ok is false when
// even MinChosenInterval leaves a kind without one, and the interval is
// then MinChosenInterval. It depends on nothing else, so that the same
// flags choose the same interval, and a run's replay its schedule.
func FitInterval(kinds int, limit, longest time.Duration) (interval time.Duration, ok bool) {
	if kinds < 1 || CoverTimeLimit(kinds, longest) <= limit {
		return longest, true
	}
	// CoverTimeLimit is (5k+1)/2 intervals (2 for one kind): the longest
	// interval that fits is the limit's share, rounded down.
	share := int64(5*kinds + 1)
	if kinds == 1 {
		share = 4
	}
	interval = time.Duration(2 * int64(limit) / share).Truncate(chosenStep)
	if interval < MinChosenInterval {
		return MinChosenInterval, false
	}
	return interval, true
}

// Overlap lets up to k kinds of faults overlap in s's windows: each
// window, with even odds from the seed, becomes a composite (see
// Composite) of its kind and up to k-1 other kinds of the list, started
// in turn and healed together at the window's end, so the final heal is
// never harder than one window's. Kinds that cannot overlap (composites
// themselves, lose-unsynced) are left alone; the windows' times and first
// kinds stay as s had them, so a list s covers stays covered.
func (s Schedule) Overlap(faults []string, k int, seed uint64) Schedule {
	if k < 2 {
		return s
	}
	rng := rand.New(rand.NewPCG(seed, 0x6f766572))
	out := slices.Clone(s)
	for i, ev := range out {
		if rng.IntN(2) == 0 {
			continue
		}
		kinds := []string{ev.Fault}
		for _, j := range rng.Perm(len(faults)) {
			if len(kinds) == k {
				break
			}
			if Composite(history.JoinFault(append(slices.Clone(kinds), faults[j])...)) == nil &&
				!strings.Contains(faults[j], history.FaultSep) && !strings.Contains(ev.Fault, history.FaultSep) {
				kinds = append(kinds, faults[j])
			}
		}
		out[i].Fault = history.JoinFault(kinds...)
	}
	return out
}

// Uncovered are the kinds of faults that have no window in s. A window
// that Overlap made a composite runs each of its parts, and covers them.
func (s Schedule) Uncovered(faults []string) []string {
	var out []string
	for _, f := range faults {
		if !slices.ContainsFunc(s, func(e Event) bool {
			return e.Fault == f || !strings.Contains(f, history.FaultSep) && slices.Contains(history.FaultParts(e.Fault), f)
		}) {
			out = append(out, f)
		}
	}
	return out
}

// NewSchedule alternates quiet periods and fault windows, each about
// interval long (±25%, seeded), until limit. The kinds fill the windows
// from a seeded shuffle of the list, shuffled again once used up, so that
// a run with room for as many windows as kinds injects every kind (a
// kind drawn at random each time could leave one out however long the
// run). The last window ends before limit-interval/2 so that the cluster
// heals while clients still run. From MinTimeLimit on there is at least
// one window for every seed: if the jitter left none, the first takes the
// shortest quiet period and length.
func NewSchedule(faults []string, interval, limit time.Duration, seed uint64) Schedule {
	if len(faults) == 0 || interval <= 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(seed, 0x6e656d65))
	jitter := func() time.Duration {
		return interval*3/4 + time.Duration(rng.Int64N(int64(interval)/2+1))
	}
	// The deck has a stream of its own, and the draw that once chose the
	// kind is still made: a seed's windows keep the times they had, and a
	// single kind's schedule stays what it was.
	deckRng := rand.New(rand.NewPCG(seed, 0x6465636b))
	var deck []string
	pick := func() string {
		rng.IntN(len(faults))
		if len(deck) == 0 {
			deck = slices.Clone(faults)
			deckRng.Shuffle(len(deck), func(i, j int) { deck[i], deck[j] = deck[j], deck[i] })
		}
		k := deck[0]
		deck = deck[1:]
		return k
	}
	var s Schedule
	t := jitter()
	for {
		d := jitter()
		if t+d > limit-interval/2 {
			break
		}
		s = append(s, Event{Fault: pick(), Start: t, End: t + d})
		t += d + jitter()
	}
	if len(s) == 0 && limit >= MinTimeLimit(interval) {
		short := interval * 3 / 4
		s = append(s, Event{Fault: pick(), Start: short, End: 2 * short})
	}
	return s
}

// Config is what the nemesis needs to know of the cluster.
type Config struct {
	Brokers     int
	Partitions  int32
	LagTimeMax  time.Duration // replica.lag.time.max.ms: slow-follower delays beyond it
	StopTimeout time.Duration // graceful stop before SIGKILL
	// LeaderWait is how long a fault aimed at a leader waits for the
	// partition to have one (default 5 s): right after an election or a
	// controller restart there may be none for a moment, and a fault
	// that gave up at once would be a window with no fault in it.
	LeaderWait time.Duration
	Seed       uint64
	// NoController: the cluster has no controller node to fault (an
	// external cluster named without one): node 0 is left out of every
	// fault, and the faults that need it are refused before the run.
	NoController bool
	// Names names node id (0 the controller, brokers 1..Brokers) in the
	// history and to the network; nil: cluster.NodeName. An external
	// cluster's nodes go by the names its user gave them.
	Names func(id int) string
	// BrokerIDs are the ids the cluster's metadata gives brokers 1..Brokers,
	// in order, where they differ from the nemesis's own (an external
	// cluster's ids may start at 0): leaders are found, and killed brokers
	// recorded, by these. Nil: the same.
	BrokerIDs []int32
	// Observe asks the cluster for the topic's partitions: a fault with
	// a trigger (KIND:EVENT...) watches them for its event. Nil: such a
	// fault cannot start, and its window says so.
	Observe Observe
	// TriggerPoll is how often an armed fault asks (default 10 ms).
	TriggerPoll time.Duration
	// Consumers are the workload's consumer group members, which the
	// client faults (crash-consumer) act on; nil: there are none.
	Consumers Consumers
	// Clients are the workload's clients, whose requests delay-client
	// holds on their way; nil: the run has none the nemesis can reach.
	Clients Clients
	// Producers are the workload's transactional sessions, which
	// pause-producer acts on; nil or none: there are none.
	Producers Producers
}

// Producers are the workload's transactional sessions, by number.
type Producers interface {
	// Sessions is how many there are.
	Sessions() int
	// Zombie pauses session i where it stands and has a new process
	// take its place with the same transactional id, and names the
	// paused one; Wake has the paused ones of slot i go on, as zombies.
	Zombie(i int) (string, error)
	Wake(i int) error
}

// Clients are the workload's own clients, as delay-client acts on them.
type Clients interface {
	// Hold has every request they send to broker id held on its way
	// (they time out; it arrives late), and says for how long.
	Hold(id int32) (string, error)
	// Release lifts broker id's hold.
	Release(id int32) error
}

// Consumers are the members of the workload's consumer group, by number.
type Consumers interface {
	// Members is how many there are.
	Members() int
	// Crash stops member i as a crashed process stops, and names it.
	Crash(i int) (string, error)
	// Restart has a new process take crashed member i's place.
	Restart(i int) error
	// Pause stops member i where it stands (no steps, no heartbeats),
	// and names it; Resume has it go on.
	Pause(i int) (string, error)
	Resume(i int) error
	// Coordinator is the broker id of the group's coordinator, as its
	// members were last told (FindCoordinator).
	Coordinator() (int32, error)
}

// Nemesis runs a schedule against a cluster.
type Nemesis struct {
	cfg     Config
	rt      Runtime
	net     Network
	leaders Leaders
	rec     Recorder
	rng     *rand.Rand

	mu      sync.Mutex
	killed  map[int]bool // nodes to restart at heal
	kills   []int32      // brokers the window starting now killed
	damages []int32      // and those whose data directory it damaged
	// stale are the brokers whose data directory a heal puts back as it
	// was at the window's start (stale-disk).
	stale   map[int]bool
	parts   []string // the kinds the open window started (a composite's, in order)
	paused  map[int]bool
	netHurt bool
	// zombieSessions are the transactional sessions this lane paused
	// (pause-producer), woken at the heal.
	zombieSessions map[int]bool
	// heldBrokers are the brokers whose requests from the workload's
	// clients this lane holds (delay-client), released at the heal.
	heldBrokers map[int]bool
	// clocked are the nodes whose clock this lane set wrong, set right at
	// the heal.
	clocked map[int]bool
	// crashedMembers and pausedMembers are the consumer group members to
	// restart and to resume at heal.
	crashedMembers, pausedMembers map[int]bool

	// window is the one open now, if any; its own lock, as n.mu is held
	// while a fault starts or heals, which can take seconds.
	winMu  sync.Mutex
	window *Window

	// shared is what the lanes of one nemesis share; lanes are the
	// nemeses that run the other lanes of an overlapping schedule (see
	// Lane), made on demand; lane is this one's number.
	shared *shared
	lanes  []*Nemesis
	lane   int
}

// shared is the state a nemesis's lanes have in common.
type shared struct {
	// recMu keeps an operation's invoke and completion together: two
	// lanes, and the cluster's own reports (RecordCrash), record from
	// goroutines of their own.
	recMu sync.Mutex
	// obsMu: one question to the cluster at a time (Config.Observe).
	obsMu sync.Mutex
	// failed is the first fault command that failed (see Stopped).
	failMu sync.Mutex
	failed error
}

// Window is a fault window as it stands: its fault, whether the fault has
// started yet (some take seconds to), what it hit or why it could not, and
// when it is due to heal.
type Window struct {
	Fault   string
	Started bool
	Targets []string
	Err     string
	End     time.Time
}

// Status describes the window in a few words for a progress line, e.g.
// "partition-leader broker-3, 4s left": the fault, its first targets (up
// to the "|" of a partition: the side cut off), why it failed if it did,
// and the time to its heal.
func (w Window) Status(now time.Time) string {
	var targets []string
	for _, t := range w.Targets {
		if t == "|" || len(targets) == 3 {
			break
		}
		if !strings.HasPrefix(t, "via ") {
			targets = append(targets, t)
		}
	}
	s := strings.Join(append([]string{w.Fault}, targets...), " ")
	switch {
	case !w.Started:
		s = "starting " + s
	case w.Err != "":
		s += " (failed: " + w.Err + ")"
	}
	if left := w.End.Sub(now); left > 0 {
		return fmt.Sprintf("%s, %ds left", s, int((left+time.Second-1)/time.Second))
	}
	return s + ", healing"
}

// Current returns the fault window open now, if any, so that a display
// can show the cause next to the effect.
func (n *Nemesis) Current() (Window, bool) {
	n.winMu.Lock()
	w := n.window
	n.winMu.Unlock()
	if w != nil {
		return *w, true
	}
	for _, l := range n.others() {
		if w, ok := l.Current(); ok {
			return w, true
		}
	}
	return Window{}, false
}

func (n *Nemesis) setWindow(w *Window) {
	n.winMu.Lock()
	n.window = w
	n.winMu.Unlock()
}

// New returns a nemesis. net may be nil if no network fault is scheduled.
func New(cfg Config, rt Runtime, net Network, leaders Leaders, rec Recorder) *Nemesis {
	if cfg.StopTimeout <= 0 {
		cfg.StopTimeout = 10 * time.Second
	}
	return newLane(cfg, rt, net, leaders, rec, &shared{}, 0)
}

// newLane is lane k's nemesis: its targets from a stream of its own (lane
// 0's the stream a nemesis always drew from).
func newLane(cfg Config, rt Runtime, net Network, leaders Leaders, rec Recorder, sh *shared, k int) *Nemesis {
	return &Nemesis{cfg: cfg, rt: rt, net: net, leaders: leaders, rec: rec,
		rng: rand.New(rand.NewPCG(cfg.Seed, 0x746172+uint64(k))), killed: map[int]bool{}, paused: map[int]bool{},
		crashedMembers: map[int]bool{}, pausedMembers: map[int]bool{}, heldBrokers: map[int]bool{}, zombieSessions: map[int]bool{}, clocked: map[int]bool{}, stale: map[int]bool{}, shared: sh, lane: k}
}

// Lane is the nemesis that runs lane i of an overlapping schedule
// (Schedule.Lanes): n itself for 0, else one that shares n's cluster,
// recorder and failures but draws its targets from a stream of its own
// and heals only what it did. A simulation drives each lane as Run does.
func (n *Nemesis) Lane(i int) *Nemesis {
	if i == 0 || n.lane != 0 {
		return n
	}
	n.winMu.Lock()
	defer n.winMu.Unlock()
	for len(n.lanes) < i {
		n.lanes = append(n.lanes, newLane(n.cfg, n.rt, n.net, n.leaders, n.rec, n.shared, len(n.lanes)+1))
	}
	return n.lanes[i-1]
}

// others are the lanes made beside n.
func (n *Nemesis) others() []*Nemesis {
	n.winMu.Lock()
	defer n.winMu.Unlock()
	return slices.Clone(n.lanes)
}

// Run carries out the schedule, measuring times from start, until it ends
// or ctx does. Each window is recorded as a start and a stop operation,
// also a window that ctx ends (an interrupt): see CloseEarly. A simulation
// does what Run does from its own event loop, on its virtual clock: Open
// and Step the window's start when it is due, then Close it.
func (n *Nemesis) Run(ctx context.Context, start time.Time, s Schedule) error {
	lanes := s.Lanes()
	if len(lanes) == 1 {
		return n.run(ctx, start, s)
	}
	errs := make([]error, len(lanes))
	var wg sync.WaitGroup
	for i, l := range lanes {
		ln := n.Lane(i)
		wg.Go(func() { errs[i] = ln.run(ctx, start, l) })
	}
	wg.Wait()
	for _, err := range errs {
		if errors.As(err, new(*Stopped)) {
			return err
		}
	}
	return errors.Join(errs...)
}

// run carries out one lane's schedule.
func (n *Nemesis) run(ctx context.Context, start time.Time, s Schedule) error {
	for _, ev := range s {
		if !sleepUntil(ctx, start.Add(ev.Start)) {
			return nil
		}
		o := n.Open(ev, start.Add(ev.End))
		for {
			wait, over, err := o.Step(ctx, time.Since(start))
			if err != nil {
				return err
			}
			if over || n.broken() != nil {
				break
			}
			// An interrupt ends the wait; the next step sees it.
			sleepUntil(ctx, time.Now().Add(wait))
		}
		if err := n.broken(); err != nil {
			// Heal at once what the failed start may have done; the
			// run stops here.
			if rerr := n.Close(ctx, ev.Fault); rerr != nil {
				return rerr
			}
			return &Stopped{Fault: ev.Fault, Err: err}
		}
		if !sleepUntil(ctx, start.Add(ev.End)) {
			return n.CloseEarly(ev.Fault)
		}
		// The window's end came before ctx's: its heal runs to the end
		// (a restart is bounded by the runtime's own start timeout), or
		// the time limit falling during a restart would leave a node
		// half started, neither down in the books nor up.
		if err := n.Close(context.WithoutCancel(ctx), ev.Fault); err != nil {
			return err
		}
		if err := n.broken(); err != nil {
			return &Stopped{Fault: ev.Fault, Err: err}
		}
	}
	return nil
}

// Stopped is why Run ended the schedule early: a fault command of the
// user's failed (the external runtime's: an error with a FaultCommand
// method). It fails the same way in every later window, so going on would
// only run a healthy cluster to the time limit and end UNKNOWN; the
// window was healed and recorded first.
type Stopped struct {
	Fault string
	Err   error
}

func (s *Stopped) Error() string {
	return fmt.Sprintf("stopped at the first failing fault command (in a %s window): %v", s.Fault, s.Err)
}

func (s *Stopped) Unwrap() error { return s.Err }

// commandFailure is a fault command that failed (cluster/external's
// CommandError), as the nemesis knows it without depending on the
// runtime.
type commandFailure interface {
	error
	FaultCommand() string
}

// note keeps the first fault command that failed in err, if any.
func (n *Nemesis) note(err error) {
	var cf commandFailure
	if err == nil || !errors.As(err, &cf) {
		return
	}
	sh := n.shared
	sh.failMu.Lock()
	if sh.failed == nil {
		sh.failed = cf
	}
	sh.failMu.Unlock()
}

// broken is the first fault command that failed, nil if none has.
func (n *Nemesis) broken() error {
	sh := n.shared
	sh.failMu.Lock()
	defer sh.failMu.Unlock()
	if sh.failed == nil {
		return nil
	}
	return sh.failed
}

// Close ends fault's window: it undoes the fault (restarting killed
// nodes) and records the window's stop.
func (n *Nemesis) Close(ctx context.Context, fault string) error {
	targets, err := n.heal(ctx, true)
	n.note(err)
	n.setWindow(nil)
	return n.recordStops(fault, targets, err)
}

// recordStops records the stop of fault's window: of each kind a
// composite started, latest first, all healed by the one heal.
func (n *Nemesis) recordStops(fault string, targets []string, err error) error {
	f, ok := Lookup(fault)
	if !ok || f.Parts == nil {
		// A triggered kind's window is its kind's: the guarantee model
		// judges kinds, and the start's targets say what fired it.
		k := Kind(fault)
		return n.record(history.StopF(k), k, targets, nil, err)
	}
	n.mu.Lock()
	parts := slices.Clone(n.parts)
	n.mu.Unlock()
	for i := len(parts) - 1; i >= 0; i-- {
		if rerr := n.record(history.StopF(parts[i]), parts[i], targets, nil, err); rerr != nil {
			return rerr
		}
	}
	return nil
}

// Opening is a fault window's start in progress. Starting a fault may take
// waits (for a partition to have a leader to aim at; for slowed followers
// to leave the ISR before their leader is killed; for a triggered fault's
// event, and the delay after it), so it goes in steps,
// and whoever drives the nemesis does the waiting on its own clock: Run on
// the wall clock, a simulation on its virtual one. Both make the same
// choices from the seed and record the same operations.
type Opening struct {
	n     *Nemesis
	ev    Event
	f     *Fault
	end   time.Time
	stage int
	at    aim
	// until is when a leader-aimed fault stops waiting for a leader.
	until   time.Duration
	targets []string
	err     error
	// A composite's: the part being started, and the index of the next.
	sub  *Opening
	next int
	// step is the index of a kind's next step after its start.
	step int
	// A triggered kind's: its trigger, its watch over the cluster, the
	// delay drawn, when it fires and what fired it.
	trig   *Trigger
	watch  *watch
	delay  time.Duration
	seenAt time.Duration
	fireAt time.Duration
	fired  string
}

// The stages of an Opening.
const (
	arming = iota // a triggered kind's: watching for its event
	firing        // and waiting out the delay after it
	aiming
	starting
	thenStep
	opened
)

// Open begins ev's window, due to close at end: Step starts its fault, or
// a composite's kinds in turn.
func (n *Nemesis) Open(ev Event, end time.Time) *Opening {
	n.mu.Lock()
	n.parts = nil
	n.mu.Unlock()
	if f, ok := Lookup(ev.Fault); ok && f.Parts != nil {
		return &Opening{n: n, ev: ev, f: f, end: end, until: -1}
	}
	return n.open(ev, end)
}

// open begins one kind's window.
func (n *Nemesis) open(ev Event, end time.Time) *Opening {
	n.setWindow(&Window{Fault: ev.Fault, End: end})
	o := &Opening{n: n, ev: ev, end: end, until: -1}
	n.mu.Lock()
	n.kills, n.damages = nil, nil
	n.mu.Unlock()
	f, ok := Lookup(ev.Fault)
	switch {
	case !ok:
		o.err = fmt.Errorf("unknown fault %q", ev.Fault)
	case f.Network && n.net == nil:
		o.err = fmt.Errorf("no network fabric")
	}
	o.f = f
	if ok && o.err == nil {
		if _, o.trig, o.err = parseTrigger(ev.Fault); o.err != nil {
			o.trig = nil
		}
	}
	return o
}

// Step takes the next steps of the start at time now (since the workload
// began, on the driver's clock) and returns how long to wait before the
// next Step, or over once the fault has started or failed to: its
// start-FAULT operation, with what it hit (and the brokers it killed) or
// why it could not, is then recorded. A start that ctx ends is over, with
// ctx's error. err is the recorder's: the history could not be written.
func (o *Opening) Step(ctx context.Context, now time.Duration) (wait time.Duration, over bool, err error) {
	if o.f != nil && o.f.Parts != nil {
		return o.stepParts(ctx, now)
	}
	n := o.n
	for o.stage != opened {
		if o.err == nil {
			o.err = ctx.Err()
		}
		if o.err != nil {
			break
		}
		switch o.stage {
		case arming:
			if o.trig == nil {
				o.stage = aiming
				continue
			}
			if wait, done := o.arm(ctx, now); !done {
				return wait, false, nil
			}
			o.stage = firing
		case firing:
			if now < o.fireAt {
				return o.fireAt - now, false, nil
			}
			// The event picked the target: no partition is drawn.
			o.stage = starting
		case aiming:
			if !o.f.LeaderAimed {
				o.stage = starting
				continue
			}
			if wait, aimed := o.aim(ctx, now); !aimed {
				return wait, false, nil
			}
		case starting:
			n.mu.Lock()
			t, err := o.f.start(n, o.at)
			n.mu.Unlock()
			o.targets, o.err = append(t, o.targets...), err
			if o.fired != "" {
				// The delay as the driver's clock kept it (a simulation's
				// timers have a millisecond's grain).
				o.targets = append(o.targets, fmt.Sprintf("%s, started %s after", o.fired, now-o.seenAt))
			}
			if o.stage = opened; o.err == nil && len(o.f.steps) > 0 {
				o.stage = thenStep
				return o.f.steps[0].wait(n), false, nil
			}
		case thenStep:
			n.mu.Lock()
			t, err := o.f.steps[o.step].do(n, o.at)
			n.mu.Unlock()
			o.targets, o.err, o.stage = append(o.targets, t...), err, opened
			if o.step++; err == nil && o.step < len(o.f.steps) {
				o.stage = thenStep
				return o.f.steps[o.step].wait(n), false, nil
			}
		}
	}
	o.stage = opened
	err = o.err
	n.note(err)
	w := &Window{Fault: o.ev.Fault, Started: true, Targets: o.targets, End: o.end}
	if err != nil {
		w.Err = err.Error()
	}
	n.setWindow(w)
	k := Kind(o.ev.Fault)
	n.mu.Lock()
	killed, damaged := n.kills, n.damages
	n.parts = append(n.parts, k)
	n.mu.Unlock()
	return 0, true, n.recordDamage(history.StartF(k), k, o.targets, killed, damaged, err)
}

// stepParts starts a composite's kinds in turn, part i a share i/(k+1)
// of the window after its start, each recorded as a window of its own
// (start-KIND) that lasts to the composite's end. A part still waiting
// when ctx ends is not started.
func (o *Opening) stepParts(ctx context.Context, now time.Duration) (time.Duration, bool, error) {
	parts := o.f.partNames
	for o.next < len(parts) {
		if o.sub == nil {
			at := o.ev.Start + time.Duration(o.next)*(o.ev.End-o.ev.Start)/time.Duration(len(parts)+1)
			triggered := strings.Contains(parts[o.next], triggerSep)
			if triggered {
				// Its event decides when it fires: it watches from
				// the moment the part before it has started.
				at = now
			}
			if ctx.Err() != nil {
				return 0, true, nil
			}
			if now < at {
				return at - now, false, nil
			}
			if now >= o.ev.End && (triggered || o.next > 0 && strings.Contains(parts[o.next-1], triggerSep)) {
				// An armed part waited out the window: what comes after
				// it would start only to be healed.
				return 0, true, nil
			}
			o.sub = o.n.open(Event{Fault: parts[o.next], Start: at, End: o.ev.End}, o.end)
		}
		wait, over, err := o.sub.Step(ctx, now)
		if err != nil || !over {
			return wait, over, err
		}
		o.sub = nil
		o.next++
	}
	return 0, true, nil
}

// aim picks a random partition and finds its leader, waiting up to
// LeaderWait for it to have one (right after an election or a controller
// restart there may be none for a moment, and a fault that gave up at once
// would be a window with no fault in it). It says whether it found one, or
// how long to wait before asking again; once the wait is up, o.err says
// why it found none.
func (o *Opening) aim(ctx context.Context, now time.Duration) (time.Duration, bool) {
	n := o.n
	if o.until < 0 {
		o.at.partition = n.rng.Int32N(max(n.cfg.Partitions, 1))
		wait := n.cfg.LeaderWait
		if wait <= 0 {
			wait = 5 * time.Second
		}
		o.until = now + wait
	}
	p := o.at.partition
	ls, err := n.leaders(ctx)
	if err != nil {
		err = fmt.Errorf("finding the leader of partition %d: %w", p, err)
	} else if l, ok := ls[p]; ok && l >= 0 {
		if b, known := n.brokerOf(l); known {
			o.at.leader, o.stage = b, starting
			return 0, true
		}
		err = fmt.Errorf("partition %d's leader is broker id %d, not one of the cluster's named brokers", p, l)
	} else {
		err = fmt.Errorf("partition %d has no leader", p)
	}
	if now >= o.until {
		o.err = fmt.Errorf("%w: %w", waitfor.ErrTimeout, err)
		return 0, true
	}
	return min(leaderPoll, o.until-now), false
}

// leaderPoll is how often a leader-aimed fault asks for the leader while
// it waits for one.
const leaderPoll = 200 * time.Millisecond

// CloseEarly ends a window that ctx cut short, so that the history never
// shows a fault without its end: it resumes paused nodes and heals the
// network, which takes no waiting, and records the window's stop. Killed
// nodes stay down (a restart waits for the node to listen, which an
// interrupted run should not): HealAll restarts them if the run goes on.
func (n *Nemesis) CloseEarly(fault string) error {
	targets, err := n.heal(context.Background(), false)
	n.mu.Lock()
	for _, id := range sortedKeys(n.killed) {
		targets = append(targets, n.name(id)+" left down")
	}
	for _, id := range n.crashed() {
		targets = append(targets, n.name(id)+" left down (crashed)")
	}
	n.mu.Unlock()
	n.setWindow(nil)
	return n.recordStops(fault, targets, err)
}

// sleepUntil waits until t, false if ctx ended first (or had already: a
// window the real clock reaches late, at the time limit, is not begun).
func sleepUntil(ctx context.Context, t time.Time) bool {
	if ctx.Err() != nil {
		return false
	}
	select {
	case <-ctx.Done():
		return false
	case <-time.After(time.Until(t)):
		return true
	}
}

// record writes a nemesis operation: an invoke and its info completion
// (a fault is neither ok nor failed for the checkers; the error, if any,
// says what could not be done). killed are the brokers a window's start
// killed, for the guarantee model.
func (n *Nemesis) record(f, fault string, targets []string, killed []int32, err error) error {
	return n.recordDamage(f, fault, targets, killed, nil, err)
}

func (n *Nemesis) recordDamage(f, fault string, targets []string, killed, damaged []int32, err error) error {
	v := &history.Value{FaultInfo: &history.FaultInfo{Fault: fault, Targets: targets, KilledBrokers: killed, DamagedBrokers: damaged}}
	n.shared.recMu.Lock()
	defer n.shared.recMu.Unlock()
	if _, rerr := n.rec.Record(history.Op{Process: history.NemesisProcess, Type: history.Invoke, F: f, Value: v}); rerr != nil {
		return rerr
	}
	if cmds := n.takeCommands(); len(cmds) > 0 {
		// The commands ran between the invoke and now: the completion
		// says what they did.
		fi := *v.FaultInfo
		fi.Commands = cmds
		v = &history.Value{FaultInfo: &fi}
	}
	op := history.Op{Process: history.NemesisProcess, Type: history.Info, F: f, Value: v}
	if err != nil {
		op.Error = err.Error()
	}
	_, rerr := n.rec.Record(op)
	return rerr
}

// HealAll undoes every fault still in effect, restarts the nodes that
// crashed (cluster.CrashWatcher) and records it; it records nothing when
// there is nothing to undo, so a run without faults calls it too.
func (n *Nemesis) HealAll(ctx context.Context) error {
	var targets []string
	var err error
	for _, l := range append(n.others(), n) {
		t, lerr := l.heal(ctx, true)
		targets, err = append(targets, t...), errors.Join(err, lerr)
	}
	if len(targets) == 0 && err == nil {
		return nil
	}
	if rerr := n.record("heal", "all", targets, nil, err); rerr != nil {
		return rerr
	}
	return err
}

// commandLog is a runtime that runs commands to fault the cluster (its
// network's too), and hands over those it ran since it was last asked.
type commandLog interface {
	TakeCommands() []history.Command
}

// takeCommands are the commands the runtime ran since the last record.
func (n *Nemesis) takeCommands() []history.Command {
	if c, ok := n.rt.(commandLog); ok {
		return c.TakeCommands()
	}
	return nil
}

// delayHow names the network's delay mechanism for the history, when it
// has one to name (the docker runtime falls back from netem to a rate
// limit on kernels without netem).
func (n *Nemesis) delayHow() []string {
	if m, ok := n.net.(interface{ DelayMechanism() string }); ok {
		return []string{"via " + m.DelayMechanism()}
	}
	return nil
}

// name names node id as the history and the network know it.
func (n *Nemesis) name(id int) string {
	if n.cfg.Names != nil {
		return n.cfg.Names(id)
	}
	return cluster.NodeName(id)
}

// brokerID is the id the cluster's metadata gives broker b.
func (n *Nemesis) brokerID(b int) int32 {
	if b >= 1 && b <= len(n.cfg.BrokerIDs) {
		return n.cfg.BrokerIDs[b-1]
	}
	return int32(b)
}

// brokerOf is the broker whose metadata id is id, if any.
func (n *Nemesis) brokerOf(id int32) (int, bool) {
	if n.cfg.BrokerIDs == nil {
		return int(id), id >= 1 && int(id) <= n.cfg.Brokers
	}
	i := slices.Index(n.cfg.BrokerIDs, id)
	return i + 1, i >= 0
}

func (n *Nemesis) brokers() []int {
	out := make([]int, n.cfg.Brokers)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

// randomBroker picks a live, unpaused broker.
func (n *Nemesis) randomBroker() (int, error) {
	var ok []int
	for _, b := range n.brokers() {
		if !n.killed[b] && !n.paused[b] {
			ok = append(ok, b)
		}
	}
	if len(ok) == 0 {
		return 0, fmt.Errorf("no broker is up")
	}
	return ok[n.rng.IntN(len(ok))], nil
}

// allNodes names the controller (if the cluster has one to fault) and
// every broker.
func (n *Nemesis) allNodes() []string {
	var nodes []string
	if !n.cfg.NoController {
		nodes = append(nodes, n.name(0))
	}
	for _, b := range n.brokers() {
		nodes = append(nodes, n.name(b))
	}
	return nodes
}

// someBrokers picks k brokers at random, in id order.
func (n *Nemesis) someBrokers(k int) []int {
	bs := n.brokers()
	n.rng.Shuffle(len(bs), func(i, j int) { bs[i], bs[j] = bs[j], bs[i] })
	bs = bs[:min(k, len(bs))]
	sort.Ints(bs)
	return bs
}

// each applies a process fault to every id, stopping at the first error.
func (n *Nemesis) each(ids []int, fault func(int) ([]string, error)) ([]string, error) {
	var targets []string
	for _, id := range ids {
		t, err := fault(id)
		targets = append(targets, t...)
		if err != nil {
			return targets, err
		}
	}
	return targets, nil
}

func (n *Nemesis) kill(id int) ([]string, error) {
	n.killed[id] = true
	err := n.rt.Kill(id)
	if err == nil && id != 0 {
		n.kills = append(n.kills, n.brokerID(id))
	}
	return []string{n.name(id)}, err
}

func (n *Nemesis) pause(id int) ([]string, error) {
	n.paused[id] = true
	return []string{n.name(id)}, n.rt.Pause(id)
}

func (n *Nemesis) partition(a, b []string) ([]string, error) {
	if n.net == nil {
		return nil, fmt.Errorf("no network fabric")
	}
	err := n.net.Partition(a, b)
	n.netHurt = true
	return []string{strings.Join(a, "+"), "|", strings.Join(b, "+")}, err
}

// heal resumes paused nodes, restarts killed ones (with restart) and heals
// the network, returning what it touched and the first error.
func (n *Nemesis) heal(ctx context.Context, restart bool) ([]string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var targets []string
	var first error
	note := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	// The network's error comes after the first of the processes', as
	// both are reported.
	var netErr error
	if n.netHurt && n.net != nil {
		netErr = n.net.HealAll()
		n.netHurt = false
		targets = append(targets, "network")
	}
	for _, id := range sortedKeys(n.paused) {
		delete(n.paused, id)
		if n.killed[id] {
			// Paused, then killed by another part of the window: there
			// is no process to resume, and the restart below starts one.
			continue
		}
		note(n.rt.Resume(id))
		targets = append(targets, "resume "+n.name(id))
	}
	for _, id := range sortedKeys(n.stale) {
		// Down again, its disk put back as it was, to restart below.
		delete(n.stale, id)
		disks, _ := n.rt.(cluster.Disks)
		if err := n.rt.Kill(id); err != nil || disks == nil {
			note(cmp.Or(err, errNoDisks))
			continue
		}
		n.killed[id] = true
		note(disks.RestoreDisk(id))
		targets = append(targets, "kill "+n.name(id)+", restore its old disk")
	}
	for _, id := range sortedKeys(n.killed) {
		if !restart {
			break
		}
		if err := n.rt.Restart(ctx, id); err != nil {
			// Still down: the next heal (HealAll before the final
			// phase) tries again, and the history shows which did it.
			note(err)
			targets = append(targets, "restart "+n.name(id)+" failed")
			continue
		}
		targets = append(targets, "restart "+n.name(id))
		delete(n.killed, id)
	}
	for _, i := range sortedKeys(n.zombieSessions) {
		delete(n.zombieSessions, i)
		note(n.cfg.Producers.Wake(i))
		targets = append(targets, fmt.Sprintf("wake producer %d (a zombie)", i))
	}
	for _, id := range sortedKeys(n.clocked) {
		delete(n.clocked, id)
		if clocks, ok := n.rt.(cluster.Clocks); ok {
			note(clocks.SetClock(id, 0, 1))
			targets = append(targets, n.name(id)+" clock set right")
		}
	}
	for _, b := range sortedKeys(n.heldBrokers) {
		delete(n.heldBrokers, b)
		note(n.cfg.Clients.Release(n.brokerID(b)))
		targets = append(targets, "release requests to "+n.name(b))
	}
	for _, i := range sortedKeys(n.pausedMembers) {
		delete(n.pausedMembers, i)
		if n.crashedMembers[i] {
			continue // crashed too: restarted below
		}
		note(n.cfg.Consumers.Resume(i))
		targets = append(targets, fmt.Sprintf("resume consumer %d", i))
	}
	for _, i := range sortedKeys(n.crashedMembers) {
		if !restart {
			break
		}
		if err := n.cfg.Consumers.Restart(i); err != nil {
			note(err)
			continue
		}
		targets = append(targets, fmt.Sprintf("restart consumer %d", i))
		delete(n.crashedMembers, i)
	}
	for _, id := range n.crashed() {
		if !restart {
			break
		}
		note(n.rt.Restart(ctx, id))
		targets = append(targets, "restart "+n.name(id)+" (crashed)")
	}
	return targets, errors.Join(first, netErr)
}

// crashed are the nodes the runtime says died on their own and are down
// still, but for those the nemesis killed too (it restarts them anyway).
func (n *Nemesis) crashed() []int {
	w, ok := n.rt.(cluster.CrashWatcher)
	if !ok || n.lane != 0 {
		// Lane 0 restarts them: two lanes restarting one node would
		// race.
		return nil
	}
	var out []int
	for _, id := range w.Crashed() {
		if !n.killed[id] {
			out = append(out, id)
		}
	}
	return out
}

// RecordCrash records a node's crash, as the runtime reported it
// (cluster.CrashWatcher), in the history: an invoke and its info
// completion at once, by history.ClusterProcess, naming the node as the
// nemesis names it and, for a broker, its broker id. The next heal
// restarts the node. Safe to call from any goroutine.
func (n *Nemesis) RecordCrash(c cluster.Crash) error {
	v := &history.Value{CrashInfo: &history.CrashInfo{Node: n.name(c.ID), Exit: c.Exit, Panic: c.Panic, Stack: c.Stack, Log: c.Log}}
	if c.ID != 0 {
		v.Broker = history.Int32(n.brokerID(c.ID))
	}
	return n.recordCluster(history.Crash, v)
}

// recordCluster records what the cluster reported of itself, an invoke
// and its info completion at once: the two are one record, and another
// report's must not come between.
func (n *Nemesis) recordCluster(f string, v *history.Value) error {
	n.shared.recMu.Lock()
	defer n.shared.recMu.Unlock()
	if _, err := n.rec.Record(history.Op{Process: history.ClusterProcess, Type: history.Invoke, F: f, Value: v}); err != nil {
		return err
	}
	_, err := n.rec.Record(history.Op{Process: history.ClusterProcess, Type: history.Info, F: f, Value: v})
	return err
}

// RecordViolation records a breach of the ISR invariant the simulator
// watches (history.Invariant): broker b (a node number) of the topic's
// partition, and what it lacked or held.
func (n *Nemesis) RecordViolation(b int, topic string, partition int32, what string) error {
	return n.recordCluster(history.Invariant, &history.Value{Topic: topic, Partition: partition, Broker: history.Int32(n.brokerID(b)), Value: what})
}

func sortedKeys(m map[int]bool) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}
