package campaign

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// Interrupts watches for SIGINT and SIGTERM as a campaign takes them: the
// first ends ctx (Run stops its runs in order and starts no other), a
// second closes kill (Options.Kill: the runs are killed at once). Run
// still writes the record either way. stop ends the watch.
func Interrupts() (ctx context.Context, kill <-chan struct{}, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	killc := make(chan struct{})
	sigs := make(chan os.Signal, 2)
	done := make(chan struct{})
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		for _, act := range []func(){cancel, func() { close(killc) }} {
			select {
			case <-sigs:
				act()
			case <-done:
				return
			}
		}
	}()
	return ctx, killc, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}
