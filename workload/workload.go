package workload

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/internal/cli"
	"github.com/chaos-isr/chaos/results"
)

// Config describes a workload: the settings test.json stores
// (results.Workload, one type for the run and its record) and what only
// the run needs.
type Config struct {
	results.Workload
	// LivenessBound is how long after the last heal the cluster has to
	// converge and serve again (the liveness checks' bound): the final
	// phase waits and tries at least that long before it gives up, so that
	// the history shows whether the cluster recovered. 0: the final phase
	// does not probe, and waits only its converge timeout.
	LivenessBound time.Duration `json:"liveness_bound,omitempty"`
	// NoReplicaReads leaves the final phase's reads of every replica out:
	// the cluster refuses them (a foreign broker), so the check that
	// needs them was declared unsupported before the run.
	NoReplicaReads bool `json:"no_replica_reads,omitempty"`
}

// Workload is one kind of test traffic: its workers, what they do and
// record, driven in Phases like the monitor and the final phase. A kind
// lives in a package of its own under workload/ (queue is the first) and
// is listed with its name in Kinds; the checks that judge its operations
// live in package checker, which reads histories only, and are not
// applicable to a history without them.
type Workload interface {
	// Start starts the workers: each records its operations through p
	// (Phases.Record) and stops at the time limit; done is called once
	// every one has. Every callback runs on the phases' loop.
	Start(p *Phases, done func())
	// Stop ends every worker at once (an interrupt): their clients close
	// and an operation in flight keeps its open invoke.
	Stop()
	// Final is the workload's own step of the final phase, after the
	// probes and before every partition is read: it calls next when it
	// is done (at once if it has nothing to do).
	Final(f *Final, next func())
}

// GroupMembers are a workload's consumer group members, when it has a
// group: what the nemesis's group faults act on (nemesis.Consumers).
type GroupMembers interface {
	// Members is how many there are.
	Members() int
	// Crash stops member i as a crashed process stops, and names it.
	Crash(i int) (string, error)
	// Restart has a new process take crashed member i's place.
	Restart(i int) error
	// Pause stops member i where it stands, and names it; Resume has it
	// go on.
	Pause(i int) (string, error)
	Resume(i int) error
	// Coordinator is the group coordinator's broker id, as the members
	// last found it.
	Coordinator() (int32, error)
}

// TxnSessions are a workload's transactional sessions, as the nemesis's
// pause-producer acts on them (package txn has them).
type TxnSessions interface {
	// Sessions is how many there are.
	Sessions() int
	// Zombie pauses session i where it stands and has a new process
	// take its place with the same transactional id, and names the
	// paused one; Wake has the paused ones of slot i go on, as zombies.
	Zombie(i int) (string, error)
	Wake(i int) error
}

// Kind is a workload as --workload names it.
type Kind struct {
	Name string
	Doc  string
	// New is the workload of cfg, or why cfg cannot be run by it.
	New func(cfg Config) (Workload, error)
}

// MaxIdempotentInFlight is the most requests an idempotent producer may
// have in flight: a broker remembers a producer's last five batches, and
// a retry of an older one would not be known as one (Kafka refuses more).
const MaxIdempotentInFlight = 5

// Validate refuses impossible workloads with the reason: where to send,
// the acks (the guarantee model's rule, checker.CheckAcks), and what the
// clients do (CheckClients).
func (c Config) Validate() error {
	switch {
	case len(c.Bootstrap) == 0:
		return errors.New("no bootstrap brokers")
	case c.Topic == "":
		return errors.New("no topic")
	case c.Partitions < 1:
		// The topic's setting, which the brokers judge for a cluster the
		// tester starts (broker/node).
		return cli.Error("partitions", c.Partitions, "fewer than 1", "1 or more")
	}
	if err := checker.CheckAcks(int(c.Acks)); err != nil {
		return cli.Error("acks", c.Acks, err.Error(), "0, 1 or -1 (all)")
	}
	return CheckClients(c)
}

