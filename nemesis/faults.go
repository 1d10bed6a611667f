package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/chaos-isr/chaos/cluster"
	"github.com/chaos-isr/chaos/history"
)

// Fault is one kind of fault: its name (what --nemesis, the schedule and
// the history call it), what it does, what it needs and how it starts.
// Every fault heals the same way: the nemesis undoes whatever is in effect
// (resume, restart, heal the network).
type Fault struct {
	Name string
	Doc  string
	// Network: the fault cuts or slows links, so the run needs a network
	// fabric (the local runtime's proxies, or the docker runtime's
	// in-container rules).
	Network bool
	// Simulated: the simulation runs the fault (package sim): it acts on
	// the cluster only through what the simulated cluster models (kill and
	// restart with the storage kept, lose-unsynced, a clean stop, pause
	// and resume, cut and one-way links, slowed links, latency, resets).
	// A kind that needs something it does not model (a clock, a disk)
	// leaves it false and is refused there, never run as if it had been.
	Simulated bool
	// LeaderAimed: the fault picks its target from a partition's leader.
	LeaderAimed bool
	// Client: the fault acts on the workload's own clients (the
	// consumer group's members, Config.Consumers), not on the cluster:
	// it needs nothing of the runtime, and a run whose workload has no
	// such clients refuses it.
	Client bool
	// Producers: the fault acts on the workload's transactional sessions
	// (Config.Producers), so it needs nothing of the runtime and a
	// workload that has them (--workload txn).
	Producers bool
	// Requests: the fault acts on the requests of the workload's own
	// clients (Config.Clients), on their way to the cluster: it needs
	// nothing of the runtime, and any workload has such clients.
	Requests bool
	// GroupAimed: the fault picks its target from the consumer group's
	// coordinator, as the group's members know it (Config.Consumers), so
	// it too needs a workload with a group.
	GroupAimed bool
	// Disk: the fault damages a down broker's data directory
	// (cluster.Disks), which the runtime must offer; the history records
	// the broker as damaged, which the guarantee model classes as data
	// lost on that node.
	Disk bool
	// Clock: the fault sets a node's clock (cluster.Clocks), which the
	// runtime must offer.
	Clock bool
	// LosesUnsynced: the fault is meant to destroy unsynced writes, so
	// the brokers must keep them in memory (chaos broker --lose-unsynced);
	// a run using it turns that storage mode on.
	LosesUnsynced bool
	// Kills is how many brokers the fault kills at once in a cluster of n
	// brokers. Where brokers lose unsynced writes on a kill, one is the
	// guarantee model's F2 and several F3; the history records the
	// brokers each window really killed.
	Kills func(n int) int
	// start starts the fault; a LeaderAimed fault's aim is the partition
	// and the leader the nemesis found for it.
	start func(n *Nemesis, at aim) ([]string, error)
	// steps, if any, are taken in order after start, each its wait after
	// the one before (when that one has had its effect).
	steps []step
	// Needs are what the fault asks of the runtime (the Need* names):
	// every runtime chaos starts has them all; a cluster the tester did
	// not start (the external runtime) has what its commands provide, and
	// a fault needing more is refused before the run.
	Needs []string
	// ApartController is what the fault loses where the controller runs
	// apart from the brokers but is not a node the nemesis can fault (an
	// external cluster with no --controller-node): the brokers' links to
	// it stay whole. Empty for a fault that leaves the controller alone.
	ApartController string
	// Parts are a composite's kinds ("a+b": a, then b while a still
	// holds), each started in turn within one window and healed together
	// at its end; nil for a kind of the registry.
	Parts []*Fault
	// partNames are the parts as written: a part may be armed on an
	// event (kill-leader+kill-leader:leader-change).
	partNames []string
}

// Composites: two or three kinds joined by "+" overlap in one window,
// each started a share of the window after the one before, all healed at
// its end (so the final heal stays one heal). Losing unsynced writes is
// left out: two kills at once there destroy data on several nodes, which
// the guarantee model judges per window.
const maxParts = 3

// composite is the kind named a+b(+c), or why there is none.
func composite(name string) (*Fault, error) {
	names := history.FaultParts(name)
	if len(names) > maxParts {
		return nil, fmt.Errorf("%q joins %d kinds; at most %d overlap", name, len(names), maxParts)
	}
	c := &Fault{Name: name}
	var docs []string
	for _, p := range names {
		if err := CheckTrigger(p); err != nil {
			return nil, fmt.Errorf("%q in %q: %w", p, name, err)
		}
		f, ok := Lookup(p)
		switch {
		case !ok || f.Parts != nil:
			return nil, fmt.Errorf("%q in %q is not a fault", p, name)
		case slices.Contains(c.partNames, p):
			return nil, fmt.Errorf("%q appears twice in %q", p, name)
		case f.LosesUnsynced:
			return nil, fmt.Errorf("%q cannot overlap another fault: two kills at once would lose unsynced writes on several nodes", p)
		}
		c.Parts, c.partNames = append(c.Parts, f), append(c.partNames, p)
		for _, nd := range f.Needs {
			if !slices.Contains(c.Needs, nd) {
				c.Needs = append(c.Needs, nd)
			}
		}
		c.Network = c.Network || f.Network
		c.Client = c.Client || f.Client
		c.Requests = c.Requests || f.Requests
		c.Producers = c.Producers || f.Producers
		c.GroupAimed = c.GroupAimed || f.GroupAimed
		c.LeaderAimed = c.LeaderAimed || f.LeaderAimed
		docs = append(docs, p)
	}
	parts := c.Parts
	c.Kills = func(n int) int {
		k := 0
		for _, f := range parts {
			k += f.Kills(n)
		}
		return min(k, n)
	}
	c.Doc = "overlapping in one window: " + strings.Join(docs, ", then ") + "; all healed at its end"
	return c, nil
}

