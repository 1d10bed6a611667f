package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/chaos-isr/chaos/cluster"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	tcexec "github.com/testcontainers/testcontainers-go/exec"

	"github.com/chaos-isr/chaos/netfault"
)

// Network is the nemesis's network for a cluster in containers: the
// desired faults between nodes, turned into one netfault.Spec per node and
// installed in each node's namespace with docker exec. A directed cut is
// enforced at both ends (the sender's output, the receiver's input), so it
// holds while one end is paused and cannot take new rules.
type Network struct {
	c         *Cluster
	mechanism string // of delays: netfault.Netem, HTB or Userspace
	why       string // why not netem

	drops   map[[2]string]float64 // from, to -> percent (0: every packet)
	delays  []delayLink
	applied map[string]string // node -> the encoded spec it has
}

type delayLink struct {
	from, to string
	d        time.Duration
	// jitter and seed vary the delay, with the userspace delay line only.
	jitter time.Duration
	seed   uint64
	// link limits the delay to the TCP connections from dials to to's
	// listener, like the local runtime's proxies; otherwise every packet
	// between the two is delayed.
	link bool
}

var _ cluster.Network = (*Network)(nil)

// Network returns the cluster's network faults, with the delay mechanism
// chosen at the start (Spec.NetworkFaults), or else probing once (in the
// controller's container) which one the kernel offers: netem, or HTB, as
// brokers started without a relay cannot have the userspace delay line.
func (c *Cluster) Network(ctx context.Context) (*Network, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.faults != nil {
		return c.faults, nil
	}
	mech, why := c.mechanism, c.why
	if mech == "" {
		p, err := c.probe(ctx)
		if err != nil {
			return nil, err
		}
		mech, why = p.Mechanism, p.Why
	}
	c.faults = &Network{c: c, mechanism: mech, why: why, drops: map[[2]string]float64{}, applied: map[string]string{}}
	return c.faults, nil
}

// probe asks the kernel, in the controller's container, whether it has
// netem.
func (c *Cluster) probe(ctx context.Context) (netfault.Result, error) {
	var p netfault.Result
	out, err := c.exec(ctx, c.nodes[0], "probe")
	if err != nil {
		return p, fmt.Errorf("probing network faults in %s: %w", c.nodes[0].Container, err)
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		return p, fmt.Errorf("netfault probe said %q: %w", out, err)
	}
	return p, nil
}

// DelayMechanism says how delays are made: "netem", or "userspace (why)"
// or "htb-rate (why)" when the kernel has no netem. The nemesis records it
// with each delay.
func (w *Network) DelayMechanism() string {
	if w.why != "" {
		return w.mechanism + " (" + w.why + ")"
	}
	return w.mechanism
}

// Mechanism is netfault.Netem, HTB or Userspace.
func (w *Network) Mechanism() string { return w.mechanism }

// change edits the desired faults and installs the rules they make:
// installing runs commands in containers, which can fail.
func (w *Network) change(f func()) error {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	f()
	return w.c.syncRules(context.Background(), false)
}

// Partition cuts every packet between the two groups, both ways.
func (w *Network) Partition(a, b []string) error {
	return w.change(func() {
		for _, x := range a {
			for _, y := range b {
				w.drops[[2]string{x, y}] = 0
				w.drops[[2]string{y, x}] = 0
			}
		}
	})
}

// OneWay drops every packet from a node of from to a node of to.
func (w *Network) OneWay(from, to []string) error {
	return w.change(func() {
		for _, x := range from {
			for _, y := range to {
				w.drops[[2]string{x, y}] = 0
			}
		}
	})
}

// Slow delays the connections from dials to to's listener by d each way.
func (w *Network) Slow(from, to string, d time.Duration) error {
	return w.change(func() { w.delays = append(w.delays, delayLink{from: from, to: to, d: d, link: true}) })
}

// DelayAll delays every packet between nodes by d.
func (w *Network) DelayAll(d time.Duration) error { return w.delayAll(d, 0, 0) }

// DelayAllJitter is DelayAll with each delay drawn from d ± j, seeded per
// link from seed, where delays are the userspace delay line; it reports
// whether they are. netem's jitter would draw from the kernel, not the
// seed, and reorder packets, so with netem (or HTB) it is DelayAll.
func (w *Network) DelayAllJitter(d, j time.Duration, seed uint64) (bool, error) {
	if w.mechanism != netfault.Userspace {
		return false, w.DelayAll(d)
	}
	return true, w.delayAll(d, j, seed)
}

func (w *Network) delayAll(d, j time.Duration, seed uint64) error {
	return w.change(func() {
		for _, x := range w.c.nodes {
			for _, y := range w.c.nodes {
				if x != y {
					w.delays = append(w.delays, delayLink{from: x.Name, to: y.Name, d: d, jitter: j, seed: seed})
					seed++
				}
			}
		}
	})
}

