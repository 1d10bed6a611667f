package hunt

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/nemesis"
	"github.com/chaos-isr/chaos/runner"
)

// Range bounds of what Draw draws, log-uniform between the two ends
// unless said: the tempo of a run's fault windows and of the quiet periods
// between them from 20 ms (faster than a fetch round trip, so a fault can
// land inside an election) to 20 s (longer than every timeout, so the
// cluster settles into a faulted state); time limits from 3 s to 30 s, so
// that a hunt runs thousands of scenarios in minutes.
var (
	windowMin, windowMax = 20 * time.Millisecond, 20 * time.Second
	limitMin, limitMax   = 3 * time.Second, 30 * time.Second
	// tail is what a schedule leaves after its last window, so that the
	// workload sees the cluster healed before it stops.
	tail = 500 * time.Millisecond
)

// DrawOptions say what Draw keeps from the base spec.
type DrawOptions struct {
	// Config draws the configuration under judgement too (acks,
	// min.insync.replicas, election); else the base spec's.
	Config bool
	// Faults are the kinds windows are drawn from; nil: every kind the
	// simulation models.
	Faults []string
	// OwnCluster keeps the base spec's brokers and their settings: an
	// external cluster has its own, which a run does not change.
	OwnCluster bool
	// Group: the scenarios' consumers form a consumer group (--sub-via
	// subscribe), so the group's faults are drawn too.
	Group bool
	// Txn: the scenarios' workload is txn, so the faults of its
	// transactional sessions (pause-producer) are drawn too.
	Txn bool
	// ELR: the scenarios may elect by KIP-966 (the base's election is
	// elr, or Config draws it), so its own case, stop-followers-kill-leader,
	// is drawn too.
	ELR bool
}

// Draw is seed's scenario: base (its store, bugs, configuration under
// judgement) with every other knob drawn from the seed, and its schedule
// written out as windows. The same seed and base give the same spec.
func Draw(seed uint64, base runner.Spec, o DrawOptions) runner.Spec {
	// Triggers and the replication factor come from streams of their
	// own: a seed draws the scenario it drew before they existed, some
	// windows armed on an event, some topics with more replicas.
	d := drawer{rng: rand.New(rand.NewPCG(seed, 0x68756e74)), trig: rand.New(rand.NewPCG(seed, 0x74726967)), rf: rand.New(rand.NewPCG(seed, 0x7265706c)),
		lane: rand.New(rand.NewPCG(seed, 0x6c616e65)), elr: rand.New(rand.NewPCG(seed, 0x656c72))}
	s := base
	s.Seed = seed
	s.Name, s.Command = "", nil
	if o.Config {
		d.config(&s)
	}
	d.cluster(&s)
	o.keepCluster(&s, base)
	d.workload(&s)
	d.schedule(&s, o.kinds())
	return s
}

// keepCluster puts base's brokers and their settings back into s where
// the cluster is the user's (OwnCluster): the number of brokers and the
// timeouts are what it has; the topic's partitions are still drawn.
func (o DrawOptions) keepCluster(s *runner.Spec, base runner.Spec) {
	if !o.OwnCluster {
		return
	}
	drawn := s.Settings
	s.Nodes, s.Settings = base.Nodes, base.Settings
	s.Settings.Partitions = drawn.Partitions
	s.Settings.MinInsyncReplicas, s.Settings.Election = drawn.MinInsyncReplicas, drawn.Election
}

func (o DrawOptions) kinds() []string {
	if len(o.Faults) > 0 {
		return o.Faults
	}
	var out []string
	for _, name := range nemesis.Names() {
		f, _ := nemesis.Lookup(name)
		if (o.Group || !f.Client && !f.GroupAimed) && (o.Txn || !f.Producers && !f.Requests) && (o.ELR || o.Config || name != elrKind) && !f.Clock && !f.Disk {
			out = append(out, name)
		}
	}
	return out
}

// elrKind is KIP-966's own case, drawn where a scenario may elect by elr:
// other hunts draw what they drew before it existed.
const elrKind = "stop-followers-kill-leader"

