package docker

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/netfault"
)

// With the userspace delay line a node's relay delays both ways of its own
// links, so a delay is installed at the dialing end only, and never in a
// qdisc; the longer of two delays on a link wins.
func TestRelaySpecs(t *testing.T) {
	w, n := fakeNetwork()
	w.mechanism = netfault.Userspace
	w.delays = []delayLink{
		{from: "broker-2", to: "broker-1", d: time.Second, link: true},
		{from: "broker-2", to: "broker-1", d: 50 * time.Millisecond},
		{from: "broker-2", to: "controller", d: 50 * time.Millisecond},
		{from: "controller", to: "broker-2", d: 50 * time.Millisecond},
	}
	s := w.specFor(n["broker-2"])
	want := []netfault.RelayDelay{{To: "broker-1", Delay: time.Second}, {To: "controller", Delay: 50 * time.Millisecond}}
	if !slices.Equal(s.Relay, want) || len(s.Delays) != 0 || s.Mechanism != netfault.Userspace {
		t.Errorf("broker-2's spec: %+v, want relay delays %+v", s, want)
	}
	if err := s.Validate(); err != nil {
		t.Error(err)
	}
	for _, other := range []string{"broker-1", "controller"} {
		if s := w.specFor(n[other]); len(s.Relay)+len(s.Delays) != 0 {
			t.Errorf("%s delays too: %+v", other, s)
		}
	}
	// The controller has no relay to tell, so its spec must not ask for one.
	if s := w.specFor(n["controller"]); s.Mechanism == netfault.Userspace {
		t.Errorf("the controller's spec asks for its relay: %+v", s)
	}
}

// A broker started for the userspace delay line runs under the relay and
// dials its peers and the controller through it.
func TestRelayArgs(t *testing.T) {
	c := &Cluster{spec: Spec{Nodes: 3}, mechanism: netfault.Userspace}
	b := &Node{ID: 2, Name: "broker-2", port: brokerPort, HostAddr: "127.0.0.1:9"}
	got := strings.Join(c.args(b), " ")
	for _, want := range []string{
		"netfault relay --link controller=127.0.0.1:19000=controller:9091 --link broker-1=127.0.0.1:19001=broker-1:9092 --link broker-3=127.0.0.1:19003=broker-3:9092 -- broker --id 2",
		"--controller 127.0.0.1:19000",
		"--peer-addr 1=127.0.0.1:19001 --peer-addr 3=127.0.0.1:19003",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("args %q lack %q", got, want)
		}
	}
	c.mechanism = netfault.Netem
	if got := strings.Join(c.args(b), " "); strings.Contains(got, "relay") || !strings.Contains(got, "--peer-addr 1=broker-1:9092") {
		t.Errorf("args with netem: %q", got)
	}
}

// The latency fault's jitter reaches the relays, seeded per link, and only
// the relays: with netem it is a plain delay, and says so.
func TestRelayJitter(t *testing.T) {
	w, n := fakeNetwork()
	w.c.closed = true // no containers to install rules in
	w.mechanism = netfault.Userspace
	if jittered, err := w.DelayAllJitter(50*time.Millisecond, 10*time.Millisecond, 100); !jittered || err != nil {
		t.Fatalf("the userspace delay line does not jitter (%v)", err)
	}
	s := w.specFor(n["broker-1"])
	if len(s.Relay) != 3 {
		t.Fatalf("broker-1's relay delays: %+v", s.Relay)
	}
	seeds := map[uint64]bool{}
	for _, d := range s.Relay {
		if d.Delay != 50*time.Millisecond || d.Jitter != 10*time.Millisecond || seeds[d.Seed] {
			t.Errorf("relay delay %+v (seeds so far %v)", d, seeds)
		}
		seeds[d.Seed] = true
	}
	if err := s.Validate(); err != nil {
		t.Error(err)
	}
	w.delays, w.mechanism = nil, netfault.Netem
	if jittered, err := w.DelayAllJitter(50*time.Millisecond, 10*time.Millisecond, 100); jittered || err != nil {
		t.Errorf("netem claims a seeded jitter (%v)", err)
	}
	for _, d := range w.delays {
		if d.jitter != 0 {
			t.Fatalf("netem got a jitter: %+v", d)
		}
	}
}
