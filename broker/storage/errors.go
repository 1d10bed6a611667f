package storage

import "errors"

// ErrOffsetOutOfRange is returned by Read for an offset outside the log.
// The core maps it to Kafka's OFFSET_OUT_OF_RANGE, so it is a sentinel that
// errors.Is finds through the wrapping that adds the offsets.
var ErrOffsetOutOfRange = errors.New("storage: offset out of range")

// ErrInvalidBatch is returned by Append for input it refuses: a batch at the
// wrong base offset, a bad CRC, a malformed or incomplete batch. Nothing was
// appended. It is distinct from I/O errors so that a caller can tell a
// protocol violation (a bug or a fenced writer) from a failing disk.
var ErrInvalidBatch = errors.New("storage: invalid batch")

// ErrClosed is returned by operations on a closed log; a restarted broker
// must open the log again rather than keep using a handle from its past life.
var ErrClosed = errors.New("storage: log closed")
