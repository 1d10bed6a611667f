package sim

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/runner"
)

// TestTxnWorkload: the transactional workload under kills and partitions
// on a correct broker: every seed is valid, and its histories hold what
// the checks need: committed and aborted transactions with their sends'
// offsets, transactions that poll, consumers of both isolation levels,
// and a read_committed final read of every partition.
func TestTxnWorkload(t *testing.T) {
	s := spec(t, 0, "kill", "partition")
	s.Workload = "txn"
	n := 6
	if testing.Short() {
		n = 2
	}
	var committed, aborted, polled, rc, ru, finals int
	for _, r := range sweep(t, s, n) {
		if r.Outcome.Verdict != checker.Valid {
			t.Errorf("a correct broker: %s", describe(r))
		}
		ops, err := history.ReadFile(filepath.Join(r.Outcome.Dir, "history.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range ops {
			tx := op.Value.Transaction()
			switch {
			case op.F == history.Txn && op.Type == history.OK:
				committed++
				for _, m := range tx.Mops {
					if m.F == history.Send && m.Offset == nil {
						t.Fatalf("seed %d: a committed transaction's send without an offset: %v", r.Seed, op)
					}
					if m.F == history.Poll && len(m.Reads) > 0 {
						polled++
					}
				}
			case op.F == history.Txn && op.Type == history.Fail && tx.Abort:
				aborted++
			case op.F == history.Poll && op.Type == history.OK && op.Value.ReadCommitted():
				rc++
			case op.F == history.Poll && op.Type == history.OK:
				ru++
			case op.F == history.FinalRead && op.Type == history.OK && op.Value.ReadCommitted():
				finals++
			}
		}
	}
	if committed == 0 || aborted == 0 || polled == 0 || rc == 0 || ru == 0 || finals < n*int(s.Settings.Partitions) {
		t.Fatalf("%d committed and %d aborted transactions, %d polls in transactions, %d read_committed and %d read_uncommitted polls, %d read_committed final reads: the workload did not exercise each",
			committed, aborted, polled, rc, ru, finals)
	}
}

// TestTxnWorkloadRefused: a transactional workload that cannot be run
// is refused with the reason before it starts.
func TestTxnWorkloadRefused(t *testing.T) {
	s := spec(t, 1)
	s.Workload, s.Acks = "txn", 1
	_, err := Run(context.Background(), s, runner.Options{})
	if err == nil || !strings.Contains(err.Error(), "acks") {
		t.Fatalf("acks=1: %v, want a refusal that names acks", err)
	}
}

// clientFaultRuns runs the transactional workload under fault, with and
// without bug planted, and returns the valid runs' histories and how many
// of the planted runs were invalid.
func clientFaultRuns(t *testing.T, fault string, planted string, args func(*runner.Spec)) (histories [][]history.Op, caught, n int) {
	t.Helper()
	s := spec(t, 0, fault)
	s.Workload, s.TimeLimit = "txn", 30*time.Second
	args(&s)
	n = 4
	if testing.Short() {
		n = 2
	}
	for _, r := range sweep(t, s, n) {
		if r.Outcome.Verdict != checker.Valid {
			t.Errorf("a correct broker under %s: %s", fault, describe(r))
		}
		ops, err := history.ReadFile(filepath.Join(r.Outcome.Dir, "history.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		histories = append(histories, ops)
	}
	s.Settings.Bugs = []string{planted}
	for _, r := range sweep(t, s, n) {
		if r.Outcome.Verdict == checker.Invalid {
			caught++
		}
	}
	return histories, caught, n
}

// TestZombieProducers: pause-producer pauses a session and starts a new
// incarnation of its transactional id; the paused one wakes as a zombie,
// and a correct broker refuses what it sends under its fenced epoch, so
// that its transaction fails; with zombie-not-fenced planted its writes
// land and the runs are invalid.
func TestZombieProducers(t *testing.T) {
	histories, caught, n := clientFaultRuns(t, "pause-producer", "zombie-not-fenced", func(s *runner.Spec) {
		s.NemesisInterval, s.Concurrency = 250*time.Millisecond, 10
	})
	fenced := 0
	for _, ops := range histories {
		zombies := map[int]bool{}
		for _, op := range ops {
			if op.F == history.StartF("pause-producer") && op.Type == history.Info {
				var p int
				if _, err := fmt.Sscanf(op.Value.Targets[0], "producer %d (process %d)", new(int), &p); err == nil {
					zombies[p] = true
				}
			}
			if op.F == history.Txn && op.Type == history.Fail && zombies[op.Process] && strings.Contains(op.Error, "INVALID_PRODUCER_EPOCH") {
				fenced++
			}
		}
	}
	if fenced == 0 {
		t.Error("no zombie's transaction was refused for its fenced epoch: the fault did not make zombies")
	}
	if caught < n {
		t.Errorf("zombie-not-fenced caught in %d of %d runs", caught, n)
	}
}

// TestHeldRequests: delay-client holds the requests to a broker past the
// clients' timeout and delivers them late; a correct broker's per-
// transaction epochs (EndTxn v5) keep a late EndTxn from ending the next
// transaction, which txn-epoch-not-bumped lets it do.
func TestHeldRequests(t *testing.T) {
	histories, caught, n := clientFaultRuns(t, "delay-client", "txn-epoch-not-bumped", func(s *runner.Spec) {
		s.NemesisInterval, s.Concurrency, s.RequestTimeout = time.Second, 20, 250*time.Millisecond
	})
	held := 0
	for _, ops := range histories {
		for _, op := range ops {
			if op.F == history.StartF("delay-client") && op.Type == history.Info && len(op.Value.Targets) == 2 && strings.HasPrefix(op.Value.Targets[1], "requests held ") {
				held++
			}
		}
	}
	if held == 0 {
		t.Error("no window held requests")
	}
	if caught < n-1 {
		t.Errorf("txn-epoch-not-bumped caught in %d of %d runs", caught, n)
	}
}
