package wait

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestUntil(t *testing.T) {
	n := 0
	if err := Until(context.Background(), time.Millisecond, time.Second, func() (bool, error) { n++; return n == 3, nil }); err != nil || n != 3 {
		t.Fatalf("done on the third try: %v after %d", err, n)
	}
	last := errors.New("not yet")
	err := Until(context.Background(), time.Millisecond, 20*time.Millisecond, func() (bool, error) { return false, last })
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, last) {
		t.Fatalf("timeout: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)
	start := time.Now()
	err = Until(ctx, time.Hour, 0, func() (bool, error) { return false, nil })
	if !errors.Is(err, context.Canceled) || time.Since(start) > time.Second {
		t.Fatalf("a cancelled context stops the wait at once: %v after %s", err, time.Since(start))
	}
}
