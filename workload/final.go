package workload

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chaos-isr/chaos/history"
)

// Convergence says whether the cluster healed before the final reads: every
// partition has a leader and its whole replica set in the ISR.
type Convergence struct {
	Converged bool          `json:"converged"`
	Waited    time.Duration `json:"waited"`
	Why       string        `json:"why,omitempty"` // what was still wrong when the wait gave up
	// Unconverged are the partitions that were, then.
	Unconverged []int32 `json:"unconverged,omitempty"`
}

// Final waits for the cluster to converge, then records a final read of
// every partition from its leader and a read of every replica's whole log,
// and calls done with how the wait ended. Reads happen even if the cluster
// did not converge (the checkers then judge what could be read) and the
// Convergence says why. The wait, recorded as a converge operation and
// checked on a ticker's timing, lasts up to timeout, and with a liveness
// bound (cfg.LivenessBound) at least until the bound after the last fault
// has passed (ConvergeWait); a probe send to every partition is then tried
// until one is acknowledged (Probes), and a final read that fails is
// tried again (LeaderReads), each until the bound and a margin have
// passed: the evidence the liveness checks judge (see liveness.go).
func (p *Phases) Final(timeout time.Duration, done func(Convergence)) {
	f := &Final{p: p, done: done}
	p.final = f
	f.cl = f.newClient(ClientOptions{ID: "chaos-final", Timeout: p.cfg.ClientTimeout()})
	start := p.env.Now()
	deadline := start + p.cfg.ConvergeWait(timeout, p.rec.LastFault(), start)
	tick := newTicker(start, 200*time.Millisecond)
	f.proc = p.rec.NewProcess()
	inv := ConvergeInvoke(f.proc, p.cfg.Topic)
	if !f.record(inv) {
		return
	}
	// md is the last metadata heard: the replicas to read are those it
	// names, even if the wait gave up.
	var md Metadata
	over := func() {
		if !f.record(ConvergeDone(inv, f.conv)) {
			return
		}
		// The workload's own step comes after the probes, before the
		// reads of every partition.
		reads := func(probes map[int32]int64) { p.wl.Final(f, func() { f.reads(md, probes) }) }
		if p.cfg.Probes() {
			f.probe(reads)
			return
		}
		reads(nil)
	}
	var try func()
	try = func() {
		f.cl.Converged(p.cfg.Topic, p.cfg.Partitions, &md, func(why string) {
			now := p.env.Now()
			switch next := tick.next(now); {
			case why == "":
				f.conv = Convergence{Converged: true, Waited: now - start}
			case now >= deadline || next >= deadline:
				f.after(deadline-now, func() {
					f.conv = Convergence{Waited: p.env.Now() - start, Why: why, Unconverged: UnconvergedPartitions(md, p.cfg.Partitions)}
					over()
				})
				return
			default:
				f.after(next-now, try)
				return
			}
			over()
		})
	}
	try()
}

// StopFinal ends the final phase at once, as an interrupted run must: its
// clients are closed, a read in flight keeps its open invoke, and the
// done Final was given is not called.
func (p *Phases) StopFinal() {
	if f := p.final; f != nil {
		f.stopped = true
		for _, cl := range f.clients {
			cl.Close()
		}
	}
}

// Final is the final phase in progress, as a workload's own step of it
// (Workload.Final) sees it.
type Final struct {
	p       *Phases
	cl      *Client
	proc    int
	conv    Convergence
	done    func(Convergence)
	stopped bool
	clients []*Client // every client it made, for StopFinal
}

// NewClient is a client of the final phase's: closed when the phase
// ends, or stops.
func (f *Final) NewClient(o ClientOptions) *Client { return f.newClient(o) }

// After calls fn after d unless the phase has stopped by then.
func (f *Final) After(d time.Duration, fn func()) { f.after(d, fn) }

// Stopped says whether the phase was stopped (StopFinal).
func (f *Final) Stopped() bool { return f.stopped }

