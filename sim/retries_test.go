package sim

import (
	"testing"
	"time"

	"github.com/chaos-isr/chaos/checker"
)

// retrying is a run whose producers retry under leader faults: a send
// whose answer is lost is sent again, and without idempotence the leader
// writes it again.
func retrying(t *testing.T, idempotent bool) []SweepRun {
	s := spec(t, 0, "kill-leader", "partition-leader")
	s.Retries, s.Idempotent = 5, idempotent
	s.TimeLimit, s.NemesisInterval = 30*time.Second, 4*time.Second
	return sweep(t, s, 20)
}

// TestRetriesDuplicate: retries without idempotence write some values
// twice, which the guarantee model permits; nothing else is lost.
func TestRetriesDuplicate(t *testing.T) {
	dup := 0
	for _, r := range retrying(t, false) {
		d := result(r, checker.DuplicateName)
		if r.Outcome.Verdict != checker.Valid {
			t.Errorf("retries permit duplicates and nothing more: %s", describe(r))
		}
		if d.Valid == checker.Invalid && d.Expected {
			dup++
		}
	}
	t.Logf("duplicates in %d of 20 seeds", dup)
	if dup == 0 {
		t.Error("retries under leader faults wrote no value twice in 20 seeds")
	}
}
