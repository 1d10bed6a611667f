package proxy

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Fabric is the set of links of a cluster, one per directed pair of nodes
// that talk, and the network faults phrased over nodes. Its methods are
// safe for concurrent use.
//
// The fault methods match the nemesis package's Network interface, so they
// return nothing: a node name with no links affects no link. Nodes lists
// the names the fabric knows, for callers that want to check theirs.
type Fabric struct {
	mu     sync.Mutex
	links  map[linkKey]*Link
	closed bool
}

type linkKey struct{ from, to string }

// NewFabric returns an empty fabric.
func NewFabric() *Fabric {
	return &Fabric{links: make(map[linkKey]*Link)}
}

// Add starts the link for from's connections to to, forwarding to target,
// on a port of 127.0.0.1 chosen by the OS; from must be told to dial the
// link's Addr instead of target. The target need not be up yet.
func (f *Fabric) Add(from, to, target string) (*Link, error) {
	if from == to {
		return nil, fmt.Errorf("proxy: link from %s to itself", from)
	}
	k := linkKey{from, to}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, fmt.Errorf("proxy: fabric closed")
	}
	if _, ok := f.links[k]; ok {
		return nil, fmt.Errorf("proxy: link %s -> %s exists", from, to)
	}
	// Listening under the lock is fine: it is quick, and it keeps a
	// concurrent Add of the same pair from starting a second listener.
	l, err := NewLink(from+"->"+to, from, to, target, "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f.links[k] = l
	return l, nil
}

// Link returns the link from from to to, or nil.
func (f *Fabric) Link(from, to string) *Link {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.links[linkKey{from, to}]
}

// Links returns every link, sorted by from, then to.
func (f *Fabric) Links() []*Link {
	f.mu.Lock()
	out := make([]*Link, 0, len(f.links))
	for _, l := range f.links {
		out = append(out, l)
	}
	f.mu.Unlock()
	slices.SortFunc(out, func(a, b *Link) int {
		return cmp.Or(cmp.Compare(a.from, b.from), cmp.Compare(a.to, b.to))
	})
	return out
}

// Nodes returns every node that is an end of some link, sorted.
func (f *Fabric) Nodes() []string {
	var out []string
	for _, l := range f.Links() {
		out = append(out, l.from, l.to)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Partition cuts the two groups apart: every link between a node of a and
// a node of b, whoever dials, is blocked both ways.
func (f *Fabric) Partition(a, b []string) error {
	f.OneWay(a, b)
	return f.OneWay(b, a)
}

// Isolate partitions node from every other node.
func (f *Fabric) Isolate(node string) {
	var others []string
	for _, n := range f.Nodes() {
		if n != node {
			others = append(others, n)
		}
	}
	_ = f.Partition([]string{node}, others) // a fabric's faults cannot fail
}

// OneWay drops every packet from a node of from to a node of to, whoever
// opened the connection, as a drop rule on the receivers' input would
// (which is what the docker runtime installs). For x in from and y in to:
//
//   - on the link x->y, Forward is blocked: x's requests never reach y, so
//     y never acts on them and x times out;
//   - on the link y->x, Backward is blocked: y's requests do reach x and x
//     acts on them (a fetch that arrives still tells a leader how far its
//     follower got), but x's responses are lost and y times out;
//   - no new connection between x and y is established, either way, since
//     a handshake needs packets both ways.
//
// Packets from y to x still flow. Partition is OneWay both ways. A pair
// with no link between them (a node the fabric does not proxy, or one
// that never dials the other) has nothing to cut: the fabric's faults
// never fail.
func (f *Fabric) OneWay(from, to []string) error {
	for _, x := range from {
		for _, y := range to {
			if l := f.Link(x, y); l != nil {
				l.Block(Forward)
			}
			if l := f.Link(y, x); l != nil {
				l.Block(Backward)
			}
		}
	}
	return nil
}

// Slow delays both directions of the link from from to to by d: what from
// sends arrives d late, and so does every answer, so a round trip takes at
// least 2d longer. With from a follower and to its leader, this is the
// slow follower whose fetches fall behind. d <= 0 removes the delay.
func (f *Fabric) Slow(from, to string, d time.Duration) error {
	if l := f.Link(from, to); l != nil {
		l.Delay(Both, d)
	}
	return nil
}

// DelayAll delays both directions of every link by d: latency across the
// whole network.
func (f *Fabric) DelayAll(d time.Duration) error {
	for _, l := range f.Links() {
		l.Delay(Both, d)
	}
	return nil
}

// DelayAllJitter is DelayAll with each chunk's delay drawn from d ± j
// (see Link.Jitter), each link's draws seeded from seed and the link's
// place in Links, so that a seed gives the fabric the same jitters. It
// reports that the delays jitter, always here: the nemesis asks because
// other networks (netem) cannot draw from a seed.
func (f *Fabric) DelayAllJitter(d, j time.Duration, seed uint64) (bool, error) {
	for i, l := range f.Links() {
		// Jitter first: the chunks read once the delay is on are then
		// all jittered.
		l.Jitter(Both, j, seed+uint64(i))
		l.Delay(Both, d)
	}
	return true, nil
}

// DropAll resets connections on every link with probability p per chunk
// delivered (see Link.Drop), each link with its own seed derived from seed.
func (f *Fabric) DropAll(p float64, seed uint64) error {
	for i, l := range f.Links() {
		l.Drop(Both, p, seed+uint64(i))
	}
	return nil
}

// HealAll clears every fault on every link.
func (f *Fabric) HealAll() error {
	for _, l := range f.Links() {
		l.Heal()
	}
	return nil
}

// Close closes every link; the fabric accepts no more.
func (f *Fabric) Close() error {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	var errs []error
	for _, l := range f.Links() {
		errs = append(errs, l.Close())
	}
	return errors.Join(errs...)
}
