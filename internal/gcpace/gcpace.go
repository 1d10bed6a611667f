package gcpace

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// For is the GOGC for a live heap of live bytes: garbage of at most
// maxGOGC percent of it, about garbage bytes once that is less, and at
// least minGOGC percent.
func For(live uint64, maxGOGC, minGOGC int, garbage uint64) int {
	if live == 0 {
		return maxGOGC
	}
	return int(min(uint64(maxGOGC), max(uint64(minGOGC), 100*garbage/live)))
}

// every is how often Hold's pacer follows the live heap (a variable so
// that a test can make it short).
var every = 100 * time.Millisecond

// Hold paces the collector with For until stop is called (which sets
// GOGC back to maxGOGC), unless the GOGC environment variable is set, in
// which case it does nothing: the person who set it decides.
func Hold(maxGOGC, minGOGC int, garbage uint64) (stop func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	debug.SetGCPercent(maxGOGC)
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
		tick := time.NewTicker(every)
		defer tick.Stop()
		cur := maxGOGC
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			metrics.Read(live)
			if live[0].Value.Kind() != metrics.KindUint64 {
				return // a runtime without the metric: the cap it is
			}
			if want := For(live[0].Value.Uint64(), maxGOGC, minGOGC, garbage); want != cur {
				debug.SetGCPercent(want)
				cur = want
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
		debug.SetGCPercent(maxGOGC)
	}
}
