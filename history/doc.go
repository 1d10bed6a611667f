// Package history is the record of a test: an append-only list of
// operations in Jepsen's shape (index, time, process, type, f, value,
// error), shared by the workloads that write it, the checkers that judge it
// and the reports that draw it.
//
// The type of an operation is the heart of honest checking: an invoke is
// followed by exactly one completion from the same process, ok (it
// happened), fail (it definitely did not) or info (unknown: it may have
// happened, or may yet). Checkers must treat info as "maybe", never as
// "no".
//
// A history is stored as JSON Lines (docs/history.md documents the schema),
// written and flushed one operation at a time, so a tester killed mid-run
// leaves a readable prefix; Read accepts a torn last line. Scan reads a
// history an operation at a time; ScanReads also streams the records of
// a long line (a long run's final reads: a partition's whole log, tens of
// MB a line) as they are decoded, so that a judge holds neither the line
// nor its records whole.
package history
