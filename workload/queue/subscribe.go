package queue

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/workload"
)

// The subscribe workload's consumers (--sub-via subscribe, Jepsen's
// option): instead of each polling partitions of its own (assign), they
// form one consumer group, whose coordinator gives each member its share
// of the partitions, generation by generation, and keeps the offsets they
// commit. A member records each join (assign: the generation, its
// partitions, and the committed offsets it resumes from), each poll (named
// with its generation) and each commit, one operation at a time as a
// process does, and heartbeats beside them; when a heartbeat or a commit
// says its generation is over, it joins again. After an operation whose
// outcome is unknown the member goes on as a new process, as a producer
// session's lane does: Jepsen's rule is the history's (a process does
// nothing after an info), and a consumer whose commit timed out stays in
// its group.

// Subscribe settings: the group, and the timing of its members.
const (
	// GroupName is the subscribe workload's consumer group.
	GroupName = "chaos"
	// MemberSessionTimeout is the members' session timeout: Kafka's
	// lowest by default (group.min.session.timeout.ms), so that a member
	// that stops is noticed soon.
	MemberSessionTimeout = 6 * time.Second
	// MemberRebalanceTimeout is how long a rebalance waits for the
	// members to join again.
	MemberRebalanceTimeout = 5 * time.Second
	// MemberHeartbeat is how often a member heartbeats.
	MemberHeartbeat = time.Second
)

// groupMember is one consumer of the subscribe workload.
type groupMember struct {
	p    *workload.Phases
	cfg  workload.Config
	slot int // the generator's worker whose process ids it takes
	proc int
	opts workload.ClientOptions
	cl   *workload.Client

	coordinator int32 // -1: to be found
	member      string
	generation  int32 // -1: not in a generation
	assigned    []int32
	pos         map[int32]int64 // where each assigned partition is polled from next
	next        int             // index in assigned of the next partition to poll
	commitDue   *int32          // a partition polled on, whose position is to be committed
	hbGen       int32           // the generation the heartbeat loop runs for
	stopped     bool
	crashed     bool // by the nemesis (crash-consumer), until restarted
	// paused by the nemesis (pause-consumer): the member takes no step
	// and sends no heartbeat until resumed, as a process stopped in a
	// long pause; stepWanted and beatWanted are what it put off.
	paused, stepWanted, beatWanted bool
	done                           func()
	// replace is a new process for the member after an unknown outcome;
	// joined, if set, hears how each join ended instead of the member
	// going on to poll (the final phase's member).
	replace func() int
	joined  func(ok bool)
}

// memberOptions are a group member's client options: its requests wait
// long enough for a JoinGroup that the coordinator holds for a rebalance.
func memberOptions(cfg workload.Config, i int) workload.ClientOptions {
	o := workload.ClientOptions{ID: "chaos-member-" + strconv.Itoa(i), Timeout: cfg.ClientTimeout()}
	o.Timeout = max(o.Timeout, MemberRebalanceTimeout+2*time.Second)
	return o
}

func (q *Queue) startMember(slot int, done func()) *groupMember {
	m := &groupMember{p: q.p, cfg: q.cfg, slot: slot, proc: q.gen.Process(slot), opts: memberOptions(q.cfg, slot-q.gen.Producers()),
		coordinator: -1, generation: -1, done: done, replace: func() int { return q.gen.Replace(slot) }}
	m.cl = q.p.NewClient(m.opts)
	m.step()
	return m
}

// info is what every operation of the member says of the group.
func (m *groupMember) info() *history.GroupInfo {
	return &history.GroupInfo{Group: GroupName, Generation: m.generation, Member: m.member}
}

// step does the member's next operation: a join when it is in no
// generation, else a commit due, else a poll of its next partition.
func (m *groupMember) step() {
	p := m.p
	if p.Stopped() || m.stopped || m.crashed {
		return
	}
	if m.paused {
		m.stepWanted = true
		return
	}
	if p.Env().Now() >= m.cfg.TimeLimit {
		m.stop()
		return
	}
	switch {
	case m.generation < 0:
		m.join()
	case m.commitDue != nil:
		m.commit(*m.commitDue)
	case len(m.assigned) == 0:
		// More members than partitions: nothing to poll until the next
		// generation.
		p.Env().After(PollWaitIdle, m.step)
	default:
		m.poll()
	}
}