// Phases are the phases the final phase is one of.
func (f *Final) Phases() *Phases { return f.p }

func (f *Final) newClient(o ClientOptions) *Client {
	if o.Spool == nil {
		// The whole reads of a long run are its largest operations.
		o.Spool = f.p.rec.NewSpool
	}
	cl := f.p.newClient(o)
	f.clients = append(f.clients, cl)
	return cl
}

func (f *Final) record(op history.Op) bool {
	if f.stopped {
		closeSpool(op)
		return false
	}
	return f.p.record(op)
}

// after calls fn after d unless the phase has stopped by then.
func (f *Final) after(d time.Duration, fn func()) {
	f.p.env.After(d, func() {
		if !f.stopped {
			fn()
		}
	})
}

// probe sends to every partition at once, each until a send is
// acknowledged or the final phase stops trying (Config.TryUntil): every
// attempt a send of its own, with a value of its own, in the history, and
// a new process (and client) after an attempt whose outcome is unknown, as
// the producers do. Then it calls next with the offset each acknowledged
// probe got.
func (f *Final) probe(next func(map[int32]int64)) {
	p := f.p
	until := p.cfg.TryUntil(p.rec.LastFault(), p.env.Now())
	left := int(p.cfg.Partitions)
	offsets := map[int32]int64{}
	for part := range p.cfg.Partitions {
		k := history.Key{Topic: p.cfg.Topic, Partition: part}
		cl, proc := f.newClient(ProbeOptions(p.cfg)), p.rec.NewProcess()
		var attempt func(n int)
		attempt = func(n int) {
			inv := ProbeInvoke(proc, k, n)
			if !f.record(inv) {
				return
			}
			cl.Send(k, inv.Value.Value, p.cfg.Acks, func(o Outcome) {
				done := Complete(inv, Result{Send: o})
				if !f.record(done) {
					return
				}
				if done.Type == history.OK || p.env.Now() >= until {
					if done.Type == history.OK {
						offsets[part] = o.Offset
					}
					if left--; left == 0 {
						next(offsets)
					}
					return
				}
				if done.Type == history.Info {
					cl.Close()
					cl, proc = f.newClient(ProbeOptions(p.cfg)), p.rec.NewProcess()
				}
				f.after(FinalReadBackoff, func() { attempt(n + 1) })
			})
		}
		attempt(1)
	}
}

// reads records the final phase's reads: each partition from its leader,
// as LeaderReads schedules them, then each replica's whole log, as md, the
// last metadata heard, lists them (FinalReads).
func (f *Final) reads(md Metadata, probes map[int32]int64) {
	p := f.p
	leaders := NewLeaderReads(p.cfg, p.rec.LastFault(), p.env.Now(), probes)
	var replicas []FinalRead
	for _, fr := range FinalReads(p.cfg, md) {
		if fr.Broker != nil {
			replicas = append(replicas, fr)
		}
	}
	var replica func(i int)
	var leader func()
	leader = func() {
		part, wait, ok := leaders.Next(p.env.Now())
		if !ok {
			replica(0)
			return
		}
		f.after(wait, func() {
			inv := FinalRead{Key: history.Key{Topic: p.cfg.Topic, Partition: part}}.Invoke(f.proc)
			if !f.record(inv) {
				return
			}
			f.cl.FinalRead(inv.Key(), func(r Read, err error) {
				if !f.record(ReadDone(inv, r, err)) {
					return
				}
				leaders.Done(p.env.Now(), r, err)
				leader()
			})
		})
	}
	replica = func(i int) {
		if i == len(replicas) {
			for _, cl := range f.clients {
				cl.Close()
			}
			f.done(f.conv)
			return
		}
		fr := replicas[i]
		inv := fr.Invoke(f.proc)
		if !f.record(inv) {
			return
		}
		f.cl.ReplicaRead(fr.Key, *fr.Broker, func(r Read, err error) {
			if f.record(ReadDone(inv, r, err)) {
				replica(i + 1)
			}
		})
	}
	leader()
}

