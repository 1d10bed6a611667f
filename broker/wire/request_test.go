package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// eachVersion calls fn for every supported key at every supported version.
// Every version rather than just the ends: the table is small and the
// flexible switch usually sits in the middle of a range.
func eachVersion(t *testing.T, fn func(t *testing.T, key, version int16)) {
	t.Helper()
	for _, r := range supported {
		for v := r.Min; v <= r.Max; v++ {
			t.Run(fmt.Sprintf("%s/v%d", kmsg.NameForKey(r.Key), v), func(t *testing.T) { fn(t, r.Key, v) })
		}
	}
}

// frameBody strips the size prefix after checking it, as ReadFrame would.
func frameBody(t *testing.T, frame []byte) []byte {
	t.Helper()
	body, err := ReadFrame(bytes.NewReader(frame), 0, nil)
	if err != nil {
		t.Fatalf("ReadFrame: %v", err)
	}
	return body
}

func TestSupportedTable(t *testing.T) {
	for i, r := range supported {
		if i > 0 && supported[i-1].Key >= r.Key {
			t.Errorf("table not sorted at key %d", r.Key)
		}
		if r.Min < 0 || r.Min > r.Max {
			t.Errorf("key %d: bad range %d-%d", r.Key, r.Min, r.Max)
		}
		req := kmsg.RequestForKey(r.Key)
		resp := kmsg.ResponseForKey(r.Key)
		if req == nil || resp == nil {
			t.Fatalf("kmsg does not know key %d", r.Key)
		}
		if r.Max > req.MaxVersion() || r.Max > resp.MaxVersion() {
			t.Errorf("%s: max %d beyond kmsg's %d/%d", kmsg.NameForKey(r.Key), r.Max, req.MaxVersion(), resp.MaxVersion())
		}
		lo, hi, ok := Supported(r.Key)
		if !ok || lo != r.Min || hi != r.Max {
			t.Errorf("Supported(%d) = %d, %d, %v", r.Key, lo, hi, ok)
		}
	}
	if _, _, ok := Supported(37); ok {
		t.Error("CreatePartitions should not be supported")
	}
	got := SupportedAPIs()
	got[0].Max = 99
	if supported[0].Max == 99 {
		t.Error("SupportedAPIs exposes the table itself")
	}
}

func TestRequestRoundTrip(t *testing.T) {
	eachVersion(t, func(t *testing.T, key, version int16) {
		want := sampleRequest(key, version)
		frame := AppendRequest(nil, 77, "client-1", want)
		req, err := ParseRequest(frameBody(t, frame))
		if err != nil {
			t.Fatalf("ParseRequest: %v", err)
		}
		if req.Key != key || req.Version != version || req.CorrelationID != 77 {
			t.Fatalf("header = %d v%d corr %d", req.Key, req.Version, req.CorrelationID)
		}
		if req.ClientID == nil || *req.ClientID != "client-1" {
			t.Fatalf("client id = %v", req.ClientID)
		}
		if req.Body.Key() != key || req.Body.GetVersion() != version {
			t.Fatalf("body is %s v%d", kmsg.NameForKey(req.Body.Key()), req.Body.GetVersion())
		}
		if got := requestTopic(req.Body); got != sampleTopic {
			t.Fatalf("decoded body lost its fields: %+v", req.Body)
		}
		if again := AppendRequest(nil, 77, "client-1", req.Body); !bytes.Equal(again, frame) {
			t.Fatalf("re-encoded request differs:\n got %x\nwant %x", again, frame)
		}

		// A null client id is legal and distinct from an empty one.
		frame = new(kmsg.RequestFormatter).AppendRequest(nil, want, 78)
		req, err = ParseRequest(frameBody(t, frame))
		if err != nil || req.ClientID != nil || req.CorrelationID != 78 {
			t.Fatalf("null client id: %v %v %d", err, req.ClientID, req.CorrelationID)
		}
	})
}

