package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxFrameSize is Kafka's default socket.request.max.bytes (100 MiB).
// Clients size their batches to stay under it, so a smaller limit would
// reject requests a real broker accepts.
const DefaultMaxFrameSize int32 = 100 << 20

// ErrFrameTooLarge means a peer announced a frame size that is negative or
// above the limit. The connection should be closed: the announced bytes are
// still on the wire and the stream cannot be resynchronised.
var ErrFrameTooLarge = errors.New("wire: frame size out of range")

// frameChunk is how much ReadFrame allocates for a frame before any of its
// bytes have arrived. Memory then grows with the bytes actually received, so
// a peer that announces 100 MiB and sends nothing costs at most this much.
const frameChunk = 1 << 20

// ReadFrame reads one size-prefixed frame and returns its body (without the
// size). The size is checked against maxSize before anything is allocated;
// maxSize <= 0 means DefaultMaxFrameSize.
//
// The body is read into buf when it fits, so a connection can reuse one
// buffer; a body that does not fit gets a new slice, grown as its bytes arrive
// rather than allocated at the announced size up front.
//
// A clean close before the first size byte returns io.EOF; a close inside a
// frame returns io.ErrUnexpectedEOF. The server can tell a client that hung
// up from one that died mid-request.
func ReadFrame(r io.Reader, maxSize int32, buf []byte) ([]byte, error) {
	if maxSize <= 0 {
		maxSize = DefaultMaxFrameSize
	}
	var sizeBuf []byte
	if cap(buf) >= 4 {
		sizeBuf = buf[:4]
	} else {
		sizeBuf = make([]byte, 4)
	}
	if _, err := io.ReadFull(r, sizeBuf); err != nil {
		return nil, err
	}
	size := int32(binary.BigEndian.Uint32(sizeBuf))
	if size < 0 || size > maxSize {
		return nil, fmt.Errorf("%w: %d bytes announced, limit %d", ErrFrameTooLarge, size, maxSize)
	}
	n := int(size)
	if n <= cap(buf) {
		body := buf[:n]
		if _, err := io.ReadFull(r, body); err != nil {
			return nil, noEOF(err)
		}
		return body, nil
	}
	body := make([]byte, 0, min(n, frameChunk))
	for len(body) < n {
		if len(body) == cap(body) {
			grown := make([]byte, len(body), min(n, 2*cap(body)))
			copy(grown, body)
			body = grown
		}
		m, err := io.ReadFull(r, body[len(body):cap(body)])
		body = body[:len(body)+m]
		if err != nil {
			return nil, noEOF(err)
		}
	}
	return body, nil
}

// noEOF turns io.EOF into io.ErrUnexpectedEOF: once a size has been read, any
// end of stream cuts a frame in half.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
