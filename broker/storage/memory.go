package storage

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/chaos-isr/chaos/broker/bug"
)

// Memory is a Log held in memory, for the in-memory driver and tests. It is
// deterministic: it reads no clock and keeps no maps.
//
// It models the durability of a Disk log so that the in-memory driver can
// simulate crashes: Sync marks the current end as durable and LoseUnsynced
// cuts back to it; the HW survives a restart only as far as Checkpoint
// saved it (see MemoryFactory).
//
// Batches live back to back in chunks of up to memChunk bytes (a batch
// never spans two), so Read returns a subslice without copying unless the
// batches it returns span chunks. A returned slice is never overwritten,
// even by a later Truncate and Append (stronger than the Log contract),
// which matters when the driver queues fetch responses that outlive the
// leader's next write. A log of hours held as one buffer was copied
// whole each time it grew, the old copy and the new one both held; a
// chunk is copied only while it grows to memChunk (the first of a log,
// and one a Truncate cut), so no copy is larger than that. With a spill
// file (MemoryFactory.Spill) a chunk moves to it once the log has gone
// on to the next, and is read from it.
type Memory struct {
	idx        index // an entry's seg is its chunk, its pos where in it
	chunks     []chunk
	spill      *Spill // where full chunks go; nil: all are held
	hw         int64
	ckHW       int64 // HW saved by the last Checkpoint: what a restart sees
	syncedEnd  int64 // log end offset at the last Sync, lowered by Truncate
	fsync      Fsync
	intervalMs int64
	lastSyncMs int64
	closed     bool
	bugs       bug.Set // planted storage bugs (package bug)
	// damaged: a disk fault changed the bytes (MemoryFactory.Damage), so
	// the next reopen recovers; ckDamaged: it damaged the HW checkpoint.
	damaged, ckDamaged bool
}

// memChunk is the size a Memory log's chunks grow to.
var memChunk = 1 << 20 // a variable so that tests can make chunks of a few batches

// testSpill, when set, is the spill file of every Memory made without
// one, so that the Memory tests run with their chunks on disk too.
var testSpill *Spill

// chunk is batches back to back: in memory (b), or the first n bytes of
// a region of the log's spill file (r), which never changes. A snapshot's
// copy of the log shares the region.
type chunk struct {
	b []byte
	r *region
	n int64
}

// size is how many bytes the chunk holds.
func (c *chunk) size() int64 {
	if c.r != nil {
		return c.n
	}
	return int64(len(c.b))
}

// bytes is the chunk's bytes from pos to end: a subslice of the chunk in
// memory (capacity clipped, so an append to it copies), or a copy read
// from the spill file.
func (m *Memory) bytes(k int32, pos, end int64) ([]byte, error) {
	c := &m.chunks[k]
	if c.r == nil {
		return c.b[pos:end:end], nil
	}
	return c.r.read(pos, int(end-pos))
}

// spillChunk moves chunk k to the spill file, if the log has one. A chunk
// that cannot be written stays in memory: the log is the same either way.
func (m *Memory) spillChunk(k int) {
	c := &m.chunks[k]
	if m.spill == nil || c.r != nil || len(c.b) == 0 {
		return
	}
	if r, err := m.spill.put(c.b); err == nil {
		*c = chunk{r: r, n: int64(len(c.b))}
	}
}

// NewMemory returns an empty log with FsyncNever.
func NewMemory() *Memory { return newMemory(&Memory{spill: testSpill}) }

// newMemory is m, its index in its spill file's arena if it has one.
func newMemory(m *Memory) *Memory {
	if m.spill != nil {
		m.idx.entries.In(m.spill.Arena())
	}
	return m
}

