package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chaos-isr/chaos/broker/bug"
	"github.com/chaos-isr/chaos/broker/controller"
	"github.com/chaos-isr/chaos/broker/core"
	"github.com/chaos-isr/chaos/broker/memdriver"
	"github.com/chaos-isr/chaos/broker/storage"
	"github.com/chaos-isr/chaos/cluster"
	"github.com/chaos-isr/chaos/internal/clockfault"
	"github.com/chaos-isr/chaos/nemesis"
	"github.com/chaos-isr/chaos/runner"
)

// Message delays between any two nodes (clients included), drawn from the
// seed for every message: wide enough that another seed reorders what
// meets at a broker, short as a loopback network is.
const (
	minDelayMs = 0
	maxDelayMs = 4
	// tickMs is how often the brokers and the controller tick, as the
	// real brokers' timers do.
	tickMs = 10
)

// world is the simulated cluster and the virtual clock everything runs
// on. Virtual time is the driver's, in milliseconds since the cluster
// started; the history's is nanoseconds since the workload started (t0).
type world struct {
	c       *memdriver.Cluster
	brokers int
	t0      int64
	// lose: killed brokers lose their unsynced writes (they keep them in
	// memory, as chaos broker --lose-unsynced does).
	lose bool
	// rng draws what the clients' side of the network decides (how long a
	// reset takes to arrive), apart from the cluster's own stream.
	rng *rand.Rand
	// open are the client calls in flight to each broker, in the order
	// they were sent: a broker's death resets their connections.
	open map[int32][]*pending
	// onCrash hears of each node that crashed (runtime.WatchCrashes);
	// crashes holds those before it was set.
	onCrash func(cluster.Crash)
	crashes []cluster.Crash
	// onViolation hears of each breach of the ISR invariant
	// (memdriver.Violation); violations holds those before it was set.
	onViolation func(memdriver.Violation)
	violations  []memdriver.Violation
}

// clusterOptions are the driver's options for spec: the brokers and the
// controller configured as chaos broker and chaos controller would be by
// the same flags.
func clusterOptions(spec runner.Spec, clusterID string) (memdriver.Options, error) {
	st := spec.Settings
	policy, intervalMs, err := storage.ParseFsync(st.Fsync)
	if err != nil {
		return memdriver.Options{}, fmt.Errorf("settings.fsync: %w", err)
	}
	planted, err := bug.ParseSet(st.Bugs)
	if err != nil {
		return memdriver.Options{}, fmt.Errorf("settings.bugs: %w", err)
	}
	cc := controller.Config{
		Bugs:      planted.On(bug.Controller),
		ClusterID: clusterID, SessionTimeoutMs: st.SessionTimeoutMs, DefaultPartitions: st.Partitions,
		DefaultReplicationFactor: st.ReplicationFactor, DefaultMinInsyncReplicas: st.MinInsyncReplicas, DefaultElection: st.Election,
	}
	bc := core.DefaultConfig()
	bc.ClusterID = clusterID
	bc.ReplicaLagTimeMaxMs, bc.ReplicaLagMaxMessages = st.ReplicaLagTimeMaxMs, st.ReplicaLagMaxMessages
	bc.ReplicaFetchWaitMaxMs, bc.HeartbeatIntervalMs = st.ReplicaFetchWaitMaxMs, st.HeartbeatIntervalMs
	bc.AutoCreateTopics = !st.NoAutoCreateTopics
	bc.Bugs = planted.On(bug.Broker)
	return memdriver.Options{
		// The cluster's stream is the seed's, apart from the workload's
		// and the nemesis's, which draw from the seed themselves.
		Seed: spec.Seed ^ 0x636c7573746572, Brokers: spec.Nodes, Controller: cc, Broker: bc,
		MinDelayMs: minDelayMs, MaxDelayMs: maxDelayMs, TickMs: tickMs,
		Fsync: policy, FsyncIntervalMs: intervalMs, StorageBugs: planted.On(bug.Storage), NoTrace: true,
	}, nil
}

