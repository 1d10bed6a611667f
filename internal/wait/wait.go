// Package wait is the one way the tester waits for something to become
// true: try, and try again every so often, until it is, the context ends
// or the time is up. Every wait takes a context, so that an interrupted
// run stops waiting at once.
package wait

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrTimeout is returned (wrapped, with the last error) when the time is up.
var ErrTimeout = errors.New("timed out")

// Until calls try now and then every interval until it reports done, ctx
// ends (ctx.Err()), or timeout passes (ErrTimeout, wrapping try's last
// error; a timeout of 0 waits as long as ctx lasts). try's error does not
// stop the wait: it is what a timeout reports.
func Until(ctx context.Context, every, timeout time.Duration, try func() (done bool, err error)) error {
	var deadline <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		deadline = t.C
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		done, err := try()
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			if err != nil {
				return fmt.Errorf("%w: %w", ErrTimeout, err)
			}
			return ErrTimeout
		case <-tick.C:
		}
	}
}