func TestResponseRoundTrip(t *testing.T) {
	eachVersion(t, func(t *testing.T, key, version int16) {
		req := Request{Key: key, Version: version, CorrelationID: 99}
		resp := sampleResponse(key, version)
		resp.SetVersion(0) // AppendResponse must set it from the request
		frame := AppendResponse([]byte("prefix"), req, resp)
		if !bytes.HasPrefix(frame, []byte("prefix")) {
			t.Fatal("dst prefix clobbered")
		}
		body := frameBody(t, frame[len("prefix"):])

		// Decode by hand with kmsg, independently of ParseResponse.
		if corr := int32(binary.BigEndian.Uint32(body)); corr != 99 {
			t.Fatalf("corr = %d", corr)
		}
		body = body[4:]
		got := kmsg.ResponseForKey(key)
		got.SetVersion(version)
		if got.IsFlexible() && key != apiVersionsKey {
			if body[0] != 0 {
				t.Fatalf("header tag count = %d", body[0])
			}
			body = body[1:]
		}
		if err := got.ReadFrom(body); err != nil {
			t.Fatalf("kmsg ReadFrom: %v", err)
		}
		if responseMarker(got) != sampleTopic {
			t.Fatalf("decoded response lost its fields: %+v", got)
		}
		if !bytes.Equal(got.AppendTo(nil), body) {
			t.Fatal("kmsg re-encoding differs from our body")
		}

		// The client side reads the same frame back.
		corr, parsed, err := ParseResponse(frameBody(t, frame[len("prefix"):]), sampleRequest(key, version))
		if err != nil || corr != 99 || responseMarker(parsed) != sampleTopic {
			t.Fatalf("ParseResponse: %v corr %d %+v", err, corr, parsed)
		}
	})
}

// ApiVersions is flexible from v3 but its response header never has tags;
// a tag byte would be read by clients as the high byte of the error code.
func TestApiVersionsResponseHeaderV0(t *testing.T) {
	frame := AppendResponse(nil, Request{Key: 18, Version: 3, CorrelationID: 5}, ApiVersionsResponse(3, nil))
	body := frame[4:]
	if want := []byte{0, 0, 0, 5, 0, 0, byte(len(supported) + 1)}; !bytes.Equal(body[:7], want) {
		t.Fatalf("start of v3 ApiVersions response = %x, want %x (corr, error code, compact array len)", body[:7], want)
	}
	// Header v1 for any other flexible response.
	frame = AppendResponse(nil, Request{Key: 3, Version: 9, CorrelationID: 5}, kmsg.NewPtrMetadataResponse())
	if frame[8] != 0 {
		t.Fatalf("metadata v9 header tag count = %d", frame[8])
	}
}

