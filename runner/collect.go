package runner

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// judging counts the judges under way (CollectTighter); stop ends the
// pacer the first one started, which closes done when it has.
var judging struct {
	sync.Mutex
	n          int
	percent    int
	stop, done chan struct{}
}

// The judges' collection targets (see CollectTighter).
const (
	// judgeGOGC: garbage up to half the live heap, for a small one.
	judgeGOGC = 50
	// judgeGarbage is the garbage a large live heap is let gather before
	// a collection: about this much, and at least minJudgeGOGC percent.
	judgeGarbage = 192 << 20
	minJudgeGOGC = 10
	// paceEvery is how often the target follows the live heap.
	paceEvery = 50 * time.Millisecond
)

// CollectTighter tightens the garbage collector's target while a judge
// runs (a run's judge, chaos check, chaos report), unless GOGC is set, and
// returns what restores it when the last judge under way ends.
//
// What a judge holds only grows as it reads (the checkers' index, the
// report's timeline), and nearly all else it allocates is garbage at
// once. Go collects when the heap reaches twice the live heap, so a judge
// of a long history would hold as much garbage as index: its peak is
// what the collector waits for, not what it needs. A judge collects at
// 1.5 times its live heap (on a 30-minute simulated run's history chaos
// check peaked at 0.56 GB rather than 0.69 GB, in about 10% more time),
// and once the live heap is past a few hundred MB at about judgeGarbage
// above it: a two-hour real run's index is a GB, and half of it again in
// garbage was the largest part of its judge's peak. A collection of a
// large index costs little more than of a small one (its tables hold no
// pointers), so the cost is the collections' number, which the garbage
// bounds.
func CollectTighter() (restore func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	judging.Lock()
	defer judging.Unlock()
	if judging.n++; judging.n == 1 {
		judging.percent = debug.SetGCPercent(judgeGOGC)
		judging.stop, judging.done = make(chan struct{}), make(chan struct{})
		go pace(judging.stop, judging.done)
	}
	return func() {
		judging.Lock()
		defer judging.Unlock()
		if judging.n--; judging.n == 0 {
			close(judging.stop)
			<-judging.done
			debug.SetGCPercent(judging.percent)
		}
	}
}

// pace sets the collector's target to judgeGOGCFor the live heap as it
// grows, until stop is closed.
func pace(stop, done chan struct{}) {
	defer close(done)
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	tick := time.NewTicker(paceEvery)
	defer tick.Stop()
	cur := judgeGOGC
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		metrics.Read(live)
		if live[0].Value.Kind() != metrics.KindUint64 {
			return // a runtime without the metric: 50 it is
		}
		if want := judgeGOGCFor(live[0].Value.Uint64()); want != cur {
			debug.SetGCPercent(want)
			cur = want
		}
	}
}

// judgeGOGCFor is a judge's GOGC for a live heap of live bytes: garbage of
// half of it, or about judgeGarbage once that is less, or minJudgeGOGC
// percent of it once that is more.
func judgeGOGCFor(live uint64) int {
	if live == 0 {
		return judgeGOGC
	}
	return int(min(judgeGOGC, max(minJudgeGOGC, 100*judgeGarbage/live)))
}
