// Package storage keeps a partition replica's log: the record batches, the
// leader-epoch cache derived from them, and the high-watermark checkpoint.
//
// Two implementations share one interface: Memory (for the in-memory driver
// and tests) and Disk (a segmented log with CRC-checked batches, crash
// recovery, checkpoint files, an fsync policy, and a mode that keeps unsynced
// writes in process memory so that a SIGKILL loses them, like LazyFS).
// A Memory log given a Spill file moves its full chunks there and reads
// them back as the same bytes, and holds its index (an entry a batch) in
// an arena mapped from a file beside it: a simulation of hours holds
// neither its batches nor their entries in the heap.
//
// The broker core calls a Log synchronously, as go.etcd.io/raft calls its
// Storage: the core itself opens no files; the driver decides what a Log is.
package storage
