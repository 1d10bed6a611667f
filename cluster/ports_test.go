package cluster

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
)

// TestCheckPorts: the one port rule every starter and flag check uses.
func TestCheckPorts(t *testing.T) {
	for _, c := range []struct {
		base, nodes, controller int
		ok                      bool
	}{
		{9092, 3, 0, true},
		{2, 3, 0, true},          // controller at 1
		{1, 3, 0, false},         // controller at 0
		{65533, 3, 0, true},      // brokers up to 65535
		{65534, 3, 0, false},     // a broker at 65536
		{30000, 3, 30003, true},  // just past the brokers
		{30000, 3, 30002, false}, // on the last broker
		{30000, 3, 65536, false}, // controller out of range
		{30000, 3, 29000, true},
	} {
		err := CheckPorts(c.base, c.nodes, c.controller)
		if (err == nil) != c.ok {
			t.Errorf("CheckPorts(%d, %d, %d) = %v, want ok %v", c.base, c.nodes, c.controller, err, c.ok)
		}
	}
}

// TestPortInUse: a port another process listens on is reported as
// ErrPortInUse, which a tester that chose the ports takes as a cue to
// choose others; the ports it chooses lie below Linux's range for
// outgoing connections.
func TestPortInUse(t *testing.T) {
	base, err := FreeBasePort("127.0.0.1", 3)
	if err != nil {
		t.Fatal(err)
	}
	if base-1 < 20000 || base+2 >= 32768 {
		t.Fatalf("base port %d: the ports %d..%d are not in [20000, 32768)", base, base-1, base+2)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(base))
	if err := CheckFree("broker-1", addr); err != nil {
		t.Fatalf("a free port: %v", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = CheckFree("broker-1", addr)
	if !errors.Is(err, ErrPortInUse) || !strings.Contains(err.Error(), addr+" (broker-1) is already in use") {
		t.Fatalf("a port in use: %v", err)
	}
}
