package checker

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/history"
)

// crash writes a broker's crash (the invoke and its info completion at
// once, as the runtimes record it) and returns the completion's index.
func (b *hb) crash(broker int32, ci history.CrashInfo) int64 {
	v := &history.Value{CrashInfo: &ci}
	if broker > 0 {
		v.Broker = history.Int32(broker)
	}
	b.add(history.ClusterProcess, history.Invoke, history.Crash, v, "")
	b.t -= 10
	return b.add(history.ClusterProcess, history.Info, history.Crash, v, "")
}

// TestCrashForbiddenEverywhere: no configuration permits a node to die of
// itself, whatever the acks, election, storage and faults, and the model
// says why.
func TestCrashForbiddenEverywhere(t *testing.T) {
	for _, acks := range []int{0, 1, -1} {
		for _, election := range Elections() {
			for _, lose := range []bool{false, true} {
				cfg := Config{Acks: acks, MinInsyncReplicas: 1, ReplicationFactor: 3, Election: election, MaxInFlight: 2,
					ClientRetries: true, LoseUnsynced: lose, Declared: []FaultRun{{Kind: "kill-all", KilledBrokers: 3}}}
				for _, class := range []string{FaultsNone, FaultsF1, FaultsF2, FaultsF3} {
					p := PermittedUnder(cfg, class)[CrashName]
					if p.Permitted || !strings.Contains(p.Why, "bug of the system under test") {
						t.Errorf("acks=%d %s lose=%v %s: crash permitted=%v (%s)", acks, election, lose, class, p.Permitted, p.Why)
					}
				}
			}
		}
	}
}

// TestCrashInstances: each crash is a forbidden instance naming the node,
// the time and how it died, the verdict is invalid on a history that is
// otherwise clean, and a crash the history ends before completing (a torn
// tail keeps the invoke alone) still counts.
func TestCrashInstances(t *testing.T) {
	b := &hb{}
	b.healthy(0)
	b.send(0, 0, "a", 0)
	first := b.crash(2, history.CrashInfo{Node: "broker-2", Panic: "runtime error: index out of range [3] with length 3\nmore", Stack: "core.f\n\tf.go:1"})
	b.send(0, 0, "b", 1)
	b.crash(0, history.CrashInfo{Node: "controller", Exit: "exit status 2", Log: "fatal error: concurrent map writes"})
	b.final(0, 2, "0=a 1=b")
	for br := int32(1); br <= 3; br++ {
		b.replica(0, br, 2, "0=a 1=b")
	}
	b.add(history.ClusterProcess, history.Invoke, history.Crash, &history.Value{Broker: history.Int32(3), CrashInfo: &history.CrashInfo{Node: "broker-3", Exit: "signal: killed"}}, "")

	res := Check(b.ops, strict, Options{})
	r, _ := res.Get(CrashName)
	if res.Valid != Invalid || r.Count != 3 || r.Forbidden != 3 || r.Causes[Unexplained] != 3 || !slices.Contains(res.Unexpected, CrashName) {
		t.Fatalf("verdict %s, crash %+v, unexpected %v", res.Valid, r, res.Unexpected)
	}
	want := []string{
		"broker-2: panic: runtime error: index out of range [3] with length 3 (crashed at ",
		"controller: exit status 2 (crashed at ",
		"broker-3: signal: killed (crashed at ",
	}
	for i, w := range want {
		if !strings.HasPrefix(r.Details[i], w) {
			t.Errorf("detail %d: %q, want it to start %q", i, r.Details[i], w)
		}
	}
	if !strings.Contains(r.Details[0], "op "+strconv.FormatInt(first, 10)+")") {
		t.Errorf("detail %q does not name op %d", r.Details[0], first)
	}
	if got := CrashHeadline(r); got != "broker-2: panic: runtime error: index out of range [3] with length 3; 2 more" {
		t.Errorf("headline %q", got)
	}
	// Two broker crashes and a controller's: the faults that ran are
	// three crashes, two of them killing a broker.
	if res.FaultClass != FaultsF1 || res.FaultWindows[CrashName] != 3 || !slices.Contains(res.Faults, CrashName) {
		t.Errorf("faults %s %v %v", res.FaultClass, res.Faults, res.FaultWindows)
	}
	// Crash operations are not client operations.
	if d, ok := FirstDetection(b.ops, res); !ok || d.Anomaly != CrashName || d.Op != first || d.Ops != 1 {
		t.Errorf("first detection %+v %v, want the crash op %d after 1 client op", d, ok, first)
	}
}

