package txn

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/workload"
)

// TestNewRefuses: what a transactional workload cannot do is refused
// with the reason.
func TestNewRefuses(t *testing.T) {
	cfg := workload.Config{Workload: results.Workload{Acks: 1}}
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "acks") {
		t.Errorf("acks=1: %v, want a refusal naming acks", err)
	}
	cfg.Acks, cfg.SubVia = -1, results.SubViaSubscribe
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "sub-via") {
		t.Errorf("--sub-via subscribe: %v, want a refusal naming it", err)
	}
	cfg.SubVia = results.SubViaAssign
	if _, err := New(cfg); err != nil {
		t.Errorf("acks=-1, assign: %v", err)
	}
}

// TestPlan: a producer's transactions are drawn from its seed alone: the
// same seed draws the same, each has one to four micro-operations on the
// topic's partitions, its sends' values are unique to the process, and
// about one in four micro-operations polls and one in five transactions
// aborts.
func TestPlan(t *testing.T) {
	cfg := workload.Config{Workload: results.Workload{Topic: "t", Partitions: 3, Seed: 7}}
	w := &Workload{cfg: cfg}
	draw := func() *producer {
		return &producer{w: w, process: 2, rng: rand.New(rand.NewPCG(cfg.Seed, 3))}
	}
	a, b := draw(), draw()
	seen := map[string]bool{}
	var mops, polls, aborts int
	const n = 2000
	for range n {
		ma, pa, xa := a.plan()
		mb, pb, xb := b.plan()
		if !reflect.DeepEqual(ma, mb) || !reflect.DeepEqual(pa, pb) || xa != xb {
			t.Fatal("the same seed drew different transactions")
		}
		if len(ma) < 1 || len(ma) > 4 || len(pa) != len(ma) {
			t.Fatalf("%d micro-operations on %d partitions", len(ma), len(pa))
		}
		for i, m := range ma {
			if pa[i] < 0 || pa[i] >= cfg.Partitions {
				t.Fatalf("partition %d of %d", pa[i], cfg.Partitions)
			}
			mops++
			if m.F == history.Poll {
				polls++
				continue
			}
			if !strings.HasPrefix(m.Value, "2-") || seen[m.Value] || m.Partition != pa[i] {
				t.Fatalf("send %+v: want a value of process 2 not sent before, to partition %d", *m.MopSend, pa[i])
			}
			seen[m.Value] = true
		}
		if xa {
			aborts++
		}
	}
	if f := float64(polls) / float64(mops); f < 0.2 || f > 0.3 {
		t.Errorf("polls are %.2f of the micro-operations, want about 0.25", f)
	}
	if f := float64(aborts) / n; f < 0.15 || f > 0.25 {
		t.Errorf("aborts are %.2f of the transactions, want about 0.2", f)
	}
}
