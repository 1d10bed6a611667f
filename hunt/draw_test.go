package hunt

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/cluster/external"
	"github.com/chaos-isr/chaos/nemesis"

	"github.com/chaos-isr/chaos/runner"
	"github.com/chaos-isr/chaos/sim"
)

// TestDrawValid: every drawn scenario is one the simulation runs (its
// spec validates), the same seed draws the same one, and the draws cover
// the ranges they claim.
func TestDrawValid(t *testing.T) {
	base := runner.DefaultSpec()
	base.Runtime, base.Store = runner.RuntimeSim, t.TempDir()
	kinds := map[string]bool{}
	armed := map[string]int{} // by event
	windows, held := 0, 0
	rfs := map[int16]int{}
	for seed := uint64(1); seed <= 500; seed++ {
		s := Draw(seed, base, DrawOptions{Config: seed%2 == 0})
		if err := sim.Validate(s); err != nil {
			t.Fatalf("seed %d: %v\n%+v", seed, err, s)
		}
		if again := Draw(seed, base, DrawOptions{Config: seed%2 == 0}); !reflect.DeepEqual(s, again) {
			t.Fatalf("seed %d drew two specs", seed)
		}
		for _, k := range s.Normalized().Faults {
			kinds[k] = true
		}
		if rf := s.Settings.ReplicationFactor; rf < 3 || int(rf) > s.Nodes {
			t.Errorf("seed %d: replication factor %d with %d brokers, want 3 up to every broker", seed, rf, s.Nodes)
		}
		rfs[s.Settings.ReplicationFactor]++
		for _, w := range s.Windows {
			windows++
			for _, p := range strings.Split(w.Fault, "+") {
				if tr := nemesis.TriggerOf(p); tr != nil {
					armed[tr.Event]++
					if tr.Delay > 50*time.Millisecond {
						t.Errorf("seed %d: %s waits %s after its event, more than a few round trips", seed, p, tr.Delay)
					}
				}
			}
		}
		parent := Draw(seed+1000, base, DrawOptions{})
		if s.Windows.Overlaps() && len(s.Windows.Lanes()) == 2 {
			held++
		}
		for i, sp := range []runner.Spec{s, Mutate(parent, seed, base, DrawOptions{}), Mutate(s, seed+7, base, DrawOptions{})} {
			if err := sim.Validate(sp); err != nil {
				t.Fatalf("seed %d, spec %d (0 drawn, 1-2 mutated): %v\n%s", seed, i, err, sp.Windows)
			}
			lag := time.Duration(sp.Settings.ReplicaLagTimeMaxMs) * time.Millisecond
			for _, w := range sp.Windows {
				if need := nemesis.Settle(w.Fault, lag); w.End-w.Start < need {
					t.Errorf("seed %d: window %s lasts %s, shorter than the %s its fault needs to take effect", seed, w, w.End-w.Start, need)
				}
			}
		}
	}
	for _, e := range nemesis.TriggerEvents() {
		if armed[e.Name] == 0 {
			t.Errorf("no window of 500 draws armed on %s", e.Name)
		}
	}
	t.Logf("%d windows, armed on events: %v, replication factors %v, %d schedules with a network window held beside process ones", windows, armed, rfs, held)
	if held < 500/20 {
		t.Errorf("%d of 500 draws hold a network window beside process ones (lanes), want at least one in twenty", held)
	}
	for rf := int16(3); rf <= 5; rf++ {
		if rfs[rf] == 0 {
			t.Errorf("no draw of 500 had replication factor %d", rf)
		}
	}
	if len(kinds) < len(Kinds()) {
		t.Errorf("500 draws used %d of %d kinds", len(kinds), len(Kinds()))
	}
}

// TestDrawOwnCluster: a hunt of an external cluster draws the topic's
// partitions, the workload and the schedule, but leaves the brokers and
// their settings as the cluster has them (the base spec's), and draws only
// the kinds it was given; its scenarios validate as the external runtime
// validates them.
func TestDrawOwnCluster(t *testing.T) {
	base := runner.DefaultSpec()
	base.Runtime, base.Store = runner.RuntimeExternal, t.TempDir()
	base.External = &runner.External{Bootstrap: []string{"127.0.0.1:9092"}, Nodes: []string{"b1=127.0.0.1:9092"},
		Commands: external.Commands{Kill: "true", Start: "true"}}
	kinds := base.External.Runnable(Kinds())
	for _, k := range kinds {
		if f, _ := nemesis.Lookup(k); f.LosesUnsynced || slices.ContainsFunc(f.Needs, func(n string) bool { return n != "kill" && n != "start" }) {
			t.Errorf("kind %s drawn for a cluster with only kill and start commands (needs %v)", k, f.Needs)
		}
	}
	if !slices.Contains(kinds, "kill-leader") || slices.Contains(kinds, "partition") || slices.Contains(kinds, "lose-unsynced") {
		t.Fatalf("runnable kinds with kill and start commands: %v", kinds)
	}
	o := DrawOptions{Faults: kinds, OwnCluster: true}
	partitions := map[int32]bool{}
	for seed := uint64(1); seed <= 200; seed++ {
		for _, s := range []runner.Spec{Draw(seed, base, o), Mutate(Draw(seed+500, base, o), seed, base, o)} {
			got, want := s.Settings, base.Settings
			partitions[got.Partitions] = true
			got.Partitions = want.Partitions
			if s.Nodes != base.Nodes || !reflect.DeepEqual(got, want) {
				t.Fatalf("seed %d: the cluster's settings were drawn: %+v, nodes %d", seed, s.Settings, s.Nodes)
			}
			for _, k := range s.Normalized().Faults {
				if !slices.Contains(kinds, strings.SplitN(k, ":", 2)[0]) && !strings.Contains(k, "+") {
					t.Fatalf("seed %d: kind %s not among %v", seed, k, kinds)
				}
			}
			if err := s.Validate(); err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
		}
	}
	if len(partitions) < 3 {
		t.Errorf("partitions drawn: %v", partitions)
	}
}
