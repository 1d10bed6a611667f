package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/chaos-isr/chaos/internal/cli"
)

// Server is chaos serve: a store's Handler on a loopback address.
type Server struct {
	h    *Handler
	addr string
}

// New checks chaos serve's --store and --addr, naming the flag of a bad
// one: addr must be HOST:PORT with a loopback host, since the store holds
// node logs and histories and is not for the network at large.
func New(store, addr string) (*Server, error) {
	if err := cli.HostPort("addr", addr, "127.0.0.1:8080"); err != nil {
		return nil, err
	}
	host, _, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, cli.Error("addr", addr, "not a loopback address", "chaos serve listens on 127.0.0.1, ::1 or localhost only, e.g. --addr 127.0.0.1:8080")
	}
	h, err := NewHandler(store)
	if err != nil {
		return nil, cli.Error("store", store, err.Error(), "the result store chaos run writes to (store by default)")
	}
	return &Server{h: h, addr: addr}, nil
}

// Serve listens, says on out where, and serves until ctx ends.
func (s *Server) Serve(ctx context.Context, out io.Writer) error {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: s.h, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(out, "serving %s at http://%s/ (Ctrl-C stops)\n", s.h.Root(), ln.Addr())
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
