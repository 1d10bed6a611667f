package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Errors from ParseRequest, by what the server should do with the connection.
var (
	// ErrTruncated means the frame cannot hold the fixed request header (api
	// key, version, correlation id), or a response frame its correlation id.
	// There is no correlation id to answer to, so the connection should close.
	ErrTruncated = errors.New("wire: frame too short for a header")

	// ErrUnsupported means the key or version is outside the supported
	// table. The header is parsed, so the server can answer; see
	// UnsupportedResponse for whether it should.
	ErrUnsupported = errors.New("wire: unsupported api key or version")

	// ErrMalformed means the header after the fixed part, or the body, does
	// not decode at the announced version (ParseResponse uses it too). The
	// connection should close: the two sides disagree about the protocol.
	ErrMalformed = errors.New("wire: malformed message")
)

// errPanicked marks a malformed input that made kmsg panic rather than return
// an error. It is wrapped together with ErrMalformed so the server treats it
// like any other bad input, and separately so the fuzz test can tell that a
// panic was recovered.
var errPanicked = errors.New("decoder panicked")

// fixedHeaderSize is the api key, version and correlation id, which every
// request header version starts with.
const fixedHeaderSize = 8

// Request is a parsed client request: the header and the decoded body.
type Request struct {
	Key           int16
	Version       int16
	CorrelationID int32
	// ClientID is nil when the client sent a null client id, which Kafka
	// distinguishes from an empty one.
	ClientID *string
	// Body is the decoded request, its version set. It is nil whenever
	// ParseRequest returns an error.
	Body kmsg.Request
}

// ParseRequest decodes a frame body (as returned by ReadFrame) into a header
// and a kmsg request. The error, if any, is one of ErrTruncated,
// ErrUnsupported (the header fields are set) or ErrMalformed (the fixed
// header fields are set); test with errors.Is.
//
// The returned request aliases frame (see the package doc).
func ParseRequest(frame []byte) (Request, error) {
	if len(frame) < fixedHeaderSize {
		return Request{}, fmt.Errorf("%w: %d bytes", ErrTruncated, len(frame))
	}
	req := Request{
		Key:           int16(binary.BigEndian.Uint16(frame[0:])),
		Version:       int16(binary.BigEndian.Uint16(frame[2:])),
		CorrelationID: int32(binary.BigEndian.Uint32(frame[4:])),
	}
	rest := frame[fixedHeaderSize:]

	if !isSupported(req.Key, req.Version) {
		// The client id is only a courtesy for logging here: Kafka decides
		// on key and version alone, and the reply needs only the
		// correlation id, so a bad client id must not turn a reply into a
		// closed connection.
		if id, _, err := readNullableString(rest); err == nil {
			req.ClientID = id
		}
		return req, fmt.Errorf("%w: key %d (%s) version %d", ErrUnsupported,
			req.Key, kmsg.NameForKey(req.Key), req.Version)
	}

	id, rest, err := readNullableString(rest)
	if err != nil {
		return req, fmt.Errorf("%w: client id: %v", ErrMalformed, err)
	}
	req.ClientID = id

	body := kmsg.RequestForKey(req.Key)
	body.SetVersion(req.Version)
	// Request header v2 (KIP-482) adds tagged fields exactly when the
	// request itself is flexible. This holds for ApiVersions too (v3+);
	// only its response header is special.
	if body.IsFlexible() {
		if rest, err = skipTags(rest); err != nil {
			return req, fmt.Errorf("%w: header tags: %v", ErrMalformed, err)
		}
	}
	if err := decode(body, rest); err != nil {
		return req, fmt.Errorf("%w: %s v%d body: %w", ErrMalformed,
			kmsg.NameForKey(req.Key), req.Version, err)
	}
	req.Body = body
	return req, nil
}

// message is what kmsg requests and responses have in common for decoding.
type message interface{ ReadFrom([]byte) error }

// decode runs kmsg's decoder behind a recover. kmsg is written to return
// errors on bad input, but it is generated code over attacker-controlled
// lengths, and one panic would take down every partition on this broker.
func decode(m message, src []byte) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", errPanicked, p)
		}
	}()
	return m.ReadFrom(src)
}

// AppendResponse appends the full frame answering req: size, correlation id,
// response header tags when the response is flexible, then resp encoded at
// the request's version (resp's version is overwritten). The one exception is
// an ApiVersions request at an unsupported version, which is answered at
// version 0 (KIP-511). ApiVersions responses never carry header tags: clients
// read them before they know whether the broker speaks flexible versions.
//
// resp must be the response kind for req.Key; anything else is a bug in the
// caller and panics, since the client would misread it anyway.
func AppendResponse(dst []byte, req Request, resp kmsg.Response) []byte {
	if resp.Key() != req.Key {
		panic(fmt.Sprintf("wire: %s response to a %s request",
			kmsg.NameForKey(resp.Key()), kmsg.NameForKey(req.Key)))
	}
	version := req.Version
	if req.Key == apiVersionsKey && !isSupported(req.Key, req.Version) {
		version = 0
	}
	resp.SetVersion(version)

	start := len(dst)
	dst = append(dst, 0, 0, 0, 0) // size, patched below
	dst = binary.BigEndian.AppendUint32(dst, uint32(req.CorrelationID))
	if resp.IsFlexible() && req.Key != apiVersionsKey {
		dst = append(dst, 0) // no header tags
	}
	dst = resp.AppendTo(dst)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// readNullableString reads a Kafka int16-length nullable string. Any negative
// length is null, as in Kafka's own header parser.
func readNullableString(b []byte) (*string, []byte, error) {
	if len(b) < 2 {
		return nil, nil, errors.New("truncated string length")
	}
	n := int16(binary.BigEndian.Uint16(b))
	b = b[2:]
	if n < 0 {
		return nil, b, nil
	}
	if int(n) > len(b) {
		return nil, nil, fmt.Errorf("string of %d bytes, %d left", n, len(b))
	}
	s := string(b[:n])
	return &s, b[n:], nil
}

// skipTags skips a KIP-482 tagged-field section. No request or response
// header tag is defined that this broker needs, so their values are dropped.
func skipTags(b []byte) ([]byte, error) {
	count, b, err := readUvarint(b)
	if err != nil {
		return nil, err
	}
	// Each field takes at least two bytes (tag and size), which also bounds
	// the loop by the input rather than by the announced count.
	for ; count > 0; count-- {
		if _, b, err = readUvarint(b); err != nil {
			return nil, err
		}
		var size uint32
		if size, b, err = readUvarint(b); err != nil {
			return nil, err
		}
		if uint64(size) > uint64(len(b)) {
			return nil, fmt.Errorf("tagged field of %d bytes, %d left", size, len(b))
		}
		b = b[size:]
	}
	return b, nil
}

// readUvarint reads an unsigned varint that must fit 32 bits, as every
// KIP-482 count, tag and length does.
func readUvarint(b []byte) (uint32, []byte, error) {
	v, n := binary.Uvarint(b)
	if n <= 0 || v > math.MaxUint32 {
		return 0, nil, errors.New("bad unsigned varint")
	}
	return uint32(v), b[n:], nil
}
