package storage

import (
	"fmt"
	"strings"
	"time"

	"github.com/chaos-isr/chaos/broker/bug"
)

// Fsync is when a log forces appended batches to stable storage. The policy
// matters to the tester because Kafka's default relies on replication alone:
// a correlated crash of every replica can lose acknowledged writes.
type Fsync int

const (
	// FsyncNever is Kafka's default (flush.messages and flush.ms unset):
	// a Disk log syncs only when a segment rolls (Kafka flushes rolled
	// segments too), on an explicit Sync and on Close.
	FsyncNever Fsync = iota
	// FsyncAlways syncs after every Append (flush.messages=1).
	FsyncAlways
	// FsyncInterval syncs once the last sync is older than the interval
	// (flush.ms). A Disk checks on every Append and when the driver's timer
	// calls MaybeSync; a Memory reads no clock and syncs only in MaybeSync.
	FsyncInterval
)

// Defaults applied to zero Options fields.
const (
	DefaultSegmentBytes    = 64 << 20 // Kafka's segment.bytes is 1 GiB; smaller segments exercise rolling
	DefaultFsyncIntervalMs = 1000
)

// String returns the policy's keyword as ParseFsync accepts it.
func (p Fsync) String() string {
	switch p {
	case FsyncNever:
		return "never"
	case FsyncAlways:
		return "always"
	case FsyncInterval:
		return "interval"
	}
	return fmt.Sprintf("Fsync(%d)", int(p))
}

// ParseFsync parses the value of a command-line flag:
//
//	never              FsyncNever
//	always             FsyncAlways
//	interval           FsyncInterval every DefaultFsyncIntervalMs
//	interval:<dur>     FsyncInterval every <dur>, e.g. interval:100ms
//
// A bare duration ("100ms") is refused: the policy is always named.
// A duration is Go's time.ParseDuration syntax and must be a positive whole
// number of milliseconds, since that is the resolution of the policy. The
// interval returned is in milliseconds and is 0 unless the policy is
// FsyncInterval.
func ParseFsync(s string) (Fsync, int64, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	switch v {
	case "never":
		return FsyncNever, 0, nil
	case "always":
		return FsyncAlways, 0, nil
	case "interval":
		return FsyncInterval, DefaultFsyncIntervalMs, nil
	}
	dur, ok := strings.CutPrefix(v, "interval:")
	if !ok {
		return 0, 0, fmt.Errorf("storage: fsync policy %q: want never, always, interval or interval:<duration>", s)
	}
	d, err := time.ParseDuration(dur)
	if err != nil {
		return 0, 0, fmt.Errorf("storage: fsync interval %q: want a duration such as 100ms", s)
	}
	if d < time.Millisecond || d%time.Millisecond != 0 {
		return 0, 0, fmt.Errorf("storage: fsync interval %q: want a positive whole number of milliseconds", s)
	}
	return FsyncInterval, d.Milliseconds(), nil
}

// FormatFsync is the inverse of ParseFsync, for logging a configuration in a
// form that can be pasted back into a flag.
func FormatFsync(p Fsync, intervalMs int64) string {
	if p == FsyncInterval {
		return "interval:" + (time.Duration(intervalMs) * time.Millisecond).String()
	}
	return p.String()
}

// Options configure Disk logs. The zero value is Kafka's behaviour with
// DefaultSegmentBytes segments.
type Options struct {
	// SegmentBytes is the size past which the active segment is rolled
	// (0: DefaultSegmentBytes). One Append never spans two segments, so a
	// segment can exceed it by up to one Append.
	SegmentBytes int64
	// Fsync is the sync policy; FsyncIntervalMs its interval
	// (0: DefaultFsyncIntervalMs).
	Fsync           Fsync
	FsyncIntervalMs int64
	// LoseUnsynced keeps appended bytes in process memory until they are
	// synced, so that killing the process loses them as a machine crash
	// loses the page cache (the LazyFS idea, without FUSE). Reads see them.
	// Rolled segments are always synced, so only the active segment can
	// lose data.
	LoseUnsynced bool
	// NowMs is the clock FsyncInterval reads on Append (nil: the wall clock
	// in Unix milliseconds). MaybeSync's argument must come from the same
	// clock.
	NowMs func() int64
	// Bugs are the bugs planted in the storage on purpose (package bug),
	// none unless a test asks. Only bugs that live in the storage.
	Bugs bug.Set
}

// Validate refuses options no log can be opened with.
func (o Options) Validate() error {
	_, err := o.normalized()
	return err
}

func (o Options) normalized() (Options, error) {
	if err := o.Bugs.Only(bug.Storage); err != nil {
		return o, fmt.Errorf("storage: %w", err)
	}
	if o.SegmentBytes <= 0 {
		o.SegmentBytes = DefaultSegmentBytes
	}
	if o.Fsync < FsyncNever || o.Fsync > FsyncInterval {
		return o, fmt.Errorf("storage: unknown fsync policy %d", int(o.Fsync))
	}
	if o.FsyncIntervalMs <= 0 {
		o.FsyncIntervalMs = DefaultFsyncIntervalMs
	}
	if o.NowMs == nil {
		o.NowMs = func() int64 { return time.Now().UnixMilli() }
	}
	return o, nil
}