// Composite says why name, a composite of kinds joined by "+", cannot
// run, or nil if it can (or is not a composite). A part may be armed on an
// event: it then arms as soon as the part before it has started
// (kill-leader+kill-leader:leader-change kills a leader, then the one
// elected in its place).
func Composite(name string) error {
	if !strings.Contains(name, history.FaultSep) {
		return nil
	}
	_, err := composite(name)
	return err
}

// aim is what a LeaderAimed fault aims at: a partition and its leader,
// or the broker a trigger's role named in the leader's place (who says
// which, a format of the partition; "" for the leader).
type aim struct {
	partition int32
	leader    int
	who       string
}

// String says what the aimed broker is, for the history.
func (a aim) String() string {
	if a.who == "" {
		return fmt.Sprintf("leader of partition %d", a.partition)
	}
	return fmt.Sprintf(a.who, a.partition)
}

func none(int) int       { return 0 }
func one(int) int        { return 1 }
func all(n int) int      { return n }
func majority(n int) int { return n/2 + 1 }
func minority(n int) int { return max((n-1)/2, 1) }

// What a fault asks of the runtime (Fault.Needs).
const (
	// The actions a fault applies (history's one set of them).
	NeedKill      = string(history.ActKill)
	NeedStart     = string(history.ActStart)
	NeedStop      = string(history.ActStop)
	NeedPause     = string(history.ActPause)
	NeedResume    = string(history.ActResume)
	NeedPartition = string(history.ActPartition)
	NeedHeal      = string(history.ActHeal)
	NeedSlow      = string(history.ActSlow)
	NeedOneWay    = string(history.ActOneWay)
	NeedDelay     = string(history.ActDelay)
	NeedDrop      = string(history.ActDrop)
	NeedClock     = string(history.ActClock)
	NeedDisk      = string(history.ActDisk)
	// What else a fault needs of the cluster.
	NeedController   = "controller"    // a controller node to aim at
	NeedLoseUnsynced = "lose-unsynced" // brokers that keep unsynced writes in memory (chaos's own)
)

var (
	needsKill                = []string{NeedKill, NeedStart}
	needsKillController      = []string{NeedKill, NeedStart, NeedController}
	needsStop                = []string{NeedStop, NeedStart}
	needsPause               = []string{NeedPause, NeedResume}
	needsPartition           = []string{NeedPartition, NeedHeal}
	needsPartitionController = []string{NeedPartition, NeedHeal, NeedController}
	needsSlow                = []string{NeedSlow, NeedHeal}
	needsSlowKill            = []string{NeedSlow, NeedHeal, NeedKill, NeedStart}
	needsStopKill            = []string{NeedStop, NeedKill, NeedStart, NeedLoseUnsynced}
	needsOneWay              = []string{NeedOneWay, NeedHeal}
	needsZombie              = []string{NeedOneWay, NeedHeal, NeedController}
	needsDelay               = []string{NeedDelay, NeedHeal}
	needsDrop                = []string{NeedDrop, NeedHeal}
	needsLoseUnsynced        = []string{NeedKill, NeedStart, NeedLoseUnsynced}
	needsClock               = []string{NeedClock}
	needsDisk                = []string{NeedKill, NeedStart, NeedDisk}
)

// Missing says which of the faults need what have does not offer, one
// line per fault ("kill-leader needs kill, start"), in the list's order;
// none when have offers all they need.
func Missing(names []string, have func(need string) bool) []string {
	var out []string
	for _, name := range names {
		f, ok := Lookup(name)
		if !ok {
			continue
		}
		var lack []string
		for _, nd := range f.Needs {
			if !have(nd) {
				lack = append(lack, nd)
			}
		}
		if len(lack) > 0 {
			out = append(out, fmt.Sprintf("%s needs %s", name, strings.Join(lack, ", ")))
		}
	}
	return out
}

// ApartController says, of the faults of names (a composite's kinds each),
// what those that cut or slow links to the controller lose where it runs
// apart from the brokers and cannot be faulted, by kind.
func ApartController(names []string) map[string]string {
	out := map[string]string{}
	for _, name := range names {
		f, ok := Lookup(name)
		if !ok {
			continue
		}
		for _, p := range append([]*Fault{f}, f.Parts...) {
			if p.ApartController != "" {
				out[p.Name] = p.ApartController
			}
		}
	}
	return out
}

