package storage

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/chaos-isr/chaos/broker/batch"
	"github.com/chaos-isr/chaos/broker/bug"
)

// DiskFactory opens Disk logs in Dir, one directory per partition named
// <topic>-<partition> as Kafka names them.
type DiskFactory struct {
	Dir string
	Options
}

// Open implements Factory.
func (f DiskFactory) Open(topic string, partition int32) (Log, error) {
	d, err := f.OpenDisk(topic, partition)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// OpenDisk is Open returning the concrete type, for MaybeSync and Recovery.
func (f DiskFactory) OpenDisk(topic string, partition int32) (*Disk, error) {
	if err := checkName(topic, partition); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(f.Dir, 0o755); err != nil {
		return nil, err
	}
	dir := PartitionDir(f.Dir, topic, partition)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, err
		}
		if err := syncDir(f.Dir); err != nil {
			return nil, err
		}
	}
	return OpenDisk(dir, f.Options)
}

// PartitionDir is the directory of a partition's log, for tools that inspect
// or damage segment files.
func PartitionDir(dir, topic string, partition int32) string {
	return filepath.Join(dir, partitionDirName(topic, partition))
}

// segment is one <base offset>.log file of back-to-back batches.
type segment struct {
	base int64
	f    *os.File
	size int64 // bytes in the file; the active segment's pending bytes follow
}

// Recovery reports what opening a Disk log found, so that the driver can log
// data that a crash or corruption destroyed instead of losing it silently.
type Recovery struct {
	Segments int // segment files kept
	Batches  int // batches recovered
	// TruncatedAt is the offset where a bad tail was cut (the recovered log
	// end offset), or -1 if every segment was whole; Reason says what was
	// wrong there. TruncatedBytes counts every byte dropped, including the
	// DeletedSegments that followed the cut.
	TruncatedAt     int64
	Reason          string
	TruncatedBytes  int64
	DeletedSegments int
	// HighWatermarkClamped: the checkpointed HW was beyond the recovered log
	// end offset and was lowered to it.
	HighWatermarkClamped bool
	// HighWatermarkDamaged: the HW checkpoint failed its checksum, or could
	// not be read as one, and was taken as none (an HW of 0).
	HighWatermarkDamaged bool
	// EpochCheckpointDiffers: the leader-epoch-checkpoint file, less entries
	// beyond the log end, is not a prefix of the cache rebuilt from the
	// batches (or is unreadable). The batches win; this can happen
	// legitimately after a truncation that was not checkpointed.
	EpochCheckpointDiffers bool
}

// String says what recovery cut or distrusted, for a log line.
func (r Recovery) String() string {
	var parts []string
	if r.TruncatedAt >= 0 {
		parts = append(parts, fmt.Sprintf("cut at offset %d (%s), %d bytes and %d later segments dropped", r.TruncatedAt, r.Reason, r.TruncatedBytes, r.DeletedSegments))
	}
	if r.HighWatermarkDamaged {
		parts = append(parts, "the HW checkpoint failed its checksum and was read as none")
	}
	if len(parts) == 0 {
		return fmt.Sprintf("%d batches in %d segments, whole", r.Batches, r.Segments)
	}
	return strings.Join(parts, "; ")
}