func TestApiVersionsUnsupportedVersion(t *testing.T) {
	for _, version := range []int16{5, 127, -1} {
		var frame []byte
		if version == 5 {
			// What franz-go sends first: a real v5 body.
			frame = AppendRequest(nil, 11, "kgo", sampleRequest(18, 5))
		} else {
			// A version nobody can decode; the body is garbage.
			frame = binary.BigEndian.AppendUint32(nil, 0)
			frame = binary.BigEndian.AppendUint16(frame, 18)
			frame = binary.BigEndian.AppendUint16(frame, uint16(version))
			frame = binary.BigEndian.AppendUint32(frame, 11)
			frame = append(frame, 0, 3, 'k', 'g', 'o', 0xff, 0xfe)
			binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
		}
		req, err := ParseRequest(frameBody(t, frame))
		if !errors.Is(err, ErrUnsupported) {
			t.Fatalf("v%d: err = %v, want ErrUnsupported", version, err)
		}
		if req.Key != 18 || req.Version != version || req.CorrelationID != 11 || req.Body != nil {
			t.Fatalf("v%d: header = %+v", version, req)
		}
		if req.ClientID == nil || *req.ClientID != "kgo" {
			t.Fatalf("v%d: client id = %v", version, req.ClientID)
		}
		resp, ok := UnsupportedResponse(req)
		if !ok {
			t.Fatalf("v%d: no reply for unsupported ApiVersions", version)
		}
		out := AppendResponse(nil, req, resp)

		// Decode as a client would: v0, no header tags.
		body := frameBody(t, out)
		if corr := int32(binary.BigEndian.Uint32(body)); corr != 11 {
			t.Fatalf("corr = %d", corr)
		}
		got := kmsg.NewPtrApiVersionsResponse()
		got.SetVersion(0)
		if err := got.ReadFrom(body[4:]); err != nil {
			t.Fatalf("v0 decode: %v", err)
		}
		if got.ErrorCode != 35 || len(got.ApiKeys) != 1 || got.ApiKeys[0].ApiKey != 18 || got.ApiKeys[0].MinVersion != 0 || got.ApiKeys[0].MaxVersion != 4 {
			t.Fatalf("reply = %+v", got)
		}
		if len(body) != 4+2+4+6 {
			t.Fatalf("v0 reply is %d bytes; extra bytes would confuse old clients", len(body))
		}

		// ParseResponse, for a broker acting as client, spots the downgrade.
		if version >= 0 {
			asked := kmsg.NewPtrApiVersionsRequest()
			asked.SetVersion(version)
			_, parsed, err := ParseResponse(body, asked)
			if err != nil || parsed.GetVersion() != 0 || parsed.(*kmsg.ApiVersionsResponse).ErrorCode != 35 {
				t.Fatalf("ParseResponse of downgrade: %v %+v", err, parsed)
			}
		}
	}
}

func TestUnsupportedOtherKeysClose(t *testing.T) {
	cases := []struct{ key, version int16 }{
		{0, 2}, {0, 13}, {1, 3}, {1, 13}, {2, 0}, {2, 9}, {3, 13}, {19, 8}, {22, 5}, {23, 5},
		{10, 6}, {8, 10}, {9, 10},
		{37, 0}, // CreatePartitions: known to Kafka, not to us
		{24, 4}, {25, 4}, {26, 6}, {27, 3}, {28, 4},
		{999, 0},
		{-1, 0},
	}
	for _, c := range cases {
		frame := binary.BigEndian.AppendUint16(nil, uint16(c.key))
		frame = binary.BigEndian.AppendUint16(frame, uint16(c.version))
		frame = binary.BigEndian.AppendUint32(frame, 3)
		frame = append(frame, 0xff, 0xff) // null client id
		req, err := ParseRequest(frame)
		if !errors.Is(err, ErrUnsupported) {
			t.Fatalf("%d v%d: err = %v", c.key, c.version, err)
		}
		if req.Key != c.key || req.Version != c.version || req.CorrelationID != 3 || req.ClientID != nil {
			t.Fatalf("%d v%d: header = %+v", c.key, c.version, req)
		}
		if _, ok := UnsupportedResponse(req); ok {
			t.Fatalf("%d v%d: should close, not reply", c.key, c.version)
		}
	}
}

func TestHeaderTagsSkipped(t *testing.T) {
	body := sampleRequest(3, 12).AppendTo(nil)
	frame := binary.BigEndian.AppendUint16(nil, 3)
	frame = binary.BigEndian.AppendUint16(frame, 12)
	frame = binary.BigEndian.AppendUint32(frame, 8)
	frame = append(frame, 0, 1, 'c')
	frame = append(frame, 2, 5, 3, 'x', 'y', 'z', 200, 1, 0) // tag 5 "xyz", tag 200 empty
	frame = append(frame, body...)
	req, err := ParseRequest(frame)
	if err != nil || requestTopic(req.Body) != sampleTopic || *req.ClientID != "c" {
		t.Fatalf("ParseRequest with header tags: %v %+v", err, req)
	}

	// A tag that runs past the frame is malformed, not a panic.
	bad := slices.Clone(frame[:11])
	bad = append(bad, 1, 5, 100, 'x')
	if _, err := ParseRequest(bad); !errors.Is(err, ErrMalformed) {
		t.Fatalf("overlong header tag: %v", err)
	}
}