// faults is the registry: every fault the nemesis knows, in name order.
var faults = []*Fault{
	{Name: "clock-jump", Simulated: true, Needs: needsClock, Clock: true, Doc: "step the clock of a random node (broker or controller) forward or back by 1 s to 10 min, and back to the true time at the end: timeouts measured across the step (replica lag, sessions, transactions) see the time it claims", Kills: none, start: (*Nemesis).clockJump},
	{Name: "clock-skew", Simulated: true, Needs: needsClock, Clock: true, Doc: "run the clock of a random node (broker or controller) 4 to 20 times too fast or too slow for the window, and set it right at the end: every timeout it measures expires that much early or late", Kills: none, start: (*Nemesis).clockSkew},
	{Name: "corrupt", Simulated: true, Needs: needsDisk, Disk: true, Doc: "kill -9 a random broker, flip one bit of one of its segment or checkpoint files, and restart it at the end: it must find the damage (batch CRCs, the HW checkpoint's checksum), cut its log there and fetch the rest again, never serve it", Kills: one, start: (*Nemesis).corruptDisk},
	{Name: "crash-consumer", Simulated: true, Client: true, Doc: "crash a random member of the consumer group (--sub-via subscribe): its client stops at once, without leaving the group, and a new process joins in its place at the end of the window", Kills: none, start: (*Nemesis).crashConsumer},
	{Name: "delay-client", Simulated: true, Requests: true, Doc: "hold every request the workload's clients send to a random broker for twice their timeout: they time out and ask again, and once the window ends their new requests go through while the held ones arrive late, after them (a message that outlives its timeout, the shape of KAFKA-17754)", Kills: none, start: (*Nemesis).delayClient},
	{Name: "drop", Simulated: true, Needs: needsDrop, Doc: "reset connections between nodes at random (2% of deliveries)", Network: true, Kills: none, start: (*Nemesis).drop},
	{Name: "isolate", Simulated: true, Needs: needsPartition, ApartController: "an isolated broker still reaches the controller", Doc: "cut a random node (broker or controller) off from every other node", Network: true, Kills: none, start: (*Nemesis).isolate},
	{Name: "kill", Simulated: true, Needs: needsKill, Doc: "kill -9 a random broker, restart it at the end of the window", Kills: one, start: (*Nemesis).killRandom},
	{Name: "kill-all", Simulated: true, Needs: needsKill, Doc: "kill -9 every broker, restart them at the end", Kills: all,
		start: func(n *Nemesis, _ aim) ([]string, error) { return n.each(n.brokers(), n.kill) }},
	{Name: "kill-controller", Simulated: true, Needs: needsKillController, Doc: "kill -9 the controller, restart it at the end", Kills: none,
		start: func(n *Nemesis, _ aim) ([]string, error) { return n.kill(0) }},
	{Name: "kill-leader", Simulated: true, Needs: needsKill, Doc: "kill -9 the leader of a random partition, restart it at the end", LeaderAimed: true, Kills: one, start: (*Nemesis).killLeader},
	{Name: "kill-majority", Simulated: true, Needs: needsKill, Doc: "kill -9 a random majority of the brokers, restart them at the end", Kills: majority,
		start: func(n *Nemesis, _ aim) ([]string, error) {
			return n.each(n.someBrokers(majority(n.cfg.Brokers)), n.kill)
		}},
	{Name: "kill-minority", Simulated: true, Needs: needsKill, Doc: "kill -9 a random minority of the brokers (at least one), restart them at the end", Kills: minority,
		start: func(n *Nemesis, _ aim) ([]string, error) {
			return n.each(n.someBrokers(minority(n.cfg.Brokers)), n.kill)
		}},
	{Name: "latency", Simulated: true, Needs: needsDelay, ApartController: "the links to the controller are not delayed", Doc: "delay every link between nodes by 50ms each way (±10ms of seeded jitter where delays are a userspace delay line)", Network: true, Kills: none, start: (*Nemesis).latency},
	{Name: "lose-unsynced", Simulated: true, Needs: needsLoseUnsynced, Doc: "kill -9 a random broker that keeps unsynced writes in memory, losing them; restart it at the end", LosesUnsynced: true, Kills: one, start: (*Nemesis).killRandom},
	{Name: "majority-ring", Simulated: true, Needs: needsPartition, ApartController: "every broker still reaches the controller", Doc: "cut links so that every node sees a majority, but no two nodes the same one", Network: true, Kills: none, start: (*Nemesis).majorityRing},
	{Name: "one-way", Simulated: true, Needs: needsOneWay, Doc: "drop every packet from one random node to another, not the way back", Network: true, Kills: none, start: (*Nemesis).oneWay},
	{Name: "partition", Simulated: true, Needs: needsPartition, ApartController: "both sides still reach the controller", Doc: "split the nodes (brokers and controller) into two random halves", Network: true, Kills: none, start: (*Nemesis).halves},
	{Name: "partition-controller", Simulated: true, Needs: needsPartitionController, Doc: "cut the controller off from every broker", Network: true, Kills: none, start: (*Nemesis).partitionController},
	{Name: "partition-coordinator", Simulated: true, Needs: needsPartition, GroupAimed: true, ApartController: "the coordinator still reaches the controller, which keeps it the leader of the group's partition", Doc: "cut the consumer group's coordinator (the broker its members were last told of, --sub-via subscribe) off from every other node (clients still reach it)", Network: true, Kills: none, start: (*Nemesis).partitionCoordinator},
	{Name: "partition-leader", Simulated: true, Needs: needsPartition, ApartController: "the leader still reaches the controller, which keeps it the leader", Doc: "cut the leader of a random partition off from every other node (clients still reach it)", Network: true, LeaderAimed: true, Kills: none, start: (*Nemesis).partitionLeader},
	{Name: "pause", Simulated: true, Needs: needsPause, Doc: "pause a random broker (SIGSTOP), resume it at the end", Kills: none, start: (*Nemesis).pauseRandom},
	{Name: "pause-consumer", Simulated: true, Client: true, Doc: "pause a random member of the consumer group (--sub-via subscribe), as a consumer in a long stop-the-world pause: it takes no step and sends no heartbeat, so its group may remove it and rebalance without it; at the end of the window it goes on where it stopped", Kills: none, start: (*Nemesis).pauseConsumer},
	{Name: "pause-leader", Simulated: true, Needs: needsPause, Doc: "pause the leader of a random partition, resume it at the end", LeaderAimed: true, Kills: none, start: (*Nemesis).pauseLeader},
	{Name: "pause-majority", Simulated: true, Needs: needsPause, Doc: "pause a random majority of the brokers, resume them at the end", Kills: none,
		start: func(n *Nemesis, _ aim) ([]string, error) {
			return n.each(n.someBrokers(majority(n.cfg.Brokers)), n.pause)
		}},
	{Name: "pause-producer", Simulated: true, Producers: true, Doc: "pause a random transactional session (--workload txn), as a producer in a long stop-the-world pause, and start a new process with the same transactional id in its place, whose new epoch fences the paused one; at the end of the window the paused one wakes, a zombie, finishes the transaction it was in with its old epoch, and stops", Kills: none, start: (*Nemesis).pauseProducer},
	{Name: "slow-follower", Simulated: true, Needs: needsSlow, Doc: "delay a follower's links to its leader beyond replica.lag.time.max.ms", Network: true, LeaderAimed: true, Kills: none, start: (*Nemesis).slowFollower},
	// The 2013 Jepsen finding (docs/guarantees.md, scenarios 2 and 3)
	// needs two steps in order, so it is one fault.
	{Name: "slow-followers-kill-leader", Simulated: true, Needs: needsSlowKill, Doc: "slow every follower of a partition until the ISR is the leader alone, then kill -9 the leader; restart and heal at the end", Network: true, LeaderAimed: true, Kills: one,
		start: (*Nemesis).slowFollowers, steps: []step{{(*Nemesis).isrShrinks, (*Nemesis).killAimedLeader}}},
	{Name: "stale-disk", Simulated: true, Needs: needsDisk, Disk: true, Doc: "kill -9 a random broker, copy its data directory, restart it; at the end kill it again, put the copy back and restart it: a disk restored from a snapshot, as old as the window", Kills: one, start: (*Nemesis).staleDisk},
	{Name: "stop", Simulated: true, Needs: needsStop, Doc: "stop a random broker gracefully (SIGTERM), restart it at the end", Kills: none, start: (*Nemesis).stopRandom},
	// KIP-966's own case (docs/guarantees.md, the last replica standing
	// with its followers down cleanly): what separates the three
	// election policies, and an ELR that keeps a replica after an
	// unclean shutdown from one that does not.
	{Name: "stop-followers-kill-leader", Simulated: true, Needs: needsStopKill, Doc: "stop every follower of a partition gracefully (SIGTERM), so that the ISR shrinks to the leader; kill -9 the leader, losing its unsynced writes (as a power loss), and restart it alone; restart the followers at the end", LeaderAimed: true, LosesUnsynced: true, Kills: one,
		start: (*Nemesis).stopFollowers, steps: []step{
			{func(n *Nemesis) time.Duration { return 2 * n.slowDelay() }, (*Nemesis).killAimedLeader},
			{func(n *Nemesis) time.Duration { return n.slowDelay() / 2 }, (*Nemesis).restartAimedLeader},
		}},
	{Name: "truncate-file", Simulated: true, Needs: needsDisk, Disk: true, Doc: "kill -9 a random broker, cut the tail off one of its segment or checkpoint files, and restart it at the end: recovery must cut the log at the torn batch and fetch the rest again", Kills: one, start: (*Nemesis).truncateDisk},
	{Name: "zombie-follower", Simulated: true, Needs: needsZombie, Doc: "drop the controller's messages to a follower of a random partition (to the broker a trigger's role names, when armed), not the way back: it keeps the leader and epoch it last heard of while the controller still hears its heartbeats, a zombie replica", Network: true, LeaderAimed: true, Kills: none, start: (*Nemesis).zombieFollower},
}

