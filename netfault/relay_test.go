package netfault

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// The relay carries a node's connections to its peers and delays them as
// apply tells it, over its control socket: a round trip through a link
// delayed 50 ms takes 100 ms more, and an empty list heals it.
func TestRelayDelays(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go io.Copy(c, c)
		}
	}()
	control := fmt.Sprintf("@chaos-netfault-relay-test-%d", os.Getpid())
	r, err := startRelay([]RelayLink{{To: "broker-2", Listen: "127.0.0.1:0", Target: ln.Addr().String()}}, control)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	c, err := net.Dial("tcp", r.links["broker-2"].Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	rtt := func() time.Duration {
		start := time.Now()
		b := []byte("ping")
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, b); err != nil {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	ctx := context.Background()
	if err := setRelay(ctx, control, []RelayDelay{{To: "broker-2", Delay: 50 * time.Millisecond, Jitter: 5 * time.Millisecond, Seed: 3}}); err != nil {
		t.Fatal(err)
	}
	if d := rtt(); d < 90*time.Millisecond {
		t.Errorf("round trip %v through 50ms ± 5ms each way", d)
	}
	if err := setRelay(ctx, control, nil); err != nil {
		t.Fatal(err)
	}
	if d := rtt(); d > 50*time.Millisecond {
		t.Errorf("round trip %v after the heal", d)
	}
	if err := setRelay(ctx, control, []RelayDelay{{To: "broker-9", Delay: time.Second}}); err == nil || !strings.Contains(err.Error(), "no link to broker-9") {
		t.Errorf("a delay on an unknown link: %v", err)
	}
	if err := setRelay(ctx, "@chaos-netfault-no-relay", nil); err == nil || !strings.Contains(err.Error(), "no relay") {
		t.Errorf("no relay: %v", err)
	}
}

func TestParseRelayLink(t *testing.T) {
	l, err := ParseRelayLink("broker-1=127.0.0.1:19001=broker-1:9092")
	if err != nil || l != (RelayLink{To: "broker-1", Listen: "127.0.0.1:19001", Target: "broker-1:9092"}) || l.String() != "broker-1=127.0.0.1:19001=broker-1:9092" {
		t.Fatalf("%+v %v", l, err)
	}
	if _, err := ParseRelayLink("broker-1=127.0.0.1:19001"); err == nil {
		t.Fatal("a link without a target parsed")
	}
}
