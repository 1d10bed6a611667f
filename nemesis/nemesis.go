package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/chaos-isr/chaos/history"
)

// Runtime controls the cluster's processes. Node 0 is the controller,
// brokers are 1..n.
type Runtime interface {
	Kill(id int) error
	Stop(id int, timeout time.Duration) error
	Restart(ctx context.Context, id int) error
	Pause(id int) error
	Resume(id int) error
}

// Network controls the links between nodes, named "controller" and
// "broker-N". Clients are never cut off: the faults are between nodes.
type Network interface {
	// Partition cuts every link between the two groups, both ways.
	Partition(a, b []string)
	// Slow delays both directions of the links from one node to another.
	Slow(from, to string, d time.Duration)
	// OneWay drops every packet from a node of from to a node of to.
	OneWay(from, to []string)
	// DelayAll adds latency to every link; DropAll resets connections
	// with probability p per chunk of bytes.
	DelayAll(d time.Duration)
	DropAll(p float64, seed uint64)
	// HealAll removes every network fault.
	HealAll()
}

// Recorder appends operations to the history.
type Recorder interface {
	Record(op history.Op) (history.Op, error)
}

// Leaders returns the current leader of each partition (-1: none).
type Leaders func(ctx context.Context) (map[int32]int32, error)

// Faults is every fault the nemesis knows, with what it does. A name is
// also its fault kind for the guarantee model (checker.FaultClass), which
// reads the kinds that ran from the start-FAULT operations the nemesis
// records.
var Faults = map[string]string{
	"kill":                 "kill -9 a random broker, restart it at the end of the window",
	"kill-leader":          "kill -9 the leader of a random partition, restart it at the end",
	"kill-controller":      "kill -9 the controller, restart it at the end",
	"kill-majority":        "kill -9 a random majority of the brokers, restart them at the end",
	"kill-minority":        "kill -9 a random minority of the brokers (at least one), restart them at the end",
	"kill-all":             "kill -9 every broker, restart them at the end",
	"pause-majority":       "pause a random majority of the brokers, resume them at the end",
	"isolate":              "cut a random node (broker or controller) off from every other node",
	"majority-ring":        "cut links so that every node sees a majority, but no two nodes the same one",
	"one-way":              "drop every packet from one random node to another, not the way back",
	"latency":              "delay every link between nodes by 50ms each way",
	"drop":                 "reset connections between nodes at random (2% of deliveries)",
	"stop":                 "stop a random broker gracefully (SIGTERM), restart it at the end",
	"pause":                "pause a random broker (SIGSTOP), resume it at the end",
	"pause-leader":         "pause the leader of a random partition, resume it at the end",
	"partition":            "split the nodes (brokers and controller) into two random halves",
	"partition-leader":     "cut the leader of a random partition off from every other node (clients still reach it)",
	"partition-controller": "cut the controller off from every broker",
	"slow-follower":        "delay a follower's links to its leader beyond replica.lag.time.max.ms",
	"lose-unsynced":        "kill -9 a random broker that keeps unsynced writes in memory, losing them; restart it at the end",
	// The 2013 Jepsen finding (docs/guarantees.md, scenarios 2 and 3) needs two
	// steps in order, so it is one fault.
	"slow-followers-kill-leader": "slow every follower of a partition until the ISR is the leader alone, then kill -9 the leader; restart and heal at the end",
}

