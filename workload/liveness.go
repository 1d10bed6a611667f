package workload

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chaos-isr/chaos/history"
)

// The final phase gathers the evidence the liveness checks judge
// (docs/guarantees.md): after the last heal the cluster must converge and
// serve again within the liveness bound. A phase that gave up sooner could
// not tell a stuck cluster from a slow one, so it waits for convergence,
// probes every partition with a send, and reads every partition, each at
// least until the bound has passed (and a margin more, so that a cluster
// that recovers just inside the bound is seen to). Both drivers, the TCP
// one here and the simulation's, follow these rules.

// LivenessMargin is how long past the liveness bound (or past the moment
// it begins, if later) the final phase goes on trying to send to and read
// a partition: long enough for a request that was refused by stale
// metadata to be sent again to the right leader, and to time out once.
func (c Config) LivenessMargin() time.Duration {
	return max(5*time.Second, 2*c.RequestTimeout)
}

// ConvergeWait is how long the final phase, begun at now, waits for the
// cluster to converge: its converge timeout, and at least until the
// liveness bound after the last fault (lastFault) has passed, plus the
// margin.
func (c Config) ConvergeWait(timeout, lastFault, now time.Duration) time.Duration {
	if c.LivenessBound <= 0 {
		return timeout
	}
	return max(timeout, lastFault+c.LivenessBound+c.LivenessMargin()-now)
}

// TryUntil is until when, at time now, the final phase goes on trying to
// send to or read a partition that keeps failing: the liveness bound
// after the last fault, or now if that has passed, plus the margin. With
// no bound it is now: one more attempt each, as before there was one.
func (c Config) TryUntil(lastFault, now time.Duration) time.Duration {
	if c.LivenessBound <= 0 {
		return now
	}
	return max(lastFault+c.LivenessBound, now) + c.LivenessMargin()
}

// Probes says whether the final phase probes the partitions with a send:
// only where a send can be acknowledged (acks 1 or -1), and a bound asks
// for liveness to be judged.
func (c Config) Probes() bool { return c.Acks != 0 && c.LivenessBound > 0 }

// ConvergeInvoke is the invocation of the final phase's wait for
// convergence by process proc.
func ConvergeInvoke(proc int, topic string) history.Op {
	return history.Op{Process: proc, Type: history.Invoke, F: history.Converge, Value: &history.Value{Topic: topic}}
}

// ConvergeDone is its completion: ok once converged, else fail with what
// was still wrong.
func ConvergeDone(inv history.Op, c Convergence) history.Op {
	done := history.Op{Process: inv.Process, Type: history.OK, F: history.Converge, Value: &history.Value{Topic: inv.Value.Topic}}
	if !c.Converged {
		done.Type, done.Error, done.Value.Unconverged = history.Fail, c.Why, c.Unconverged
	}
	return done
}

// ProbeInvoke is attempt n (from 1) of the final phase's probe send to k
// by process proc: a send like the producers', with a value unique in the
// history (proc is a process no producer used).
func ProbeInvoke(proc int, k history.Key, n int) history.Op {
	return history.Op{Process: proc, Type: history.Invoke, F: history.Send,
		Value: &history.Value{Topic: k.Topic, Partition: k.Partition, Value: fmt.Sprintf("%d-%d", proc, n)}}
}

// ProbeOptions are the probe client's options.
func ProbeOptions(cfg Config) ClientOptions {
	return ClientOptions{ID: "chaos-probe", Timeout: cfg.ClientTimeout(), ProduceTimeout: cfg.RequestTimeout}
}

// StuckReadError is a final read whose fetch at Offset, below the leader's
// high watermark HW, returned no records: the leader does not serve what
// it says is committed. A correct leader returns at least one record
// below its high watermark, so the read is not over, and it is not
// judged as having reached the high watermark.
type StuckReadError struct{ Offset, HW int64 }

func (e *StuckReadError) Error() string {
	return fmt.Sprintf("%s at offset %d: the leader returned no records below its high watermark %d", history.StuckRead, e.Offset, e.HW)
}

// StuckUntil is until when the final phase goes on trying a read that
// first got stuck (StuckReadError) at time first: long enough for the
// stall itself to outlast the liveness bound, so that the stuck-consumer
// check can tell it from a moment's hiccup.
func (c Config) StuckUntil(first time.Duration) time.Duration {
	return first + c.LivenessBound + c.LivenessMargin()
}

// RetryFinalReadLater says whether a final read that failed with err is
// worth another attempt while the final phase still tries: any failure
// but records that do not decode (a garbage read, already the finding):
// a leader that is not known, moved, returned nothing below its high
// watermark or lost the connection may yet recover.
func RetryFinalReadLater(err error) bool {
	return err != nil && !strings.HasPrefix(err.Error(), history.CorruptRecords)
}

// LeaderReads schedules the final phase's reads of each partition from its
// leader: round robin, a partition read again while its read fails (or does
// not reach the probe the phase had acknowledged there) until the phase
// stops trying, each partition with a deadline of its own, so that one
// stuck partition does not eat the others' time. Both drivers follow it:
// Next says what to read, Done what came of it.
type LeaderReads struct {
	cfg   Config
	queue []leaderRead
}

type leaderRead struct {
	p         int32
	notBefore time.Duration
	until     time.Duration
	stuck     bool
	probe     int64 // the acknowledged probe's offset; -1 if none
}

// NewLeaderReads reads every partition of cfg, beginning at now; probes
// are the offsets of the probes acknowledged per partition.
func NewLeaderReads(cfg Config, lastFault, now time.Duration, probes map[int32]int64) *LeaderReads {
	l := &LeaderReads{cfg: cfg}
	until := cfg.TryUntil(lastFault, now)
	for p := range cfg.Partitions {
		probe, ok := probes[p]
		if !ok {
			probe = -1
		}
		l.queue = append(l.queue, leaderRead{p: p, until: until, probe: probe})
	}
	return l
}

// Next is the partition to read at now, or how long to wait before it; ok
// is false when every read is over.
func (l *LeaderReads) Next(now time.Duration) (p int32, wait time.Duration, ok bool) {
	if len(l.queue) == 0 {
		return 0, 0, false
	}
	x := l.queue[0]
	return x.p, max(x.notBefore-now, 0), true
}

// Done takes the read of the partition Next named, which ended at now
// with r or err: it is over, or goes to the back of the queue to be read
// again after FinalReadBackoff.
func (l *LeaderReads) Done(now time.Duration, r Read, err error) {
	x := l.queue[0]
	l.queue = l.queue[1:]
	again := false
	var stuck *StuckReadError
	switch {
	case err != nil:
		again = RetryFinalReadLater(err)
		if errors.As(err, &stuck) && !x.stuck && l.cfg.LivenessBound > 0 {
			x.stuck, x.until = true, max(x.until, l.cfg.StuckUntil(now))
		}
	case x.probe >= 0 && r.HW <= x.probe:
		// An acks=1 probe is acknowledged at the leader's append: read
		// again until the high watermark covers it, so that the final
		// read can tell whether it survived.
		again = true
	}
	if again && now < x.until {
		x.notBefore = now + FinalReadBackoff
		l.queue = append(l.queue, x)
	}
}
