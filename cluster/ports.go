package cluster

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"syscall"
)

// FreeBasePort finds n+1 consecutive free ports on host (n brokers and the
// controller below them) and returns the brokers' base port. They are
// drawn below 32768, where Linux draws the ports of outgoing connections
// from, so that a connection of another process is unlikely to take one.
// Another process may still take one before the cluster binds it; Start
// then fails with an error that is ErrPortInUse, and the caller may try
// again.
func FreeBasePort(host string, n int) (int, error) {
	for try := 0; try < 100; try++ {
		base := 20000 + rand.IntN(12000)
		ok := true
		for p := base - 1; p < base+n && ok; p++ {
			ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
			if err != nil {
				ok = false
				break
			}
			ln.Close()
		}
		if ok {
			return base, nil
		}
	}
	return 0, fmt.Errorf("no %d consecutive free ports found on %s", n+1, host)
}

// ErrPortInUse is what an error is (errors.Is) when a node could not
// start because another process holds its address.
var ErrPortInUse = errors.New("address in use")

// portError is an error that is ErrPortInUse.
type portError struct{ error }

func (portError) Is(target error) bool { return target == ErrPortInUse }

// CheckFree reports, as an error naming the address and the node meant to
// hold it, that another process listens on addr; the error is
// ErrPortInUse.
func CheckFree(node, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return portError{fmt.Errorf("%s (%s) is already in use by another process: is another cluster on these ports?", addr, node)}
		}
		return fmt.Errorf("%s (%s): %w", addr, node, err)
	}
	ln.Close()
	return nil
}

// CheckPorts is the one rule for a cluster's ports: brokers at base up to
// base+nodes-1 and the controller at controller (0: base-1), each from 1
// to 65535, the controller on none of the brokers' ports.
func CheckPorts(base, nodes, controller int) error {
	if controller == 0 {
		controller = base - 1
	}
	switch {
	case base < 1 || base+nodes-1 > 65535 || controller < 1 || controller > 65535:
		return fmt.Errorf("ports out of range: brokers %d..%d, controller %d", base, base+nodes-1, controller)
	case controller >= base && controller < base+nodes:
		return fmt.Errorf("controller port %d collides with the broker ports %d..%d", controller, base, base+nodes-1)
	}
	return nil
}
