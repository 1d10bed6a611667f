package sim

import (
	"testing"
	"time"

	"github.com/chaos-isr/chaos/checker"
)

// retrying is a run whose producers retry under leader faults: a send
// whose answer is lost is sent again, and without idempotence the leader
// writes it again.
func retrying(t *testing.T, idempotent bool, bugs ...string) []SweepRun {
	s := spec(t, 0, "kill-leader", "partition-leader")
	s.Retries, s.Idempotent, s.Settings.Bugs = 5, idempotent, bugs
	s.TimeLimit, s.NemesisInterval = 30*time.Second, 4*time.Second
	return sweep(t, s, 20)
}

// TestRetriesDuplicate: retries without idempotence write some values
// twice, which the guarantee model permits; nothing else is lost.
func TestRetriesDuplicate(t *testing.T) {
	if testing.Short() {
		t.Skip("many simulated runs: make test runs it, make test-fast does not")
	}
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

// TestIdempotentNoDuplicate: the same runs with idempotence write each
// value once, and nothing else is lost or reordered.
func TestIdempotentNoDuplicate(t *testing.T) {
	if testing.Short() {
		t.Skip("many simulated runs: make test runs it, make test-fast does not")
	}
	for _, r := range retrying(t, true) {
		onceInOrder(t, r)
	}
}

// onceInOrder fails t unless r, an idempotent producer's run, is valid
// and wrote each value once and in order.
func onceInOrder(t *testing.T, r SweepRun) {
	t.Helper()
	if r.Outcome.Verdict != checker.Valid {
		t.Errorf("an idempotent producer's run: %s", describe(r))
	}
	for _, name := range []string{checker.DuplicateName, checker.NonmonotonicSendName} {
		if res := result(r, name); res.Valid == checker.Invalid {
			t.Errorf("%s with an idempotent producer: %s", name, describe(r))
		}
	}
}

// TestIdempotenceNoDedupCaught: the planted bug idempotence-no-dedup (a
// leader writes a retried batch again) shows as forbidden duplicates in
// the same runs: the retries above really reach a broker that has the
// batch, and the producer really is idempotent.
func TestIdempotenceNoDedupCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("many simulated runs: make test runs it, make test-fast does not")
	}
	caught := 0
	for _, r := range retrying(t, true, "idempotence-no-dedup") {
		if d := result(r, checker.DuplicateName); d.Valid == checker.Invalid && !d.Expected {
			caught++
		}
	}
	t.Logf("forbidden duplicates in %d of 20 seeds", caught)
	if caught == 0 {
		t.Error("idempotence-no-dedup was never caught in 20 seeds")
	}
}