// Disk is a Log in a directory of segment files in Kafka's layout, so that
// a segment can be inspected with kafka-dump-log. Kafka's offset and time
// index files are replaced by an in-memory index of every batch, rebuilt on
// open (recovery reads every batch anyway), which makes Read a lookup and a
// pread.
//
// Opening recovers the log: every batch of every segment is CRC-checked and
// its offsets must continue the previous batch; at the first that does not,
// the file is truncated and later segments are deleted, so a torn or
// corrupt tail is never served. The epoch cache is then rebuilt from the
// batch headers (the checkpoint file is only cross-checked, see Recovery):
// it is a function of the batches, so this is right after any crash.
//
// A crash is simulated by dropping a Disk without Close and opening the
// directory again (the files are not locked, so this works in one process);
// with Options.LoseUnsynced the unsynced suffix is then gone. Opening the
// same directory twice while both are in use corrupts it.
type Disk struct {
	dir  string
	opts Options
	idx  index
	segs []*segment // segs[len-1] is the active segment
	// pending holds, with LoseUnsynced, the active segment's bytes after
	// its file size: appended but not yet written.
	pending    []byte
	dirty      bool // written since the last fsync
	lastSyncMs int64
	hw         int64
	closed     bool
	rec        Recovery
	// What the checkpoint files are known to hold, so that an idle
	// partition's periodic Checkpoint costs no fsync.
	ckValid  bool
	ckHW     int64
	ckEpochs []EpochEntry
	// tail is the end of the active segment's file as this process wrote
	// it, in chunks by file position: followers fetch, and consumers
	// poll, what was just appended, and get it from memory rather than
	// from a read of the file (a system call each, a tenth of a busy
	// broker's time). It holds at most tailLimit (and the rest of its
	// last chunk), and never anything the file does not. Its chunks are
	// only ever appended to, so a Read that falls in one is served as a
	// slice of it, without a copy: the bytes under a slice once handed
	// out are never written again.
	tail      []tailChunk
	tailBytes int
	// unread counts the appends since the last Read. A log nobody reads
	// (a follower's) keeps no tail: copying every write into memory was
	// a tenth of a busy broker's time in profiles. The first reads after
	// it becomes a leader go to the file, and the tail starts again.
	unread int
}

// unreadLimit is how many appends with no Read between them stop the tail.
const unreadLimit = 64

// tailChunk is a run of the active segment's bytes from file position pos.
type tailChunk struct {
	pos int64
	b   []byte
}

func (c *tailChunk) end() int64 { return c.pos + int64(len(c.b)) }

// tailLimit bounds Disk.tail (a variable so that tests can make it small),
// and tailChunkSize is the room a chunk for small writes is made with, so
// that a fetch of several usually falls within one chunk.
var (
	tailLimit     = 4 << 20
	tailChunkSize = 256 << 10
)

func segmentName(base int64) string { return fmt.Sprintf("%020d.log", base) }

