package workload

import (
	"errors"
	"sync"
	"time"

	"github.com/chaos-isr/chaos/history"
)

// Recorder appends operations to a history, stamping their time, and
// counts outcomes for progress displays. It is safe for concurrent use.
type Recorder struct {
	w     *history.Writer
	start time.Time
	// clock, when set, is the time since the test started instead of the
	// wall clock's: a simulation's virtual time.
	clock func() time.Duration
	mu    sync.Mutex
	stats Stats
	// procs is above every process id recorded or handed out so far.
	procs int
	// lastFault is when the nemesis last completed an operation: the end
	// of the last fault window or heal, from which the liveness bound
	// runs.
	lastFault time.Duration
}

// Stats counts completed operations.
type Stats struct {
	Invokes int64
	OK      int64
	Fail    int64
	Info    int64
	Sends   int64 // completed sends
}

// NewRecorder records into w, with times relative to start.
func NewRecorder(w *history.Writer, start time.Time) *Recorder {
	return &Recorder{w: w, start: start}
}

// NewRecorderClock records into w, stamping each operation with clock():
// a simulated test's virtual time since it started, so that its history's
// times, like its choices, follow from its seed.
func NewRecorderClock(w *history.Writer, clock func() time.Duration) *Recorder {
	return &Recorder{w: w, clock: clock}
}

// Stats returns the counts so far.
func (r *Recorder) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// Since is the time since the test started.
func (r *Recorder) Since() time.Duration {
	if r.clock != nil {
		return r.clock()
	}
	return time.Since(r.start)
}

// LastFault is when the nemesis last completed an operation (the end of
// the last fault window, or the final heal), since the test started; 0 if
// it never did.
func (r *Recorder) LastFault() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastFault
}

// NewProcess returns a process id never used before in this history. The
// workload's generator numbers its own processes, so an id handed out
// while a workload runs may be one it has yet to use; the final phase asks
// once the workload is over.
func (r *Recorder) NewProcess() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.procs++
	return r.procs - 1
}

// NewSpool is a spool for a long read's records, beside the history
// (history.Writer.NewSpool).
func (r *Recorder) NewSpool() (*history.Spool, error) {
	if r.w == nil {
		return nil, errors.New("workload: no history to spool a long read beside")
	}
	return r.w.NewSpool()
}

// Record appends op (time stamped now) and returns it as written.
func (r *Recorder) Record(op history.Op) (history.Op, error) {
	// Stamping and appending under one lock keeps times in index order.
	r.mu.Lock()
	defer r.mu.Unlock()
	op.Time = r.Since().Nanoseconds()
	op, err := r.w.Append(op)
	if err == nil && op.Process == history.NemesisProcess && op.Type != history.Invoke {
		r.lastFault = time.Duration(op.Time)
	}
	if err != nil || op.Process == history.MonitorProcess {
		// The monitor's samples are not the workload's operations: progress
		// lines count what clients did.
		return op, err
	}
	r.procs = max(r.procs, op.Process+1)
	switch op.Type {
	case history.Invoke:
		r.stats.Invokes++
	case history.OK:
		r.stats.OK++
	case history.Fail:
		r.stats.Fail++
	case history.Info:
		r.stats.Info++
	}
	if op.Type != history.Invoke && op.F == history.Send {
		r.stats.Sends++
	}
	return op, nil
}
