package controller

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chaos-isr/chaos/broker/bug"
	"github.com/chaos-isr/chaos/broker/control"
)

// unclean-when-clean: the only in-sync replica (1) dies under a clean
// policy. Without the bug the partition goes offline and keeps the ISR
// [1]; with it the controller elects the first live out-of-sync replica,
// whose log becomes the truth, and says so in its log.
func TestBugUncleanWhenClean(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprintf("bug=%v", on), func(t *testing.T) {
			c := cluster(t, 3, control.Clean)
			if on {
				c.cfg.Bugs = bug.Of(bug.UncleanWhenClean)
			}
			p := part(c)
			if r := c.Handle(0, &control.AlterISRRequest{BrokerID: 1, BrokerEpoch: epochOf(c, 1), Topic: "t", LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, ISR: []int32{1}}).(*control.AlterISRResponse); r.Error != "" {
				t.Fatalf("alter isr: %s", r.Error)
			}
			c.Events()
			for now := int64(100); now <= 2000; now += 100 {
				heartbeatAll(c, now, 2, 3)
				c.Tick(now)
			}
			p = part(c)
			wantLeader, wantISR := control.NoLeader, []int32{1}
			if on {
				wantLeader, wantISR = 2, []int32{2}
			}
			if p.Leader != wantLeader || !slices.Equal(p.ISR, wantISR) {
				t.Fatalf("leader %d isr %v, want %d %v", p.Leader, p.ISR, wantLeader, wantISR)
			}
			if logged := strings.Join(c.Events(), "\n"); strings.Contains(logged, "planted bug unclean-when-clean") != on {
				t.Fatalf("events %q: the planted bug's election said so: %v, want %v", logged, !on, on)
			}
		})
	}
}

// A clean election that finds a live ISR member is the same with the bug.
func TestBugUncleanWhenCleanPrefersISR(t *testing.T) {
	c := cluster(t, 3, control.Clean)
	c.cfg.Bugs = bug.Of(bug.UncleanWhenClean)
	for now := int64(100); now <= 2000; now += 100 {
		heartbeatAll(c, now, 2, 3)
		c.Tick(now)
	}
	if p := part(c); p.Leader != 2 || !slices.Equal(p.ISR, []int32{2, 3}) {
		t.Fatalf("leader %d isr %v, want 2 [2 3]", p.Leader, p.ISR)
	}
}

func TestConfigRefusesBugsOfOtherNodes(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Bugs = bug.Of(bug.AckBeforeReplicate)
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "lives in the broker") {
		t.Fatalf("a broker bug in the controller's config: %v", err)
	}
	cfg.Bugs = bug.Of(bug.UncleanWhenClean)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
}