// TestCrashCountsAsKill: a broker that keeps its unsynced writes in memory
// loses an acknowledged record when it crashes, as when it is killed. The
// guarantee model judges the loss as a kill's doing (F2, where a lone
// leader's loss is permitted), so that only the crash is forbidden; the
// same history without the crash is a forbidden lost write.
func TestCrashCountsAsKill(t *testing.T) {
	cfg := Config{Acks: -1, MinInsyncReplicas: 1, ReplicationFactor: 3, Election: "clean", MaxInFlight: 1,
		FaultsRecorded: true, LoseUnsynced: true, Fsync: "never"}
	build := func(crash bool) []history.Op {
		b := &hb{}
		b.send(0, 0, "a", 0)
		b.send(0, 0, "b", 1)
		if crash {
			b.crash(1, history.CrashInfo{Node: "broker-1", Exit: "exit status 2"})
		}
		b.send(0, 0, "c", 1)
		b.poll(10, 0, 0, 2, "0=a 1=c")
		b.final(0, 2, "0=a 1=c")
		for br := int32(1); br <= 3; br++ {
			b.replica(0, br, 2, "0=a 1=c")
		}
		return b.ops
	}
	res := Check(build(true), cfg, Options{})
	lost, _ := res.Get(LostWriteName)
	if res.FaultClass != FaultsF2 || lost.Count != 1 || lost.Forbidden != 0 || !lost.Expected || len(res.Unexpected) != 1 || res.Unexpected[0] != CrashName {
		t.Fatalf("with the crash: class %s, lost-write %+v, unexpected %v", res.FaultClass, lost, res.Unexpected)
	}
	res = Check(build(false), cfg, Options{})
	lost, _ = res.Get(LostWriteName)
	if res.FaultClass != FaultsNone || lost.Forbidden != 1 || res.Valid != Invalid || slices.Contains(res.Unexpected, CrashName) {
		t.Fatalf("without it: class %s, lost-write %+v, unexpected %v", res.FaultClass, lost, res.Unexpected)
	}
	// The controller's crash kills no broker: F1, and the loss stays
	// forbidden.
	ops := build(false)
	b := &hb{ops: ops[:4:4], t: ops[3].Time}
	b.crash(0, history.CrashInfo{Node: "controller"})
	for _, op := range ops[4:] {
		b.add(op.Process, op.Type, op.F, op.Value, op.Error)
	}
	res = Check(b.ops, cfg, Options{})
	lost, _ = res.Get(LostWriteName)
	if res.FaultClass != FaultsF1 || lost.Forbidden != 1 {
		t.Fatalf("controller crash: class %s, lost-write %+v", res.FaultClass, lost)
	}
}

// TestCrashAfterTheLastHeal: a node that crashes after the last heal stays
// down, and the cluster missing it cannot converge: the liveness checks
// that depend on the heal (no-convergence, stuck-partition) are not
// applicable, naming the crash, rather than blaming its consequence as a
// second finding; stuck-consumer, judged wherever a stall happens, still
// applies. A crash that a later heal undid leaves them judged.
func TestCrashAfterTheLastHeal(t *testing.T) {
	build := func(crashFirst bool) *hb {
		b := &hb{}
		b.nemesis("start-kill", "kill")
		b.wait(time.Second)
		if crashFirst {
			b.crash(3, history.CrashInfo{Node: "broker-3", Exit: "exit status 2"})
		}
		b.nemesis("stop-kill", "kill")
		if !crashFirst {
			b.crash(3, history.CrashInfo{Node: "broker-3", Exit: "exit status 2"})
		}
		b.monitor(0, 1, 1, 1, 2)
		b.wait(11 * time.Second)
		b.monitor(0, 1, 1, 1, 2)
		b.converge(false, "t-0: isr [1 2] of replicas [1 2 3]")
		return b
	}
	after := liveness(t, bounded, build(false))
	if r := after[StuckConsumerName]; r.NotApplicable {
		t.Errorf("crash after the heal: stuck-consumer n/a: %q", r.NotChecked)
	}
	for _, name := range []string{NoConvergenceName, StuckPartitionName} {
		if r := after[name]; !r.NotApplicable || !strings.Contains(r.NotChecked, "broker-3 crashed at ") || !strings.Contains(r.NotChecked, "after the last heal") {
			t.Errorf("crash after the heal: %s %s %q", name, r.Valid, r.NotChecked)
		}
	}
	if r := liveness(t, bounded, build(true))[NoConvergenceName]; r.Valid != Invalid {
		t.Errorf("crash before the heal that restarted it: no-convergence %s %v", r.Valid, r.Details)
	}
}