// PollWaitIdle is how long a member with no partitions waits before it
// looks again.
const PollWaitIdle = 100 * time.Millisecond

// stop ends the member at the time limit: it leaves the group, as a
// consumer that is closed does, and its client closes.
func (m *groupMember) stop() {
	m.stopped = true
	finish := func() {
		m.cl.Close()
		m.done()
	}
	if m.coordinator < 0 || m.member == "" {
		finish()
		return
	}
	m.cl.LeaveGroup(m.coordinator, GroupName, m.member, func(workload.GroupAnswer) { finish() })
}

// Members, Crash and Restart are the consumer group's members as the
// nemesis's client faults act on them (nemesis.Consumers).
func (q *Queue) Members() int { return len(q.members) }

// Crash stops member i at once, as a crashed consumer process stops: its
// client closes without leaving the group (which removes it when its
// session expires), and an operation in flight keeps its open invoke.
func (q *Queue) Crash(i int) (string, error) {
	m, p := q.members[i], q.p
	name := fmt.Sprintf("consumer-%d", i)
	if m.stopped {
		return name, fmt.Errorf("%s has stopped: the workload is over", name)
	}
	m.crashed = true
	m.cl.Close()
	// A member still crashed at the time limit has stopped there.
	p.Env().After(max(q.cfg.TimeLimit-p.Env().Now(), 0), func() {
		if m.crashed && !m.stopped {
			m.stopped = true
			m.done()
		}
	})
	return name, nil
}

// Restart has a new process take crashed member i's place: a new client
// and a new member of the group. Once the workload is over there is
// nothing to restart.
func (q *Queue) Restart(i int) error {
	m, p := q.members[i], q.p
	if !m.crashed || m.stopped || p.Stopped() {
		return nil
	}
	m.crashed = false
	m.proc = m.replace()
	m.cl = p.NewClient(m.opts)
	m.coordinator, m.member, m.generation, m.assigned, m.commitDue = -1, "", -1, nil, nil
	m.step()
	return nil
}

// Pause stops member i where it stands, as a consumer process in a long
// pause (a stop-the-world collection, SIGSTOP): it takes no step and
// sends no heartbeat, so its group may remove it and rebalance without
// it; what it had begun completes.
func (q *Queue) Pause(i int) (string, error) {
	m, p := q.members[i], q.p
	name := fmt.Sprintf("consumer-%d", i)
	if m.stopped || m.crashed {
		return name, fmt.Errorf("%s is not running", name)
	}
	m.paused = true
	// A member still paused at the time limit goes on there, to stop.
	p.Env().After(max(q.cfg.TimeLimit-p.Env().Now(), 0), func() { q.unpause(m) })
	return name, nil
}

// Resume has paused member i go on from where it stopped: with the
// generation and the positions it had, as a resumed process does, until
// its coordinator tells it otherwise.
func (q *Queue) Resume(i int) error {
	q.unpause(q.members[i])
	return nil
}

func (q *Queue) unpause(m *groupMember) {
	if !m.paused {
		return
	}
	m.paused = false
	if m.beatWanted {
		m.beatWanted = false
		if m.generation >= 0 {
			m.startHeartbeats()
		}
	}
	if m.stepWanted {
		m.stepWanted = false
		m.step()
	}
}

// Coordinator is the group's coordinator as a member last found it.
func (q *Queue) Coordinator() (int32, error) {
	for _, m := range q.members {
		if m.coordinator >= 0 && !m.crashed {
			return m.coordinator, nil
		}
	}
	return -1, errors.New("no member of the consumer group knows its coordinator")
}

// unknown gives the member a new process after an operation whose
// outcome is unknown: the history's process does nothing more.
func (m *groupMember) unknown() { m.proc = m.replace() }

// fail notes a failed step: the member waits a moment before the next,
// rejoining if the answer ended its generation.
func (m *groupMember) failed(a workload.GroupAnswer) {
	if a.Lost() {
		m.coordinator = -1
	}
	if a.Fenced() {
		m.generation, m.assigned, m.commitDue = -1, nil, nil
		if a.Code == kerr.UnknownMemberID.Code {
			m.member = ""
		}
	}
	m.p.Env().After(failBackoff, m.step)
}