func TestTruncatedRequests(t *testing.T) {
	for n := range fixedHeaderSize {
		if _, err := ParseRequest(make([]byte, n)); !errors.Is(err, ErrTruncated) {
			t.Fatalf("%d-byte frame: err = %v", n, err)
		}
	}
	eachVersion(t, func(t *testing.T, key, version int16) {
		body := frameBody(t, AppendRequest(nil, 1, "c", sampleRequest(key, version)))
		for n := fixedHeaderSize; n < len(body); n++ {
			req, err := ParseRequest(body[:n])
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("prefix %d/%d: err = %v", n, len(body), err)
			}
			if req.Body != nil || req.CorrelationID != 1 {
				t.Fatalf("prefix %d: request = %+v", n, req)
			}
		}
	})
}

// Random bodies behind valid headers: every decoder sees garbage of every
// shape. The fuzz target goes further; this keeps a fast version in go test.
func TestGarbageRequests(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, r := range supported {
		for v := r.Min; v <= r.Max; v++ {
			for range 200 {
				frame := binary.BigEndian.AppendUint16(nil, uint16(r.Key))
				frame = binary.BigEndian.AppendUint16(frame, uint16(v))
				frame = binary.BigEndian.AppendUint32(frame, 1)
				frame = append(frame, 0, 0) // empty client id
				if v >= 0 && kmsgFlexible(r.Key, v) {
					frame = append(frame, 0)
				}
				garbage := make([]byte, rng.IntN(64))
				for i := range garbage {
					// Bias toward small and 0xff bytes: lengths and nulls.
					switch rng.IntN(3) {
					case 0:
						garbage[i] = byte(rng.IntN(4))
					case 1:
						garbage[i] = 0xff
					default:
						garbage[i] = byte(rng.Uint32())
					}
				}
				req, err := ParseRequest(append(frame, garbage...))
				if errors.Is(err, errPanicked) {
					t.Fatalf("kmsg panicked on %x: %v", append(frame, garbage...), err)
				}
				if err == nil {
					req.Body.AppendTo(nil)
				}
			}
		}
	}
}

func kmsgFlexible(key, version int16) bool {
	r := kmsg.RequestForKey(key)
	r.SetVersion(version)
	return r.IsFlexible()
}

type panicky struct{}

func (panicky) ReadFrom([]byte) error { panic("boom") }

func TestDecodeRecovers(t *testing.T) {
	err := decode(panicky{}, nil)
	if !errors.Is(err, errPanicked) {
		t.Fatalf("err = %v", err)
	}
}

func TestAppendResponseKeyMismatchPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for a Fetch response to a Produce request")
		}
	}()
	AppendResponse(nil, Request{Key: 0, Version: 3}, kmsg.NewPtrFetchResponse())
}

func TestParseResponseErrors(t *testing.T) {
	fetch := sampleRequest(1, 12)
	if _, _, err := ParseResponse([]byte{0, 0}, fetch); !errors.Is(err, ErrTruncated) {
		t.Fatalf("2-byte response: %v", err)
	}
	body := frameBody(t, AppendResponse(nil, Request{Key: 1, Version: 12, CorrelationID: 4}, sampleResponse(1, 12)))
	for n := 4; n < len(body); n++ {
		corr, resp, err := ParseResponse(body[:n], fetch)
		if !errors.Is(err, ErrMalformed) || resp != nil || corr != 4 {
			t.Fatalf("prefix %d/%d: %v %v corr %d", n, len(body), err, resp, corr)
		}
	}
}
