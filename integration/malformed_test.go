package integration

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// frame prefixes body with its size.
func frame(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// header is a request header v1: key, version, correlation id, client id.
func header(key, version int16, corr int32) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, uint16(len("malformed")))
	return append(b, "malformed"...)
}

// expectClosed asserts that the broker closes the connection without
// writing anything: for input it cannot answer, closing is the only signal
// it has (Kafka does the same), and writing garbage back would be worse.
func expectClosed(t *testing.T, c net.Conn, what string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	var buf [64]byte
	n, err := c.Read(buf[:])
	switch {
	case n > 0:
		t.Errorf("%s: the broker answered %d bytes (%x), want the connection closed", what, n, buf[:n])
	case errors.Is(err, os.ErrDeadlineExceeded):
		t.Errorf("%s: the connection is still open after 3s, want it closed", what)
	case err != nil && !errors.Is(err, io.EOF) && !isReset(err):
		t.Errorf("%s: reading: %v", what, err)
	}
}

func isReset(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "broken pipe"))
}

// expectOpen asserts the broker neither answered nor closed within d: it is
// waiting for the rest of a frame.
func expectOpen(t *testing.T, c net.Conn, d time.Duration, what string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(d))
	var buf [64]byte
	n, err := c.Read(buf[:])
	if n > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("%s: want the broker to wait for the rest of the frame, got %d bytes, %v", what, n, err)
	}
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func send(t *testing.T, c net.Conn, b []byte) {
	t.Helper()
	_ = c.SetWriteDeadline(time.Now().Add(3 * time.Second))
	if _, err := c.Write(b); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// TestMalformedFrames throws broken input at a live broker. Each connection
// must get a proper answer or be closed, and afterwards the broker, the same
// process, must serve ordinary clients as before.
func TestMalformedFrames(t *testing.T) {
	tc := startCluster(t, clusterOpts{})
	const topic = "malformed"
	tc.createTopic(topic, 1, 3, nil)
	s := tc.mustState(topic, 0)
	addr := tc.addr(s.leader)
	pids := map[int]int{}
	for _, n := range tc.Nodes() {
		pids[n.ID] = n.PID()
	}

	t.Run("garbage", func(t *testing.T) {
		// "GET " read as a size is 1.2 GB: far over the frame limit.
		c := dial(t, addr)
		send(t, c, []byte("GET / HTTP/1.1\r\nHost: kafka\r\n\r\n"))
		expectClosed(t, c, "an HTTP request")

		// Random bytes, seeded so a failure replays: whatever they parse as,
		// the broker answers, closes, or waits for more; it must not die.
		rng := rand.New(rand.NewPCG(1, 2))
		for range 20 {
			junk := make([]byte, 1+rng.IntN(300))
			for j := range junk {
				junk[j] = byte(rng.Uint32())
			}
			c := dial(t, addr)
			_ = c.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = c.Write(junk)
			_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
			_, _ = c.Read(make([]byte, 64))
			c.Close()
		}
	})

	t.Run("huge-size", func(t *testing.T) {
		c := dial(t, addr)
		send(t, c, []byte{0x7f, 0xff, 0xff, 0xff, 0, 18, 0, 3})
		expectClosed(t, c, "a 2 GiB size prefix")
	})

	t.Run("negative-size", func(t *testing.T) {
		c := dial(t, addr)
		send(t, c, []byte{0xff, 0xff, 0xff, 0xfe})
		expectClosed(t, c, "a negative size prefix")
	})

	t.Run("shorter-than-header", func(t *testing.T) {
		c := dial(t, addr)
		send(t, c, []byte{0, 0, 0, 3, 0, 18, 0})
		expectClosed(t, c, "a 3-byte frame")
	})

	t.Run("truncated", func(t *testing.T) {
		// 100 bytes announced, 10 sent: the broker must wait for the rest,
		// not act on half a request; then the client disappears.
		c := dial(t, addr)
		send(t, c, append([]byte{0, 0, 0, 100}, header(3, 9, 1)...))
		expectOpen(t, c, 300*time.Millisecond, "a truncated frame")
		c.Close()
	})

	t.Run("unknown-api-key", func(t *testing.T) {
		c := dial(t, addr)
		send(t, c, frame(header(9999, 0, 7)))
		expectClosed(t, c, "API key 9999")
	})

	t.Run("unsupported-version", func(t *testing.T) {
		// Produce v2 predates v2 record batches, which is all the broker
		// reads; like any key outside the table, it closes.
		c := dial(t, addr)
		send(t, c, frame(header(0, 2, 7)))
		expectClosed(t, c, "Produce v2")
	})

	t.Run("malformed-body", func(t *testing.T) {
		// A supported key and version whose body stops short.
		c := dial(t, addr)
		send(t, c, frame(append(header(3, 4, 7), 0, 0, 0)))
		expectClosed(t, c, "a Metadata v4 body cut short")
	})

	t.Run("api-versions-99", func(t *testing.T) {
		// KIP-511: a v0 answer with UNSUPPORTED_VERSION and the ApiVersions
		// range, after which the client retries on the same connection.
		w, err := dialWire(addr)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		send(t, w.c, frame(append(header(18, 99, 42), 0)))
		_ = w.c.SetReadDeadline(time.Now().Add(3 * time.Second))
		body, err := readFrame(w.c)
		if err != nil {
			t.Fatalf("ApiVersions v99: no answer: %v", err)
		}
		if corr := int32(binary.BigEndian.Uint32(body)); corr != 42 {
			t.Errorf("ApiVersions v99: correlation id %d, want 42", corr)
		}
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.Version = 0
		if err := resp.ReadFrom(body[4:]); err != nil {
			t.Fatalf("ApiVersions v99: the answer is not a v0 ApiVersions response: %v", err)
		}
		if resp.ErrorCode != kerr.UnsupportedVersion.Code {
			t.Errorf("ApiVersions v99: error code %d, want UNSUPPORTED_VERSION (35)", resp.ErrorCode)
		}
		var max18 int16 = -1
		for _, k := range resp.ApiKeys {
			if k.ApiKey == 18 {
				max18 = k.MaxVersion
			}
		}
		if max18 < 3 {
			t.Fatalf("ApiVersions v99: the answer gives ApiVersions max version %d, want the supported range", max18)
		}
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = max18
		req.ClientSoftwareName, req.ClientSoftwareVersion = "integration", "1"
		r, err := w.roundTrip(req, rawTimeout)
		if err != nil {
			t.Fatalf("retrying ApiVersions at v%d on the same connection: %v", max18, err)
		}
		if ar := r.(*kmsg.ApiVersionsResponse); ar.ErrorCode != 0 || len(ar.ApiKeys) < 7 {
			t.Errorf("ApiVersions v%d: error %d, %d keys", max18, ar.ErrorCode, len(ar.ApiKeys))
		}
	})

	t.Run("corrupt-batch", func(t *testing.T) {
		before, _, err := readLog(addr, topic, 0, -2)
		if err != nil {
			t.Fatal(err)
		}
		w, err := dialWire(addr)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		for _, acks := range []int16{1, -1} {
			b := recordBatch("corrupt-1", "corrupt-2")
			b[len(b)-3] ^= 0xff // a bit of the last record's value: the CRC no longer matches
			r, err := w.roundTrip(produceRequest(topic, 0, acks, b), rawTimeout)
			if err != nil {
				t.Fatalf("acks=%d produce with a bad CRC: no answer: %v", acks, err)
			}
			p := r.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
			if p.ErrorCode != kerr.CorruptMessage.Code {
				t.Errorf("acks=%d produce with a bad CRC: %v at %d, want CORRUPT_MESSAGE", acks, kerr.ErrorForCode(p.ErrorCode), p.BaseOffset)
			}
		}
		// The connection is still good for the next request.
		if _, err := w.roundTrip(kmsg.NewPtrMetadataRequest(), rawTimeout); err != nil {
			t.Errorf("metadata after a refused produce on the same connection: %v", err)
		}
		after, _, err := readLog(addr, topic, 0, -2)
		if err != nil {
			t.Fatal(err)
		}
		if len(after) != len(before) {
			t.Errorf("the log grew from %d to %d records on corrupt batches: %+v", len(before), len(after), after[len(before):])
		}
	})

	for _, n := range tc.Nodes() {
		if got := n.PID(); got != pids[n.ID] {
			t.Fatalf("%s %d: pid %d, was %d: the process died or was restarted", n.Role, n.ID, got, pids[n.ID])
		}
	}
	// And it still does its job, for a client that knows nothing of the above.
	cl := tc.kgoClient(kgo.DefaultProduceTopic(topic), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.RequiredAcks(kgo.AllISRAcks()))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("still-alive")}).FirstErr(); err != nil {
		t.Fatalf("produce after the malformed input: %v", err)
	}
	var got []string
	for len(got) == 0 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatal("consume after the malformed input: nothing read before the deadline")
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	if len(got) != 1 || got[0] != "still-alive" {
		t.Errorf("consumed %q, want just still-alive", got)
	}
	for _, n := range tc.Nodes() {
		if got := n.PID(); got != pids[n.ID] {
			t.Errorf("%s %d: pid %d, was %d", n.Role, n.ID, got, pids[n.ID])
		}
	}
}
