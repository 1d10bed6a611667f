package storage

// EpochEntry says that leader epoch Epoch starts at offset StartOffset.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// Log is one partition replica's log. Offsets are Kafka offsets. Batches are
// raw Kafka v2 record batches, already stamped with their base offset and
// partition leader epoch (see package batch). A Log is used by one goroutine.
type Log interface {
	// Append appends one or more whole batches. Their base offset must equal
	// LogEndOffset and offsets must be contiguous; a batch that breaks this
	// or has a bad CRC is refused and nothing is appended. Appending updates
	// the epoch cache: a batch whose leader epoch is greater than the latest
	// cached epoch starts a new entry at its base offset.
	Append(batches []byte) error
	// Read returns whole batches starting with the batch that contains
	// offset, stopping before upTo (an offset: batches with base offset >=
	// upTo are not returned) and before maxBytes would be exceeded, except
	// that the first batch is always returned whole even if larger. Reading
	// at LogEndOffset or at/after upTo returns nil. An offset below
	// LogStartOffset or above LogEndOffset is an ErrOffsetOutOfRange.
	// The returned slice must not be modified; nor does the log modify it
	// later, so it stays valid after later Appends and Truncates (a
	// fetch's answer is written out after both may have happened).
	Read(offset, upTo int64, maxBytes int) ([]byte, error)
	// Truncate removes every batch whose last offset is >= offset, so that
	// LogEndOffset becomes <= offset, and drops epoch entries starting at or
	// after the new end. The high watermark is lowered to the new end if it
	// was above it.
	Truncate(offset int64) error
	// LogStartOffset is the first offset held (0: nothing is deleted).
	LogStartOffset() int64
	// LogEndOffset is the offset the next appended record gets.
	LogEndOffset() int64

	// Epochs returns the leader-epoch cache, oldest first.
	Epochs() []EpochEntry
	// EndOffsetForEpoch answers OffsetForLeaderEpoch (KIP-101/279): for the
	// largest cached epoch <= epoch it returns that epoch and the start offset
	// of the next cached epoch (or LogEndOffset if it is the latest). If epoch
	// is older than every cached epoch it returns (-1, -1).
	EndOffsetForEpoch(epoch int32) (int32, int64)
	// OffsetForTimestamp returns the first offset of the first batch whose
	// max timestamp is >= ts, and that timestamp; ok is false if none.
	OffsetForTimestamp(ts int64) (offset, timestamp int64, ok bool)

	// HighWatermark is the last value set (or recovered from the checkpoint,
	// clamped to LogEndOffset).
	HighWatermark() int64
	// SetHighWatermark records the HW in memory; Checkpoint persists it.
	SetHighWatermark(hw int64)

	// Sync makes everything appended so far durable (fsync).
	Sync() error
	// Checkpoint persists the HW and the epoch cache.
	Checkpoint() error
	// Close is a clean shutdown: it syncs, checkpoints and releases files.
	// A crash is simulated by not calling it (Disk: drop the object and open
	// the directory again; Memory: MemoryFactory.LoseUnsynced, then Open).
	Close() error
}

// Factory opens (creating if needed) the log of a topic partition replica.
type Factory interface {
	Open(topic string, partition int32) (Log, error)
}
