package nemesis

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/history"
)

// TestEveryFaultSaysWhatItNeeds: a fault that needed nothing would run on
// an external cluster whose user gave no command for it, and fail in every
// window; each kind says what it needs, and a composite needs what its
// parts need. A client fault acts on the tester's own clients (a group
// member, or the requests they send), and needs nothing of the cluster's
// runtime.
func TestEveryFaultSaysWhatItNeeds(t *testing.T) {
	for _, f := range Faults() {
		if client := f.Client || f.Requests || f.Producers; (len(f.Needs) == 0) != client {
			t.Errorf("%s needs %v (a client fault: %v)", f.Name, f.Needs, client)
		}
		if f.Network && !slices.ContainsFunc(f.Needs, func(n string) bool {
			return n == NeedPartition || n == NeedSlow || n == NeedOneWay || n == NeedDelay || n == NeedDrop
		}) {
			t.Errorf("%s cuts or slows links but needs no network action: %v", f.Name, f.Needs)
		}
	}
	c, ok := Lookup("pause+kill-leader")
	if !ok || !reflect.DeepEqual(c.Needs, []string{NeedPause, NeedResume, NeedKill, NeedStart}) {
		t.Fatalf("composite needs %v", c.Needs)
	}
	have := map[string]bool{NeedKill: true, NeedStart: true}
	got := Missing([]string{"kill-leader", "pause+kill-leader", "kill-controller", "latency"}, func(n string) bool { return have[n] })
	want := []string{"pause+kill-leader needs pause, resume", "kill-controller needs controller", "latency needs delay, heal"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("missing %q, want %q", got, want)
	}
}

// TestExternalNaming: on a cluster named by its user, the nemesis aims at
// nodes by their names, maps the leader the metadata gives (by the
// cluster's own broker ids, here from 0) to the broker it kills, records
// the killed broker by that id, leaves out a controller it does not have,
// and hands the commands the runtime ran to the window's completion.
func TestExternalNaming(t *testing.T) {
	names := []string{"ctl", "kafka-a", "kafka-b", "kafka-c"}
	rt := &commandRuntime{}
	rec := &memRecorder{}
	leaders := func(context.Context) (map[int32]int32, error) { return map[int32]int32{0: 11}, nil }
	n := New(Config{Brokers: 3, Partitions: 1, Seed: 1, NoController: true,
		Names: func(id int) string { return names[id] }, BrokerIDs: []int32{10, 11, 12}}, rt, rt, leaders, rec)
	s := Schedule{{Fault: "kill-leader", Start: 0, End: time.Millisecond}, {Fault: "partition-leader", Start: 2 * time.Millisecond, End: 3 * time.Millisecond}}
	if err := n.Run(context.Background(), time.Now(), s); err != nil {
		t.Fatal(err)
	}
	want := []string{"kill 2", "restart 2", "partition [kafka-b] [kafka-a kafka-c]", "heal-network"}
	if !reflect.DeepEqual(rt.log, want) {
		t.Fatalf("actions %v, want %v", rt.log, want)
	}
	start := rec.ops[1]
	if start.F != "start-kill-leader" || !reflect.DeepEqual(start.Value.KilledBrokers, []int32{11}) || start.Value.Targets[0] != "kafka-b" {
		t.Fatalf("start %+v %+v", start, start.Value.FaultInfo)
	}
	if len(start.Value.Commands) != 1 || start.Value.Commands[0].Action != "kill 2" {
		t.Fatalf("the window's completion has commands %+v", start.Value.Commands)
	}
	if inv := rec.ops[0]; len(inv.Value.Commands) != 0 {
		t.Fatalf("the invoke has commands %+v: they ran after it", inv.Value.Commands)
	}
	for _, op := range rec.ops {
		for _, tg := range op.Value.Targets {
			if strings.Contains(tg, "controller") {
				t.Errorf("a cluster without a controller node got %q", tg)
			}
		}
	}
}

// commandRuntime is a fakeRuntime that says, as the external runtime
// does, what it ran.
type commandRuntime struct {
	fakeRuntime
	taken int
}

func (c *commandRuntime) TakeCommands() []history.Command {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []history.Command
	for _, l := range c.log[c.taken:] {
		out = append(out, history.Command{Action: l})
	}
	c.taken = len(c.log)
	return out
}
