// Package netfault applies network faults inside the network namespace it
// runs in: packet drops as nftables rules (github.com/google/nftables) and
// egress delays as traffic control qdiscs (github.com/vishvananda/netlink),
// both pure Go, so the static chaos binary can apply them in a FROM-scratch
// container through "docker exec chaos netfault apply". It needs
// CAP_NET_ADMIN and nothing else.
//
// A Spec is the whole fault state of one node; Apply replaces whatever the
// previous Apply installed, so callers only ever compute the desired state
// (and an empty Spec heals). Everything lives in one nftables table
// ("chaos") and one root qdisc per interface, never touching the rules
// Docker installs (its embedded DNS, its NAT).
//
// Delays use netem where the kernel has it. Where it does not (netem is a
// module many minimal kernels leave out), they use the userspace delay
// line of package proxy: the node runs under a relay (RunRelayed, chaos
// netfault relay) that carries its connections to its peers, and Apply
// hands the relay its delays (Spec.Relay) over an abstract unix socket of
// the namespace. A relay must be there from the node's start, which is the
// runtime's choice; without one, a delay d can still become an HTB class
// whose rate lets one minimal packet through per d (every exchange takes
// at least as long as with d each way, but the link is starved, not
// delayed). Apply reports which mechanism it used, and Probe which one the
// kernel offers: chaos netfault prints both as JSON (ApplyJSON).
package netfault
