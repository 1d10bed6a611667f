package nemesis

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/chaos-isr/chaos/history"
)

// A trigger arms a leader-aimed fault on an event the tester sees through
// the protocol, instead of starting it when its window opens: the fault
// fires a delay after the event, aimed at a broker the event picks by its
// role. Written as a suffix of the kind, KIND:EVENT[/ROLE][~DELAY], e.g.
// kill-leader:leader-change~20ms ("kill the new leader 20 ms after its
// election") or partition-leader:isr-expand/joined~0..30ms ("cut the
// follower that just rejoined the ISR, 0 to 30 ms after"). The races of
// KAFKA-7128's class need a second failure within a round trip of an
// election or a rejoin, which a timer hits only by luck.
const (
	triggerSep = ":"
	roleSep    = "/"
	delaySep   = "~"
	rangeSep   = ".."
)

// TriggerEvent is an event a trigger can arm on, and the roles of the
// brokers it involves (the first is the default).
type TriggerEvent struct {
	Name  string
	Doc   string
	Roles []TriggerRole
}

// TriggerRole is a broker an event involves, which a triggered fault aims
// at in place of "the leader".
type TriggerRole struct {
	Name string
	Doc  string
	// who names the broker in a fault's targets (a format of the
	// partition).
	who string
}

// The events, as the nemesis sees them in successive metadata answers of
// the topic (the brokers' views of the controller's decisions).
const (
	LeaderChange = "leader-change"
	ISRShrink    = "isr-shrink"
	ISRExpand    = "isr-expand"
)

var triggerEvents = []TriggerEvent{
	{Name: LeaderChange, Doc: "a partition's leader epoch rose and it has a leader (an election)",
		Roles: []TriggerRole{{"new", "the new leader", "new leader of partition %d"}, {"old", "the leader before the election", "old leader of partition %d"}}},
	{Name: ISRShrink, Doc: "a partition's ISR lost a member",
		Roles: []TriggerRole{{"leader", "the partition's leader", "leader of partition %d"}, {"left", "the broker that left the ISR (the lowest id, if several)", "broker that left partition %d's ISR"}}},
	{Name: ISRExpand, Doc: "a broker joined a partition's ISR: a follower rejoining",
		Roles: []TriggerRole{{"joined", "the broker that joined (the lowest id, if several)", "follower that rejoined partition %d's ISR"}, {"leader", "the partition's leader", "leader of partition %d"}}},
}

// TriggerEvents lists the events a trigger can arm on.
func TriggerEvents() []TriggerEvent { return slices.Clone(triggerEvents) }

// Trigger is a parsed trigger: the event, the role of the broker the
// fault aims at, and the delay after the event, uniform in [Delay,
// DelayMax] (equal for a fixed delay).
type Trigger struct {
	Event    string
	Role     string
	Delay    time.Duration
	DelayMax time.Duration
}

// String is the trigger as written after the kind's ":", every part
// spelled out.
func (t Trigger) String() string {
	d := t.Delay.String()
	if t.DelayMax != t.Delay {
		d += rangeSep + t.DelayMax.String()
	}
	return t.Event + roleSep + t.Role + delaySep + d
}

// role is the trigger's role as the events table has it.
func (t Trigger) role() TriggerRole {
	for _, e := range triggerEvents {
		if e.Name == t.Event {
			for _, r := range e.Roles {
				if r.Name == t.Role {
					return r
				}
			}
		}
	}
	return TriggerRole{Name: t.Role}
}

// Kind is the fault kind name starts, without its trigger: what the
// history records and the guarantee model judges.
func Kind(name string) string { return history.FaultKind(name) }

// TriggerOf returns name's trigger, nil if it has none or it is not one
// the nemesis can arm (CheckTrigger says why).
func TriggerOf(name string) *Trigger {
	_, t, err := parseTrigger(name)
	if err != nil {
		return nil
	}
	return t
}

