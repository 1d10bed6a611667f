package proxy

import (
	"maps"
	"slices"
	"testing"
	"time"
)

// newTestFabric links every pair of brokers both ways and every broker to
// the controller (the controller dials no one), as the local runtime does.
// Nothing listens at the targets: only fault state is looked at.
func newTestFabric(t *testing.T) *Fabric {
	t.Helper()
	f := NewFabric()
	t.Cleanup(func() { f.Close() })
	brokers := []string{"broker-1", "broker-2", "broker-3"}
	for _, a := range brokers {
		for _, b := range append(slices.Clone(brokers), "controller") {
			if a == b {
				continue
			}
			if _, err := f.Add(a, b, "127.0.0.1:1"); err != nil {
				t.Fatal(err)
			}
		}
	}
	return f
}

func TestFabricBookkeeping(t *testing.T) {
	f := newTestFabric(t)
	if _, err := f.Add("broker-1", "broker-2", "127.0.0.1:1"); err == nil {
		t.Error("added a link twice")
	}
	if _, err := f.Add("broker-1", "broker-1", "127.0.0.1:1"); err == nil {
		t.Error("added a link to itself")
	}
	var names []string
	for _, l := range f.Links() {
		names = append(names, l.Name())
	}
	want := []string{
		"broker-1->broker-2", "broker-1->broker-3", "broker-1->controller",
		"broker-2->broker-1", "broker-2->broker-3", "broker-2->controller",
		"broker-3->broker-1", "broker-3->broker-2", "broker-3->controller",
	}
	if !slices.Equal(names, want) {
		t.Errorf("Links() = %v, want %v", names, want)
	}
	if got := f.Nodes(); !slices.Equal(got, []string{"broker-1", "broker-2", "broker-3", "controller"}) {
		t.Errorf("Nodes() = %v", got)
	}
	if l := f.Link("controller", "broker-1"); l != nil {
		t.Errorf("Link(controller, broker-1) = %v, want none", l)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Add("x", "y", "127.0.0.1:1"); err == nil {
		t.Error("added a link to a closed fabric")
	}
}

// Each helper changes exactly the links it names, and HealAll undoes it.
func TestFabricFaults(t *testing.T) {
	const d = 3 * time.Second
	blocked := func(dir Direction) Faults { return Faults{Blocked: dir} }
	for _, tc := range []struct {
		name  string
		fault func(*Fabric)
		want  map[string]Faults // links not listed stay healthy
	}{
		{
			name:  "partition",
			fault: func(f *Fabric) { f.Partition([]string{"broker-1"}, []string{"broker-2", "controller"}) },
			want: map[string]Faults{
				"broker-1->broker-2":   blocked(Both),
				"broker-2->broker-1":   blocked(Both),
				"broker-1->controller": blocked(Both),
			},
		},
		{
			name:  "isolate",
			fault: func(f *Fabric) { f.Isolate("broker-3") },
			want: map[string]Faults{
				"broker-3->broker-1":   blocked(Both),
				"broker-3->broker-2":   blocked(Both),
				"broker-3->controller": blocked(Both),
				"broker-1->broker-3":   blocked(Both),
				"broker-2->broker-3":   blocked(Both),
			},
		},
		{
			name:  "isolate controller",
			fault: func(f *Fabric) { f.Isolate("controller") },
			want: map[string]Faults{
				"broker-1->controller": blocked(Both),
				"broker-2->controller": blocked(Both),
				"broker-3->controller": blocked(Both),
			},
		},
		{
			name:  "one way",
			fault: func(f *Fabric) { f.OneWay([]string{"broker-1"}, []string{"broker-2"}) },
			want: map[string]Faults{
				"broker-1->broker-2": blocked(Forward),
				"broker-2->broker-1": blocked(Backward),
			},
		},
		{
			// The controller dials no one, so only the brokers' links to
			// it carry its packets: their answers are lost.
			name:  "one way from the controller",
			fault: func(f *Fabric) { f.OneWay([]string{"controller"}, []string{"broker-1", "broker-2"}) },
			want: map[string]Faults{
				"broker-1->controller": blocked(Backward),
				"broker-2->controller": blocked(Backward),
			},
		},
		{
			name: "both one ways make a partition",
			fault: func(f *Fabric) {
				f.OneWay([]string{"broker-1"}, []string{"broker-2"})
				f.OneWay([]string{"broker-2"}, []string{"broker-1"})
			},
			want: map[string]Faults{
				"broker-1->broker-2": blocked(Both),
				"broker-2->broker-1": blocked(Both),
			},
		},
		{
			name:  "slow",
			fault: func(f *Fabric) { f.Slow("broker-2", "broker-1", d) },
			want: map[string]Faults{
				"broker-2->broker-1": {ForwardDelay: d, BackwardDelay: d},
			},
		},
		{
			name:  "delay all with jitter",
			fault: func(f *Fabric) { f.DelayAllJitter(d, d/5, 9) },
			want: func() map[string]Faults {
				want := map[string]Faults{}
				for _, a := range []string{"broker-1", "broker-2", "broker-3"} {
					for _, b := range []string{"broker-1", "broker-2", "broker-3", "controller"} {
						if a != b {
							want[a+"->"+b] = Faults{ForwardDelay: d, BackwardDelay: d, ForwardJitter: d / 5, BackwardJitter: d / 5}
						}
					}
				}
				return want
			}(),
		},
		{
			name:  "unknown node",
			fault: func(f *Fabric) { f.Partition([]string{"broker-9"}, []string{"broker-1"}) },
			want:  map[string]Faults{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTestFabric(t)
			tc.fault(f)
			seen := map[string]bool{}
			for _, l := range f.Links() {
				seen[l.Name()] = true
				if got, want := l.Faults(), tc.want[l.Name()]; got != want {
					t.Errorf("%s: %v, want %v", l.Name(), got, want)
				}
			}
			for name := range maps.Keys(tc.want) {
				if !seen[name] {
					t.Errorf("no link %s", name)
				}
			}
			f.HealAll()
			for _, l := range f.Links() {
				if got := l.Faults(); got != (Faults{}) {
					t.Errorf("%s after HealAll: %v", l.Name(), got)
				}
			}
		})
	}
}

// OneWay on real traffic: a's requests to b vanish, b's requests to a
// arrive but go unanswered, and HealAll restores both on the same
// connections.
func TestFabricOneWayTraffic(t *testing.T) {
	atA, atB := newServer(t, false), newServer(t, false)
	f := NewFabric()
	t.Cleanup(func() { f.Close() })
	ab, err := f.Add("a", "b", atB.addr())
	if err != nil {
		t.Fatal(err)
	}
	ba, err := f.Add("b", "a", atA.addr())
	if err != nil {
		t.Fatal(err)
	}
	fromA, fromB := dial(t, ab.Addr()), dial(t, ba.Addr())
	send(t, fromA, "1")
	expect(t, fromA, "1")
	send(t, fromB, "1")
	expect(t, fromB, "1")

	f.OneWay([]string{"a"}, []string{"b"})
	send(t, fromA, "2")
	send(t, fromB, "2")
	eventually(t, "b's request to reach a", func() bool { return atA.received.Load() == 2 })
	expectSilence(t, fromB)
	expectSilence(t, fromA)
	if got := atB.received.Load(); got != 1 {
		t.Fatalf("a's request reached b through a one-way cut (%d bytes)", got)
	}

	f.HealAll()
	expect(t, fromA, "2")
	expect(t, fromB, "2")
}
