package hunt

import (
	"fmt"
	"hash/fnv"
	"strings"
	"sync"

	"github.com/chaos-isr/chaos/history"
)

// Coverage is what a run showed the tester, abstracted: the set of short
// sequences (two and three long) of events it observed through the
// protocol, per partition, with the faults in effect woven in. The events
// are black-box, so coverage means the same for any broker:
//
//   - a fault window's start and end (its kind);
//   - what the monitor's samples saw change: a new leader epoch, no
//     leader, the ISR's size (full, or how many short);
//   - how a client's call ended, when it changed from the call before:
//     a send's or poll's error code or unknown outcome, a poll that got
//     nothing from below the high watermark, a consumer sent back by
//     OFFSET_OUT_OF_RANGE (a truncation it saw), a final read's failure.
//
// A scenario that reaches a new sequence (a leader change while a
// follower is slowed, an ISR shrink right after an election) has taken
// the cluster somewhere new: the hunt keeps it and mutates it.
type Coverage map[uint64]struct{}

// Add adds other's sequences and says how many were new.
func (c Coverage) Add(other Coverage) int {
	n := 0
	for k := range other {
		if _, ok := c[k]; !ok {
			c[k] = struct{}{}
			n++
		}
	}
	return n
}

// CoverageOf is ops' coverage.
func CoverageOf(ops []history.Op) Coverage {
	type part struct {
		events       []string
		nextFault    int // the first of faults not yet in events
		epoch        int32
		isr          int
		leader       bool
		sent, polled string
	}
	parts := map[history.Key]*part{}
	get := func(k history.Key) *part {
		p := parts[k]
		if p == nil {
			p = &part{epoch: -1, isr: -1, leader: true}
			parts[k] = p
		}
		return p
	}
	var faults []string // fault events in order, each with its position
	var faultAt []int
	emit := func(p *part, e string) {
		if n := len(p.events); n == 0 || p.events[n-1] != e {
			p.events = append(p.events, e)
		}
	}
	pos := 0
	for i := range ops {
		op := &ops[i]
		if op.Type == history.Invoke {
			continue
		}
		pos++
		switch {
		case op.Process == history.NemesisProcess:
			if k, ok := history.FaultStart(op.F); ok && op.Error == "" {
				faults, faultAt = append(faults, "+"+k), append(faultAt, pos)
			} else if k, ok := history.FaultStop(op.F); ok {
				faults, faultAt = append(faults, "-"+k), append(faultAt, pos)
			}
			continue
		case op.Value == nil || op.Value.Topic == "":
			continue
		}
		p := get(op.Key())
		// A fault event reaches each partition's stream where it happened:
		// before the partition's next event.
		for ; p.nextFault < len(faults) && faultAt[p.nextFault] < pos; p.nextFault++ {
			p.events = append(p.events, faults[p.nextFault])
		}
		v := op.Value
		switch op.F {
		case history.Monitor:
			if op.Type != history.OK || v.Sample == nil {
				emit(p, "monitor:"+string(op.Type))
				continue
			}
			if v.Leader == nil || *v.Leader < 0 {
				if p.leader {
					emit(p, "no-leader")
				}
				p.leader = false
				continue
			}
			p.leader = true
			if v.Epoch != nil && *v.Epoch != p.epoch {
				if p.epoch >= 0 {
					emit(p, "epoch")
				}
				p.epoch = *v.Epoch
			}
			short := len(v.Replicas) - len(v.ISR)
			if short != p.isr {
				emit(p, fmt.Sprintf("isr-%d", short))
				p.isr = short
			}
		case history.Send:
			e := "send:" + outcome(op)
			if e != p.sent {
				emit(p, e)
				p.sent = e
			}
		case history.Poll:
			e := "poll:" + outcome(op)
			if op.Type == history.OK && len(v.Records) == 0 && v.From != nil && v.HW != nil && *v.HW > *v.From {
				e = "poll:stall"
			}
			if e != p.polled {
				emit(p, e)
				p.polled = e
			}
		case history.FinalRead:
			emit(p, "final:"+outcome(op))
		}
	}
	c := Coverage{}
	for _, p := range parts {
		for i := range p.events {
			if i >= 1 {
				c[hash(p.events[i-1], p.events[i])] = struct{}{}
			}
			if i >= 2 {
				c[hash(p.events[i-2], p.events[i-1], p.events[i])] = struct{}{}
			}
		}
	}
	return c
}

// outcome is how a client call ended, as an event: ok, or its error's
// code (the first word of the error), or info.
func outcome(op *history.Op) string {
	if op.Type == history.OK {
		return "ok"
	}
	code, _, _ := strings.Cut(op.Error, " ")
	code = strings.TrimSuffix(code, ":")
	if code == "" {
		code = string(op.Type)
	}
	return string(op.Type) + ":" + code
}

func hash(events ...string) uint64 {
	h := fnv.New64a()
	for _, e := range events {
		h.Write([]byte(e))
		h.Write([]byte{0})
	}
	return h.Sum64()
}

// nodeLines is white-box coverage, in simulation: the kinds of lines the
// cluster's nodes logged (their numbers blanked, so that "truncated by
// leader epoch from 120 to 100" is one kind whatever the offsets), alone
// and in pairs per node, each a state transition of the broker's or the
// controller's own. A scenario that makes a broker take a path it never
// took (truncate to its high watermark, fetch out of range at a new
// leader) has reached somewhere new even if the history looks the same.
type nodeLines struct {
	mu   sync.Mutex
	last map[int32]string
	cov  Coverage
}

func newNodeLines() *nodeLines { return &nodeLines{last: map[int32]string{}, cov: Coverage{}} }

// add takes one line node logged.
func (n *nodeLines) add(node int32, line string) {
	kind := blankNumbers(line)
	who := "b"
	if node == 0 {
		who = "c"
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cov[hash(who, kind)] = struct{}{}
	if prev, ok := n.last[node]; ok {
		n.cov[hash(who, prev, kind)] = struct{}{}
	}
	n.last[node] = kind
}

// blankNumbers replaces every run of digits in s with #.
func blankNumbers(s string) string {
	var b strings.Builder
	digits := false
	for _, r := range s {
		if r >= '0' && r <= '9' {
			if !digits {
				b.WriteByte('#')
			}
			digits = true
			continue
		}
		digits = false
		b.WriteRune(r)
	}
	return b.String()
}
