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
// module many minimal kernels leave out), a delay d becomes an HTB class
// whose rate lets one minimal packet through per d: every exchange on the
// link then takes at least as long as with d of latency each way, which is
// what a slow follower needs to fall behind its leader (and its throughput
// is far lower). Apply reports which mechanism it used, and Probe which one
// the kernel offers: chaos netfault prints both as JSON (ApplyJSON).
package netfault
