package sim

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/nemesis"
	"github.com/chaos-isr/chaos/results"
)

// TestTriggeredFaults: a fault armed on an event fires right after the
// cluster shows it. A timed kill-leader moves a leader (its election
// comes when the killed broker restarts at the window's end, or after the
// session timeout); the next window, armed on leader-change, kills the new
// leader within a poll and its delay of the restart that elected it, as
// the monitor confirms; the one after, armed on
// isr-expand, cuts off the broker that has just rejoined. The history
// records the kinds' own windows with what fired them, and the same seed
// replays byte for byte.
func TestTriggeredFaults(t *testing.T) {
	s := spec(t, 3)
	s.TimeLimit, s.MonitorInterval, s.Faults, s.NemesisInterval = 12*time.Second, 20*time.Millisecond, nil, 0
	w, err := nemesis.ParseSchedule("kill-leader@1s+1500ms,kill-leader:leader-change~5ms@2500ms+3s,partition-leader:isr-expand/joined~0..20ms@5500ms+2s")
	if err != nil {
		t.Fatal(err)
	}
	s.Windows = w
	a := run(t, s)
	s.Store = t.TempDir()
	b := run(t, s)
	if x, y := file(t, a, results.HistoryFile), file(t, b, results.HistoryFile); !bytes.Equal(x, y) {
		t.Fatalf("two runs of seed %d with triggers gave different histories (%d and %d bytes)", s.Seed, len(x), len(y))
	}
	ops, err := history.ReadFile(filepath.Join(a.Dir, results.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	starts := 0
	for _, op := range ops {
		if op.Process != history.NemesisProcess || op.Type != history.Info || !strings.HasPrefix(op.F, "start-") {
			continue
		}
		starts++
		if op.Error != "" {
			t.Errorf("%s failed: %s (%v)", op.F, op.Error, op.Value.Targets)
			continue
		}
		if starts == 1 {
			continue // the timed kill
		}
		targets := strings.Join(op.Value.Targets, "; ")
		t.Logf("%s at %s: %s", op.F, time.Duration(op.Time), targets)
		var p, from, to int32
		var seen float64
		switch starts {
		case 2:
			if op.F != "start-kill-leader" || !strings.Contains(targets, "new leader of partition") {
				t.Fatalf("the second window: %s %s", op.F, targets)
			}
			i := strings.Index(targets, "fired on leader-change: ")
			if _, err := fmt.Sscanf(targets[i:], "fired on leader-change: partition %d epoch %d -> %d", &p, &from, &to); err != nil {
				t.Fatalf("what fired it: %v in %q", err, targets)
			}
			// The election came when the previous window's heal restarted
			// the leader it killed (the controller fences the old
			// incarnation at once): no sooner than that stop.
			var healed time.Duration
			for _, m := range ops {
				if m.Process == history.NemesisProcess && m.F == "stop-kill-leader" && m.Time < op.Time {
					healed = time.Duration(m.Time)
				}
			}
			if d := time.Duration(op.Time) - healed; d <= 0 || d > 60*time.Millisecond {
				t.Errorf("the new leader was killed %s after the restart that elected it, want within 60ms", d)
			}
			// The monitor saw the same election: epoch to, led by the
			// broker the nemesis killed.
			killed := op.Value.KilledBrokers
			confirmed := false
			for _, m := range ops {
				if m.Process == history.MonitorProcess && m.Type == history.OK && m.Value.Partition == p && m.Value.Sample != nil &&
					m.Value.Epoch != nil && *m.Value.Epoch == to && m.Value.Leader != nil && len(killed) == 1 && *m.Value.Leader == killed[0] {
					confirmed = true
					break
				}
			}
			if !confirmed {
				t.Errorf("no monitor sample saw partition %d at epoch %d led by the broker killed, %v", p, to, killed)
			}
		case 3:
			if op.F != "start-partition-leader" || !strings.Contains(targets, "follower that rejoined partition") || !strings.Contains(targets, "fired on isr-expand") {
				t.Errorf("the third window: %s %s", op.F, targets)
			}
		}
		i := strings.Index(targets, "seen at ")
		if _, err := fmt.Sscanf(targets[i:], "seen at %fs", &seen); err != nil {
			t.Fatalf("seen at: %v in %q", err, targets)
		}
		if d := time.Duration(op.Time) - time.Duration(seen*float64(time.Second)); d < 0 || d > 21*time.Millisecond {
			t.Errorf("%s started %s after its event was seen, want its delay (at most 20ms)", op.F, d)
		}
	}
	if starts != 3 {
		t.Errorf("%d windows started, want 3", starts)
	}
	if a.Verdict != checker.Valid {
		t.Errorf("verdict %s", a.Verdict)
	}
}