// Kinds are the fault kinds a hunt draws from by default: every kind of
// the registry the simulation models but those of a consumer group, which
// a hunt's drawn runs (assign's consumers) do not form, and those of the
// transactional sessions and their requests (pause-producer,
// delay-client), which the transactional workload's hunts draw: their
// shapes (a zombie, a late EndTxn) are transactions'. A hunt of another
// workload draws delay-client when --nemesis names it. Likewise
// stop-followers-kill-leader is drawn where the election may be elr, and
// the clock and disk faults when --nemesis names them (a hunt's seeds draw
// the scenarios they drew before these kinds existed).
func Kinds() []string { return DrawOptions{}.kinds() }

type drawer struct{ rng, trig, rf, lane, elr *rand.Rand }

// logUniform is a duration between lo and hi, log-uniform: as likely
// between 20 ms and 200 ms as between 2 s and 20 s.
func (d drawer) logUniform(lo, hi time.Duration) time.Duration {
	l, h := math.Log(float64(lo)), math.Log(float64(hi))
	return time.Duration(math.Exp(l + d.rng.Float64()*(h-l))).Round(time.Millisecond)
}

// logUniformFloat is a number between lo and hi, log-uniform.
func (d drawer) logUniformFloat(lo, hi float64) float64 {
	return math.Exp(math.Log(lo) + d.rng.Float64()*(math.Log(hi)-math.Log(lo)))
}

// one picks one of xs.
func one[T any](d drawer, xs ...T) T { return xs[d.rng.IntN(len(xs))] }

func (d drawer) config(s *runner.Spec) {
	s.Acks = one[int16](d, -1, -1, 1, 0)
	s.Settings.MinInsyncReplicas = 1
	if s.Acks == -1 && d.rng.IntN(3) > 0 {
		s.Settings.MinInsyncReplicas = 2
	}
	s.Settings.Election = "clean"
	if d.rng.IntN(4) == 0 {
		s.Settings.Election = "unclean"
	}
	if s.Settings.Election == "clean" && d.elr.IntN(3) == 0 {
		// From a stream of its own: a seed draws the rest as it did
		// before ELR.
		s.Settings.Election = "elr"
	}
}

// cluster draws the brokers, the topic's replicas and the timeouts. The
// replication factor is 3 up to every broker: with three replicas a new
// leader's high watermark reaches its log end at the first fetch (the
// controller drops the old leader from the ISR, leaving one follower to
// wait for), and the state KAFKA-7128 needs, a follower out of the ISR
// that reaches the new leader's lagging high watermark before the
// committed offset, takes a fourth. The heartbeat stays at most 250 ms: the guarantee model's allowance for a broker's metadata
// lagging the controller's (checker.DefaultMetadataLag) is a few
// heartbeats, and a drawn setting it could not judge must not be drawn.
func (d drawer) cluster(s *runner.Spec) {
	st := &s.Settings
	s.Nodes = one(d, 3, 3, 3, 4, 5)
	st.ReplicationFactor = int16(3 + d.rf.IntN(s.Nodes-2))
	st.Partitions = one[int32](d, 1, 1, 2, 3, 4)
	st.SessionTimeoutMs = d.logUniform(300*time.Millisecond, 6*time.Second).Milliseconds()
	st.HeartbeatIntervalMs = max(min(250, st.SessionTimeoutMs/4), 20)
	st.ReplicaLagTimeMaxMs = d.logUniform(200*time.Millisecond, 10*time.Second).Milliseconds()
	st.ReplicaFetchWaitMaxMs = int32(min(d.logUniform(time.Millisecond, 500*time.Millisecond).Milliseconds(), st.ReplicaLagTimeMaxMs/2))
	st.ReplicaLagMaxMessages = one[int64](d, 0, 4000, 4000, 50+d.rng.Int64N(2000))
}

