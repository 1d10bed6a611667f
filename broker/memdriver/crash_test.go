package memdriver

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chaos-isr/chaos/broker/bug"
)

// cutLeaderRun cuts the partition's leader off from the other brokers and
// the controller (clients still reach it), writes to it with acks=1 a
// record nobody else gets, writes to the leader elected meanwhile, and
// heals: the old leader must truncate its record away. It returns the
// cluster (after the heal and a wait), its old leader and what OnCrash
// heard (nil crashes: OnCrash unset). lose: a crash loses unsynced writes.
func cutLeaderRun(t *testing.T, bugs bug.Set, recovered, lose bool) (c *Cluster, old int32, crashes []Crash) {
	t.Helper()
	opts := DefaultOptions(1)
	opts.Broker.Bugs, opts.CrashLosesUnsynced = bugs, lose
	if recovered {
		opts.OnCrash = func(cr Crash) {
			crashes = append(crashes, cr)
			if c.Up(cr.Node) || !c.Crashed(cr.Node) || c.Node(cr.Node) != nil {
				t.Errorf("broker %d up=%v crashed=%v when its crash is reported", cr.Node, c.Up(cr.Node), c.Crashed(cr.Node))
			}
		}
	}
	c = New(opts)
	c.Run(500)
	if err := c.CreateTopic(safe); err != nil {
		t.Fatal(err)
	}
	if !converge(c) || ProduceResult(await(c, c.Produce("t", 0, -1, 1000, "a"), 2000)) != "ok@0" {
		t.Fatalf("no first write:\n%s", c.State("t", 0))
	}
	old = c.Partition("t", 0).Leader
	for _, o := range []int32{ControllerID, 1, 2, 3} {
		if o != old {
			c.Cut(old, o)
			c.Cut(o, old)
		}
	}
	c.ProduceTo(old, "t", 0, 1, 1000, "x")
	c.Run(3000)
	if l := c.Partition("t", 0).Leader; l == old || l < 1 {
		t.Fatalf("leader %d after the cut of %d", l, old)
	}
	if r := ProduceResult(await(c, c.Produce("t", 0, -1, 1000, "b"), 2000)); r != "ok@1" {
		t.Fatalf("write to the new leader: %s", r)
	}
	c.Heal()
	c.Run(3000)
	return c, old, crashes
}

// TestCrashRecovered: a broker whose state machine panics (the planted bug
// truncation-index-out-of-range, on a cut-off leader that rejoins) crashes
// alone: the driver recovers the panic, the broker is down and known as
// crashed when OnCrash hears of it, with the panic and a stack free of
// addresses and goroutine ids, the rest of the cluster runs on, a restart
// brings it back, and the same run crashes the same way. Without the bug
// nothing crashes; without OnCrash the panic is not recovered.
func TestCrashRecovered(t *testing.T) {
	c, old, crashes := cutLeaderRun(t, 0, true, false)
	if len(crashes) != 0 || !converge(c) || !slices.Equal(c.Values(old, "t", 0), []string{"a", "b"}) {
		t.Fatalf("without the bug: crashes %v, old leader's log %v", crashes, c.Values(old, "t", 0))
	}

	planted := bug.Of(bug.TruncationIndexOutOfRange)
	c, old, crashes = cutLeaderRun(t, planted, true, false)
	if len(crashes) != 1 {
		t.Fatalf("%d crashes, want the old leader's: %v\n%s", len(crashes), crashes, c.State("t", 0))
	}
	cr := crashes[0]
	t.Logf("broker %d crashed at %d ms: %s\n%s", cr.Node, cr.At, cr.Panic, cr.Stack)
	if cr.Node != old || cr.Panic != "runtime error: index out of range [1] with length 1" {
		t.Errorf("crash %+v, want broker %d's index out of range", cr, old)
	}
	top, _, _ := strings.Cut(cr.Stack, "\n")
	if top != "github.com/chaos-isr/chaos/broker/core.droppedEpochs" || !strings.Contains(cr.Stack, "core.(*Broker).truncateTo\n\tfollower.go:") ||
		strings.Contains(cr.Stack, "0x") || strings.Contains(cr.Stack, "goroutine") || strings.Contains(cr.Stack, "memdriver") {
		t.Errorf("stack:\n%s", cr.Stack)
	}
	if c.Up(old) || !c.Crashed(old) {
		t.Fatalf("broker %d up=%v crashed=%v after its crash", old, c.Up(old), c.Crashed(old))
	}
	kept := c.Values(old, "t", 0)
	if !slices.Equal(kept, []string{"a"}) {
		t.Errorf("the crashed broker's log %v, want its truncation done: a", kept)
	}
	// The others went on: the new leader takes writes.
	if r := ProduceResult(await(c, c.Produce("t", 0, -1, 1000, "c"), 2000)); r != "ok@2" {
		t.Fatalf("write after the crash: %s", r)
	}
	// Its truncation was done before it panicked: restarted, it fetches.
	c.Restart(old)
	if c.Crashed(old) || !converge(c) || !slices.Equal(c.Values(old, "t", 0), []string{"a", "b", "c"}) {
		t.Fatalf("after the restart: crashed=%v, log %v\n%s", c.Crashed(old), c.Values(old, "t", 0), c.State("t", 0))
	}

	if _, _, again := cutLeaderRun(t, planted, true, false); !slices.Equal(again, crashes) {
		t.Fatalf("the same run crashed otherwise:\n%v\n%v", again, crashes)
	}
	defer func() {
		if p := recover(); p == nil || !strings.Contains(fmt.Sprint(p), "index out of range") {
			t.Errorf("without OnCrash: panic %v, want the broker's", p)
		}
	}()
	cutLeaderRun(t, planted, false, false)
}

// TestCrashLosesUnsynced: with CrashLosesUnsynced a broker that crashes
// loses its unsynced writes (fsync never: all of them), as a killed one
// does under lose-unsynced; without it, it keeps them.
func TestCrashLosesUnsynced(t *testing.T) {
	planted := bug.Of(bug.TruncationIndexOutOfRange)
	for _, lose := range []bool{false, true} {
		c, old, crashes := cutLeaderRun(t, planted, true, lose)
		if len(crashes) != 1 || crashes[0].Node != old {
			t.Fatalf("lose=%v: crashes %v", lose, crashes)
		}
		got := c.Values(old, "t", 0)
		if want := len(got) == 0; want != lose {
			t.Errorf("lose=%v: the crashed broker's log holds %v", lose, got)
		}
	}
}

// await runs the cluster until call is answered, for up to ms, and
// returns it.
func await(c *Cluster, call *Call, ms int64) *Call {
	c.Await(call, ms)
	return call
}
