package sim

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/runner"
)

// pipelining is retrying's runs with five requests in flight per producer
// session: five lanes share a producer id and a connection per broker.
func pipelining(t *testing.T, idempotent bool) []SweepRun {
	s := spec(t, 0, "kill-leader", "partition-leader")
	s.Retries, s.Idempotent, s.MaxInFlight = 5, idempotent, 5
	s.TimeLimit, s.NemesisInterval = 30*time.Second, 4*time.Second
	return sweep(t, s, 20)
}

// inFlight reads a run's history: the most sends a producer session had
// outstanding at once, and how many sends met a broker waiting for an
// earlier batch (OUT_OF_ORDER_SEQUENCE_NUMBER, then sent again).
func inFlight(t *testing.T, r SweepRun) (most, waited int) {
	t.Helper()
	ops, err := history.ReadFile(filepath.Join(r.Outcome.Dir, results.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	open := map[int32]int{}
	session := map[int]int32{}
	for _, op := range ops {
		if op.F != history.Send || op.Value == nil || op.Value.Producer == nil {
			continue
		}
		s := *op.Value.Producer
		if op.Type == history.Invoke {
			session[op.Process] = s
			open[s]++
			most = max(most, open[s])
			continue
		}
		open[session[op.Process]]--
		if strings.Contains(strings.Join(op.Value.SendRetries(), " "), "OUT_OF_ORDER_SEQUENCE_NUMBER") {
			waited++
		}
	}
	return most, waited
}

// TestPipelinedIdempotentInOrder: an idempotent producer with five
// requests in flight under leader faults writes each value once and in
// the order it sent them, and really has five out at once.
func TestPipelinedIdempotentInOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("many simulated runs: make test runs it, make test-fast does not")
	}
	waits := 0
	for _, r := range pipelining(t, true) {
		onceInOrder(t, r)
		most, waited := inFlight(t, r)
		if most != 5 {
			t.Errorf("seed %d: at most %d sends of a session in flight, want 5", r.Seed, most)
		}
		waits += waited
	}
	t.Logf("%d sends waited for an earlier batch (OUT_OF_ORDER_SEQUENCE_NUMBER) in 20 seeds", waits)
}

// TestPipelinedReorders: without idempotence, five requests in flight
// may land out of order, and retries twice: the guarantee model permits
// both, and nothing else is found.
func TestPipelinedReorders(t *testing.T) {
	if testing.Short() {
		t.Skip("many simulated runs: make test runs it, make test-fast does not")
	}
	reordered, dup := 0, 0
	for _, r := range pipelining(t, false) {
		if r.Outcome.Verdict != checker.Valid {
			t.Errorf("pipelining without idempotence permits reordering and duplicates, nothing more: %s", describe(r))
		}
		if res := result(r, checker.NonmonotonicSendName); res.Valid == checker.Invalid && res.Expected {
			reordered++
		}
		if res := result(r, checker.DuplicateName); res.Valid == checker.Invalid && res.Expected {
			dup++
		}
	}
	t.Logf("reordered sends in %d of 20 seeds, duplicates in %d", reordered, dup)
	if reordered == 0 {
		t.Error("five requests in flight with retries under leader faults never reordered a send in 20 seeds")
	}
}

// TestArgsCarryMaxInFlight: the replay command of a pipelining run, made
// from its test.json, asks for as many requests in flight; one is the
// default and goes unsaid.
func TestArgsCarryMaxInFlight(t *testing.T) {
	s := runner.DefaultSpec()
	s.Seed, s.Retries, s.Idempotent, s.MaxInFlight = 4, 5, true, 5
	n := s.Normalized()
	stored := runner.StoredSpec(n.TestConfig(time.Now(), "test", "id", "", n.WorkloadConfig(nil)))
	if a := strings.Join(Args(stored), " "); !strings.Contains(a, "--idempotent --max-in-flight 5") {
		t.Errorf("replay args %q do not carry --max-in-flight 5", a)
	}
	s.MaxInFlight = 1
	if a := strings.Join(Args(s), " "); strings.Contains(a, "max-in-flight") {
		t.Errorf("replay args %q name the default", a)
	}
}