// FinalRead is one read of the final phase: a partition from its leader
// (Broker nil), or one broker's replica of it.
type FinalRead struct {
	Key    history.Key
	Broker *int32
}

// FinalReads are the final phase's reads, in order: each partition from
// its leader, then each of its replicas (as md, the last metadata heard,
// lists them) by broker id.
func FinalReads(cfg Config, md Metadata) []FinalRead {
	var out []FinalRead
	for p := int32(0); p < cfg.Partitions; p++ {
		k := history.Key{Topic: cfg.Topic, Partition: p}
		out = append(out, FinalRead{Key: k})
		if cfg.NoReplicaReads {
			continue
		}
		for _, b := range slices.Sorted(slices.Values(md.Partitions[p].Replicas)) {
			out = append(out, FinalRead{Key: k, Broker: history.Int32(b)})
		}
	}
	return out
}

// Invoke is the read's invocation by process proc.
func (fr FinalRead) Invoke(proc int) history.Op {
	f := history.FinalRead
	if fr.Broker != nil {
		f = history.ReplicaRead
	}
	v := &history.Value{Topic: fr.Key.Topic, Partition: fr.Key.Partition, Broker: fr.Broker}
	return history.Op{Process: proc, Type: history.Invoke, F: f, Value: v}
}

// ReadDone is the completion of a final-phase read invoked as inv that
// read r, or failed with err.
func ReadDone(inv history.Op, r Read, err error) history.Op {
	done := *inv.Value
	typ, errText := history.OK, ""
	var stuck *StuckReadError
	if err != nil {
		typ, errText = history.Fail, err.Error()
		if errors.As(err, &stuck) {
			done.From, done.HW = history.Int64(stuck.Offset), history.Int64(stuck.HW)
		}
	} else {
		done.Records, done.Spool, done.HW = r.Records, r.Spool, history.Int64(r.HW)
	}
	return history.Op{Process: inv.Process, Type: typ, F: inv.F, Value: &done, Error: errText}
}

// Unconverged takes a metadata answer into md, what is known of topic's
// partitions, and says what keeps them from being converged (a leader and
// the whole replica set in the ISR each), "" when nothing does.
func Unconverged(md *Metadata, got Metadata, topic string, partitions int32) string {
	// Partitions a previous answer named and this one leaves out are
	// still known, as they are to the client.
	if md.Partitions == nil {
		md.Partitions = map[int32]PartitionState{}
	}
	for p, s := range got.Partitions {
		// An answer older than one heard (a zombie leader's) says nothing
		// of the partition now.
		if old, ok := md.Partitions[p]; !ok || s.Epoch >= old.Epoch {
			md.Partitions[p] = s
		}
	}
	var bad []string
	for p := int32(0); p < partitions; p++ {
		k := history.Key{Topic: topic, Partition: p}
		s, ok := md.Partitions[p]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("%s: unknown", k))
		case s.Leader < 0:
			bad = append(bad, fmt.Sprintf("%s: no leader (isr %v)", k, s.ISR))
		case len(s.ISR) != len(s.Replicas):
			bad = append(bad, fmt.Sprintf("%s: isr %v of replicas %v", k, s.ISR, s.Replicas))
		}
	}
	return strings.Join(bad, "; ")
}

// UnconvergedPartitions are the partitions of md (as Unconverged keeps it)
// without a leader and a full ISR, of the first partitions ones.
func UnconvergedPartitions(md Metadata, partitions int32) []int32 {
	var out []int32
	for p := int32(0); p < partitions; p++ {
		s, ok := md.Partitions[p]
		if !ok || s.Leader < 0 || len(s.ISR) != len(s.Replicas) {
			out = append(out, p)
		}
	}
	return out
}
