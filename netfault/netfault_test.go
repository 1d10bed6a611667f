package netfault

import (
	"strings"
	"testing"
	"time"
)

func TestDecodeRefusesBadSpecs(t *testing.T) {
	for spec, want := range map[string]string{
		`{"drops":[{"peer":"broker-2","out":true}]}`:                            "not an IPv4 address",
		`{"drops":[{"peer":"::1"}]}`:                                            "not an IPv4 address",
		`{"drops":[{"peer":"10.0.0.2","percent":150}]}`:                         "not in 0..100",
		`{"delays":[{"peer":"10.0.0.2","delay":0}]}`:                            "not in (0, 1m]",
		`{"delays":[{"peer":"10.0.0.2","delay":1,"dst_port":1,"src_port":2}]}`:  "not both",
		`{"mechanism":"tbf"}`:                                                   "unknown delay mechanism",
		`{"relay":[{"to":"broker-1","delay":1000}]}`:                            "need mechanism userspace",
		`{"mechanism":"userspace","relay":[{"to":"","delay":1}]}`:               "no link named",
		`{"mechanism":"userspace","relay":[{"to":"b","delay":10,"jitter":20}]}`: "jitter of at most",
		`{"mechanism":"userspace","delays":[{"peer":"10.0.0.2","delay":1}]}`:    "not qdisc ones",
		`{"drop":[]}`: "unknown field",
	} {
		if _, err := Decode(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error with %q", spec, err, want)
		}
	}
	s := Spec{Drops: []Drop{{Peer: "172.18.0.3", Out: true, Percent: 2}},
		Delays: []Delay{{Peer: "172.18.0.4", DstPort: 9092, Delay: 1500 * time.Millisecond}}, Mechanism: HTB}
	got, err := Decode(s.Encode())
	if err != nil || got.Encode() != s.Encode() {
		t.Fatalf("round trip: %v %+v", err, got)
	}
}

// The fallback's rate makes every packet wait about the delay: a 64-byte
// packet per d.
func TestHTBRate(t *testing.T) {
	for d, want := range map[time.Duration]uint64{1500 * time.Millisecond: 341, 50 * time.Millisecond: 10240, time.Minute: 8} {
		if got := htbRate(d); got != want {
			t.Errorf("htbRate(%s) = %d bit/s, want %d", d, got, want)
		}
	}
}

// u32 keys are read at fixed offsets of the IPv4 header (16: destination)
// and of an option-less TCP header (20: source port << 16 | destination
// port); a wrong offset or mask would delay the wrong packets.
func TestU32Keys(t *testing.T) {
	f := u32For(2, 0x1000a, Delay{Peer: "172.18.0.3", SrcPort: 9092, Delay: time.Second})
	keys := f.Sel.Keys
	if len(keys) != 3 || keys[0].Off != 16 || keys[0].Val != 0xac120003 || keys[0].Mask != 0xffffffff {
		t.Fatalf("address key: %+v", keys)
	}
	if keys[1].Off != 8 || keys[1].Val != 6<<16 || keys[1].Mask != 0x00ff0000 {
		t.Errorf("protocol key: %+v", keys[1])
	}
	if keys[2].Off != 20 || keys[2].Val != 9092<<16 || keys[2].Mask != 0xffff0000 {
		t.Errorf("source port key: %+v", keys[2])
	}
	f = u32For(2, 0x1000a, Delay{Peer: "172.18.0.3", DstPort: 9092, Delay: time.Second})
	if k := f.Sel.Keys[2]; k.Val != 9092 || k.Mask != 0x0000ffff {
		t.Errorf("destination port key: %+v", k)
	}
	if f := u32For(2, 0x1000a, Delay{Peer: "172.18.0.3", Delay: time.Second}); len(f.Sel.Keys) != 1 {
		t.Errorf("a delay without ports matches more than the address: %+v", f.Sel.Keys)
	}
}
