// Package checker judges a history: pure functions from the operations a
// test recorded (package history) to results, one per anomaly of
// GUARANTEES.md, and a guarantee model that says which of them a
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
//   - a checker that lacks the evidence to judge (no final read, a
//     linearizability search that ran out of time) says unknown, never
//     valid.
//
// NewHistory indexes a history once; LostWrite, Unseen, Duplicate,
// InconsistentOffsets, NonmonotonicSend, PollSkip, NonmonotonicPoll,
// AbortedRead, GarbageRead and ReplicaDivergence each read that index and
// return a Result, and Linearizability returns two (nonlinearizable-send
// and stale-read, from porcupine; linear.go documents the model). Check
// runs them all, applies the guarantee model (Permitted) and gives the
// verdict. LostWrites lists every lost write, where a Result keeps only a
// few examples, for reports.
package checker
