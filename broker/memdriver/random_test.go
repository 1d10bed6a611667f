package memdriver

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chaos-isr/chaos/broker/control"
)

// randomRun drives a cluster through a seeded schedule of F1 faults (kills
// with the disk kept, pauses, cuts) while writing with acks=-1 and
// min.insync.replicas=2 under clean election, then heals everything. It
// returns the trace, the acknowledged values in offset order, and the
// committed log the cluster converged to.
func randomRun(t *testing.T, seed uint64, steps int, spec control.TopicSpec) (trace string, acked map[string]int64, final []string, c *Cluster) {
	c, acked = randomSchedule(t, DefaultOptions(seed), steps, spec)
	if !converge(c) {
		t.Fatalf("seed %d: cluster did not converge:\n%s", seed, c.State("t", 0))
	}
	return c.Trace(), acked, c.Committed("t", 0), c
}

// randomSchedule is randomRun's schedule on a cluster with opts, up to the
// heal: it returns the cluster and the acknowledged values.
func randomSchedule(t *testing.T, opts Options, steps int, spec control.TopicSpec) (c *Cluster, acked map[string]int64) {
	seed := opts.Seed
	c = New(opts)
	c.Run(500)
	if err := c.CreateTopic(spec); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	acked = map[string]int64{}
	var inflight []struct {
		call *Call
		v    string
	}
	for i := 0; i < steps; i++ {
		id := int32(1 + rng.IntN(3))
		switch rng.IntN(20) {
		case 0:
			c.Kill(id, false)
		case 1:
			c.Restart(id)
		case 2:
			c.Pause(id)
		case 3:
			c.Resume(id)
		case 4:
			c.Isolate(id)
		case 5:
			c.Heal()
		case 6:
			// A one-way cut between two nodes, the controller included.
			nodes := []int32{ControllerID, 1, 2, 3}
			a, b := nodes[rng.IntN(4)], nodes[rng.IntN(4)]
			if a != b {
				c.Cut(a, b)
			}
		case 7:
			if rng.IntN(2) == 0 {
				c.KillController()
			} else {
				c.RestartController()
			}
		default:
			v := fmt.Sprintf("v%d", i)
			inflight = append(inflight, struct {
				call *Call
				v    string
			}{c.Produce("t", 0, -1, 1000, v), v})
		}
		c.Run(int64(50 + rng.IntN(400)))
		for _, f := range inflight {
			if f.call.Done && ProduceResult(f.call) == fmt.Sprintf("ok@%d", offsetOf(f.call)) {
				acked[f.v] = offsetOf(f.call)
			}
		}
	}
	c.Heal()
	if !c.ctrlUp {
		c.RestartController()
	}
	for id := int32(1); id <= 3; id++ {
		c.Restart(id)
		c.Resume(id)
	}
	return c, acked
}

// converge runs c until partition t-0 has a leader, a full ISR and one HW
// at every replica's log end, for at most 30 s.
func converge(c *Cluster) bool {
	return c.RunUntil(30000, func() bool {
		p := c.Partition("t", 0)
		if p == nil || p.Leader == control.NoLeader || len(p.ISR) != 3 {
			return false
		}
		hw := int64(-1)
		for id := int32(1); id <= 3; id++ {
			info, ok := c.Node(id).Replica("t", 0)
			if !ok || (hw >= 0 && info.HW != hw) || info.LEO != info.HW {
				return false
			}
			hw = info.HW
		}
		return true
	})
}

var safe = control.TopicSpec{Name: "t", Partitions: 1, ReplicationFactor: 3, MinInsyncReplicas: 2, Election: control.Clean}

func offsetOf(call *Call) int64 {
	if call.Resp == nil {
		return -1
	}
	return callOffset(call)
}

// TestSameSeedSameTrace: the whole cluster is a function of its seed.
func TestSameSeedSameTrace(t *testing.T) {
	a, _, _, _ := randomRun(t, 42, 60, safe)
	b, _, _, _ := randomRun(t, 42, 60, safe)
	if a != b {
		al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
		for i := range min(len(al), len(bl)) {
			if al[i] != bl[i] {
				t.Fatalf("traces differ at line %d:\n%s\n%s", i, al[i], bl[i])
			}
		}
		t.Fatalf("traces differ in length: %d vs %d lines", len(al), len(bl))
	}
	c, _, _, _ := randomRun(t, 43, 60, safe)
	if a == c {
		t.Fatal("different seeds gave the same trace: the seed is not used")
	}
	t.Logf("trace: %d bytes, identical across runs", len(a))
}

// TestRandomF1NoLoss is the headline guarantee on the in-memory driver:
// acks=-1, min.insync.replicas=2, clean election, crashes that keep the
// disk, pauses and partitions: every acknowledged write survives at the
// offset it was acknowledged at, and all replicas converge to one log.
func TestRandomF1NoLoss(t *testing.T) {
	seeds := 200
	if s := os.Getenv("CHAOS_SIM_SEEDS"); s != "" {
		seeds, _ = strconv.Atoi(s)
	}
	if testing.Short() {
		seeds = 20
	}
	total := 0
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		_, acked, final, c := randomRun(t, seed, 80, safe)
		total += len(acked)
		for v, off := range acked {
			if off >= int64(len(final)) || final[off] != v {
				t.Fatalf("seed %d: acknowledged %s@%d lost; final log %v\n%s", seed, v, off, final, c.State("t", 0))
			}
		}
		for id := int32(1); id <= 3; id++ {
			if got := c.Values(id, "t", 0); !slices.Equal(got, final) {
				t.Fatalf("seed %d: replica b%d diverged:\n%v\nvs leader\n%v", seed, id, got, final)
			}
		}
	}
	if total < seeds*5 {
		t.Fatalf("only %d writes acknowledged over %d seeds: the schedule is too hostile to test anything", total, seeds)
	}
	t.Logf("%d acknowledged writes over %d seeds, none lost", total, seeds)
}

// TestRandomUncleanLoses is the same harness's teeth: with unclean election
// and min.insync.replicas=1 the same kind of schedule must lose acknowledged
// writes in some seeds, or the no-loss test above proves nothing.
func TestRandomUncleanLoses(t *testing.T) {
	unsafe := control.TopicSpec{Name: "t", Partitions: 1, ReplicationFactor: 3, MinInsyncReplicas: 1, Election: control.Unclean}
	for seed := uint64(1); seed <= 40; seed++ {
		_, acked, final, _ := randomRun(t, seed, 80, unsafe)
		for v, off := range acked {
			if off >= int64(len(final)) || final[off] != v {
				t.Logf("seed %d: acknowledged %s@%d lost, as unclean election permits", seed, v, off)
				return
			}
		}
	}
	t.Fatal("40 seeds of unclean election under faults lost nothing: the fault schedule has no teeth")
}