func (d drawer) workload(s *runner.Spec) {
	s.Concurrency = 1 + d.rng.IntN(6)
	// At least one consumer: without polls the consumer-side checks have
	// nothing to judge, and the run could only end unknown.
	s.Consumers = 1 + d.rng.IntN(int(s.Settings.Partitions))
	if d.rng.IntN(2) == 0 {
		s.Consumers = -1 // one per partition
	}
	s.Rate = math.Round(d.logUniformFloat(10, 800))
	s.RequestTimeout = d.logUniform(200*time.Millisecond, 5*time.Second)
	s.Retries, s.Idempotent, s.MaxInFlight = 0, false, 1
	if d.rng.IntN(3) == 0 {
		s.Retries = 1 + d.rng.IntN(5)
		// Idempotence needs acks=-1 (Spec.Validate, as Kafka's producers).
		s.Idempotent = d.rng.IntN(2) == 0 && s.Acks == -1
	}
	if d.rng.IntN(4) == 0 {
		s.MaxInFlight = 2 + d.rng.IntN(4) // at most 5, as idempotence allows
	}
	s.TimeLimit = d.logUniform(limitMin, limitMax)
	s.MonitorInterval = one(d, 100*time.Millisecond, 250*time.Millisecond)
}

// schedule draws a subset of kinds and fills the time limit with windows
// of them, one after another, each a kind or (when the draw allows
// overlap) a composite of up to three. A schedule that loses unsynced
// writes never overlaps: the guarantee model judges data loss per window.
// Where the subset has both network and process kinds, three times in four they
// run in lanes of their own (nemesis.Lane): the network lane's windows
// hold while the process lane's come and go beside them, with tempos of
// their own, as a follower left with stale metadata while leadership
// moves away and back needs (KAFKA-6880).
func (d drawer) schedule(s *runner.Spec, kinds []string) {
	kinds = slices.Clone(kinds)
	d.rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	subset := kinds[:1+d.rng.IntN(min(4, len(kinds)))]
	lossy := s.Settings.LoseUnsynced || nemesis.DestroysData(subset)
	overlap := 1
	if !lossy && len(subset) > 1 {
		overlap = one(d, 1, 1, 2, 3)
	}
	s.Faults, s.NemesisInterval, s.NemesisOverlap = nil, 0, 0
	var net []string
	if !lossy && d.lane != nil && d.lane.IntN(4) > 0 {
		if proc, n := lanes(subset); len(proc) > 0 && len(n) > 0 {
			subset, net = proc, n
		}
	}
	s.Windows = d.fill(s, subset, overlap, windowMin)
	if len(net) > 0 {
		ld := drawer{rng: d.lane, trig: d.trig}
		lo := 1
		if len(net) > 1 {
			lo = one(ld, 1, 2)
		}
		s.Windows = append(s.Windows, ld.fill(s, net, lo, heldMin)...)
		slices.SortStableFunc(s.Windows, func(a, b nemesis.Event) int { return cmp.Compare(a.Start, b.Start) })
	}
}

// lanes splits subset into its process and network kinds, none of either
// if some kind runs alone (nemesis.Lane).
func lanes(subset []string) (proc, net []string) {
	for _, k := range subset {
		switch nemesis.Lane(k) {
		case nemesis.LaneProcess:
			proc = append(proc, k)
		case nemesis.LaneNetwork:
			net = append(net, k)
		default:
			return nil, nil
		}
	}
	return proc, net
}

// heldMin is the shortest tempo of a network lane's windows: the lane is
// there to hold a fault across the process lane's, so its windows last
// seconds at least.
const heldMin = time.Second

// fill fills the time limit with one lane's windows of the subset's
// kinds, their tempo at least shortest.
func (d drawer) fill(s *runner.Spec, subset []string, overlap int, shortest time.Duration) nemesis.Schedule {
	var out nemesis.Schedule
	// A tempo for the run's windows and one for its quiet periods, each
	// window and gap within a factor of three of it: a run whose windows
	// are all short makes leader changes in quick succession (the
	// failovers KIP-101's and KIP-279's bugs need), one whose gaps are all
	// long lets the cluster settle between faults; lengths drawn one by
	// one would rarely give either for long.
	windows, gaps := d.logUniform(shortest, windowMax), d.logUniform(windowMin, windowMax)
	around := func(tempo time.Duration) time.Duration {
		return max(d.logUniform(tempo/3, tempo*3), 10*time.Millisecond)
	}
	lag := time.Duration(s.Settings.ReplicaLagTimeMaxMs) * time.Millisecond
	t := min(around(gaps), s.TimeLimit/4)
	for t < s.TimeLimit-tail {
		end := min(t+around(windows), s.TimeLimit-tail)
		if end <= t {
			break
		}
		fault := d.window(subset, overlap, len(out) == 0)
		// A window too short for its fault to take effect would close
		// before it did anything: it is made long enough, or, where the
		// run has no room for that, given a kind that takes effect at
		// once.
		if need := nemesis.Settle(fault, lag); need > 0 {
			switch {
			case t+need+settleMargin <= s.TimeLimit-tail:
				end = max(end, t+need+settleMargin)
			default:
				fault = d.prompt(subset)
			}
		}
		if fault == "" {
			break
		}
		out = append(out, nemesis.Event{Fault: fault, Start: t, End: end})
		t = end + around(gaps)
	}
	return out
}

