// Package checker judges a history: pure functions from the operations a
// test recorded (package history) to results, one per anomaly of
// docs/guarantees.md, and a guarantee model that says which of them a
// configuration permits.
//
// A checker sees only the history. It imports no broker, cluster or network
// code, so it judges a history recorded against real Kafka the same way as
// one recorded against this project's broker.
//
// Honesty rules every checker follows:
//
//   - an info (or never completed) operation is "maybe": it never counts as
//     a definite write nor as a definite non-write, so an unknown send is
//     never a lost write, and a value it wrote may be read at any time;
//   - a fail operation definitely did not happen, so its value showing up in
//     a read is an anomaly (aborted-read);
//   - a checker that lacks the evidence to judge (no final read, no replica
//     reads, a linearizability search that ran out of time) says unknown,
//     or "not checked" when it had nothing at all, never valid;
//   - an instance is judged by its cause (Cause): the truncation that
//     explains it, or none. The guarantee model permits causes, so one
//     anomaly can hold permitted and forbidden instances, and an instance
//     whose cause the history cannot tell is undecided, never assumed
//     permitted.
//
// NewHistory indexes a history once, under the configuration it is
// judged by; LostWrite, Unseen, Duplicate, InconsistentOffsets,
// NonmonotonicSend, PollSkip, NonmonotonicPoll, AbortedRead, GarbageRead,
// ReplicaDivergence and AckBelowMinISR (acks=-1 acknowledgements held
// against the monitor's samples of the ISR, minisr.go) each read that
// index and return a Result, and
// Linearizability returns two (nonlinearizable-send and stale-read, from
// porcupine; linear.go documents the model). A history with transactions
// (history.Txn) is judged for the transactions' anomalies too (txn.go:
// PrecommittedRead, IntPollSkip, IntNonmonotonicPoll, IntSendSkip,
// IntNonmonotonicSend, and the dependency cycles G0 and G1c), a
// transaction's sends and polls being sends and reads for every other
// checker, and each read judged by the isolation level its reader asked
// for. Check runs them all, with the
// guarantee model applied to the faults the history shows ran (FaultClass),
// and gives the verdict. LostWrites lists every lost write, where a Result
// keeps only a few examples, for reports. testdata/corpus holds recorded
// and hand-written histories with the verdicts they must get.
//
// A Builder indexes a history as it streams past (chaos check, a run's
// judge), with its largest tables in a file when asked (InFile), and a
// long read's records given ahead of their operation as they are decoded
// (AddRecords, fed by history.ScanReads), so that what it holds in the
// heap does not grow with the run.
package checker
