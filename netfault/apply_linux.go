package netfault

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strings"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// tableName is the one nftables table netfault owns.
const tableName = "chaos"

// rootHandle is the root qdisc netfault installs on each interface (1:).
var rootHandle = netlink.MakeHandle(1, 0)

// Apply replaces the node's network faults with s.
func Apply(s Spec) (Result, error) {
	if err := s.Validate(); err != nil {
		return Result{}, err
	}
	res := Result{Drops: len(s.Drops), Delays: len(s.Delays) + len(s.Relay)}
	if err := applyDrops(s.Drops); err != nil {
		return res, fmt.Errorf("nftables: %w", err)
	}
	links, err := faultLinks()
	if err != nil {
		return res, err
	}
	for _, l := range links {
		if err := clearQdisc(l); err != nil {
			return res, err
		}
	}
	if s.Mechanism == Userspace {
		// Sent even when empty: that is how the relay's delays heal.
		if len(s.Relay) > 0 {
			res.Mechanism = Userspace
		}
		return res, setRelay(context.Background(), RelayControl, s.Relay)
	}
	if len(s.Delays) == 0 {
		return res, nil
	}
	mech := s.Mechanism
	if mech == "" {
		mech = Netem
		if ok, why := HasNetem(); !ok {
			mech, res.Why = HTB, why
		}
	}
	res.Mechanism = mech
	for _, l := range links {
		if err := applyDelays(l, s.Delays, mech); err != nil {
			return res, fmt.Errorf("%s on %s: %w", mech, l.Attrs().Name, err)
		}
	}
	return res, nil
}

// applyDrops replaces the chaos table with one drop rule per Drop, in an
// input and an output chain of the ip family (container links are IPv4).
func applyDrops(drops []Drop) error {
	c, err := nftables.New()
	if err != nil {
		return err
	}
	t := &nftables.Table{Name: tableName, Family: nftables.TableFamilyIPv4}
	// Adding the table first makes the delete succeed whether or not it
	// existed; both go in one atomic batch.
	c.AddTable(t)
	c.DelTable(t)
	if len(drops) == 0 {
		return c.Flush()
	}
	c.AddTable(t)
	accept := nftables.ChainPolicyAccept
	in := c.AddChain(&nftables.Chain{Name: "input", Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookInput, Priority: nftables.ChainPriorityFilter, Policy: &accept})
	out := c.AddChain(&nftables.Chain{Name: "output", Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookOutput, Priority: nftables.ChainPriorityFilter, Policy: &accept})
	for _, d := range drops {
		chain, offset := in, uint32(12) // source address
		if d.Out {
			chain, offset = out, 16 // destination address
		}
		exprs := []expr.Any{
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: 4},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: net.ParseIP(d.Peer).To4()},
		}
		if d.Percent > 0 && d.Percent < 100 {
			// numgen random mod 10000 < percent*100. numgen writes host
			// byte order and cmp compares bytes, so turn it big-endian.
			limit := make([]byte, 4)
			binary.BigEndian.PutUint32(limit, uint32(math.Round(d.Percent*100)))
			exprs = append(exprs,
				&expr.Numgen{Register: 1, Modulus: 10000, Type: unix.NFT_NG_RANDOM},
				&expr.Byteorder{SourceRegister: 1, DestRegister: 1, Op: expr.ByteorderHton, Len: 4, Size: 4},
				&expr.Cmp{Op: expr.CmpOpLt, Register: 1, Data: limit},
			)
		}
		exprs = append(exprs, &expr.Counter{}, &expr.Verdict{Kind: expr.VerdictDrop})
		c.AddRule(&nftables.Rule{Table: t, Chain: chain, Exprs: exprs})
	}
	return c.Flush()
}

// faultLinks are the interfaces faults apply to: every one but loopback
// (a container has one per network it is on).
func faultLinks() ([]netlink.Link, error) {
	all, err := netlink.LinkList()
	if err != nil {
		return nil, fmt.Errorf("listing interfaces: %w", err)
	}
	var out []netlink.Link
	for _, l := range all {
		if l.Attrs().Flags&net.FlagLoopback == 0 {
			out = append(out, l)
		}
	}
	return out, nil
}

// clearQdisc removes the root qdisc netfault installed, if any.
func clearQdisc(l netlink.Link) error {
	qs, err := netlink.QdiscList(l)
	if err != nil {
		return fmt.Errorf("qdiscs of %s: %w", l.Attrs().Name, err)
	}
	for _, q := range qs {
		if q.Attrs().Parent == netlink.HANDLE_ROOT && q.Attrs().Handle == rootHandle {
			if err := netlink.QdiscDel(q); err != nil {
				return fmt.Errorf("removing the root qdisc of %s: %w", l.Attrs().Name, err)
			}
		}
	}
	return nil
}