func newWorld(spec runner.Spec, opts memdriver.Options) *world {
	w := &world{
		brokers: spec.Nodes, lose: spec.Settings.LoseUnsynced,
		rng:  rand.New(rand.NewPCG(spec.Seed, 0x636c69656e74)),
		open: map[int32][]*pending{},
	}
	// A broker that crashes loses what a killed one loses.
	opts.OnCrash, opts.CrashLosesUnsynced = w.nodeCrashed, w.lose
	opts.OnViolation = w.violated
	w.c = memdriver.New(opts)
	return w
}

// now is the virtual time since the workload started.
func (w *world) now() time.Duration { return time.Duration(w.c.Now()-w.t0) * time.Millisecond }

// after calls fn once d of virtual time has passed, rounded up to the
// clock's millisecond.
func (w *world) after(d time.Duration, fn func()) { w.c.After(ceilMs(d), fn) }

func ceilMs(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// delay is how long a reset takes to reach a client.
func (w *world) delay() int64 { return minDelayMs + w.rng.Int64N(maxDelayMs-minDelayMs+1) }

// resetConns fails every client call in flight to broker id, whose
// process died: its kernel resets the connections.
func (w *world) resetConns(id int32) {
	calls := w.open[id]
	delete(w.open, id)
	for _, p := range calls {
		w.c.After(w.delay(), func() { p.complete(nil, fmt.Errorf("read %s: connection reset by peer", addrOf(id))) })
	}
}

// Addresses: broker id advertises bN:9092 (memdriver's host and port).
func addrOf(id int32) string { return fmt.Sprintf("b%d:9092", id) }

func brokerOf(addr string) (int32, bool) {
	host, port, ok := strings.Cut(addr, ":")
	id, err := strconv.Atoi(strings.TrimPrefix(host, "b"))
	if !ok || port != "9092" || !strings.HasPrefix(host, "b") || err != nil || id < 1 {
		return 0, false
	}
	return int32(id), true
}

func (w *world) bootstrap() []string {
	out := make([]string, w.brokers)
	for i := range out {
		out[i] = addrOf(int32(i + 1))
	}
	return out
}

// runtime is the simulated cluster as cluster.Runtime: what the nemesis's
// process faults act on. Node 0 is the controller.
type runtime struct{ w *world }

var _ cluster.Runtime = runtime{}

func (r runtime) Kill(id int) error {
	if id == 0 {
		r.w.c.KillController()
		return nil
	}
	r.w.c.Kill(int32(id), r.w.lose)
	r.w.resetConns(int32(id))
	return nil
}

// Stop shuts a broker down cleanly (its logs synced and checkpointed); the
// controller has nothing to save that it has not saved, so its stop is a
// kill.
func (r runtime) Stop(id int, _ time.Duration) error {
	if id == 0 {
		r.w.c.KillController()
		return nil
	}
	r.w.c.Stop(int32(id))
	r.w.resetConns(int32(id))
	return nil
}

func (r runtime) Restart(_ context.Context, id int) error {
	if id == 0 {
		r.w.c.RestartController()
		return nil
	}
	r.w.c.Restart(int32(id))
	return nil
}

var _ cluster.Clocks = runtime{}

// SetClock sets the clock node id reads (memdriver.Cluster.SetClock).
func (r runtime) SetClock(id int, offset time.Duration, rate float64) error {
	node := int32(id)
	if id == 0 {
		node = memdriver.ControllerID
	}
	r.w.c.SetClock(node, clockfault.Fault{Offset: offset, Rate: rate})
	return nil
}

var _ cluster.Disks = runtime{}

// DamageDisk damages down broker id's storage (memdriver.Cluster.Damage).
func (r runtime) DamageDisk(id int, what string, seed uint64) (string, error) {
	if id == 0 {
		return "", errors.New("the controller's disk is not simulated")
	}
	return r.w.c.Damage(int32(id), what, seed)
}

// SnapshotDisk copies down broker id's storage aside.
func (r runtime) SnapshotDisk(id int) error {
	if id == 0 {
		return errors.New("the controller's disk is not simulated")
	}
	return r.w.c.SnapshotDisk(int32(id))
}

// RestoreDisk puts back the copy of broker id's storage.
func (r runtime) RestoreDisk(id int) error {
	if id == 0 {
		return errors.New("the controller's disk is not simulated")
	}
	return r.w.c.RestoreDisk(int32(id))
}

var errPauseController = errors.New("pausing the controller is not simulated")

func (r runtime) Pause(id int) error {
	if id == 0 {
		return errPauseController
	}
	r.w.c.Pause(int32(id))
	return nil
}

func (r runtime) Resume(id int) error {
	if id == 0 {
		return errPauseController
	}
	r.w.c.Resume(int32(id))
	return nil
}

// network is the simulated links as cluster.Network: the faults of the
// nemesis's network kinds, between nodes only (clients are never cut).
// Its faults cannot fail: every link exists.
type network struct{ w *world }

var _ cluster.Network = network{}

// node is the driver's id of a node the nemesis names.
func node(name string) int32 {
	if name == "controller" {
		return memdriver.ControllerID
	}
	id, err := strconv.Atoi(strings.TrimPrefix(name, "broker-"))
	if err != nil {
		panic("sim: the nemesis named an unknown node " + name)
	}
	return int32(id)
}

func (n network) Partition(a, b []string) error {
	n.OneWay(a, b)
	return n.OneWay(b, a)
}

func (n network) OneWay(from, to []string) error {
	for _, x := range from {
		for _, y := range to {
			n.w.c.Block(node(x), node(y))
		}
	}
	return nil
}

func (n network) Slow(from, to string, d time.Duration) error {
	n.w.c.SlowLink(node(from), node(to), ceilMs(d))
	return nil
}

func (n network) DelayAll(d time.Duration) error { n.w.c.DelayAll(ceilMs(d)); return nil }

func (n network) DropAll(p float64, seed uint64) error { n.w.c.DropAll(p, seed); return nil }

func (n network) HealAll() error { n.w.c.Heal(); return nil }

// observe is topic's partitions as a triggered fault watches them: what
// every broker that runs (and is not paused) last heard from the
// controller, in id order, read without the round trips the real watch
// makes to each.
func (w *world) observe(topic string) nemesis.Observe {
	return func(context.Context) ([]nemesis.Answer, error) {
		var out []nemesis.Answer
		for id := int32(1); id <= int32(w.brokers); id++ {
			if !w.c.Up(id) || w.c.Paused(id) {
				continue
			}
			a := nemesis.Answer{From: cluster.NodeName(int(id)), Partitions: map[int32]nemesis.PartitionView{}}
			if t, _ := w.c.Node(id).Metadata().Lookup(topic, -1); t != nil {
				for _, p := range t.Partitions {
					a.Partitions[p.Partition] = nemesis.PartitionView{Leader: p.Leader, Epoch: p.LeaderEpoch, ISR: slices.Clone(p.ISR)}
				}
			}
			out = append(out, a)
		}
		if len(out) == 0 {
			return nil, errors.New("no broker answered a metadata request")
		}
		return out, nil
	}
}

// leaders is who leads each partition of topic, as the first broker that
// runs (and is not paused) last heard from the controller: what a
// Metadata request would answer, read without the round trip.
func (w *world) leaders(topic string) nemesis.Leaders {
	return func(context.Context) (map[int32]int32, error) {
		for id := int32(1); id <= int32(w.brokers); id++ {
			if !w.c.Up(id) || w.c.Paused(id) {
				continue
			}
			out := map[int32]int32{}
			if t, _ := w.c.Node(id).Metadata().Lookup(topic, -1); t != nil {
				for _, p := range t.Partitions {
					out[p.Partition] = p.Leader
				}
			}
			return out, nil
		}
		return nil, errors.New("no broker answered a metadata request")
	}
}
