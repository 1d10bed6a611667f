package memdriver

import (
	"fmt"
	"slices"

	"github.com/chaos-isr/chaos/broker/batch"
	"github.com/chaos-isr/chaos/broker/control"
	"github.com/chaos-isr/chaos/broker/storage"
	"github.com/chaos-isr/chaos/internal/blocks"
	"github.com/chaos-isr/chaos/internal/offheap"
)

// The simulator sees every replica at every instant, which no tester of a
// real cluster can: it checks the invariant ISR replication rests on, that
// every in-sync replica holds the committed log (every record below the
// highest high watermark any replica of the partition reached, each the
// same as where it was first committed). A replica admitted to the ISR
// before it caught up (KAFKA-7128), or one that kept records the leader
// rewrote (a zombie served in an old epoch, KAFKA-6880), breaks it at
// once, where losing data needs a second failure within a round trip.
// Unclean elections and lost unsynced writes break it too, by design:
// the guarantee model says when a violation is permitted.

// Violation is one breach of the invariant: an in-sync replica that
// lacked a committed record, or held another at its offset.
type Violation struct {
	At        int64 // simulated ms
	Broker    int32
	Topic     string
	Partition int32
	What      string
}

// maxViolations caps what one cluster reports: after an unclean election
// every replica may break the invariant, and one is evidence enough.
const maxViolations = 20

type tpKey struct {
	topic     string
	partition int32
}

// batchID is a committed batch: its offsets (the last as its distance
// from the base, the batch's LastOffsetDelta: a long simulation keeps one
// for every batch it committed, so it is 16 bytes) and its CRC (which
// covers everything but the base offset and the leader epoch, which a
// replica stamps).
type batchID struct {
	base  int64
	delta int32
	crc   uint32
}

func (b batchID) last() int64 { return b.base + int64(b.delta) }

type partWatch struct {
	committed int64 // the highest HW any replica reached
	by        int32 // the broker that reached it
	// ref is the committed log, contiguous from offset 0: an entry a
	// batch, in blocks in the spill file's arena (if there is one) as a
	// log's index is.
	ref blocks.List[batchID]
	// verified is, per in-sync replica, the offset up to which its log was
	// found to match ref; a replica absent has not been checked since it
	// joined the ISR.
	verified map[int32]int64
	// breached are the in-sync replicas a breach was reported of, not
	// reported again until they leave the ISR: one replica that lacks a
	// record stays behind for many steps.
	breached map[int32]bool
}

type invariantWatch struct {
	parts    map[tpKey]*partWatch
	reported int
	arena    *offheap.Arena // where the committed logs are held; nil: the heap
}

func (w *invariantWatch) part(k tpKey) *partWatch {
	p := w.parts[k]
	if p == nil {
		p = &partWatch{verified: map[int32]int64{}, breached: map[int32]bool{}}
		p.ref.In(w.arena)
		w.parts[k] = p
	}
	return p
}

// reset starts the committed log again, empty.
func (w *partWatch) reset() {
	w.committed, w.by = 0, 0
	w.ref.Truncate(0)
	clear(w.verified)
	clear(w.breached)
}

// checkBroker runs after a step of broker n: it takes a higher HW of n's
// replicas as the new committed offset (the committed log extended from
// n's own), then checks n, and the other in-sync replicas where the
// committed offset moved.
func (c *Cluster) checkBroker(n *node) {
	if c.inv == nil || !n.up || c.ctrlMD == nil {
		return
	}
	for _, t := range c.ctrlMD.Topics {
		for i := range t.Partitions {
			p := &t.Partitions[i]
			info, ok := n.b.Replica(t.Name, p.Partition)
			if !ok {
				continue
			}
			k := tpKey{t.Name, p.Partition}
			w := c.inv.part(k)
			if info.HW > w.committed {
				if !c.extend(n, k, w, info.HW) {
					continue
				}
				c.checkISR(k, p, w)
				continue
			}
			if slices.Contains(p.ISR, n.id) {
				c.checkMember(n, k, p, w)
			}
		}
	}
}

// checkController runs after the controller's metadata changed: the
// replicas that joined an ISR are checked from offset 0.
func (c *Cluster) checkController() {
	if c.inv == nil || c.ctrlMD == nil {
		return
	}
	for _, t := range c.ctrlMD.Topics {
		for i := range t.Partitions {
			p := &t.Partitions[i]
			k := tpKey{t.Name, p.Partition}
			w := c.inv.part(k)
			for id := range w.verified {
				if !slices.Contains(p.ISR, id) {
					delete(w.verified, id)
				}
			}
			for id := range w.breached {
				if !slices.Contains(p.ISR, id) {
					delete(w.breached, id)
				}
			}
			c.checkISR(k, p, w)
		}
	}
}