// CheckTrigger says why name's trigger cannot run, or nil if it can (or
// name has none).
func CheckTrigger(name string) error {
	_, _, err := parseTrigger(name)
	return err
}

// TriggerKinds are the kinds that take a trigger: the leader-aimed ones.
func TriggerKinds() []string {
	var out []string
	for _, f := range faults {
		if f.LeaderAimed {
			out = append(out, f.Name)
		}
	}
	return out
}

// TriggerSyntax is the trigger's written form, for messages.
const TriggerSyntax = "KIND:EVENT[/ROLE][~DELAY], e.g. kill-leader:leader-change~20ms or partition-leader:isr-expand/joined~0..30ms"

func eventNames() []string {
	var out []string
	for _, e := range triggerEvents {
		out = append(out, e.Name)
	}
	return out
}

func roleNames(e TriggerEvent) string {
	var out []string
	for i, r := range e.Roles {
		if i == 0 {
			out = append(out, r.Name+" (the default)")
			continue
		}
		out = append(out, r.Name)
	}
	return strings.Join(out, ", ")
}

// parseTrigger splits name into its kind and trigger (nil if it has
// none), or says why the trigger cannot run.
func parseTrigger(name string) (string, *Trigger, error) {
	if strings.Contains(name, history.FaultSep) {
		// A composite's parts are armed each on its own.
		for _, p := range history.FaultParts(name) {
			if _, _, err := parseTrigger(p); err != nil {
				return name, nil, err
			}
		}
		return name, nil, nil
	}
	kind, rest, ok := strings.Cut(name, triggerSep)
	if !ok {
		return name, nil, nil
	}
	i, found := slices.BinarySearchFunc(faults, kind, func(f *Fault, name string) int { return strings.Compare(f.Name, name) })
	switch {
	case !found:
		return kind, nil, fmt.Errorf("%q: %q is not a fault; the kinds that take a trigger: %s", name, kind, strings.Join(TriggerKinds(), ", "))
	case !faults[i].LeaderAimed:
		return kind, nil, fmt.Errorf("%q: %s takes no trigger: it does not aim at a partition's leader; the kinds that do: %s", name, kind, strings.Join(TriggerKinds(), ", "))
	}
	rest, delay, hasDelay := strings.Cut(rest, delaySep)
	event, role, hasRole := strings.Cut(rest, roleSep)
	e := slices.IndexFunc(triggerEvents, func(e TriggerEvent) bool { return e.Name == event })
	if e < 0 {
		return kind, nil, fmt.Errorf("%q: %q is not an event; events: %s (%s)", name, event, strings.Join(eventNames(), ", "), TriggerSyntax)
	}
	ev := triggerEvents[e]
	t := &Trigger{Event: event, Role: ev.Roles[0].Name}
	if hasRole {
		if !slices.ContainsFunc(ev.Roles, func(r TriggerRole) bool { return r.Name == role }) {
			return kind, nil, fmt.Errorf("%q: %s has no role %q; its roles: %s", name, event, role, roleNames(ev))
		}
		t.Role = role
	}
	if hasDelay {
		lo, hi, isRange := strings.Cut(delay, rangeSep)
		if !isRange {
			hi = lo
		}
		a, err1 := time.ParseDuration(lo)
		b, err2 := time.ParseDuration(hi)
		switch {
		case err1 != nil || err2 != nil:
			return kind, nil, fmt.Errorf("%q: the delay %q is not a duration or a range A..B of two, e.g. ~20ms or ~0..30ms", name, delay)
		case a < 0 || b < a:
			return kind, nil, fmt.Errorf("%q: the delay %q must be 0 or more, a range's first end not above its second", name, delay)
		}
		t.Delay, t.DelayMax = a, b
	}
	return kind, t, nil
}

// PartitionView is a partition as a broker's metadata answer describes
// it: its leader (a metadata broker id, -1: none), leader epoch and ISR.
type PartitionView struct {
	Leader int32
	Epoch  int32
	ISR    []int32
	from   string // the broker whose answer it is (watch.merge)
}

