package netfault

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
)

// Mechanisms for delays.
const (
	Netem = "netem"    // a netem qdisc: a fixed delay on every packet
	HTB   = "htb-rate" // no netem in the kernel: an HTB rate of one minimal packet per delay (htbRate)
	// Userspace is the delay line of package proxy, in a relay every
	// broker's connections to its peers go through (RunRelayed): the
	// local runtime's delays, for kernels without netem.
	Userspace = "userspace"
)

// Spec is the network fault state of one node.
type Spec struct {
	// Drops lists packets to drop.
	Drops []Drop `json:"drops,omitempty"`
	// Delays lists egress traffic to delay (netem or HTB).
	Delays []Delay `json:"delays,omitempty"`
	// Relay lists the delays of the node's relay (Userspace): all of
	// them, as Delays are; a link left out is healed.
	Relay []RelayDelay `json:"relay,omitempty"`
	// Mechanism forces a delay mechanism (Netem, HTB or Userspace); empty
	// picks netem when the kernel has it, else HTB. Userspace takes
	// Relay, the others Delays.
	Mechanism string `json:"mechanism,omitempty"`
}

// Drop drops packets between this node and Peer.
type Drop struct {
	Peer string `json:"peer"` // the other node's IPv4 address
	// Out drops packets sent to Peer; otherwise packets received from it.
	Out bool `json:"out"`
	// Percent is the share of packets dropped, at random; 0 means all.
	Percent float64 `json:"percent,omitempty"`
}

// Delay delays packets this node sends to Peer. The ports narrow it to one
// side of a TCP link: DstPort to the requests this node sends to a peer's
// listener, SrcPort to the responses its own listener sends back.
type Delay struct {
	Peer    string        `json:"peer"`
	DstPort uint16        `json:"dst_port,omitempty"`
	SrcPort uint16        `json:"src_port,omitempty"`
	Delay   time.Duration `json:"delay"`
}

// Validate refuses a spec that Apply could only half install.
func (s Spec) Validate() error {
	for _, d := range s.Drops {
		if ip := net.ParseIP(d.Peer); ip == nil || ip.To4() == nil {
			return fmt.Errorf("drop: %q is not an IPv4 address", d.Peer)
		}
		if d.Percent < 0 || d.Percent > 100 {
			return fmt.Errorf("drop %s: percent %v is not in 0..100", d.Peer, d.Percent)
		}
	}
	for _, d := range s.Delays {
		if ip := net.ParseIP(d.Peer); ip == nil || ip.To4() == nil {
			return fmt.Errorf("delay: %q is not an IPv4 address", d.Peer)
		}
		if d.Delay <= 0 || d.Delay > time.Minute {
			return fmt.Errorf("delay %s: %s is not in (0, 1m]", d.Peer, d.Delay)
		}
		if d.DstPort != 0 && d.SrcPort != 0 {
			return fmt.Errorf("delay %s: give a destination or a source port, not both", d.Peer)
		}
	}
	for _, d := range s.Relay {
		if d.To == "" {
			return errors.New("relay delay: no link named")
		}
		if d.Delay <= 0 || d.Delay > time.Minute || d.Jitter < 0 || d.Jitter > d.Delay {
			return fmt.Errorf("relay delay to %s: %s ± %s is not in (0, 1m] with a jitter of at most the delay", d.To, d.Delay, d.Jitter)
		}
	}
	switch s.Mechanism {
	case "", Netem, HTB:
		if len(s.Relay) > 0 {
			return fmt.Errorf("relay delays need mechanism %s", Userspace)
		}
	case Userspace:
		if len(s.Delays) > 0 {
			return fmt.Errorf("mechanism %s takes relay delays, not qdisc ones", Userspace)
		}
	default:
		return fmt.Errorf("unknown delay mechanism %q (want %s, %s or %s)", s.Mechanism, Netem, HTB, Userspace)
	}
	return nil
}

// Encode is the spec as one command-line argument.
func (s Spec) Encode() string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Decode reads a spec written by Encode, refusing unknown fields.
func Decode(arg string) (Spec, error) {
	var s Spec
	dec := json.NewDecoder(strings.NewReader(arg))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return s, fmt.Errorf("netfault spec: %w", err)
	}
	return s, s.Validate()
}

// Result is what Apply did, printed as JSON by "chaos netfault apply".
type Result struct {
	Drops     int    `json:"drops"`
	Delays    int    `json:"delays"`
	Mechanism string `json:"mechanism,omitempty"` // of the delays, when there were any
	// Why tells why the fallback was used.
	Why string `json:"why,omitempty"`
}

// htbRate is the fallback's rate for a delay d, in bits per second: one
// minimal TCP packet (64 bytes on the wire) per d, so that every packet
// of a request and its response waits about d behind the one before, and
// a round trip takes several d, as it would with d of latency each way.
// A rate alone does not delay an idle link's next small packet; this one
// is low enough that no exchange finishes sooner than a real delay would
// let it (a follower then cannot catch up within replica.lag.time.max.ms).
// It also caps throughput far below what netem's delay would: the
// fallback slows links more than the delay it stands for.
func htbRate(d time.Duration) uint64 {
	const packetBits = 64 * 8
	r := uint64(float64(packetBits) / d.Seconds())
	return max(r, 8)
}