// The families of faults, as the report colours their windows.
const (
	FamilyProcess = "process" // kills, pauses and stops brokers or the controller
	FamilyNetwork = "network" // cuts, slows or resets links, nothing else
	FamilyDisk    = "disk"    // destroys data on disk (unsynced writes)
	FamilyClient  = "client"  // acts on the workload's own clients, not the cluster
	FamilyClock   = "clock"   // sets a node's clock wrong
)

// Damages is how many brokers' data directories the fault damages at
// once: one for the disk faults.
func (f *Fault) Damages() int {
	if f.Disk {
		return 1
	}
	return 0
}

// Family is the fault's family: a composite's is its first kind's (the
// history records each part as a window of its own).
func (f *Fault) Family() string {
	if len(f.Parts) > 0 {
		return f.Parts[0].Family()
	}
	switch {
	case f.Client, f.Requests, f.Producers:
		return FamilyClient
	case f.LosesUnsynced, f.Disk:
		return FamilyDisk
	case f.Clock:
		return FamilyClock
	case f.Network && f.Kills(3) == 0:
		return FamilyNetwork
	}
	return FamilyProcess
}

// Families are the families of the kinds names start (results.FaultKinds),
// by kind: what test.json keeps for the report.
func Families(kinds []string) map[string]string {
	if len(kinds) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, k := range kinds {
		if f, ok := Lookup(k); ok {
			out[k] = f.Family()
		}
	}
	return out
}