func parseSegmentName(name string) (int64, bool) {
	digits, ok := strings.CutSuffix(name, ".log")
	if !ok || len(digits) != 20 {
		return 0, false
	}
	for _, c := range []byte(digits) {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	base, err := strconv.ParseInt(digits, 10, 64)
	return base, err == nil
}

// OpenDisk opens (creating if needed) the log in dir and recovers it.
func OpenDisk(dir string, opts Options) (*Disk, error) {
	opts, err := opts.normalized()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	d := &Disk{dir: dir, opts: opts, lastSyncMs: opts.NowMs()}
	d.rec.TruncatedAt = -1
	if err := d.recover(); err != nil {
		d.closeFiles()
		return nil, fmt.Errorf("storage: recovering %s: %w", dir, err)
	}
	return d, nil
}

func (d *Disk) recover() error {
	des, err := os.ReadDir(d.dir)
	if err != nil {
		return err
	}
	var bases []int64
	for _, de := range des {
		name := de.Name()
		if strings.HasSuffix(name, tmpSuffix) {
			// An interrupted checkpoint write; the old file is intact.
			if err := os.Remove(filepath.Join(d.dir, name)); err != nil {
				return err
			}
			continue
		}
		if base, ok := parseSegmentName(name); ok && de.Type().IsRegular() {
			bases = append(bases, base)
		}
	}
	slices.Sort(bases)
	dirChanged := false
	if len(bases) == 0 {
		bases = []int64{0}
		dirChanged = true // the first segment is created below
	}
	d.idx.start = bases[0]
	for _, base := range bases {
		path := filepath.Join(d.dir, segmentName(base))
		if d.rec.Reason != "" || base != d.idx.leo() {
			// After a cut, or a segment that does not continue the log:
			// everything from here on is unreachable.
			if d.rec.Reason == "" {
				d.rec.Reason = fmt.Sprintf("segment %s does not start at the log end offset %d", filepath.Base(path), d.idx.leo())
				d.rec.TruncatedAt = d.idx.leo()
			}
			if st, err := os.Stat(path); err == nil {
				d.rec.TruncatedBytes += st.Size()
			}
			if err := os.Remove(path); err != nil {
				return err
			}
			d.rec.DeletedSegments++
			dirChanged = true
			continue
		}
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		s := &segment{base: base, f: f}
		d.segs = append(d.segs, s)
		if err := d.recoverSegment(s, int32(len(d.segs)-1)); err != nil {
			return err
		}
	}
	if dirChanged {
		if err := syncDir(d.dir); err != nil {
			return err
		}
	}
	d.rec.Segments = len(d.segs)
	d.rec.Batches = d.idx.n()

	if b, err := os.ReadFile(filepath.Join(d.dir, hwFile)); err == nil {
		if hw, err := parseHW(b); err == nil {
			d.hw = d.idx.clampHW(hw)
			d.rec.HighWatermarkClamped = hw > d.hw
		} else {
			d.rec.HighWatermarkDamaged = true
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	d.hw = d.idx.clampHW(d.hw)

	if b, err := os.ReadFile(filepath.Join(d.dir, epochFile)); err == nil {
		ck, perr := parseEpochs(b)
		end := d.idx.leo()
		for len(ck) > 0 && ck[len(ck)-1].StartOffset >= end {
			ck = ck[:len(ck)-1]
		}
		d.rec.EpochCheckpointDiffers = perr != nil || len(ck) > len(d.idx.epochs) ||
			!slices.Equal(ck, d.idx.epochs[:len(ck)])
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// recoverSegment indexes the batches of s and cuts the file at the first bad
// one.
func (d *Disk) recoverSegment(s *segment, si int32) error {
	st, err := s.f.Stat()
	if err != nil {
		return err
	}
	fileSize := st.Size()
	r := bufio.NewReaderSize(io.NewSectionReader(s.f, 0, fileSize), 1<<20)
	buf := make([]byte, batch.HeaderSize, 64<<10)
	var pos int64
	var bad string
	for pos < fileSize && bad == "" {
		if fileSize-pos < batch.HeaderSize {
			bad = fmt.Sprintf("torn batch header (%d bytes)", fileSize-pos)
			break
		}
		buf = buf[:batch.HeaderSize]
		if _, err := io.ReadFull(r, buf); err != nil {
			return err
		}
		h, err := batch.Parse(buf)
		size := int64(h.Size())
		switch {
		case err != nil && !errors.Is(err, batch.ErrShort):
			bad = err.Error()
		case pos+size > fileSize:
			bad = fmt.Sprintf("torn batch (%d of %d bytes)", fileSize-pos, size)
		}
		if bad != "" {
			break
		}
		buf = slices.Grow(buf, int(size)-len(buf))[:size]
		if _, err := io.ReadFull(r, buf[batch.HeaderSize:]); err != nil {
			return err
		}
		switch {
		case d.opts.Bugs.Has(bug.RecoveryKeepsTornTail) && h.BaseOffset == d.idx.leo():
			// Planted bug recovery-keeps-torn-tail: a batch whose header
			// is sane and continues the log is kept unchecked, breaking
			// the rule that recovery cuts the log at the first batch that
			// fails its CRC (a torn or corrupt tail is never served).
			d.idx.add(h, si, pos)
			pos += size
		case batch.Verify(buf, h) != nil:
			bad = batch.Verify(buf, h).Error()
		case h.BaseOffset != d.idx.leo():
			bad = fmt.Sprintf("batch base offset %d, log end offset %d", h.BaseOffset, d.idx.leo())
		default:
			d.idx.add(h, si, pos)
			pos += size
		}
	}
	s.size = pos
	if bad == "" {
		return nil
	}
	d.rec.Reason = fmt.Sprintf("%s at byte %d of %s", bad, pos, filepath.Base(s.f.Name()))
	d.rec.TruncatedAt = d.idx.leo()
	d.rec.TruncatedBytes += fileSize - pos
	if err := s.f.Truncate(pos); err != nil {
		return err
	}
	return s.f.Sync()
}

func (d *Disk) active() *segment { return d.segs[len(d.segs)-1] }

// tears says whether unsynced batches are torn by a crash rather than lost
// (see tear): only with planted bug recovery-keeps-torn-tail, and only when
// the log keeps unsynced bytes to lose.
func (d *Disk) tears() bool {
	return d.opts.Bugs.Has(bug.RecoveryKeepsTornTail) && d.opts.LoseUnsynced && d.opts.Fsync != FsyncAlways
}

// Append implements Log. One Append goes into one segment: the active one
// is rolled first if it is not empty and the append would take it past
// SegmentBytes. If the write succeeds but a policy-driven sync fails, the
// batches stay appended and the sync error is returned.
func (d *Disk) Append(b []byte) error {
	if d.closed {
		return ErrClosed
	}
	hs, err := d.idx.validate(b)
	if err != nil {
		return err
	}
	if a := d.active(); a.size+int64(len(d.pending)) > 0 && a.size+int64(len(d.pending))+int64(len(b)) > d.opts.SegmentBytes {
		if err := d.roll(); err != nil {
			return err
		}
	}
	a := d.active()
	pos := a.size + int64(len(d.pending))
	if d.opts.LoseUnsynced && d.opts.Fsync != FsyncAlways {
		if d.tears() {
			// A crash from now until the next sync leaves these batches
			// torn on disk rather than absent (see tear); a sync writes
			// the real bytes over them.
			torn := slices.Clone(b)
			tear(torn)
			if _, err := a.f.WriteAt(torn, pos); err != nil {
				a.f.Truncate(pos)
				return err
			}
		}
		d.pending = append(d.pending, b...)
	} else {
		if _, err := a.f.WriteAt(b, a.size); err != nil {
			// Leave no partial batch behind for Reads or recovery to meet.
			a.f.Truncate(a.size)
			return err
		}
		d.cacheTail(a.size, b)
		a.size += int64(len(b))
		d.dirty = true
	}
	si := int32(len(d.segs) - 1)
	for _, h := range hs {
		d.idx.add(h, si, pos)
		pos += int64(h.Size())
	}
	switch d.opts.Fsync {
	case FsyncAlways:
		return d.sync(d.lastSyncMs)
	case FsyncInterval:
		if now := d.opts.NowMs(); now-d.lastSyncMs >= d.opts.FsyncIntervalMs {
			return d.sync(now)
		}
	}
	return nil
}

// roll closes the active segment to appends and starts a new one at the log
// end offset. A rolled segment counts as synced, as Kafka flushes a segment
// when it rolls: under FsyncNever that flush is left to the OS (Kafka does it
// in the background), because an fsync of a whole segment here would stall
// every partition of the broker for a good fraction of a second.
func (d *Disk) roll() error {
	if d.opts.Fsync == FsyncNever {
		if err := d.flushPending(); err != nil {
			return err
		}
	} else if err := d.sync(d.opts.NowMs()); err != nil {
		return err
	}
	base := d.idx.leo()
	f, err := os.OpenFile(filepath.Join(d.dir, segmentName(base)), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	d.segs = append(d.segs, &segment{base: base, f: f})
	d.dropTail()
	d.dirty = false
	if d.opts.Fsync == FsyncNever {
		return nil
	}
	return syncDir(d.dir)
}

// flushPending writes the bytes LoseUnsynced held back to the active
// segment's file, without an fsync.
func (d *Disk) flushPending() error {
	if len(d.pending) == 0 {
		return nil
	}
	a := d.active()
	if _, err := a.f.WriteAt(d.pending, a.size); err != nil {
		a.f.Truncate(a.size)
		return err
	}
	d.cacheTail(a.size, d.pending)
	a.size += int64(len(d.pending))
	d.pending = d.pending[:0]
	d.dirty = true
	return nil
}

// Read implements Log. The result is a fresh buffer owned by the caller.
func (d *Disk) Read(offset, upTo int64, maxBytes int) ([]byte, error) {
	if d.closed {
		return nil, ErrClosed
	}
	d.unread = 0
	k, n, err := d.idx.serve(offset, upTo, maxBytes)
	if err != nil || n == 0 {
		return nil, err
	}
	es := func(i int) *entry { return d.idx.at(k + i) }
	first, last := es(0), es(n-1)
	if si := first.seg; si == last.seg && int(si) == len(d.segs)-1 {
		// Batches just appended: a slice of the tail, if one chunk holds
		// them all.
		if b := d.tailSlice(first.pos, last.pos+int64(last.size)); b != nil {
			return b, nil
		}
	}
	total := 0
	for i := range n {
		total += int(es(i).size)
	}
	out := make([]byte, total)
	o := 0
	for i := 0; i < n; {
		// Batches of one segment are back to back: one read per segment.
		j := i
		for j+1 < n && es(j+1).seg == es(i).seg {
			j++
		}
		from, to := es(i).pos, es(j).pos+int64(es(j).size)
		if err := d.readSegment(es(i).seg, from, to, out[o:o+int(to-from)]); err != nil {
			return nil, err
		}
		o += int(to - from)
		i = j + 1
	}
	return out, nil
}

// cacheTail notes that b was written to the active segment's file at
// pos, which is where its file ended.
func (d *Disk) cacheTail(pos int64, b []byte) {
	if d.unread++; d.unread > unreadLimit || len(b) >= tailLimit {
		d.dropTail()
		return
	}
	if len(d.tail) > 0 && d.tail[len(d.tail)-1].end() != pos {
		d.dropTail()
	}
	if last := len(d.tail) - 1; last >= 0 && cap(d.tail[last].b)-len(d.tail[last].b) >= len(b) {
		// Past the chunk's length: bytes no slice handed out covers.
		d.tail[last].b = append(d.tail[last].b, b...)
	} else {
		// A large write is a chunk of its own, made by copying it (which
		// costs no zeroing, as room to spare would); small writes share
		// a chunk.
		var c []byte
		if len(b) >= tailChunkSize/4 {
			c = bytes.Clone(b)
		} else {
			c = append(make([]byte, 0, tailChunkSize), b...)
		}
		d.tail = append(d.tail, tailChunk{pos: pos, b: c})
	}
	d.tailBytes += len(b)
	// Drop the oldest chunks past the limit: what followers and consumers
	// still lack is the newest.
	for len(d.tail) > 1 && d.tailBytes > tailLimit {
		d.tailBytes -= len(d.tail[0].b)
		d.tail[0] = tailChunk{}
		d.tail = d.tail[1:]
	}
}

// dropTail forgets the tail. Its chunks are left to the slices Read
// handed out, never reused.
func (d *Disk) dropTail() { d.tail, d.tailBytes = nil, 0 }

// tailSlice returns the active segment's bytes [from, to) as a slice of
// one tail chunk, or nil if no chunk holds them all.
func (d *Disk) tailSlice(from, to int64) []byte {
	for i := len(d.tail) - 1; i >= 0; i-- {
		c := &d.tail[i]
		if from >= c.pos {
			if to > c.end() {
				return nil
			}
			// The capacity is cut so that an append to the slice cannot
			// write into the chunk.
			return c.b[from-c.pos : to-c.pos : to-c.pos]
		}
	}
	return nil
}

// copyTail copies the active segment's bytes [from, from+len(dst)) from
// the tail, and says whether it holds them.
func (d *Disk) copyTail(dst []byte, from int64) bool {
	if len(d.tail) == 0 || from < d.tail[0].pos || from+int64(len(dst)) > d.tail[len(d.tail)-1].end() {
		return false
	}
	for i := range d.tail {
		c := &d.tail[i]
		if len(dst) == 0 {
			break
		}
		if from >= c.end() {
			continue
		}
		n := copy(dst, c.b[from-c.pos:])
		dst, from = dst[n:], from+int64(n)
	}
	return true
}

func (d *Disk) readSegment(si int32, from, to int64, dst []byte) error {
	s := d.segs[si]
	if from < s.size {
		n := min(to, s.size) - from
		if int(si) != len(d.segs)-1 || !d.copyTail(dst[:n], from) {
			if _, err := s.f.ReadAt(dst[:n], from); err != nil {
				return fmt.Errorf("storage: reading %s at %d: %w", s.f.Name(), from, err)
			}
		}
	}
	if to > s.size {
		p := max(from, s.size)
		copy(dst[p-from:], d.pending[p-s.size:to-s.size])
	}
	return nil
}

// Truncate implements Log. Truncating the file is not followed by an fsync
// (as in Kafka) except with FsyncAlways: a killed process cannot undo an
// ftruncate, only a machine crash could.
func (d *Disk) Truncate(offset int64) error {
	if d.closed {
		return ErrClosed
	}
	if offset < d.idx.start {
		return fmt.Errorf("storage: truncate to %d below log start offset %d", offset, d.idx.start)
	}
	k := d.idx.find(offset)
	if k == d.idx.n() {
		d.hw = min(d.hw, d.idx.leo())
		return nil
	}
	si, pos := int(d.idx.at(k).seg), d.idx.at(k).pos
	d.dropTail() // what follows may be read from the file again
	if si < len(d.segs)-1 {
		d.pending = nil // it belonged to a segment about to be deleted
		for _, s := range d.segs[si+1:] {
			s.f.Close()
			if err := os.Remove(s.f.Name()); err != nil {
				return err
			}
		}
		d.segs = d.segs[:si+1]
		if err := syncDir(d.dir); err != nil {
			return err
		}
	}
	s := d.segs[si]
	if pos >= s.size {
		d.pending = d.pending[:pos-s.size]
		if d.tears() {
			// The torn copies of the dropped batches go with them.
			if err := s.f.Truncate(pos); err != nil {
				return err
			}
		}
	} else {
		d.pending = nil
		if err := s.f.Truncate(pos); err != nil {
			return err
		}
		s.size = pos
		d.dirty = true
	}
	d.idx.truncateAt(k)
	d.hw = min(d.hw, d.idx.leo())
	if d.opts.Fsync == FsyncAlways {
		return d.sync(d.lastSyncMs)
	}
	return nil
}

// LogStartOffset implements Log.
func (d *Disk) LogStartOffset() int64 { return d.idx.start }

// LogEndOffset implements Log.
func (d *Disk) LogEndOffset() int64 { return d.idx.leo() }

// Epochs implements Log.
func (d *Disk) Epochs() []EpochEntry { return d.idx.epochsCopy() }

// EndOffsetForEpoch implements Log.
func (d *Disk) EndOffsetForEpoch(epoch int32) (int32, int64) {
	return d.idx.endOffsetForEpoch(epoch)
}

// OffsetForTimestamp implements Log.
func (d *Disk) OffsetForTimestamp(ts int64) (int64, int64, bool) {
	return d.idx.offsetForTimestamp(ts)
}

// HighWatermark implements Log.
func (d *Disk) HighWatermark() int64 { return d.hw }

// SetHighWatermark implements Log.
func (d *Disk) SetHighWatermark(hw int64) { d.hw = hw }

// Sync implements Log: pending bytes are written and the active segment is
// fsynced (rolled segments were synced when they rolled).
func (d *Disk) Sync() error {
	if d.closed {
		return ErrClosed
	}
	return d.sync(d.opts.NowMs())
}

// MaybeSync syncs if the policy is FsyncInterval and the last sync is at
// least the interval before nowMs, which must come from Options.NowMs's
// clock. The driver calls it from a timer so that a quiet partition's last
// appends do not stay unsynced until the next Append.
func (d *Disk) MaybeSync(nowMs int64) error {
	if d.closed || d.opts.Fsync != FsyncInterval || nowMs-d.lastSyncMs < d.opts.FsyncIntervalMs {
		return nil
	}
	return d.sync(nowMs)
}

func (d *Disk) sync(nowMs int64) error {
	a := d.active()
	if err := d.flushPending(); err != nil {
		return err
	}
	if d.dirty {
		if err := a.f.Sync(); err != nil {
			return err
		}
		d.dirty = false
	}
	d.lastSyncMs = nowMs
	return nil
}

// Checkpoint implements Log: it writes high-watermark and
// leader-epoch-checkpoint atomically, skipping a file whose content has
// not changed since it was last written.
func (d *Disk) Checkpoint() error {
	if d.closed {
		return ErrClosed
	}
	if !d.ckValid || d.ckHW != d.hw {
		if err := writeAtomic(d.dir, hwFile, formatHW(d.hw)); err != nil {
			d.ckValid = false
			return err
		}
	}
	if !d.ckValid || !slices.Equal(d.ckEpochs, d.idx.epochs) {
		if err := writeAtomic(d.dir, epochFile, formatEpochs(d.idx.epochs)); err != nil {
			d.ckValid = false
			return err
		}
	}
	d.ckValid, d.ckHW, d.ckEpochs = true, d.hw, d.idx.epochsCopy()
	return nil
}

// Close implements Log: a clean shutdown that syncs the data, then
// checkpoints (so the saved HW never points past synced data), then closes
// the files. To simulate a crash, drop the Disk without closing it.
func (d *Disk) Close() error {
	if d.closed {
		return nil
	}
	err := d.sync(d.opts.NowMs())
	err = errors.Join(err, d.Checkpoint())
	d.closed = true
	return errors.Join(err, d.closeFiles())
}

func (d *Disk) closeFiles() error {
	var err error
	for _, s := range d.segs {
		err = errors.Join(err, s.f.Close())
	}
	d.pending = nil
	d.dropTail()
	return err
}

// Recovery reports what opening the log found.
func (d *Disk) Recovery() Recovery { return d.rec }
