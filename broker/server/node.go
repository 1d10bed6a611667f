package server

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/chaos-isr/chaos/broker/node"
	"github.com/chaos-isr/chaos/internal/cli"
)

// RunBroker is chaos broker: the broker its flags b describe
// (node.Broker.Config, which says on w the bugs it ignores), run, unless
// ctx is validation-only (cli.ValidateOnly), until ctx ends or a SIGINT or
// SIGTERM comes.
func RunBroker(ctx context.Context, b node.Broker, w io.Writer) error {
	cfg, err := b.Config(w)
	if err != nil {
		return err
	}
	return runUntilSignal(ctx, func(ctx context.Context) (*Broker, error) {
		return StartBroker(ctx, BrokerOptions{
			Core: cfg.Core, Storage: cfg.Storage, PeerAddrs: cfg.PeerAddrs,
			Listen: b.Listen, Advertise: b.Advertise, Controller: b.Controller, DataDir: b.Data,
		})
	})
}

// RunController is chaos controller: the controller its flags c describe
// (node.Controller.Config), run as RunBroker runs a broker.
func RunController(ctx context.Context, c node.Controller, w io.Writer) error {
	cfg, err := c.Config(w)
	if err != nil {
		return err
	}
	return runUntilSignal(ctx, func(ctx context.Context) (*Controller, error) {
		return StartController(ctx, ControllerOptions{Config: cfg, Listen: c.Listen, DataDir: c.Data})
	})
}

// runUntilSignal starts a node, unless ctx is validation-only, and waits
// for it to stop, which it does when ctx ends: a signal ends ctx, so that
// Ctrl-C or a supervisor's SIGTERM stops the node in order.
func runUntilSignal[N interface{ Wait() }](ctx context.Context, start func(context.Context) (N, error)) error {
	if err := cli.StopIfValidating(ctx); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	n, err := start(ctx)
	if err != nil {
		return err
	}
	n.Wait()
	return nil
}