// settleMargin is what a window leaves after its fault has settled, so
// that the fault holds a while before the heal.
const settleMargin = 500 * time.Millisecond

// prompt is a kind of the subset that takes effect as soon as it starts,
// "" when there is none.
func (d drawer) prompt(subset []string) string {
	var ok []string
	for _, k := range subset {
		if nemesis.Settle(k, 0) == 0 {
			ok = append(ok, k)
		}
	}
	if len(ok) == 0 {
		return ""
	}
	return one(d, ok...)
}

// window is one window's fault: a kind of the subset, or with overlap a
// composite of up to that many of them; some of its leader-aimed kinds
// armed on an event (see arm).
func (d drawer) window(subset []string, overlap int, first bool) string {
	return d.arm(d.unarmed(subset, overlap), overlap, first)
}

func (d drawer) unarmed(subset []string, overlap int) string {
	first := one(d, subset...)
	if overlap < 2 || d.rng.IntN(2) == 0 {
		return first
	}
	parts := []string{first}
	for _, k := range d.rng.Perm(len(subset)) {
		if len(parts) == overlap {
			break
		}
		if c := history.JoinFault(append(slices.Clone(parts), subset[k])...); !slices.Contains(parts, subset[k]) && nemesis.Composite(c) == nil {
			parts = append(parts, subset[k])
		}
	}
	return history.JoinFault(parts...)
}

// Triggers: a fault that fires right after an election or a rejoin is how
// races of KAFKA-7128's class are reached, and a timer hits that moment
// only by luck. Delays log-uniform from 1 ms to triggerDelayMax (a few
// fetch round trips), or none.
const triggerDelayMax = 50 * time.Millisecond

// arm arms some of fault's leader-aimed kinds on an event drawn with its
// role and delay: a lone kind a quarter of the time (it then fires only
// on what an earlier window left happening, so never in the first
// window: a run whose one window waited for nothing tested nothing), or,
// where windows may
// overlap, as often made into the kind then itself armed (kill-leader+
// kill-leader:leader-change: a leader killed, then the one elected in its
// place); a composite's later kinds half the time (its earlier kinds make
// the event).
func (d drawer) arm(fault string, overlap int, first bool) string {
	if d.trig == nil {
		return fault
	}
	aimed := func(k string) bool { f, ok := nemesis.Lookup(k); return ok && f.LeaderAimed && f.Parts == nil }
	parts := history.FaultParts(fault)
	if len(parts) == 1 {
		if !aimed(fault) {
			return fault
		}
		switch d.trig.IntN(4) {
		case 0:
			if !first {
				parts[0] += d.trigger()
			}
		case 1:
			if overlap >= 2 {
				parts = append(parts, fault+d.trigger())
			}
		}
	} else {
		for i := 1; i < len(parts); i++ {
			if aimed(parts[i]) && d.trig.IntN(2) == 0 {
				parts[i] += d.trigger()
			}
		}
	}
	armed := history.JoinFault(parts...)
	if nemesis.Composite(armed) != nil || nemesis.CheckTrigger(armed) != nil {
		return fault
	}
	return armed
}

// trigger is a drawn trigger, as written after a kind.
func (d drawer) trigger() string {
	events := nemesis.TriggerEvents()
	e := events[d.trig.IntN(len(events))]
	r := e.Roles[d.trig.IntN(len(e.Roles))]
	delay := time.Duration(0)
	if d.trig.IntN(4) > 0 {
		delay = drawer{rng: d.trig}.logUniform(time.Millisecond, triggerDelayMax)
	}
	return ":" + e.Name + "/" + r.Name + "~" + delay.String()
}
