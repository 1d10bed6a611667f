package runner

import (
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/internal/gcpace"
)

// pacing holds the caps of the collection targets asked for (one for each
// judge or simulation under way); stop ends the pacer the first one
// started, which closes done when it has.
var pacing struct {
	sync.Mutex
	caps       []int
	percent    int
	limit      int64 // the memory limit before the first cap
	stop, done chan struct{}
	// lowest is the lowest of caps, which the pacer reads without the
	// lock: a restore holds the lock while it waits for the pacer to
	// stop.
	lowest atomic.Int64
}

// The collection targets (see CollectTighter).
const (
	// judgeGOGC: a judge's garbage up to half its live heap, for a small
	// one (but at least judgeGarbageFloor); simGOGC: a simulation's, Go's
	// default.
	judgeGOGC = 50
	simGOGC   = 100
	// judgeGarbage and simGarbage are the garbage a large live heap is
	// let gather before a collection, in a judge and in a simulation
	// alone: about this much, and at least minGOGC percent. A judge's
	// tables hold no pointers, so a collection costs it little: at 192
	// MB, garbage was a fifth of the 2-hour simulated run's check's peak
	// RSS, and 64 MB took 0.1-0.2 GB off it. A simulation's heap is
	// mostly the brokers' logs and allocates fast: 64 MB (with the
	// memory limit held too) made a 2-hour one 194 → 239 s for 0.1 GB.
	// At least 5 percent (it was 10), with limitSlack 32 MB (it was 64):
	// that check's peak RSS 0.94-0.95 → 0.90-0.92 GB, in the same time.
	judgeGarbage = 64 << 20
	simGarbage   = 192 << 20
	minGOGC      = 5
	// judgeGarbageFloor is the least garbage a judge gathers (GOGC at
	// most 400): half of a live heap of tens of MB was a collection
	// every 20 MB or so of a reading that allocates a GB a minute, a
	// fifth of its time (30-minute simulated run's check: 6.1 → 5.1 s,
	// peak RSS 145 → 170 MB; 2 hours: 23.1 → 19.1 s, 466 → 496 MB; its
	// report 20.4 → 15.9 s, 127 → 150 MB).
	judgeGarbageFloor = 32 << 20
	// limitSlack is how far above its collection target a paced
	// process's memory may go (see limitFor).
	limitSlack = 32 << 20
)

// paceEvery is how often the target follows the live heap (a variable so
// that a test can make it short).
var paceEvery = 50 * time.Millisecond

// CollectTighter tightens the garbage collector's target while a judge
// runs (a run's judge, chaos check, chaos report), unless GOGC is set, and
// returns what restores it when the last judge or simulation under way
// ends.
//
// What a judge holds only grows as it reads (the checkers' index, the
// report's timeline), and nearly all else it allocates is garbage at
// once. Go collects when the heap reaches twice the live heap, so a judge
// of a long history would hold as much garbage as index: its peak is
// what the collector waits for, not what it needs. A judge collects at
// 1.5 times its live heap (on a 30-minute simulated run's history chaos
// check peaked at 0.56 GB rather than 0.69 GB, in about 10% more time),
// at least judgeGarbageFloor above it (a small heap collected that
// often spent a fifth of its time collecting), and once the live heap is
// past a hundred MB at about judgeGarbage above it: a two-hour real run's index is a GB, and half of it again in
// garbage was the largest part of its judge's peak. A collection of a
// large index costs little more than of a small one (its tables hold no
// pointers), so the cost is the collections' number, which the garbage
// bounds.
func CollectTighter() (restore func()) { return collectAtMost(judgeGOGC) }

// CollectForSimulation is CollectTighter for a simulation: the simulated
// brokers' logs only grow, so once they are large the garbage is bounded
// the same way (a two-hour simulation's logs are about 2 GB); a small one
// collects as Go does.
func CollectForSimulation() (restore func()) { return collectAtMost(simGOGC) }