// DropAll drops a share p of the packets between nodes, at random (the
// kernel's random numbers: seed has no hold on them).
func (w *Network) DropAll(p float64, seed uint64) error {
	return w.change(func() {
		for _, x := range w.c.nodes {
			for _, y := range w.c.nodes {
				k := [2]string{x.Name, y.Name}
				if _, cut := w.drops[k]; x != y && !cut {
					w.drops[k] = p * 100
				}
			}
		}
	})
}

// HealAll removes every network fault.
func (w *Network) HealAll() error {
	return w.change(func() {
		w.drops = map[[2]string]float64{}
		w.delays = nil
	})
}

// specFor is node's share of the faults.
func (w *Network) specFor(n *Node) netfault.Spec {
	s := netfault.Spec{Mechanism: w.mechanism}
	ip := map[string]*Node{}
	for _, x := range w.c.nodes {
		ip[x.Name] = x
	}
	var keys [][2]string
	for k := range w.drops {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return strings.Compare(a[0]+"|"+a[1], b[0]+"|"+b[1]) })
	for _, k := range keys {
		p := w.drops[k]
		from, to := ip[k[0]], ip[k[1]]
		if from == nil || to == nil {
			continue
		}
		switch {
		case from == n:
			s.Drops = append(s.Drops, netfault.Drop{Peer: to.ip, Out: true, Percent: p})
		case to == n && p == 0:
			// A random share is dropped at the sender only, or it
			// would be dropped twice.
			s.Drops = append(s.Drops, netfault.Drop{Peer: from.ip, Out: false})
		}
	}
	if w.mechanism == netfault.Userspace {
		if n.ID == cluster.ControllerNode {
			// It has no relay to tell (see relayFor), and no qdiscs.
			s.Mechanism = ""
			return s
		}
		s.Relay = w.relayFor(n)
		return s
	}
	for _, d := range w.delays {
		from, to := ip[d.from], ip[d.to]
		if from == nil || to == nil {
			continue
		}
		switch {
		case from == n && d.link:
			s.Delays = append(s.Delays, netfault.Delay{Peer: to.ip, DstPort: uint16(to.port), Delay: d.d})
		case to == n && d.link:
			s.Delays = append(s.Delays, netfault.Delay{Peer: from.ip, SrcPort: uint16(to.port), Delay: d.d})
		case from == n:
			s.Delays = append(s.Delays, netfault.Delay{Peer: to.ip, Delay: d.d})
		}
	}
	return s
}

// relayFor is broker n's share of the delays with the userspace delay
// line: n's relay delays both directions of its link to a peer, which
// covers both ends of a link that netem would delay at each end. A link
// delayed twice (a slow link during a latency fault) takes the longer
// delay. The controller dials no one, so it has no relay: the relays of
// the brokers delay its links.
func (w *Network) relayFor(n *Node) []netfault.RelayDelay {
	byPeer := map[string]delayLink{}
	for _, d := range w.delays {
		if d.from == n.Name && d.to != n.Name && d.d > byPeer[d.to].d {
			byPeer[d.to] = d
		}
	}
	var out []netfault.RelayDelay
	for _, to := range slices.Sorted(maps.Keys(byPeer)) {
		d := byPeer[to]
		out = append(out, netfault.RelayDelay{To: to, Delay: d.d, Jitter: d.jitter, Seed: d.seed})
	}
	return out
}

// syncRules installs every running node's spec where it changed (all of
// them with force: an address changed). The caller holds c.mu.
func (c *Cluster) syncRules(ctx context.Context, force bool) error {
	w := c.faults
	if w == nil || c.closed {
		return nil
	}
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, n := range c.nodes {
		if n.down {
			// Its namespace went with its process; it starts clean.
			delete(w.applied, n.Name)
			continue
		}
		if n.paused {
			continue // installed when it is resumed
		}
		spec := w.specFor(n)
		enc := spec.Encode()
		if have, ok := w.applied[n.Name]; !force && (have == enc || (!ok && len(spec.Drops)+len(spec.Delays)+len(spec.Relay) == 0)) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := c.exec(ctx, n, "apply", enc)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("network faults in %s: %w", n.Name, err))
				return
			}
			w.applied[n.Name] = enc
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// exec runs "chaos netfault ARGS" in a node's container as root and
// returns its output.
func (c *Cluster) exec(ctx context.Context, n *Node, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := append([]string{binaryPath, "netfault"}, args...)
	code, r, err := n.ctr.Exec(ctx, cmd, tcexec.WithUser("0"), tcexec.Multiplexed())
	if err != nil {
		return "", err
	}
	out, _ := io.ReadAll(r)
	if code != 0 {
		return "", fmt.Errorf("chaos netfault %s exited %d: %s", args[0], code, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}
