package nemesis

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// jitterRuntime is a network that draws jitter from a seed, as the local
// runtime's proxies do.
type jitterRuntime struct {
	fakeRuntime
	noJitter bool // like the docker runtime with netem
}

func (f *jitterRuntime) DelayAllJitter(d, j time.Duration, seed uint64) (bool, error) {
	return !f.noJitter, f.do(fmt.Sprint("delay-all-jitter ", d, " ", j, " ", seed))
}

// The latency fault jitters its delay where the network can draw from a
// seed, with a seed that follows from the run's (so a run replays it) and
// without drawing from the nemesis's own source, whose later choices stay
// the same on every runtime.
func TestLatencyJitterFollowsTheSeed(t *testing.T) {
	run := func(seed uint64, noJitter bool) ([]string, []string) {
		rt, rec := &jitterRuntime{noJitter: noJitter}, &memRecorder{}
		n := New(Config{Brokers: 3, Partitions: 1, Seed: seed}, rt, rt, nil, rec)
		if err := n.Run(context.Background(), time.Now(), Schedule{{Fault: "latency", End: time.Millisecond}}); err != nil {
			t.Fatal(err)
		}
		var targets []string
		for _, op := range rec.ops {
			targets = append(targets, op.Value.FaultTargets()...)
		}
		return rt.log, targets
	}
	a, targets := run(1, false)
	b, _ := run(1, false)
	c, _ := run(2, false)
	if !slices.Equal(a, b) || slices.Equal(a, c) || len(a) != 2 {
		t.Fatalf("seed 1 twice: %v, %v; seed 2: %v", a, b, c)
	}
	if want := fmt.Sprint("delay-all-jitter 50ms 10ms ", uint64(1)^0x6a6974746572); a[0] != want {
		t.Fatalf("start %q, want %q", a[0], want)
	}
	if !slices.Contains(targets, "±10ms jitter") {
		t.Fatalf("targets %v do not name the jitter", targets)
	}
	if _, targets := run(1, true); slices.Contains(targets, "±10ms jitter") {
		t.Fatalf("targets %v name a jitter the network did not draw", targets)
	}
}
