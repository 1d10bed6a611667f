package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// AppendRequest appends the full frame for req, as a broker acting as a
// client (a follower fetching from its leader) sends it: size, request header
// v1 or v2, body at req's version. kmsg's RequestFormatter already gets the
// header rules right, including the non-compact client id that old brokers
// need, so this only fixes the client id.
func AppendRequest(dst []byte, corr int32, clientID string, req kmsg.Request) []byte {
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID)).AppendRequest(dst, req, corr)
}

// ParseResponse decodes a frame body (as returned by ReadFrame) answering req,
// whose key and version tell how to read it: kmsg responses carry no key or
// version of their own. It returns the correlation id for the caller to match
// against what it sent; a mismatch means the connection is out of step.
//
// An ApiVersions error reply at version 0 (KIP-511) is recognised and decoded
// as such, so a caller that asked too high can read the range to retry with.
// Like ParseRequest it never panics, and the response aliases frame.
func ParseResponse(frame []byte, req kmsg.Request) (corr int32, resp kmsg.Response, err error) {
	if len(frame) < 4 {
		return 0, nil, fmt.Errorf("%w: response of %d bytes", ErrTruncated, len(frame))
	}
	corr = int32(binary.BigEndian.Uint32(frame))
	body := frame[4:]
	resp = req.ResponseKind() // at req's version
	if req.Key() == apiVersionsKey {
		// The error code is the first body field at every version, and
		// a broker that did not understand our version answers at v0.
		if len(body) >= 2 && int16(binary.BigEndian.Uint16(body)) == errUnsupportedVersion {
			resp.SetVersion(0)
		}
	} else if resp.IsFlexible() {
		if body, err = skipTags(body); err != nil {
			return corr, nil, fmt.Errorf("%w: response header tags: %v", ErrMalformed, err)
		}
	}
	if err := decode(resp, body); err != nil {
		return corr, nil, fmt.Errorf("%w: %s v%d response: %w", ErrMalformed,
			kmsg.NameForKey(req.Key()), resp.GetVersion(), err)
	}
	return corr, resp, nil
}