// collectAtMost paces the collector's target, at most maxGOGC, until the
// returned func is called; the lowest cap asked for holds.
func collectAtMost(maxGOGC int) (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	pacing.Lock()
	defer pacing.Unlock()
	pacing.caps = append(pacing.caps, maxGOGC)
	pacing.lowest.Store(int64(slices.Min(pacing.caps)))
	if len(pacing.caps) == 1 {
		pacing.percent = debug.SetGCPercent(maxGOGC)
		pacing.limit = debug.SetMemoryLimit(-1)
		pacing.stop, pacing.done = make(chan struct{}), make(chan struct{})
		go pace(pacing.stop, pacing.done)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			pacing.Lock()
			defer pacing.Unlock()
			i := slices.Index(pacing.caps, maxGOGC)
			pacing.caps = slices.Delete(pacing.caps, i, i+1)
			if len(pacing.caps) > 0 {
				pacing.lowest.Store(int64(slices.Min(pacing.caps)))
				return
			}
			close(pacing.stop)
			<-pacing.done
			debug.SetGCPercent(pacing.percent)
			debug.SetMemoryLimit(pacing.limit)
		})
	}
}

// pace sets the collector's target to gogcFor the live heap as it grows,
// and while a judge runs the memory limit to limitFor it (unless
// GOMEMLIMIT is set), until stop is closed. A simulation alone keeps the
// limit it had: its heap churns, and the limit was measured on judges.
func pace(stop, done chan struct{}) {
	limit := os.Getenv("GOMEMLIMIT") == ""
	defer close(done)
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	tick := time.NewTicker(paceEvery)
	defer tick.Stop()
	cur, limited := -1, false
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		metrics.Read(live)
		if live[0].Value.Kind() != metrics.KindUint64 {
			return // a runtime without the metric: the cap it is
		}
		l, lowest := live[0].Value.Uint64(), int(pacing.lowest.Load())
		if want := gogcFor(l, lowest); want != cur {
			debug.SetGCPercent(want)
			cur = want
		}
		switch {
		case limit && lowest <= judgeGOGC:
			debug.SetMemoryLimit(limitFor(l, cur))
			limited = true
		case limited:
			// The judge inside a simulation ended.
			debug.SetMemoryLimit(pacing.limit)
			limited = false
		}
	}
}

// limitFor is the memory limit for a live heap of live bytes collected at
// gogc: its collection target and limitSlack more. Go gives the OS back
// the memory a collection freed only slowly, so a judge's RSS stood
// 100-150 MB above its heap: the transient buffers of a long run's final
// reads (lines of tens of MB), freed but kept. Near the limit the runtime
// gives them back at once (and collects sooner, which the slack makes
// rare): chaos check of a 2-hour simulated run, 1.06 → 1.01 GB (three
// runs each, with and without), in the same time.
func limitFor(live uint64, gogc int) int64 {
	sum := uint64(limitSlack)
	for _, v := range []uint64{live, live / 100 * uint64(gogc)} {
		if v > math.MaxInt64-sum {
			return math.MaxInt64
		}
		sum += v
	}
	return int64(sum)
}

// gogcFor is the GOGC for a live heap of live bytes under a cap: garbage
// of cap percent of it, or about judgeGarbage (simGarbage under a
// simulation's cap alone) once that is less, or minGOGC percent of it
// once that is more; a judge's, at least judgeGarbageFloor.
func gogcFor(live uint64, cap int) int {
	held := uint64(judgeGarbage)
	if cap > judgeGOGC {
		held = simGarbage
	}
	want := gcpace.For(live, cap, minGOGC, held)
	if cap <= judgeGOGC && live > 0 {
		want = max(want, int(min(100*judgeGarbageFloor/live, 400)))
	}
	return want
}

// readDone gives back to the OS the memory that reading a history left
// free, once h, its index, is built in a file: decoding allocated what
// each line held (a long run's final reads are a partition's whole log
// each, tens of MB) and Go returns freed memory to the OS only gradually,
// so a 2-hour judge's checks ran beside 150 MB of it. One collection of a
// heap that holds next to nothing costs milliseconds; of an index held in
// the heap (no file could be had), a second at 2 hours: not then.
func readDone(h *checker.History) {
	if h.HeldInFile() {
		debug.FreeOSMemory()
	}
}
