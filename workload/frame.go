package workload

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The Kafka protocol's framing, written here rather than shared with the
// broker (broker/wire): a bug the two sides had in common would make them
// agree with each other and be invisible to the test. Requests are framed
// by franz-go's kmsg.RequestFormatter, which real Kafka brokers accept;
// responses are read here.

// maxResponse bounds the size a response may announce (Kafka's default
// socket.request.max.bytes): fetches ask for a few MiB at most, so anything
// larger is a connection out of step, not an answer worth allocating for.
const maxResponse = 100 << 20

// apiVersionsKey is the one API whose response header stays v0 at flexible
// versions (KIP-511), so that a client can read it at any version.
const apiVersionsKey = 18

// readFrame reads one size-prefixed frame and returns its body.
func readFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 4 || n > maxResponse {
		return nil, fmt.Errorf("response frame of %d bytes", n)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return body, nil
}

// parseResponse decodes a frame body answering req: the correlation id,
// the response header's tags at flexible versions, then the body at req's
// version (a response carries neither key nor version of its own).
func parseResponse(body []byte, req kmsg.Request) (corr int32, resp kmsg.Response, err error) {
	r := kbin.Reader{Src: body}
	corr = r.Int32()
	resp = req.ResponseKind()
	if resp.IsFlexible() && req.Key() != apiVersionsKey {
		kmsg.SkipTags(&r)
	}
	if !r.Ok() {
		return corr, nil, fmt.Errorf("%s v%d response: truncated header", kmsg.NameForKey(req.Key()), req.GetVersion())
	}
	if err := readFrom(resp, r.Src); err != nil {
		return corr, nil, fmt.Errorf("%s v%d response: %w", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return corr, resp, nil
}

// readFrom is resp.ReadFrom, turning a panic on malformed input into an
// error: a broken broker must cost an operation, not the tester.
func readFrom(resp kmsg.Response, b []byte) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("malformed: %v", p)
		}
	}()
	return resp.ReadFrom(b)
}
