package sim

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

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
