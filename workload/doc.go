// Package workload drives a cluster with clients and records what they did
// as a history (package history). It has three parts, kept apart so that
// each can be checked, and replaced, on its own:
//
//   - The Generator decides what each worker does next: send which unique
//     value "<process>-<n>" to which partition and when (rate pacing with
//     seeded jitter, one request in flight per producer lane), which partition
//     a consumer polls from which offset, when it reads an end offset
//     instead, and which process id replaces one whose outcome was unknown.
//     It is pure: no I/O, no clock but the time its caller passes, no
//     randomness but its seed. Run steps it from a goroutine per worker on
//     the wall clock; a simulator can step it from one event loop on a
//     virtual clock and get the same decisions.
//
//   - A Client is everything asked of a cluster: send, poll, end offset,
//     metadata, the final and replica reads, creating and describing the
//     topic. Send classifies each outcome as docs/history.md demands: ok
//     with the offset the broker assigned, fail only when the record
//     definitely was not written (refused before the append, or never
//     sent), info whenever it may have been. It is a machine without I/O
//     (as broker/core is): its requests go out through a Wire and its
//     waits through an Env, and each operation ends in a callback on the
//     driver's loop. It retries and pipelines only as a Producer decides,
//     recording every attempt (a library client's retries and batching
//     would hide exactly the outcomes the checkers must see), with
//     franz-go's kmsg for the messages and its own framing and record
//     batches: nothing here imports the broker, so a codec bug the broker
//     has is not one the tester shares.
//
//   - Phases are the workload's three chains of calls, written once on
//     the Client: the workers stepping the Generator, the Monitor's
//     samples of every partition's leader, ISR and high watermark, and the
//     final phase, which after the faults heal reads every partition from
//     its leader and every replica's whole log with the debug replica id.
//     Two drivers run them: Live (and SyncClient, one question at a time)
//     over TCP in real time, and package sim on a virtual clock.
//
//   - The Recorder appends each invocation and completion to the history,
//     stamped with the time, and counts outcomes for the progress line.
package workload