// join is one assign operation: find the coordinator, join, sync (the
// leader assigns the partitions), and fetch the committed offsets of the
// partitions given.
func (m *groupMember) join() {
	p := m.p
	inv := history.Op{Process: m.proc, Type: history.Invoke, F: history.Assign,
		Value: &history.Value{Topic: m.cfg.Topic, GroupInfo: &history.GroupInfo{Group: GroupName, Generation: -1, Member: m.member}}}
	if !p.Record(inv) {
		return
	}
	end := func(a workload.GroupAnswer, gi *history.GroupInfo) {
		v := *inv.Value
		v.GroupInfo = gi
		typ := assignType(a)
		if !p.Record(history.Op{Process: m.proc, Type: typ, F: history.Assign, Value: &v, Error: a.Error()}) {
			return
		}
		if typ == history.Info {
			m.unknown()
			// The join may have been taken: join again, with the id.
			m.generation, m.assigned, m.commitDue = -1, nil, nil
		}
		if m.joined != nil {
			m.joined(typ == history.OK)
			return
		}
		if typ == history.OK {
			m.step()
			return
		}
		m.failed(a)
	}
	m.withCoordinator(func(a workload.GroupAnswer) { end(a, m.info()) }, func() {
		spec := workload.JoinSpec{Group: GroupName, Member: m.member, Topic: m.cfg.Topic, SessionTimeout: MemberSessionTimeout, RebalanceTimeout: MemberRebalanceTimeout}
		m.cl.JoinGroup(m.coordinator, spec, func(j workload.Joined, a workload.GroupAnswer) {
			if j.Member != "" {
				m.member = j.Member
			}
			if !a.OK() {
				end(a, m.info())
				return
			}
			var assign map[string][]int32
			if j.Leader == j.Member {
				assign = workload.RangeAssign(j.Members, m.cfg.Partitions)
			}
			m.cl.SyncGroup(m.coordinator, GroupName, j.Member, j.Generation, m.cfg.Topic, assign, func(parts []int32, a workload.GroupAnswer) {
				if !a.OK() {
					end(a, m.info())
					return
				}
				m.generation, m.assigned, m.next, m.pos = j.Generation, parts, 0, map[int32]int64{}
				m.startHeartbeats()
				m.cl.FetchOffsets(m.coordinator, GroupName, m.cfg.Topic, parts, func(offs []history.PartitionOffset, a workload.GroupAnswer) {
					gi := m.info()
					gi.Assigned = parts
					if !a.OK() {
						m.generation, m.assigned = -1, nil
						end(a, gi)
						return
					}
					gi.Committed = offs
					for _, o := range offs {
						// No committed offset: the group reads the
						// partition from its start (auto.offset.reset
						// earliest).
						m.pos[o.Partition] = max(o.Offset, 0)
					}
					end(workload.GroupAnswer{}, gi)
				})
			})
		})
	})
}

// assignType is how an assign ended: ok once the member has its
// partitions and their committed offsets; info when a request of it went
// unanswered (a join may have been taken, and changed the group's
// generation, without the member hearing of it); fail when it was refused
// or never sent.
func assignType(a workload.GroupAnswer) history.Type {
	switch {
	case a.OK():
		return history.OK
	case a.Err != nil && !errors.Is(a.Err, workload.ErrNotSent):
		return history.Info
	}
	return history.Fail
}

// withCoordinator calls next once the member knows its coordinator,
// asking for it if it does not; failed hears why it could not, as a
// request that was never sent (a question to find the coordinator
// changes nothing).
func (m *groupMember) withCoordinator(failed func(workload.GroupAnswer), next func()) {
	if m.coordinator >= 0 {
		next()
		return
	}
	m.cl.FindCoordinator(GroupName, func(id int32, a workload.GroupAnswer) {
		if !a.OK() {
			failed(workload.GroupAnswer{Err: fmt.Errorf("%w: no coordinator found: %s", workload.ErrNotSent, a.Error())})
			return
		}
		m.coordinator = id
		next()
	})
}

