package nemesis

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/cluster"
	"github.com/chaos-isr/chaos/history"
)

// crashingRuntime is fakeRuntime with nodes that die on their own: down
// lists them until they are restarted.
type crashingRuntime struct {
	fakeRuntime
	down map[int]bool
}

func (c *crashingRuntime) WatchCrashes(func(cluster.Crash)) {}

func (c *crashingRuntime) Crashed() []int {
	var out []int
	for id := range 4 {
		if c.down[id] {
			out = append(out, id)
		}
	}
	return out
}

func (c *crashingRuntime) Restart(ctx context.Context, id int) error {
	delete(c.down, id)
	return c.fakeRuntime.Restart(ctx, id)
}

// TestCrashedNodesRestartAtHeal: a window's heal restarts the nodes the
// runtime says crashed as well as those the nemesis killed (a node both
// killed and crashed once), and HealAll does so in a run without faults;
// with nothing to heal it records nothing. A crash is recorded as an
// invoke and its info completion by the cluster's process, naming the node
// and its broker id.
func TestCrashedNodesRestartAtHeal(t *testing.T) {
	rt := &crashingRuntime{down: map[int]bool{}}
	rec := &memRecorder{}
	n := New(Config{Brokers: 3, Partitions: 1, Seed: 1, BrokerIDs: []int32{11, 12, 13}}, rt, rt, nil, rec)
	ctx := context.Background()
	if err := n.HealAll(ctx); err != nil || len(rec.ops) != 0 {
		t.Fatalf("heal of nothing: %v, %d ops", err, len(rec.ops))
	}

	rt.down[2] = true
	if err := n.RecordCrash(cluster.Crash{ID: 2, Exit: "exit status 2", Panic: "boom", Log: "panic: boom"}); err != nil {
		t.Fatal(err)
	}
	inv, done := rec.ops[0], rec.ops[1]
	if inv.Process != history.ClusterProcess || inv.Type != history.Invoke || done.Type != history.Info || done.F != history.Crash ||
		done.Value.Node != "broker-2" || *done.Value.Broker != 12 || done.Value.Exit != "exit status 2" || done.Value.Panic != "boom" {
		t.Fatalf("crash recorded as %v / %v %+v", inv, done, done.Value.CrashInfo)
	}
	if _, err := history.Pairs(rec.ops); err != nil {
		t.Fatal(err)
	}

	// A kill window while broker 2 is down and the controller crashed
	// too; the broker it kills is reported crashed as well: the heal
	// restarts each of them once.
	rt.down[0] = true
	o := n.Open(Event{Fault: "kill", Start: 0, End: time.Second}, time.Now())
	if _, _, err := o.Step(ctx, 0); err != nil {
		t.Fatal(err)
	}
	var killed int
	if _, err := fmt.Sscanf(rt.log[len(rt.log)-1], "kill %d", &killed); err != nil {
		t.Fatalf("the window did %v", rt.log)
	}
	rt.down[killed] = true
	from := len(rt.log)
	if err := n.Close(ctx, "kill"); err != nil {
		t.Fatal(err)
	}
	restarts := slices.Sorted(slices.Values(rt.log[from:]))
	want := slices.Compact(slices.Sorted(slices.Values([]string{"restart 0", "restart 2", fmt.Sprint("restart ", killed)})))
	stop := rec.ops[len(rec.ops)-1]
	if !slices.Equal(restarts, want) || len(rt.Crashed()) != 0 || !slices.Contains(stop.Value.Targets, "restart controller (crashed)") {
		t.Fatalf("heal restarted %v (targets %v), want %v and none down", restarts, stop.Value.Targets, want)
	}

	// Without a fault: HealAll restarts a crashed node and says so.
	rt.down[1] = true
	before := len(rec.ops)
	if err := n.HealAll(ctx); err != nil {
		t.Fatal(err)
	}
	if h := rec.ops[len(rec.ops)-1]; len(rec.ops) != before+2 || h.F != "heal" || !slices.Equal(h.Value.Targets, []string{"restart broker-1 (crashed)"}) {
		t.Fatalf("heal recorded %v", rec.ops[before:])
	}
}
