package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/chaos-isr/chaos/results/serve"
)

func newServeCmd() *cobra.Command {
	var store, addr string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Browse the result store in a web browser (on 127.0.0.1)",
		Long: `Serve the result store over HTTP on a loopback address: the front page lists every test
and campaign with its runs, newest first, and links to each run's report, history and node
logs. A run or campaign without a report gets one rendered on first visit. Nothing outside
the store is served: paths with "..", and symlinks that lead out of the store, are refused,
and so are requests addressed to any host name but localhost or a loopback address (a web page
that points its own name at 127.0.0.1 cannot read the store).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signalContext()
			defer stop()
			return serveStore(ctx, cmd, store, addr)
		},
	}
	cmd.Flags().StringVar(&store, "store", "store", "the result store directory")
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "where to listen: a loopback host and a port (0: any free port)")
	return cmd
}

func serveStore(ctx context.Context, cmd *cobra.Command, store, addr string) error {
	if err := checkHostPort("addr", addr, "127.0.0.1:8080"); err != nil {
		return err
	}
	host, _, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		// The store holds node logs and histories; it is not for the
		// network at large.
		return flagError("addr", addr, "not a loopback address", "chaos serve listens on 127.0.0.1, ::1 or localhost only, e.g. --addr 127.0.0.1:8080")
	}
	h, err := serve.NewHandler(store)
	if err != nil {
		return flagError("store", store, err.Error(), "the result store chaos run writes to (store by default)")
	}
	if err := stopIfValidating(cmd); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(cmd.OutOrStdout(), "serving %s at http://%s/ (Ctrl-C stops)\n", h.Root(), ln.Addr())
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