// Append implements Log. With FsyncAlways the batches are durable at once.
func (m *Memory) Append(b []byte) error {
	if m.closed {
		return ErrClosed
	}
	hs, err := m.idx.validate(b)
	if err != nil {
		return err
	}
	for _, h := range hs {
		size := int(h.Size())
		k := len(m.chunks) - 1
		if k < 0 || m.chunks[k].r != nil || len(m.chunks[k].b)+size > max(memChunk, size) {
			// The first chunk grows from nothing, as a small log's
			// buffer should; the next ones are made whole, and the
			// one before is full.
			var c []byte
			if k >= 0 {
				c = make([]byte, 0, max(memChunk, size))
				m.spillChunk(k)
			}
			m.chunks = append(m.chunks, chunk{b: c})
			k++
		}
		pos := int64(len(m.chunks[k].b))
		// A chunk cut by Truncate has no room left: append copies it,
		// so slices already returned by Read keep their bytes.
		m.chunks[k].b = append(m.chunks[k].b, b[:size]...)
		b = b[size:]
		m.idx.add(h, int32(k), pos)
	}
	if m.fsync == FsyncAlways {
		m.syncedEnd = m.idx.leo()
	}
	return nil
}

// Read implements Log.
func (m *Memory) Read(offset, upTo int64, maxBytes int) ([]byte, error) {
	if m.closed {
		return nil, ErrClosed
	}
	k, n, err := m.idx.serve(offset, upTo, maxBytes)
	if err != nil || n == 0 {
		return nil, err
	}
	first, last := m.idx.at(k), m.idx.at(k+n-1)
	if first.seg == last.seg {
		return m.bytes(first.seg, first.pos, last.pos+int64(last.size))
	}
	// Batches that span chunks are copied together.
	size := 0
	for i := k; i < k+n; i++ {
		size += int(m.idx.at(i).size)
	}
	out := make([]byte, 0, size)
	for i := k; i < k+n; {
		// The batches in one chunk are one piece (one read of a
		// spilled chunk, not one a batch).
		e := m.idx.at(i)
		j := i + 1
		for j < k+n && m.idx.at(j).seg == e.seg {
			j++
		}
		end := m.idx.at(j - 1)
		b, err := m.bytes(e.seg, e.pos, end.pos+int64(end.size))
		if err != nil {
			return nil, err
		}
		out = append(out, b...)
		i = j
	}
	return out, nil
}

// Truncate implements Log.
func (m *Memory) Truncate(offset int64) error {
	if m.closed {
		return ErrClosed
	}
	if offset < m.idx.start {
		return fmt.Errorf("storage: truncate to %d below log start offset %d", offset, m.idx.start)
	}
	m.truncate(offset)
	return nil
}

func (m *Memory) truncate(offset int64) {
	if k := m.idx.find(offset); k < m.idx.n() {
		e := *m.idx.at(k)
		// Clipping the capacity makes the next Append copy into a new array,
		// so slices already returned by Read keep their bytes. A spilled
		// chunk is shortened; the next Append starts a chunk.
		if c := &m.chunks[e.seg]; c.r != nil {
			c.n = e.pos
		} else {
			c.b = c.b[:e.pos:e.pos]
		}
		clear(m.chunks[e.seg+1:])
		m.chunks = m.chunks[:e.seg+1]
		m.idx.truncateAt(k)
	}
	leo := m.idx.leo()
	m.hw = min(m.hw, leo)
	m.syncedEnd = min(m.syncedEnd, leo)
}

// LoseUnsynced truncates the log back to the end of the last Sync, as a
// machine crash with FsyncNever or FsyncInterval loses the page cache. The
// driver calls it when it crashes the node; a closed log has nothing to
// lose because Close syncs.
func (m *Memory) LoseUnsynced() {
	if m.bugs.Has(bug.RecoveryKeepsTornTail) {
		m.tearUnsynced()
		return
	}
	m.truncate(m.syncedEnd)
}

