package cluster

import "testing"

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
