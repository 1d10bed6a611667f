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
// controller below them) and returns the brokers' base port. Another
// process may still take one before the cluster binds it; Start then fails
// with the address in use, and the caller may try again.
func FreeBasePort(host string, n int) (int, error) {
	for try := 0; try < 100; try++ {
		base := 20000 + rand.IntN(40000)
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

// CheckFree reports, as an error naming the address and the node meant to
// hold it, that another process listens on addr.
func CheckFree(node, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("%s (%s) is already in use by another process: is another cluster on these ports?", addr, node)
		}
		return fmt.Errorf("%s (%s): %w", addr, node, err)
	}
	ln.Close()
	return nil
}