// Names returns the fault names, sorted.
func Names() []string {
	var out []string
	for n := range Faults {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Parse splits a comma list of fault names and checks each one. "none"
// (alone) means no faults.
func Parse(list string) ([]string, error) {
	list = strings.TrimSpace(list)
	if list == "" || list == "none" {
		return nil, nil
	}
	var out []string
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if _, ok := Faults[f]; !ok {
			return nil, fmt.Errorf("unknown nemesis %q; known: none, %s", f, strings.Join(Names(), ", "))
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out, nil
}

// NeedsNetwork reports whether any of the faults cuts or slows links.
func NeedsNetwork(faults []string) bool {
	for _, f := range faults {
		switch {
		case strings.HasPrefix(f, "partition"), strings.HasPrefix(f, "slow-follower"),
			f == "isolate", f == "majority-ring", f == "one-way", f == "latency", f == "drop":
			return true
		}
	}
	return false
}

// Event is one fault window of a schedule.
type Event struct {
	Fault string        `json:"fault"`
	Start time.Duration `json:"start"` // since the workload started
	End   time.Duration `json:"end"`
}

// Schedule is the faults of a run, in start order, one at a time.
type Schedule []Event

// NewSchedule alternates quiet periods and fault windows, each about
// interval long (±25%, seeded), until limit; faults are drawn from the list
// at random. The last window ends before limit so that the cluster heals
// while clients still run.
func NewSchedule(faults []string, interval, limit time.Duration, seed uint64) Schedule {
	if len(faults) == 0 || interval <= 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(seed, 0x6e656d65))
	jitter := func() time.Duration {
		return interval*3/4 + time.Duration(rng.Int64N(int64(interval)/2+1))
	}
	var s Schedule
	t := jitter()
	for {
		d := jitter()
		if t+d > limit-interval/2 {
			return s
		}
		s = append(s, Event{Fault: faults[rng.IntN(len(faults))], Start: t, End: t + d})
		t += d + jitter()
	}
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
	paused  map[int]bool
	netHurt bool

	// window is the one open now, if any; its own lock, as n.mu is held
	// while a fault starts or heals, which can take seconds.
	winMu  sync.Mutex
	window *Window
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

// Current returns the fault window open now, if any, so that a display
// can show the cause next to the effect.
func (n *Nemesis) Current() (Window, bool) {
	n.winMu.Lock()
	defer n.winMu.Unlock()
	if n.window == nil {
		return Window{}, false
	}
	return *n.window, true
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
	return &Nemesis{cfg: cfg, rt: rt, net: net, leaders: leaders, rec: rec,
		rng: rand.New(rand.NewPCG(cfg.Seed, 0x746172)), killed: map[int]bool{}, paused: map[int]bool{}}
}

// Run carries out the schedule, measuring times from start, until it ends
// or ctx does. Each window is recorded as a start and a stop operation,
// also a window that ctx ends (an interrupt): see closeEarly.
func (n *Nemesis) Run(ctx context.Context, start time.Time, s Schedule) error {
	for _, ev := range s {
		if !sleepUntil(ctx, start.Add(ev.Start)) {
			return nil
		}
		n.setWindow(&Window{Fault: ev.Fault, End: start.Add(ev.End)})
		targets, err := n.startFault(ctx, ev.Fault)
		err = n.netErr(err)
		w := &Window{Fault: ev.Fault, Started: true, Targets: targets, End: start.Add(ev.End)}
		if err != nil {
			w.Err = err.Error()
		}
		n.setWindow(w)
		if rerr := n.record("start-"+ev.Fault, ev.Fault, targets, err); rerr != nil {
			return rerr
		}
		if !sleepUntil(ctx, start.Add(ev.End)) {
			return n.closeEarly(ev.Fault)
		}
		targets, err = n.heal(ctx, true)
		err = n.netErr(err)
		n.setWindow(nil)
		if rerr := n.record("stop-"+ev.Fault, ev.Fault, targets, err); rerr != nil {
			return rerr
		}
	}
	return nil
}

// closeEarly ends a window that ctx cut short, so that the history never
// shows a fault without its end: it resumes paused nodes and heals the
// network, which takes no waiting, and records the window's stop. Killed
// nodes stay down (a restart waits for the node to listen, which an
// interrupted run should not): HealAll restarts them if the run goes on.
func (n *Nemesis) closeEarly(fault string) error {
	targets, err := n.heal(context.Background(), false)
	n.mu.Lock()
	for _, id := range sortedKeys(n.killed) {
		targets = append(targets, NodeName(id)+" left down")
	}
	n.mu.Unlock()
	n.setWindow(nil)
	return n.record("stop-"+fault, fault, targets, n.netErr(err))
}

func sleepUntil(ctx context.Context, t time.Time) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(time.Until(t)):
		return true
	}
}

// record writes a nemesis operation: an invoke and its info completion
// (a fault is neither ok nor failed for the checkers; the error, if any,
// says what could not be done).
func (n *Nemesis) record(f, fault string, targets []string, err error) error {
	v := &history.Value{FaultInfo: &history.FaultInfo{Fault: fault, Targets: targets}}
	if _, rerr := n.rec.Record(history.Op{Process: history.NemesisProcess, Type: history.Invoke, F: f, Value: v}); rerr != nil {
		return rerr
	}
	op := history.Op{Process: history.NemesisProcess, Type: history.Info, F: f, Value: v}
	if err != nil {
		op.Error = err.Error()
	}
	_, rerr := n.rec.Record(op)
	return rerr
}

// HealAll undoes every fault still in effect and records it.
func (n *Nemesis) HealAll(ctx context.Context) error {
	targets, err := n.heal(ctx, true)
	err = n.netErr(err)
	if len(targets) == 0 && err == nil {
		return nil
	}
	if rerr := n.record("heal", "all", targets, err); rerr != nil {
		return rerr
	}
	return err
}

// netErr adds what the network failed to do to err: a Network whose
// faults can fail (the docker runtime's are commands run in containers)
// reports it through TakeErr, as its methods return nothing.
func (n *Nemesis) netErr(err error) error {
	if f, ok := n.net.(interface{ TakeErr() error }); ok {
		return errors.Join(err, f.TakeErr())
	}
	return err
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

// NodeName is how the nemesis, the network faults and the runtimes name
// node id: "controller" for node 0, "broker-N" for the brokers.
func NodeName(id int) string {
	if id == 0 {
		return "controller"
	}
	return fmt.Sprintf("broker-%d", id)
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

// leaderOf picks a random partition and returns its leader.
func (n *Nemesis) leaderOf(ctx context.Context) (int32, int, error) {
	p := n.rng.Int32N(max(n.cfg.Partitions, 1))
	wait := n.cfg.LeaderWait
	if wait <= 0 {
		wait = 5 * time.Second
	}
	deadline := time.Now().Add(wait)
	for {
		ls, err := n.leaders(ctx)
		if err == nil {
			if l, ok := ls[p]; ok && l >= 0 {
				return p, int(l), nil
			}
			err = fmt.Errorf("partition %d has no leader", p)
		} else {
			err = fmt.Errorf("finding the leader of partition %d: %w", p, err)
		}
		if time.Now().After(deadline) || !sleepUntil(ctx, time.Now().Add(200*time.Millisecond)) {
			return p, 0, err
		}
	}
}

func (n *Nemesis) startFault(ctx context.Context, fault string) ([]string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch fault {
	case "kill", "lose-unsynced":
		b, err := n.randomBroker()
		if err != nil {
			return nil, err
		}
		return n.kill(b)
	case "kill-leader":
		p, l, err := n.leaderOf(ctx)
		if err != nil {
			return nil, err
		}
		t, err := n.kill(l)
		return append(t, fmt.Sprintf("leader of partition %d", p)), err
	case "kill-controller":
		return n.kill(0)
	case "kill-majority":
		return n.each(n.someBrokers(len(n.brokers())/2+1), n.kill)
	case "kill-minority":
		return n.each(n.someBrokers(max((len(n.brokers())-1)/2, 1)), n.kill)
	case "kill-all":
		return n.each(n.brokers(), n.kill)
	case "pause-majority":
		return n.each(n.someBrokers(len(n.brokers())/2+1), n.pause)
	case "isolate":
		nodes := n.allNodes()
		x := nodes[n.rng.IntN(len(nodes))]
		var others []string
		for _, o := range nodes {
			if o != x {
				others = append(others, o)
			}
		}
		return n.partition([]string{x}, others)
	case "majority-ring":
		if n.net == nil {
			return nil, fmt.Errorf("no network fabric")
		}
		// Nodes in a random ring each keep links to the nearest half of
		// the others: a majority counting itself, different for each.
		ring := n.allNodes()
		n.rng.Shuffle(len(ring), func(i, j int) { ring[i], ring[j] = ring[j], ring[i] })
		k := len(ring)
		var cuts []string
		for i := 0; i < k; i++ {
			for j := i + 1; j < k; j++ {
				if d := min(j-i, k-(j-i)); d > (k-1)/2 {
					n.net.Partition([]string{ring[i]}, []string{ring[j]})
					cuts = append(cuts, ring[i]+"|"+ring[j])
				}
			}
		}
		n.netHurt = true
		return append([]string{"ring " + strings.Join(ring, ">")}, cuts...), nil
	case "one-way":
		if n.net == nil {
			return nil, fmt.Errorf("no network fabric")
		}
		nodes := n.allNodes()
		i := n.rng.IntN(len(nodes))
		j := (i + 1 + n.rng.IntN(len(nodes)-1)) % len(nodes)
		n.net.OneWay([]string{nodes[i]}, []string{nodes[j]})
		n.netHurt = true
		return []string{nodes[i] + " -> " + nodes[j] + " dropped"}, nil
	case "latency":
		if n.net == nil {
			return nil, fmt.Errorf("no network fabric")
		}
		n.net.DelayAll(50 * time.Millisecond)
		n.netHurt = true
		return append([]string{"all links", "50ms each way"}, n.delayHow()...), nil
	case "drop":
		if n.net == nil {
			return nil, fmt.Errorf("no network fabric")
		}
		n.net.DropAll(0.02, n.rng.Uint64())
		n.netHurt = true
		return []string{"all links", "2% resets"}, nil
	case "stop":
		b, err := n.randomBroker()
		if err != nil {
			return nil, err
		}
		n.killed[b] = true
		return []string{NodeName(b)}, n.rt.Stop(b, n.cfg.StopTimeout)
	case "pause":
		b, err := n.randomBroker()
		if err != nil {
			return nil, err
		}
		return n.pause(b)
	case "pause-leader":
		p, l, err := n.leaderOf(ctx)
		if err != nil {
			return nil, err
		}
		t, err := n.pause(l)
		return append(t, fmt.Sprintf("leader of partition %d", p)), err
	case "partition":
		nodes := n.allNodes()
		n.rng.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
		cut := 1 + n.rng.IntN(len(nodes)-1)
		a, b := nodes[:cut], nodes[cut:]
		sort.Strings(a)
		sort.Strings(b)
		return n.partition(a, b)
	case "partition-leader":
		p, l, err := n.leaderOf(ctx)
		if err != nil {
			return nil, err
		}
		a := []string{NodeName(l)}
		var b []string
		for _, x := range append([]int{0}, n.brokers()...) {
			if x != l {
				b = append(b, NodeName(x))
			}
		}
		t, err := n.partition(a, b)
		return append(t, fmt.Sprintf("leader of partition %d", p)), err
	case "partition-controller":
		var b []string
		for _, x := range n.brokers() {
			b = append(b, NodeName(x))
		}
		return n.partition([]string{"controller"}, b)
	case "slow-followers-kill-leader":
		if n.net == nil {
			return nil, fmt.Errorf("no network fabric")
		}
		p, l, err := n.leaderOf(ctx)
		if err != nil {
			return nil, err
		}
		d := max(n.cfg.LagTimeMax, time.Second)
		targets := append([]string{fmt.Sprintf("partition %d", p)}, n.delayHow()...)
		for _, b := range n.brokers() {
			if b != l {
				n.net.Slow(NodeName(b), NodeName(l), d)
				targets = append(targets, "slow "+NodeName(b))
			}
		}
		n.netHurt = true
		// The leader drops the slow followers from the ISR after the lag
		// time, checked every half of it; then it acknowledges alone.
		select {
		case <-ctx.Done():
			return targets, ctx.Err()
		case <-time.After(2*d + d/2):
		}
		t, err := n.kill(l)
		return append(targets, "then kill "+t[0]), err
	case "slow-follower":
		if n.net == nil {
			return nil, fmt.Errorf("no network fabric")
		}
		p, l, err := n.leaderOf(ctx)
		if err != nil {
			return nil, err
		}
		var followers []int
		for _, b := range n.brokers() {
			if b != l && !n.killed[b] {
				followers = append(followers, b)
			}
		}
		if len(followers) == 0 {
			return nil, fmt.Errorf("partition %d has no live follower", p)
		}
		f := followers[n.rng.IntN(len(followers))]
		// A fetch round trip of twice the lag limit keeps the follower
		// from ever catching up within it.
		d := max(n.cfg.LagTimeMax, time.Second)
		n.net.Slow(NodeName(f), NodeName(l), d)
		n.netHurt = true
		return append([]string{NodeName(f), "to " + NodeName(l), fmt.Sprintf("partition %d", p), "delay " + d.String()}, n.delayHow()...), nil
	}
	return nil, fmt.Errorf("unknown fault %q", fault)
}

// allNodes names the controller and every broker.
func (n *Nemesis) allNodes() []string {
	nodes := []string{"controller"}
	for _, b := range n.brokers() {
		nodes = append(nodes, NodeName(b))
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
	return []string{NodeName(id)}, n.rt.Kill(id)
}

func (n *Nemesis) pause(id int) ([]string, error) {
	n.paused[id] = true
	return []string{NodeName(id)}, n.rt.Pause(id)
}

func (n *Nemesis) partition(a, b []string) ([]string, error) {
	if n.net == nil {
		return nil, fmt.Errorf("no network fabric")
	}
	n.net.Partition(a, b)
	n.netHurt = true
	return []string{strings.Join(a, "+"), "|", strings.Join(b, "+")}, nil
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
	if n.netHurt && n.net != nil {
		n.net.HealAll()
		n.netHurt = false
		targets = append(targets, "network")
	}
	for _, id := range sortedKeys(n.paused) {
		note(n.rt.Resume(id))
		targets = append(targets, "resume "+NodeName(id))
		delete(n.paused, id)
	}
	for _, id := range sortedKeys(n.killed) {
		if !restart {
			break
		}
		note(n.rt.Restart(ctx, id))
		targets = append(targets, "restart "+NodeName(id))
		delete(n.killed, id)
	}
	return targets, first
}

func sortedKeys(m map[int]bool) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}
