package heapmeter

import (
	"runtime"
	"runtime/metrics"
	"time"
)

const objects = "/memory/classes/heap/objects:bytes"

// Live is the heap's live objects, in bytes, after a collection.
func Live() uint64 {
	runtime.GC()
	return read()
}

func read() uint64 {
	sample := []metrics.Sample{{Name: objects}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

// Peak starts sampling the heap's objects every 2 ms; stop ends it and
// returns the highest seen (garbage not yet collected included: what the
// process held at that moment).
func Peak() (stop func() uint64) {
	done := make(chan struct{})
	peak := make(chan uint64)
	go func() {
		var hi uint64
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			hi = max(hi, read())
			select {
			case <-done:
				peak <- max(hi, read())
				return
			case <-tick.C:
			}
		}
	}()
	return func() uint64 { close(done); return <-peak }
}
