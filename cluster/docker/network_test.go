package docker

import (
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/netfault"
)

// fakeCluster has nodes with addresses and no containers: enough for the
// translation of faults into each node's rules.
func fakeNetwork() (*Network, map[string]*Node) {
	c := &Cluster{}
	byName := map[string]*Node{}
	for i, name := range []string{"controller", "broker-1", "broker-2", "broker-3"} {
		port := brokerPort
		if i == 0 {
			port = controllerPort
		}
		n := &Node{ID: i, Name: name, port: port, ip: "172.30.0." + string(rune('2'+i))}
		c.nodes = append(c.nodes, n)
		byName[name] = n
	}
	w := &Network{c: c, mechanism: netfault.HTB, drops: map[[2]string]float64{}, applied: map[string]string{}}
	c.faults = w
	return w, byName
}

func TestSpecs(t *testing.T) {
	w, n := fakeNetwork()
	// A partition is cut at both ends of every link across it.
	w.drops[[2]string{"broker-1", "broker-2"}] = 0
	w.drops[[2]string{"broker-2", "broker-1"}] = 0
	s := w.specFor(n["broker-1"])
	if len(s.Drops) != 2 || s.Drops[0] != (netfault.Drop{Peer: "172.30.0.4", Out: true}) || s.Drops[1] != (netfault.Drop{Peer: "172.30.0.4"}) {
		t.Errorf("broker-1's drops: %+v", s.Drops)
	}
	if s := w.specFor(n["broker-3"]); len(s.Drops)+len(s.Delays) != 0 {
		t.Errorf("broker-3 is not in the partition: %+v", s)
	}
	// A random share is dropped once, at the sender.
	w.drops = map[[2]string]float64{{"broker-1", "broker-3"}: 2}
	if s := w.specFor(n["broker-3"]); len(s.Drops) != 0 {
		t.Errorf("the receiver drops too: %+v", s.Drops)
	}
	if s := w.specFor(n["broker-1"]); len(s.Drops) != 1 || s.Drops[0].Percent != 2 {
		t.Errorf("the sender's drops: %+v", s.Drops)
	}
	// A slow link delays requests to the listener and its responses.
	w.drops = map[[2]string]float64{}
	w.delays = []delayLink{{from: "broker-2", to: "broker-1", d: time.Second, link: true}}
	if s := w.specFor(n["broker-2"]); len(s.Delays) != 1 || s.Delays[0] != (netfault.Delay{Peer: "172.30.0.3", DstPort: 9092, Delay: time.Second}) {
		t.Errorf("the follower's delays: %+v", s.Delays)
	}
	if s := w.specFor(n["broker-1"]); len(s.Delays) != 1 || s.Delays[0] != (netfault.Delay{Peer: "172.30.0.4", SrcPort: 9092, Delay: time.Second}) {
		t.Errorf("the leader's delays: %+v", s.Delays)
	}
	if s := w.specFor(n["broker-1"]); s.Mechanism != netfault.HTB || !strings.Contains(s.Encode(), "htb-rate") {
		t.Errorf("the probed mechanism is not passed on: %+v", s)
	}
}
