package wire

import (
	"bytes"
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzParseRequest feeds ParseRequest arbitrary frame bodies, starting from
// real requests of every supported key and version so mutations explore the
// decoders rather than dying in the header. It checks that:
//
//   - kmsg never panics (ParseRequest would recover, which would hide it, so
//     a recovered panic fails the target);
//   - a successfully parsed request re-encodes, decodes again, and encodes to
//     the same bytes, so what the broker hands to its state machine is a
//     stable reading of the input.
func FuzzParseRequest(f *testing.F) {
	for _, r := range supported {
		for v := r.Min; v <= r.Max; v++ {
			f.Add(frameBodyOf(AppendRequest(nil, 1, "fuzz", sampleRequest(r.Key, v))))
		}
	}
	// An ApiVersions request from a newer client, and a null client id.
	f.Add(frameBodyOf(AppendRequest(nil, 1, "fuzz", sampleRequest(18, 5))))
	f.Add(frameBodyOf(new(kmsg.RequestFormatter).AppendRequest(nil, sampleRequest(3, 0), 1)))

	f.Fuzz(func(t *testing.T, frame []byte) {
		req, err := ParseRequest(frame)
		if errors.Is(err, errPanicked) {
			t.Fatalf("decoder panicked: %v", err)
		}
		if errors.Is(err, ErrUnsupported) {
			if resp, ok := UnsupportedResponse(req); ok {
				AppendResponse(nil, req, resp)
			}
			return
		}
		if err != nil {
			if req.Body != nil {
				t.Fatal("body returned with an error")
			}
			return
		}
		if req.Body == nil || req.Body.Key() != req.Key || req.Body.GetVersion() != req.Version {
			t.Fatalf("inconsistent request %+v", req)
		}
		clientID := ""
		if req.ClientID != nil {
			clientID = *req.ClientID
		}
		first := AppendRequest(nil, req.CorrelationID, clientID, req.Body)
		again, err := ParseRequest(frameBodyOf(first))
		if err != nil {
			t.Fatalf("re-encoded request does not parse: %v", err)
		}
		second := AppendRequest(nil, again.CorrelationID, clientID, again.Body)
		if !bytes.Equal(first, second) {
			t.Fatalf("encoding not stable:\n%x\n%x", first, second)
		}
		// The response kind for this request must encode too, since
		// the server builds its replies from it.
		AppendResponse(nil, req, req.Body.ResponseKind())
	})
}

// frameBodyOf strips a frame's size prefix without a testing.T, for seeds.
func frameBodyOf(frame []byte) []byte { return frame[4:] }
