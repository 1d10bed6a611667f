// Package workload drives a cluster with clients and records what they did
// as a history (package history).
//
// Producers send unique values, one request in flight per process, and
// classify each outcome as docs/guarantees.md demands: ok with the offset the
// broker assigned, fail only when the record definitely was not written
// (refused before the append, or never sent), info whenever it may have
// been. Consumers poll their partitions below the high watermark. After the
// faults heal, a final phase reads every partition from its leader and every
// replica's whole log with the debug replica id.
//
// The workload speaks to the cluster only through the Kafka protocol, with
// its own small client over TCP (framing and records from the codecs in
// broker/wire and broker/batch, which hold no broker state): a library
// client's retries and batching would hide exactly the outcomes the checkers
// must see.
package workload