// tearUnsynced is LoseUnsynced under planted bug recovery-keeps-torn-tail:
// the crash tears the unsynced batches (see tear) and the restart keeps
// them, breaking the rule that recovery cuts the log at the first batch
// that fails its CRC (Disk applies it when it opens, Memory here).
func (m *Memory) tearUnsynced() {
	k := m.idx.find(m.syncedEnd)
	if k == m.idx.n() {
		return
	}
	// A copy, so that slices Read returned keep their bytes.
	buf := m.flatten()
	tear(buf[m.idx.at(k).pos:])
	m.syncedEnd = m.idx.leo()
}

// flatten makes the log one chunk, a copy of all its bytes in order, and
// returns it: what a disk fault or a torn write changes in place, at a
// place counted in bytes from the log's start. (Only faults ask for it.)
//
// A flat log is held in memory whole, spill file or not, until an Append
// goes on past it: faults are rare, and the recovery that follows one
// reads it as one buffer.
func (m *Memory) flatten() []byte {
	if m.damaged {
		// Flat already, and perhaps cut short of what the index says
		// until a reopen recovers: copied as it is.
		// (A spill file that fails to read gives zeros here: the
		// error is its Err, which ends the simulation.)
		b, _ := m.bytes(0, 0, m.chunks[0].size())
		b = slices.Clone(b)
		m.chunks = []chunk{{b: b}}
		return b
	}
	buf := make([]byte, 0, m.size())
	var src []byte // the bytes of chunk k, read once
	k := int32(-1)
	for i := range m.idx.n() {
		e := m.idx.at(i)
		if e.seg != k {
			k = e.seg
			src, _ = m.bytes(k, 0, m.chunks[k].size())
		}
		pos := int64(len(buf))
		buf = append(buf, src[e.pos:e.pos+int64(e.size)]...)
		e.seg, e.pos = 0, pos
	}
	m.chunks = []chunk{{b: buf[:len(buf):len(buf)]}}
	return m.chunks[0].b
}

// size is how many bytes the log holds.
func (m *Memory) size() int {
	n := 0
	for k := range m.chunks {
		n += int(m.chunks[k].size())
	}
	return n
}

// LogStartOffset implements Log.
func (m *Memory) LogStartOffset() int64 { return m.idx.start }

// LogEndOffset implements Log.
func (m *Memory) LogEndOffset() int64 { return m.idx.leo() }

// Epochs implements Log.
func (m *Memory) Epochs() []EpochEntry { return m.idx.epochsCopy() }

// EndOffsetForEpoch implements Log.
func (m *Memory) EndOffsetForEpoch(epoch int32) (int32, int64) {
	return m.idx.endOffsetForEpoch(epoch)
}

// OffsetForTimestamp implements Log.
func (m *Memory) OffsetForTimestamp(ts int64) (int64, int64, bool) {
	return m.idx.offsetForTimestamp(ts)
}

// HighWatermark implements Log.
func (m *Memory) HighWatermark() int64 { return m.hw }

// SetHighWatermark implements Log.
func (m *Memory) SetHighWatermark(hw int64) { m.hw = hw }

// Sync implements Log: everything appended so far survives LoseUnsynced.
func (m *Memory) Sync() error {
	if m.closed {
		return ErrClosed
	}
	m.syncedEnd = m.idx.leo()
	return nil
}

// MaybeSync syncs if the policy is FsyncInterval and the last MaybeSync that
// synced was at least the interval before nowMs. The driver calls it from
// its virtual clock; Memory never reads a clock itself.
func (m *Memory) MaybeSync(nowMs int64) error {
	if m.closed || m.fsync != FsyncInterval || nowMs-m.lastSyncMs < m.intervalMs {
		return nil
	}
	m.lastSyncMs = nowMs
	return m.Sync()
}

// Checkpoint implements Log. The epoch cache needs no saving: like Disk's
// recovery, it is rebuilt from the batches, which Memory always has.
func (m *Memory) Checkpoint() error {
	if m.closed {
		return ErrClosed
	}
	m.ckHW = m.hw
	return nil
}