// Answer is one broker's metadata answer of the topic's partitions.
type Answer struct {
	From       string
	Partitions map[int32]PartitionView
}

// Observe asks the cluster's brokers for the topic's partitions: what a
// triggered fault watches for its event. Each poll returns the answers
// it had, one per broker at most, in an order of its own (a simulation's
// must be the same every time): asking every broker, the watch hears of
// an election from the first broker to learn of it.
type Observe func(ctx context.Context) ([]Answer, error)

// defaultTriggerPoll is how often an armed fault asks for the views: a
// few times per round trip of a local cluster's fetch, so that a fault
// fires within a round trip of its event.
const defaultTriggerPoll = 10 * time.Millisecond

// watch is an armed fault's watch over the views: the last it saw of
// each partition, and the last leader each had.
type watch struct {
	views   map[int32]PartitionView
	leaders map[int32]int32
	polls   int  // the polls answered
	based   bool // a poll answered with views to compare the next with
}

// fired is what an event picked: the partition, the broker (a metadata
// id) the role names, and what happened, for the history.
type fired struct {
	partition int32
	broker    int32
	what      string
}

// merge is each partition as a poll's answers leave it: a leader epoch
// orders elections across brokers, so the view of the highest epoch any
// broker gave wins (never going back to an older one: a broker cut off
// from the controller still answers as it last heard); within an epoch an
// ISR's changes have no order an answer shows (Kafka's partition epoch is
// not in it), so a partition keeps to the broker it was last heard from
// while that one answers, and takes another's word only when it does not.
func (w *watch) merge(answers []Answer) map[int32]PartitionView {
	now := maps.Clone(w.views)
	answered := map[string]bool{}
	for _, a := range answers {
		answered[a.From] = true
	}
	for _, a := range answers {
		for _, p := range sortedParts(a.Partitions) {
			v := a.Partitions[p]
			v.from = a.From
			cur, ok := now[p]
			if !ok || v.Epoch > cur.Epoch || v.Epoch == cur.Epoch && (v.from == cur.from || !answered[cur.from]) {
				now[p] = v
			}
		}
	}
	return now
}

// see takes the answers of a poll and returns the event they show against
// the poll before, if any: in the lowest partition that shows it whose
// role names a broker known. A leader change counts whoever told it; an
// ISR's change counts only between two views from one broker within one
// leader epoch: a broker just restarted, or not yet told, answers with an
// ISR long gone, and an election's own change of the ISR is the leader
// change.
func (w *watch) see(t *Trigger, answers []Answer, known func(int32) bool, name func(int32) string) (fired, bool) {
	w.polls++
	now := w.merge(answers)
	defer func() {
		w.views = now
		for p, v := range now {
			if v.Leader >= 0 {
				w.leaders[p] = v.Leader
			}
		}
	}()
	for _, p := range sortedParts(now) {
		cur := now[p]
		prev, ok := w.views[p]
		if !ok || cur.Epoch < prev.Epoch {
			continue
		}
		isr := func(v PartitionView) string { return fmt.Sprint(v.ISR) }
		var b int32 = -1
		var what string
		switch t.Event {
		case LeaderChange:
			if cur.Epoch <= prev.Epoch || cur.Leader < 0 {
				continue
			}
			old, had := w.leaders[p]
			if !had {
				old = -1
			}
			b = cur.Leader
			if t.Role == "old" {
				if b = old; old == cur.Leader {
					b = -1
				}
			}
			what = fmt.Sprintf("partition %d epoch %d -> %d, leader %s -> %s", p, prev.Epoch, cur.Epoch, name(old), name(cur.Leader))
		case ISRShrink, ISRExpand:
			if cur.from != prev.from || cur.Epoch != prev.Epoch {
				continue
			}
			from, to := prev.ISR, cur.ISR
			if t.Event == ISRExpand {
				from, to = to, from
			}
			var moved []int32
			for _, id := range from {
				if !slices.Contains(to, id) {
					moved = append(moved, id)
				}
			}
			if len(moved) == 0 {
				continue
			}
			b = slices.Min(moved)
			if t.Role == "leader" {
				b = cur.Leader
			}
			what = fmt.Sprintf("partition %d isr %s -> %s (epoch %d, leader %s)", p, isr(prev), isr(cur), cur.Epoch, name(cur.Leader))
		}
		if b >= 0 && known(b) {
			return fired{partition: p, broker: b, what: what}, true
		}
	}
	return fired{}, false
}