// applyDelays installs a root HTB whose unclassified traffic passes
// untouched (default class 0 is HTB's direct queue), and per delay a
// class, a u32 filter choosing its packets, and the delay: a netem leaf
// under a class of unlimited rate, or the class's own low rate.
func applyDelays(l netlink.Link, delays []Delay, mech string) error {
	// Containers' veth ends come with no transmit queue length, which
	// would give the HTB leaves' default pfifo a one-packet limit and turn
	// a slow link into a lossy one.
	if l.Attrs().TxQLen < 1000 {
		if err := netlink.LinkSetTxQLen(l, 1000); err != nil {
			return fmt.Errorf("txqueuelen: %w", err)
		}
	}
	root := netlink.NewHtb(netlink.QdiscAttrs{LinkIndex: l.Attrs().Index, Handle: rootHandle, Parent: netlink.HANDLE_ROOT})
	root.Defcls = 0
	if err := netlink.QdiscAdd(root); err != nil {
		return fmt.Errorf("root htb: %w", err)
	}
	for i, d := range delays {
		minor := uint16(10 + i)
		classID := netlink.MakeHandle(1, minor)
		rate := uint64(10_000_000_000) // 10 Gbit/s: only netem delays
		if mech == HTB {
			rate = htbRate(d.Delay)
		}
		class := netlink.NewHtbClass(netlink.ClassAttrs{LinkIndex: l.Attrs().Index, Parent: rootHandle, Handle: classID},
			netlink.HtbClassAttrs{Rate: rate, Quantum: 1514})
		if err := netlink.ClassAdd(class); err != nil {
			return fmt.Errorf("class: %w", err)
		}
		if mech == Netem {
			q := netlink.NewNetem(netlink.QdiscAttrs{LinkIndex: l.Attrs().Index, Parent: classID, Handle: netlink.MakeHandle(minor, 0)},
				netlink.NetemQdiscAttrs{Latency: uint32(d.Delay.Microseconds()), Limit: 100000})
			if err := netlink.QdiscAdd(q); err != nil {
				return fmt.Errorf("netem: %w", err)
			}
		}
		if err := netlink.FilterAdd(u32For(l.Attrs().Index, classID, d)); err != nil {
			return fmt.Errorf("u32 filter: %w", err)
		}
	}
	return nil
}

// u32For matches IPv4 packets to d.Peer, and with a port TCP packets of
// that port (read at offset 20: IP headers without options, as TCP/IP
// stacks send them).
func u32For(link int, class uint32, d Delay) *netlink.U32 {
	ip := binary.BigEndian.Uint32(net.ParseIP(d.Peer).To4())
	keys := []netlink.TcU32Key{{Mask: 0xffffffff, Val: ip, Off: 16}}
	if d.DstPort != 0 || d.SrcPort != 0 {
		keys = append(keys, netlink.TcU32Key{Mask: 0x00ff0000, Val: uint32(unix.IPPROTO_TCP) << 16, Off: 8})
		if d.DstPort != 0 {
			keys = append(keys, netlink.TcU32Key{Mask: 0x0000ffff, Val: uint32(d.DstPort), Off: 20})
		} else {
			keys = append(keys, netlink.TcU32Key{Mask: 0xffff0000, Val: uint32(d.SrcPort) << 16, Off: 20})
		}
	}
	return &netlink.U32{
		FilterAttrs: netlink.FilterAttrs{LinkIndex: link, Parent: rootHandle, Priority: 1, Protocol: unix.ETH_P_IP},
		ClassId:     class,
		Sel:         &netlink.TcU32Sel{Flags: netlink.TC_U32_TERMINAL, Keys: keys},
	}
}

// HasNetem reports whether the kernel has the netem qdisc, by adding one
// to loopback and removing it again; why says what failed.
func HasNetem() (ok bool, why string) {
	lo, err := netlink.LinkByName("lo")
	if err != nil {
		return false, "no loopback: " + err.Error()
	}
	q := netlink.NewNetem(netlink.QdiscAttrs{LinkIndex: lo.Attrs().Index, Parent: netlink.HANDLE_ROOT, Handle: netlink.MakeHandle(0x7a7a, 0)},
		netlink.NetemQdiscAttrs{Latency: 1000})
	if err := netlink.QdiscAdd(q); err != nil {
		if errors.Is(err, unix.ENOENT) || strings.Contains(err.Error(), "no such file") {
			return false, "the kernel has no netem qdisc (CONFIG_NET_SCH_NETEM)"
		}
		return false, "netem: " + err.Error()
	}
	_ = netlink.QdiscDel(q)
	return true, ""
}

// ApplyJSON is "chaos netfault apply": it applies the spec arg encodes
// (Spec.Encode) and writes the Result to w as JSON, which the docker
// runtime reads back.
func ApplyJSON(w io.Writer, arg string) error {
	spec, err := Decode(arg)
	if err != nil {
		return err
	}
	res, err := Apply(spec)
	if err != nil {
		return err
	}
	return json.NewEncoder(w).Encode(res)
}

// Probe is what "chaos netfault probe" prints: the delay mechanism this
// kernel supports, and why when it is the fallback.
func Probe() Result {
	if ok, why := HasNetem(); !ok {
		return Result{Mechanism: HTB, Why: why}
	}
	return Result{Mechanism: Netem}
}
