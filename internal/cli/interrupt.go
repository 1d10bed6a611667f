package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
)

// ExitInterrupted is the exit code of a command stopped by Ctrl-C.
const ExitInterrupted = 130

// SignalContext ends on SIGINT or SIGTERM.
func SignalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// Interrupts is how run and cluster up take Ctrl-C (or SIGTERM): the first
// ends the context, after saying what the command does about it, so that
// the command heals and stops its cluster in order; a second one says it
// stops now, calls the abort set by OnSecond (which kills every node) and
// exits ExitInterrupted without waiting for the first's cleanup.
type Interrupts struct {
	sigs  chan os.Signal
	done  chan struct{}
	once  sync.Once
	abort atomic.Pointer[func()]
	// exiting is held from a second interrupt to the process's exit, so
	// that a command whose orderly stop finishes meanwhile does not exit
	// 0 under it: stop waits for it.
	exiting sync.Mutex
}

// InterruptContext starts watching for SIGINT and SIGTERM; first is what
// the first one prints on w. The returned stop ends the watch (a later
// signal then has its default effect).
func InterruptContext(w io.Writer, first string) (context.Context, *Interrupts, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	in := &Interrupts{sigs: make(chan os.Signal, 2), done: make(chan struct{})}
	signal.Notify(in.sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case <-in.sigs:
		case <-in.done:
			return
		}
		fmt.Fprintf(w, "\ninterrupted: %s; Ctrl-C again to stop now\n", first)
		cancel()
		select {
		case <-in.sigs:
		case <-in.done:
			return
		}
		in.exiting.Lock()
		fmt.Fprintln(w, "interrupted again: killing the cluster now")
		if f := in.abort.Load(); f != nil {
			(*f)()
		}
		os.Exit(ExitInterrupted)
	}()
	return ctx, in, func() {
		in.exiting.Lock()
		defer in.exiting.Unlock()
		in.once.Do(func() {
			signal.Stop(in.sigs)
			close(in.done)
			cancel()
		})
	}
}

// OnSecond sets what a second interrupt runs before the process exits: it
// must stop every node the command started, at once.
func (in *Interrupts) OnSecond(abort func()) { in.abort.Store(&abort) }

// SurviveClosedOutput keeps the process alive when its standard output or
// error is a pipe whose reader has gone (chaos run ... | head): Go's
// default is to die of SIGPIPE on the next write, which would cost a run
// its results.json and report. With the signal caught, such writes fail
// with EPIPE and are ignored, and the command finishes its work.
func SurviveClosedOutput() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
}