// CheckClients refuses what no producer or consumer can do, naming the
// flag (cli.Error) that sets it: the one statement of these rules, which
// chaos run's flags and a stored spec are held to too (runner's
// Spec.Validate calls it).
func CheckClients(c Config) error {
	switch {
	case c.Concurrency < 1:
		return cli.Error("concurrency", c.Concurrency, "fewer than 1", "the number of producers, 1 or more")
	case c.Consumers < 0:
		return cli.Error("consumers", c.Consumers, "negative", "0 or more")
	case c.Rate < 0:
		return cli.Error("rate", c.Rate, "negative", "sends per second, or 0 for as fast as the producers go")
	case math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0):
		return cli.Error("rate", c.Rate, "not a finite number", "sends per second, or 0 for as fast as the producers go")
	case c.TimeLimit <= 0:
		return cli.Error("time-limit", c.TimeLimit, "not positive", "a duration such as 30s or 5m")
	case c.Retries < 0:
		return cli.Error("retries", c.Retries, "negative", "0 or more retries of a batch after a retriable error")
	case c.MaxInFlight < 0:
		return cli.Error("max-in-flight", c.MaxInFlight, "negative", "the produce requests a producer may have outstanding, 1 or more")
	case c.Idempotent && c.Acks != -1:
		return cli.Error("idempotent", true, fmt.Sprintf("not with acks %d", c.Acks),
			"give acks -1 (all): a batch acknowledged by the leader alone may be lost with the producer state that would recognise its retry, and Kafka's producers refuse enable.idempotence without acks=all too")
	case c.Idempotent && c.MaxInFlight > MaxIdempotentInFlight:
		return cli.Error("max-in-flight", c.MaxInFlight, fmt.Sprintf("above %d with idempotence", MaxIdempotentInFlight),
			fmt.Sprintf("at most %d: a broker remembers an idempotent producer's last %d batches, and knows an older one's retry as out of order (Kafka refuses more too)",
				MaxIdempotentInFlight, MaxIdempotentInFlight))
	case c.RequestTimeout <= 0:
		return cli.Error("request-timeout", c.RequestTimeout, "not positive", "a duration such as 5s")
	case c.LivenessBound < 0:
		return cli.Error("liveness-bound", c.LivenessBound, "negative", "a duration such as 30s, or 0 for the default")
	case c.SubVia != "" && c.SubVia != results.SubViaAssign && c.SubVia != results.SubViaSubscribe:
		return cli.Error("sub-via", c.SubVia, "not a way to consume", "assign (each consumer its own partitions) or subscribe (the consumers one group)")
	}
	return nil
}

// Result is what a client's call for an operation returned: Send's
// outcome, Poll's read or EndOffset's offset, or the error of either.
type Result struct {
	Send   Outcome
	Read   Read
	Offset int64
	Err    error
}

// Complete is the completion of the invoked operation op (a send, poll or
// end-offset read) whose call returned r, as the history records it.
// Whatever carries the calls (TCP, a simulated network) records the same
// completion for the same answer.
func Complete(op history.Op, r Result) history.Op {
	done := history.Op{Process: op.Process, Type: history.OK, F: op.F}
	v := *op.Value
	done.Value = &v
	switch op.F {
	case history.Send:
		o := r.Send
		done.Type, done.Error = o.Type, o.Error
		if len(o.Retries) > 0 {
			v.Attempts = &history.Attempts{Retries: o.Retries}
		}
		if o.Type == history.OK {
			v.Offset = history.Int64(o.Offset)
		}
		return done
	case history.Poll:
		if r.Err == nil {
			v.Records, v.HW = r.Read.Records, history.Int64(r.Read.HW)
			return done
		}
	case history.EndOffset:
		if r.Err == nil {
			v.Offset = history.Int64(r.Offset)
			return done
		}
	default:
		panic("workload: no completion for " + op.F)
	}
	// A read changes nothing: whatever went wrong, it did not happen.
	done.Type, done.Error = history.Fail, r.Err.Error()
	return done
}