// Close implements Log: a clean shutdown, which syncs and checkpoints.
func (m *Memory) Close() error {
	if m.closed {
		return nil
	}
	m.syncedEnd = m.idx.leo()
	m.ckHW = m.hw
	m.closed = true
	return nil
}

// reopen is a restart: whatever the previous incarnation did, the new one
// sees the log as it stands and the last checkpointed HW.
func (m *Memory) reopen() {
	m.closed = false
	m.recover()
	m.ckDamaged = false
	m.hw = m.idx.clampHW(m.ckHW)
}

type memKey struct {
	topic     string
	partition int32
}

// MemoryFactory keeps one Memory per topic partition across restarts of the
// broker that owns it: Open of a log opened before is a restart of that log,
// whether or not it was closed (a crash does not close). Use one factory per
// simulated node. The zero value is ready to use and has FsyncNever.
type MemoryFactory struct {
	// Fsync and FsyncIntervalMs are given to every log opened, so that the
	// driver can model the Disk policies; with FsyncInterval it must call
	// each log's MaybeSync from its clock.
	Fsync           Fsync
	FsyncIntervalMs int64
	// Bugs are the planted storage bugs every log opened runs with
	// (package bug); none unless a test asks.
	Bugs bug.Set
	// Spill, when set, is where every log opened moves its full chunks
	// (see Spill); nil: they are held in memory. Several factories may
	// share one.
	Spill *Spill

	logs map[memKey]*Memory
	keys []memKey // creation order, so that iteration is deterministic
	// cleanEpoch is the CleanShutdown record, 0 if none.
	cleanEpoch int64
}

// Open implements Factory.
func (f *MemoryFactory) Open(topic string, partition int32) (Log, error) {
	return f.OpenMemory(topic, partition)
}

// OpenMemory is Open returning the concrete type, for LoseUnsynced and
// MaybeSync.
func (f *MemoryFactory) OpenMemory(topic string, partition int32) (*Memory, error) {
	if err := checkName(topic, partition); err != nil {
		return nil, err
	}
	k := memKey{topic, partition}
	if m, ok := f.logs[k]; ok {
		m.reopen()
		return m, nil
	}
	if f.logs == nil {
		f.logs = make(map[memKey]*Memory)
	}
	m := &Memory{fsync: f.Fsync, intervalMs: f.FsyncIntervalMs, bugs: f.Bugs, spill: f.Spill}
	if m.spill == nil {
		m.spill = testSpill
	}
	newMemory(m)
	if m.intervalMs <= 0 {
		m.intervalMs = DefaultFsyncIntervalMs
	}
	f.logs[k] = m
	f.keys = append(f.keys, k)
	return m, nil
}

// LoseUnsynced calls LoseUnsynced on every log the factory has opened: the
// node's machine crashed. Open the logs again to restart the node.
func (f *MemoryFactory) LoseUnsynced() {
	for _, k := range f.keys {
		f.logs[k].LoseUnsynced()
	}
}

// checkName refuses names that Kafka refuses, which also keeps a Disk
// partition directory inside its parent.
func checkName(topic string, partition int32) error {
	if topic == "" || topic == "." || topic == ".." || len(topic) > 249 {
		return fmt.Errorf("storage: invalid topic name %q", topic)
	}
	for _, c := range []byte(topic) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("storage: invalid topic name %q", topic)
		}
	}
	if partition < 0 {
		return fmt.Errorf("storage: invalid partition %d", partition)
	}
	return nil
}

// partitionDirName is Kafka's <topic>-<partition>.
func partitionDirName(topic string, partition int32) string {
	return topic + "-" + strconv.FormatInt(int64(partition), 10)
}

// Peek is the log of a topic partition the factory has opened, as it
// stands, or nil: a reader beside the broker (the simulator's invariant
// watch) that must not reopen it, as OpenMemory does.
func (f *MemoryFactory) Peek(topic string, partition int32) *Memory {
	return f.logs[memKey{topic, partition}]
}