func (c *Cluster) checkISR(k tpKey, p *control.Partition, w *partWatch) {
	for _, id := range p.ISR {
		if n := c.node(id); n != nil && n.up {
			c.checkMember(n, k, p, w)
		}
	}
}

// extend reads n's log from the end of the committed log up to hw.
func (c *Cluster) extend(n *node, k tpKey, w *partWatch, hw int64) bool {
	log := n.logs.Peek(k.topic, k.partition)
	if log == nil {
		return false
	}
	from := int64(0)
	if n := w.ref.Len(); n > 0 {
		from = w.ref.Ptr(n-1).last() + 1
	}
	end := from
	err := walkLog(log, from, hw, func(h batch.Header) bool {
		if h.LastOffset() >= hw {
			return false
		}
		w.ref.Add(batchID{h.BaseOffset, h.LastOffsetDelta, h.CRC})
		end = h.NextOffset()
		return true
	})
	if err != nil && from < hw {
		return false
	}
	// The committed offset is where n's whole batches end: a HW inside
	// a batch commits it only when the HW passes its end.
	if end > w.committed {
		w.committed, w.by = end, n.id
	}
	return true
}

// checkMember checks in-sync replica n against the committed log: its
// log end at least the committed offset, and every batch below it the
// committed one.
func (c *Cluster) checkMember(n *node, k tpKey, p *control.Partition, w *partWatch) {
	if w.breached[n.id] {
		return
	}
	info, ok := n.b.Replica(k.topic, k.partition)
	if !ok || info.Role == "none" {
		return
	}
	if info.LEO < w.committed {
		c.violate(n.id, k, p, w, fmt.Sprintf("broker %d is in the ISR with its log ending at offset %d, below the committed offset %d (broker %d's high watermark): it lacks committed records", n.id, info.LEO, w.committed, w.by))
		return
	}
	from, done := w.verified[n.id]
	if done && from >= w.committed {
		return
	}
	log := n.logs.Peek(k.topic, k.partition)
	if log == nil {
		return
	}
	i := w.ref.Search(func(b *batchID) bool { return b.base >= from })
	bad := ""
	err := walkLog(log, from, w.committed, func(h batch.Header) bool {
		for i < w.ref.Len() && w.ref.Ptr(i).last() < h.BaseOffset {
			i++
		}
		if i >= w.ref.Len() || h.LastOffset() >= w.committed {
			return false
		}
		if r := w.ref.At(i); r.base != h.BaseOffset || r.last() != h.LastOffset() || r.crc != h.CRC {
			bad = fmt.Sprintf("broker %d is in the ISR holding offsets %d-%d (crc %08x) where the committed log has offsets %d-%d (crc %08x), committed by broker %d", n.id, h.BaseOffset, h.LastOffset(), h.CRC, r.base, r.last(), r.crc, w.by)
			return false
		}
		from = h.NextOffset()
		return true
	})
	switch {
	case err != nil:
		return
	case bad != "":
		c.violate(n.id, k, p, w, bad)
		return
	}
	w.verified[n.id] = from
}

// walkLog gives fn each batch of log from the one holding offset from
// on, below upTo, until fn returns false, reading about a chunk at a time:
// a Memory log's read that spans its chunks is a copy, and a whole log of
// a long run read at once was hundreds of MB. It returns the first read's
// error.
func walkLog(log *storage.Memory, from, upTo int64, fn func(batch.Header) bool) error {
	for first := true; ; first = false {
		b, err := log.Read(from, upTo, 1<<20)
		switch {
		case err != nil && first:
			return err
		case err != nil || len(b) == 0:
			return nil
		}
		next, stop := from, false
		batch.Walk(b, func(h batch.Header, _ []byte) bool {
			if stop = !fn(h); stop {
				return false
			}
			next = h.NextOffset()
			return true
		})
		// Past upTo, stopped, or stuck (a batch that does not parse).
		if stop || next >= upTo || next <= from {
			return nil
		}
		from = next
	}
}

// violate reports a breach of replica id, once while it stays in the
// ISR. A breach by the leader itself (an unclean election, permitted
// where it is the policy, or a leader that lost unsynced writes) makes
// its log the truth to watch from: the committed log starts again.
func (c *Cluster) violate(id int32, k tpKey, p *control.Partition, w *partWatch, what string) {
	if c.inv.reported < maxViolations {
		c.inv.reported++
		c.tracef("invariant: %s-%d: %s", k.topic, k.partition, what)
		c.opts.OnViolation(Violation{At: c.now, Broker: id, Topic: k.topic, Partition: k.partition, What: what})
	}
	w.breached[id] = true
	if id == p.Leader {
		w.reset()
	}
}