// startHeartbeats heartbeats every MemberHeartbeat while the member is
// in this generation; an answer that ends the generation has the member
// join again at its next step.
func (m *groupMember) startHeartbeats() {
	gen, member, cl := m.generation, m.member, m.cl
	m.hbGen = gen
	var beat func()
	beat = func() {
		if m.stopped || m.cl != cl || m.generation != gen || m.member != member || m.hbGen != gen {
			return
		}
		if m.paused {
			m.beatWanted = true
			return
		}
		again := func() { m.p.Env().After(MemberHeartbeat, beat) }
		m.withCoordinator(func(workload.GroupAnswer) { again() }, func() {
			cl.Heartbeat(m.coordinator, GroupName, member, gen, func(a workload.GroupAnswer) {
				if m.cl != cl || m.generation != gen {
					return
				}
				if a.Fenced() {
					m.generation, m.assigned, m.commitDue = -1, nil, nil
					if a.Code == kerr.UnknownMemberID.Code {
						m.member = ""
					}
					return
				}
				if a.Lost() {
					// A coordinator that moved knows the generation
					// still: the member asks who it is and goes on.
					m.coordinator = -1
				}
				again()
			})
		})
	}
	m.p.Env().After(MemberHeartbeat, beat)
}

// poll reads the next of the member's partitions from where it stands.
func (m *groupMember) poll() {
	p := m.p
	part := m.assigned[m.next%len(m.assigned)]
	m.next++
	from := m.pos[part]
	inv := history.Op{Process: m.proc, Type: history.Invoke, F: history.Poll,
		Value: &history.Value{Topic: m.cfg.Topic, Partition: part, From: history.Int64(from), GroupInfo: m.info()}}
	if !p.Record(inv) {
		return
	}
	gen := m.generation
	m.cl.Poll(inv.Key(), from, func(r workload.Read, err error) {
		res := workload.Result{Read: r, Err: err}
		done := workload.Complete(inv, res)
		if !p.Record(done) {
			return
		}
		c := CompletionOf(done, res)
		switch {
		case c.OutOfRange:
			m.pos[part] = c.HW
		case c.Type == history.OK && len(c.Records) > 0 && m.generation == gen:
			m.pos[part] = c.Records[len(c.Records)-1].Offset + 1
			m.commitDue = &part
		}
		if c.Type != history.OK {
			p.Env().After(failBackoff, m.step)
			return
		}
		m.step()
	})
}

// commit commits where the member polls part from next.
func (m *groupMember) commit(part int32) {
	p := m.p
	m.commitDue = nil
	off := m.pos[part]
	inv := history.Op{Process: m.proc, Type: history.Invoke, F: history.Commit,
		Value: &history.Value{Topic: m.cfg.Topic, Partition: part, Offset: history.Int64(off), GroupInfo: m.info()}}
	if !p.Record(inv) {
		return
	}
	k := inv.Key()
	end := func(a workload.GroupAnswer) {
		typ := workload.CommitType(a)
		v := *inv.Value
		if !p.Record(history.Op{Process: m.proc, Type: typ, F: history.Commit, Value: &v, Error: a.Error()}) {
			return
		}
		switch typ {
		case history.OK:
			m.step()
			return
		case history.Info:
			m.unknown()
		}
		m.failed(a)
	}
	m.withCoordinator(end, func() {
		m.cl.CommitOffset(m.coordinator, GroupName, m.member, m.generation, k, off, end)
	})
}

// Final, under --sub-via subscribe, has a new member join the group (the
// workers' members have left it) and fetch its committed offsets of every
// partition, trying again until it does or the final phase stops trying
// (Config.TryUntil), then leave; then next. What it records is the
// evidence the group checks read: the group's offsets after the run, and
// whether a member can still join it once the faults have healed. Under
// assign there is nothing to do.
func (q *Queue) Final(f *workload.Final, next func()) {
	if !q.cfg.Subscribe() {
		next()
		return
	}
	p := f.Phases()
	until := q.cfg.TryUntil(p.Recorder().LastFault(), p.Env().Now())
	o := memberOptions(q.cfg, 0)
	o.ID = "chaos-final-member"
	m := &groupMember{p: p, cfg: q.cfg, proc: p.Recorder().NewProcess(), opts: o, coordinator: -1, generation: -1,
		replace: p.Recorder().NewProcess}
	m.cl = f.NewClient(o)
	m.joined = func(ok bool) {
		if !ok && p.Env().Now() < until && !f.Stopped() {
			f.After(workload.FinalReadBackoff, m.join)
			return
		}
		m.stopped = true
		if !ok || m.coordinator < 0 {
			next()
			return
		}
		m.cl.LeaveGroup(m.coordinator, GroupName, m.member, func(workload.GroupAnswer) { next() })
	}
	m.join()
}
