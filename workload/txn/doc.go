// Package txn is the transactional workload (--workload txn), Jepsen's
// Kafka queue test with transactions: each producer is a transactional
// session (KIP-98) that runs transactions of a few micro-operations,
// sends of unique values "<process>-<n>" to partitions drawn from the seed
// and read_committed polls of partitions (read-write transactions), then
// commits, or aborts when the seed says so. Consumers poll their
// partitions outside transactions, alternately read_committed and
// read_uncommitted, so that both isolation levels are judged in every
// run. A transaction whose end is unknown gives its worker a new process
// (Jepsen's rule) and its session a new epoch, which fences the old one
// and aborts what it left open. The final phase starts every session
// once more, so that no transaction stays open, and reads every
// partition read_committed as well as read_uncommitted.
//
// The history format is docs/history.md's (history.Txn); the checks that
// judge it are checker's transactional ones.
package txn