// Faults lists every fault kind, in name order.
func Faults() []*Fault { return slices.Clone(faults) }

// Lookup returns the fault kind called name: a kind of the registry, a
// composite of two or three joined by "+", or a leader-aimed kind with a
// trigger (KIND:EVENT[/ROLE][~DELAY]: the kind's own Fault, which the
// trigger arms; CheckTrigger says why one is refused).
func Lookup(name string) (*Fault, bool) {
	if strings.Contains(name, triggerSep) && !strings.Contains(name, history.FaultSep) {
		kind, _, err := parseTrigger(name)
		if err != nil {
			return nil, false
		}
		name = kind
	}
	if strings.Contains(name, history.FaultSep) {
		c, err := composite(name)
		return c, err == nil
	}
	i, ok := slices.BinarySearchFunc(faults, name, func(f *Fault, name string) int { return strings.Compare(f.Name, name) })
	if !ok {
		return nil, false
	}
	return faults[i], true
}

// Names returns the fault names, sorted.
func Names() []string {
	out := make([]string, len(faults))
	for i, f := range faults {
		out[i] = f.Name
	}
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
		if err := Composite(f); err != nil {
			return nil, err
		}
		if err := CheckTrigger(f); err != nil {
			return nil, err
		}
		if _, ok := Lookup(f); !ok {
			return nil, fmt.Errorf("unknown nemesis %q; known: none, %s", f, strings.Join(Names(), ", "))
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out, nil
}

// any reports whether a fault of the list has the property.
func anyOf(names []string, has func(*Fault) bool) bool {
	for _, name := range names {
		if f, ok := Lookup(name); ok && has(f) {
			return true
		}
	}
	return false
}

// NeedsNetwork reports whether any of the faults cuts or slows links.
func NeedsNetwork(names []string) bool { return anyOf(names, func(f *Fault) bool { return f.Network }) }

// LosesUnsynced reports whether any of the faults needs brokers that keep
// unsynced writes in memory.
func LosesUnsynced(names []string) bool {
	return anyOf(names, func(f *Fault) bool { return f.LosesUnsynced })
}

// DestroysData says whether any fault of names (or a part of one) is
// meant to destroy data on a broker: it loses unsynced writes, or damages
// a data directory. The guarantee model judges such loss per window, so
// their windows must not overlap.
func DestroysData(names []string) bool {
	return anyOf(names, func(f *Fault) bool { return f.LosesUnsynced || f.Disk })
}

// NeedsClock says whether any fault of names (or a part of one) sets a
// node's clock (Fault.Clock): the runtime must offer cluster.Clocks.
func NeedsClock(names []string) bool {
	return anyOf(names, func(f *Fault) bool { return f.Clock })
}

// NeedsTxn says whether any fault of names (or a part of one) acts on
// the workload's transactional sessions (Fault.Producers): the run's
// workload must be txn.
func NeedsTxn(names []string) bool {
	return anyOf(names, func(f *Fault) bool { return f.Producers })
}

// NeedsGroup says whether any fault of names (or a part of one) acts on
// the workload's consumer group, or aims at its coordinator
// (Fault.Client, Fault.GroupAimed): the run's consumers must form one.
func NeedsGroup(names []string) bool {
	return anyOf(names, func(f *Fault) bool { return f.Client || f.GroupAimed })
}

// pauseConsumer pauses a random member of the consumer group.
func (n *Nemesis) pauseConsumer(aim) ([]string, error) {
	c := n.cfg.Consumers
	if c == nil || c.Members() == 0 {
		return nil, errors.New("no consumer group member to pause (pause-consumer needs --sub-via subscribe)")
	}
	i := n.rng.IntN(c.Members())
	name, err := c.Pause(i)
	if err == nil {
		n.pausedMembers[i] = true
	}
	return []string{name}, err
}

// pauseProducer pauses a random transactional session, and has a new
// incarnation take its place.
func (n *Nemesis) pauseProducer(aim) ([]string, error) {
	p := n.cfg.Producers
	if p == nil || p.Sessions() == 0 {
		return nil, errors.New("no transactional session to pause (pause-producer needs --workload txn)")
	}
	i := n.rng.IntN(p.Sessions())
	name, err := p.Zombie(i)
	if err == nil {
		n.zombieSessions[i] = true
	}
	return []string{name, "a new incarnation in its place"}, err
}

// delayClient holds the workload's requests to a random broker.
func (n *Nemesis) delayClient(aim) ([]string, error) {
	c := n.cfg.Clients
	if c == nil {
		return nil, errors.New("no workload clients to hold the requests of (delay-client acts on the tester's own clients)")
	}
	b, err := n.randomBroker()
	if err != nil {
		return nil, err
	}
	how, err := c.Hold(n.brokerID(b))
	if err == nil {
		n.heldBrokers[b] = true
	}
	return []string{n.name(b), how}, err
}

// crashConsumer crashes a random member of the consumer group.
func (n *Nemesis) crashConsumer(aim) ([]string, error) {
	c := n.cfg.Consumers
	if c == nil || c.Members() == 0 {
		return nil, errors.New("no consumer group member to crash (crash-consumer needs --sub-via subscribe)")
	}
	i := n.rng.IntN(c.Members())
	name, err := c.Crash(i)
	if err == nil {
		n.crashedMembers[i] = true
	}
	return []string{name}, err
}

func (n *Nemesis) killRandom(aim) ([]string, error) {
	b, err := n.randomBroker()
	if err != nil {
		return nil, err
	}
	return n.kill(b)
}

func (n *Nemesis) killLeader(at aim) ([]string, error) {
	t, err := n.kill(at.leader)
	return append(t, at.String()), err
}

func (n *Nemesis) stopRandom(aim) ([]string, error) {
	b, err := n.randomBroker()
	if err != nil {
		return nil, err
	}
	n.killed[b] = true
	return []string{n.name(b)}, n.rt.Stop(b, n.cfg.StopTimeout)
}

func (n *Nemesis) pauseRandom(aim) ([]string, error) {
	b, err := n.randomBroker()
	if err != nil {
		return nil, err
	}
	return n.pause(b)
}

func (n *Nemesis) pauseLeader(at aim) ([]string, error) {
	t, err := n.pause(at.leader)
	return append(t, at.String()), err
}

func (n *Nemesis) isolate(aim) ([]string, error) {
	nodes := n.allNodes()
	x := nodes[n.rng.IntN(len(nodes))]
	var others []string
	for _, o := range nodes {
		if o != x {
			others = append(others, o)
		}
	}
	return n.partition([]string{x}, others)
}

func (n *Nemesis) majorityRing(aim) ([]string, error) {
	// Nodes in a random ring each keep links to the nearest half of the
	// others: a majority counting itself, different for each.
	ring := n.allNodes()
	n.rng.Shuffle(len(ring), func(i, j int) { ring[i], ring[j] = ring[j], ring[i] })
	k := len(ring)
	var cuts []string
	var errs []error
	for i := 0; i < k; i++ {
		for j := i + 1; j < k; j++ {
			if d := min(j-i, k-(j-i)); d > (k-1)/2 {
				errs = append(errs, n.net.Partition([]string{ring[i]}, []string{ring[j]}))
				cuts = append(cuts, ring[i]+"|"+ring[j])
			}
		}
	}
	n.netHurt = true
	return append([]string{"ring " + strings.Join(ring, ">")}, cuts...), errors.Join(errs...)
}

func (n *Nemesis) oneWay(aim) ([]string, error) {
	nodes := n.allNodes()
	i := n.rng.IntN(len(nodes))
	j := (i + 1 + n.rng.IntN(len(nodes)-1)) % len(nodes)
	err := n.net.OneWay([]string{nodes[i]}, []string{nodes[j]})
	n.netHurt = true
	return []string{nodes[i] + " -> " + nodes[j] + " dropped"}, err
}

// latencyJitter is the latency fault's spread, on networks that can draw
// it from a seed.
const latencyJitter = 10 * time.Millisecond

// jitterNetwork is a network that can vary its delays from a seed: the
// userspace delay line of the local runtime's proxies and of the docker
// runtime's relays. It reports whether it did (netem's jitter would draw
// from the kernel, so the docker runtime does not with netem).
type jitterNetwork interface {
	DelayAllJitter(d, j time.Duration, seed uint64) (bool, error)
}

func (n *Nemesis) latency(aim) ([]string, error) {
	const d = 50 * time.Millisecond
	targets := []string{"all links", "50ms each way"}
	// The jitter seed comes from the run's seed, not n.rng: drawing from
	// n.rng here would shift every later choice of the nemesis on some
	// runtimes only, and a seed would no longer make the same choices on
	// every runtime.
	var err error
	if jn, ok := n.net.(jitterNetwork); !ok {
		err = n.net.DelayAll(d)
	} else {
		var jittered bool
		if jittered, err = jn.DelayAllJitter(d, latencyJitter, n.cfg.Seed^0x6a6974746572); jittered {
			targets = append(targets, "±"+latencyJitter.String()+" jitter")
		}
	}
	n.netHurt = true
	return append(targets, n.delayHow()...), err
}

func (n *Nemesis) drop(aim) ([]string, error) {
	err := n.net.DropAll(0.02, n.rng.Uint64())
	n.netHurt = true
	return []string{"all links", "2% resets"}, err
}

func (n *Nemesis) halves(aim) ([]string, error) {
	nodes := n.allNodes()
	n.rng.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
	cut := 1 + n.rng.IntN(len(nodes)-1)
	a, b := nodes[:cut], nodes[cut:]
	sort.Strings(a)
	sort.Strings(b)
	return n.partition(a, b)
}

func (n *Nemesis) partitionLeader(at aim) ([]string, error) {
	a := []string{n.name(at.leader)}
	var b []string
	for _, x := range n.allNodes() {
		if x != n.name(at.leader) {
			b = append(b, x)
		}
	}
	t, err := n.partition(a, b)
	return append(t, at.String()), err
}

// partitionCoordinator cuts the consumer group's coordinator off.
func (n *Nemesis) partitionCoordinator(aim) ([]string, error) {
	c := n.cfg.Consumers
	if c == nil {
		return nil, errors.New("no consumer group (partition-coordinator needs --sub-via subscribe)")
	}
	id, err := c.Coordinator()
	if err != nil {
		return nil, err
	}
	b, ok := n.brokerOf(id)
	if !ok {
		return nil, fmt.Errorf("the group's coordinator is broker %d, which the cluster does not list", id)
	}
	var others []string
	for _, x := range n.allNodes() {
		if x != n.name(b) {
			others = append(others, x)
		}
	}
	t, err := n.partition([]string{n.name(b)}, others)
	return append(t, "coordinator"), err
}

func (n *Nemesis) partitionController(aim) ([]string, error) {
	var b []string
	for _, x := range n.brokers() {
		b = append(b, n.name(x))
	}
	return n.partition([]string{n.name(0)}, b)
}

// slowFollowers slows every follower of the aimed partition (the first
// step of slow-followers-kill-leader).
func (n *Nemesis) slowFollowers(at aim) ([]string, error) {
	d := n.slowDelay()
	targets := append([]string{fmt.Sprintf("partition %d", at.partition)}, n.delayHow()...)
	var errs []error
	for _, b := range n.brokers() {
		if b != at.leader {
			errs = append(errs, n.net.Slow(n.name(b), n.name(at.leader), d))
			targets = append(targets, "slow "+n.name(b))
		}
	}
	n.netHurt = true
	return targets, errors.Join(errs...)
}

// isrShrinks is how long slowed followers take to leave the ISR: the
// leader drops them after the lag time, checked every half of it; then it
// acknowledges alone.
func (n *Nemesis) isrShrinks() time.Duration {
	d := n.slowDelay()
	return 2*d + d/2
}

var errNoDisks = errors.New("the runtime cannot damage a node's disk")

// killForDisk is a disk fault's first step: a random broker killed, so
// that its data directory may be touched.
func (n *Nemesis) killForDisk() (cluster.Disks, int, []string, error) {
	disks, ok := n.rt.(cluster.Disks)
	if !ok {
		return nil, 0, nil, errNoDisks
	}
	b, err := n.randomBroker()
	if err != nil {
		return nil, 0, nil, err
	}
	t, err := n.kill(b)
	return disks, b, t, err
}

// damageDisk kills a random broker and damages its data directory as what
// says; the heal restarts it.
func (n *Nemesis) damageDisk(what string) ([]string, error) {
	disks, b, t, err := n.killForDisk()
	if err != nil {
		return t, err
	}
	did, err := disks.DamageDisk(b, what, n.rng.Uint64())
	if err == nil {
		n.damages = append(n.damages, n.brokerID(b))
	}
	return append(t, did), err
}

func (n *Nemesis) corruptDisk(aim) ([]string, error)  { return n.damageDisk(cluster.DamageCorrupt) }
func (n *Nemesis) truncateDisk(aim) ([]string, error) { return n.damageDisk(cluster.DamageTruncate) }

// staleDisk kills a random broker, copies its data directory and restarts
// it; the heal puts the copy back (Nemesis.stale).
func (n *Nemesis) staleDisk(aim) ([]string, error) {
	disks, b, t, err := n.killForDisk()
	if err != nil {
		return t, err
	}
	if err := disks.SnapshotDisk(b); err != nil {
		return t, err
	}
	if err := n.rt.Restart(context.Background(), b); err != nil {
		return append(t, "restart failed"), err
	}
	delete(n.killed, b)
	n.stale[b] = true
	n.damages = append(n.damages, n.brokerID(b))
	return append(t, "its disk copied, restarted; the copy goes back at the end"), nil
}

// clockJump steps a random node's clock by 1 s to 10 min either way.
func (n *Nemesis) clockJump(aim) ([]string, error) {
	lo, hi := math.Log(float64(time.Second)), math.Log(float64(10*time.Minute))
	d := time.Duration(math.Exp(lo + n.rng.Float64()*(hi-lo))).Round(time.Millisecond)
	if n.rng.IntN(2) == 0 {
		d = -d
	}
	return n.setClock(d, 1)
}

// clockSkew makes a random node's clock run 4 to 20 times too fast or too
// slow: a drift no NTP would leave, so that a window of seconds moves
// every timeout the node measures.
func (n *Nemesis) clockSkew(aim) ([]string, error) {
	rate := 4 + 16*n.rng.Float64()
	if n.rng.IntN(2) == 0 {
		rate = 1 / rate
	}
	return n.setClock(0, math.Round(rate*1000)/1000)
}

// setClock gives a random node, broker or controller, that clock; the
// heal sets it right.
func (n *Nemesis) setClock(offset time.Duration, rate float64) ([]string, error) {
	clocks, ok := n.rt.(cluster.Clocks)
	if !ok {
		return nil, fmt.Errorf("the runtime cannot set a node's clock")
	}
	ids := n.brokers()
	if !n.cfg.NoController {
		ids = append([]int{0}, ids...)
	}
	id := ids[n.rng.IntN(len(ids))]
	n.clocked[id] = true
	what := fmt.Sprintf("%s clock %+v", n.name(id), offset)
	if rate != 1 {
		what = fmt.Sprintf("%s clock x%g", n.name(id), rate)
	}
	return []string{what}, clocks.SetClock(id, offset, rate)
}

// step is a fault's step after its start: do, wait after the step before.
type step struct {
	wait func(n *Nemesis) time.Duration
	do   func(n *Nemesis, at aim) ([]string, error)
}

// killAimedLeader kills the aimed partition's leader (the second step of
// slow-followers-kill-leader).
func (n *Nemesis) killAimedLeader(at aim) ([]string, error) {
	t, err := n.kill(at.leader)
	return []string{"then kill " + t[0]}, err
}

// stopFollowers stops every follower of the aimed partition gracefully
// (the first step of stop-followers-kill-leader): each closes its logs,
// so each comes back as a replica that shut down cleanly.
func (n *Nemesis) stopFollowers(at aim) ([]string, error) {
	targets := []string{fmt.Sprintf("partition %d", at.partition)}
	var errs []error
	for _, b := range n.brokers() {
		if b != at.leader && !n.killed[b] {
			n.killed[b] = true
			errs = append(errs, n.rt.Stop(b, n.cfg.StopTimeout))
			targets = append(targets, "stop "+n.name(b))
		}
	}
	return targets, errors.Join(errs...)
}

// restartAimedLeader starts the aimed partition's killed leader again
// while its followers are still down (the last step of
// stop-followers-kill-leader): the one replica back is the one that shut
// down uncleanly.
func (n *Nemesis) restartAimedLeader(at aim) ([]string, error) {
	if err := n.rt.Restart(context.Background(), at.leader); err != nil {
		return []string{"then restart " + n.name(at.leader) + " failed"}, err
	}
	delete(n.killed, at.leader)
	return []string{"then restart " + n.name(at.leader) + " alone"}, nil
}

// slowDelay is a slow link's delay: a fetch round trip of twice the lag
// limit keeps a follower from ever catching up within it.
func (n *Nemesis) slowDelay() time.Duration { return max(n.cfg.LagTimeMax, time.Second) }

// liveFollower picks a broker, not the aimed leader, that the nemesis has
// not killed.
func (n *Nemesis) liveFollower(at aim) (int, error) {
	var followers []int
	for _, b := range n.brokers() {
		if b != at.leader && !n.killed[b] {
			followers = append(followers, b)
		}
	}
	if len(followers) == 0 {
		return 0, fmt.Errorf("partition %d has no live follower", at.partition)
	}
	return followers[n.rng.IntN(len(followers))], nil
}

func (n *Nemesis) slowFollower(at aim) ([]string, error) {
	f, err := n.liveFollower(at)
	if err != nil {
		return nil, err
	}
	d := n.slowDelay()
	err = n.net.Slow(n.name(f), n.name(at.leader), d)
	n.netHurt = true
	return append([]string{n.name(f), "to " + n.name(at.leader), fmt.Sprintf("partition %d", at.partition), "delay " + d.String()}, n.delayHow()...), err
}

// zombieFollower cuts the controller's messages to a follower of the aimed
// partition, or to the broker a trigger aimed at: the one way back stays,
// so the controller keeps hearing its heartbeats (it stays registered,
// and in the ISR while it fetches) but every leadership change passes it
// by. It fetches from the leader it last knew, in that leader's epoch,
// which a correct leader fences once leadership has moved (KIP-320).
func (n *Nemesis) zombieFollower(at aim) ([]string, error) {
	z := at.leader
	if at.who == "" {
		var err error
		if z, err = n.liveFollower(at); err != nil {
			return nil, err
		}
	}
	err := n.net.OneWay([]string{n.name(0)}, []string{n.name(z)})
	n.netHurt = true
	return []string{n.name(z), n.name(0) + " -> " + n.name(z) + " dropped", fmt.Sprintf("partition %d", at.partition)}, err
}

// Settle is how long after its window opens a fault of kind takes to be
// wholly in effect on brokers whose replica.lag.time.max.ms is lag: a
// fault in two steps waits between them (slow-followers-kill-leader for
// the ISR to shrink before it kills), and a window shorter than that
// closes before the fault has done what it is named for, a window that
// tested nothing. A composite's part i starts i/(k+1) of the way into the
// window, so the window must leave each part its own settling time after
// that. Unknown kinds settle at once.
func Settle(kind string, lag time.Duration) time.Duration {
	f, ok := Lookup(kind)
	if !ok {
		return 0
	}
	n := &Nemesis{cfg: Config{LagTimeMax: lag}}
	one := func(f *Fault) time.Duration {
		var d time.Duration
		for _, s := range f.steps {
			d += s.wait(n)
		}
		return d
	}
	if f.Parts == nil {
		return one(f)
	}
	var out time.Duration
	k := len(f.Parts)
	for i, p := range f.Parts {
		out = max(out, one(p)*time.Duration(k+1)/time.Duration(k+1-i))
	}
	return out
}
