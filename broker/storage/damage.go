package storage

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/chaos-isr/chaos/broker/batch"
	"github.com/chaos-isr/chaos/broker/bug"
)

// The ways a disk fault damages a stopped node's data (Damage, and the
// file-level damage package cluster does to a real data directory).
const (
	DamageCorrupt  = "corrupt"  // flip one bit of a segment or checkpoint
	DamageTruncate = "truncate" // cut the tail off a segment or checkpoint
)

// Damage damages the node's logs as disk fault what does to a real data
// directory, at a place drawn from rng, while the node is down; it says
// what it did. Its next Open of each log recovers as a Disk's does: every
// batch is checked against its CRC and the log is cut at the first that
// fails, so damage is never served (Memory.recover). A damaged HW
// checkpoint fails its checksum and is read as none.
func (f *MemoryFactory) Damage(what string, rng *rand.Rand) (string, error) {
	var logs []memKey
	for _, k := range f.keys {
		if f.logs[k].idx.leo() > f.logs[k].idx.start {
			logs = append(logs, k)
		}
	}
	if len(logs) == 0 {
		return "", fmt.Errorf("no log has data to damage")
	}
	k := logs[rng.IntN(len(logs))]
	m := f.logs[k]
	name := partitionDirName(k.topic, k.partition)
	if rng.IntN(4) == 0 {
		// The HW checkpoint: its checksum tells a damaged one.
		m.ckHW, m.ckDamaged = 0, true
		return fmt.Sprintf("%s %s/%s", what, name, hwFile), nil
	}
	switch what {
	case DamageCorrupt:
		at := rng.IntN(m.size())
		buf := m.flatten() // a copy: slices Read returned keep their bytes
		buf[at] ^= 1 << rng.IntN(8)
		m.damaged = true
		return fmt.Sprintf("%s %s: bit flipped at byte %d of %d", what, name, at, len(buf)), nil
	case DamageTruncate:
		at := rng.IntN(m.size())
		buf := m.flatten()
		m.chunks[0].b = buf[:at:at]
		m.damaged = true
		return fmt.Sprintf("%s %s: cut at byte %d of %d", what, name, at, len(buf)), nil
	}
	return "", fmt.Errorf("unknown disk damage %q", what)
}

// recover is a restart's recovery after Damage: the batches are read back
// from the buffer, as a Disk reads its segments, and the log is cut at
// the first that is torn, fails its CRC or does not continue the log.
func (m *Memory) recover() {
	if !m.damaged {
		return
	}
	m.damaged = false
	// Damage left the log one chunk (flatten); the index is built again
	// from its bytes. An Append before the reopen may have gone on past
	// that chunk, and spilled it: it is read back, and what came after
	// it is not the recovered log's.
	buf, _ := m.bytes(0, 0, m.chunks[0].size())
	clear(m.chunks[1:])
	m.chunks = m.chunks[:1]
	m.idx.reset(m.idx.start)
	var pos int64
	for pos < int64(len(buf)) {
		rest := buf[pos:]
		if len(rest) < batch.HeaderSize {
			break
		}
		h, err := batch.Parse(rest)
		if err != nil || int64(h.Size()) > int64(len(rest)) || h.BaseOffset != m.idx.leo() {
			break
		}
		if !m.bugs.Has(bug.RecoveryKeepsTornTail) && batch.Verify(rest[:h.Size()], h) != nil {
			// (Planted bug recovery-keeps-torn-tail keeps a batch whose
			// header is sane and continues the log, unchecked.)
			break
		}
		m.idx.add(h, 0, pos)
		pos += int64(h.Size())
	}
	m.chunks[0] = chunk{b: buf[:pos:pos]}
	leo := m.idx.leo()
	m.syncedEnd = min(m.syncedEnd, leo)
	m.ckHW = min(m.ckHW, leo)
}

// Snapshot is a copy of the node's logs as they are, for Restore: a disk
// image taken while the node is down.
func (f *MemoryFactory) Snapshot() *MemorySnapshot {
	return &MemorySnapshot{logs: cloneLogs(f.logs), keys: slices.Clone(f.keys), cleanEpoch: f.cleanEpoch}
}

// cloneLogs is a deep copy of logs: neither side's writes reach the other.
func cloneLogs(logs map[memKey]*Memory) map[memKey]*Memory {
	out := make(map[memKey]*Memory, len(logs))
	for k, m := range logs {
		c := *m
		// A spilled chunk's bytes in the file never change: the copy
		// shares them.
		c.chunks = slices.Clone(m.chunks)
		for i := range c.chunks {
			c.chunks[i].b = slices.Clone(c.chunks[i].b)
		}
		// In the heap: a copy in the arena, which gives nothing back,
		// would stay there after the copy was dropped, one a snapshot
		// and one a restore of each fault's window.
		c.idx.entries = m.idx.entries.Clone(nil)
		c.idx.epochs = slices.Clone(m.idx.epochs)
		out[k] = &c
	}
	return out
}

// MemorySnapshot is a MemoryFactory's logs at one moment.
type MemorySnapshot struct {
	logs       map[memKey]*Memory
	keys       []memKey
	cleanEpoch int64
}

// Restore puts the logs back as s holds them, the node down: its next
// Open of each is a restart on that old disk. A log created since s is
// gone, as on a restored disk.
func (f *MemoryFactory) Restore(s *MemorySnapshot) {
	f.logs, f.keys, f.cleanEpoch = cloneLogs(s.logs), slices.Clone(s.keys), s.cleanEpoch
}