func sortedParts(m map[int32]PartitionView) []int32 {
	out := make([]int32, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// arm watches for o's event: the first poll takes the views to compare
// with, each later one compares with the poll before, every TriggerPoll,
// until one shows the event (it then aims the fault at the role's broker
// and draws the fault's start, a delay after) or the window's end comes
// first (o.err says the event was not seen: the fault never started).
// It says whether it is done, or how long to wait before the next poll.
func (o *Opening) arm(ctx context.Context, now time.Duration) (time.Duration, bool) {
	n := o.n
	t := o.trig
	poll := n.cfg.TriggerPoll
	if poll <= 0 {
		poll = defaultTriggerPoll
	}
	if o.watch == nil {
		o.watch = &watch{views: map[int32]PartitionView{}, leaders: map[int32]int32{}}
		// Drawn when the window opens, seen or not, so that the
		// nemesis's later choices do not depend on whether (or when)
		// the cluster showed the event.
		o.delay = t.Delay
		if t.DelayMax > t.Delay {
			o.delay += time.Duration(n.rng.Int64N(int64(t.DelayMax-t.Delay) + 1)).Round(time.Microsecond)
		}
		o.targets = []string{"armed on " + t.Event + roleSep + t.Role}
		if n.cfg.Observe == nil {
			o.err = fmt.Errorf("this runtime cannot watch the cluster's metadata for %s", t.Event)
			return 0, true
		}
	}
	n.shared.obsMu.Lock()
	views, err := n.cfg.Observe(ctx)
	n.shared.obsMu.Unlock()
	w := o.watch
	switch {
	case err != nil:
	case !w.based:
		// The views to compare the next poll with: what the cluster
		// was when the window opened is no event.
		w.see(t, views, func(int32) bool { return false }, n.idName)
		w.based = len(w.views) > 0
	default:
		known := func(id int32) bool { _, ok := n.brokerOf(id); return ok }
		if f, ok := w.see(t, views, known, n.idName); ok {
			b, _ := n.brokerOf(f.broker)
			o.at = aim{partition: f.partition, leader: b, who: t.role().who}
			o.seenAt, o.fireAt = now, now+o.delay
			o.fired = fmt.Sprintf("fired on %s: %s, seen at %s; aimed at %s (%s), delay %s", t.Event, f.what, fmtSince(now), n.name(b), t.Role, o.delay)
			if o.fireAt >= o.ev.End {
				o.err = fmt.Errorf("%s seen at %s, but the delay %s ends after the window does", t.Event, fmtSince(now), o.delay)
			}
			return 0, true
		}
	}
	if now >= o.ev.End {
		why := fmt.Sprintf("%s not seen in the window (%d polls answered)", t.Event, w.polls)
		if err != nil {
			why += fmt.Sprintf("; the last poll: %v", err)
		}
		o.err = fmt.Errorf("%s", why)
		return 0, true
	}
	return min(poll, o.ev.End-now), false
}

// fmtSince writes a time since the workload started as the history's
// readers do, in seconds to the microsecond.
func fmtSince(d time.Duration) string { return fmt.Sprintf("%.6fs", d.Seconds()) }

// idName names the broker whose metadata id is id, or says it is none.
func (n *Nemesis) idName(id int32) string {
	if id < 0 {
		return "none"
	}
	if b, ok := n.brokerOf(id); ok {
		return n.name(b)
	}
	return fmt.Sprintf("broker id %d", id)
}
