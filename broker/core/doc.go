// Package core is the broker's replication logic as a pure state machine.
//
// A Broker is driven like go.etcd.io/raft's Node: the driver hands it events
// (a client or peer request, the response to a request it asked to send, a
// tick with the current time) and then drains Effects (responses to write,
// requests to send to peers or the controller, log lines). It starts no
// goroutines, reads no clock and opens no sockets; storage comes in through
// storage.Factory, which the driver chooses. Iteration is over sorted keys,
// so the same events produce the same effects, which is what lets the
// in-memory driver replay a whole cluster from a seed.
//
// Replication follows the seed: followers pull with Fetch carrying their
// replica id; the leader keeps the ISR by replica.lag.time.max.ms and
// replica.lag.max.messages, asks the controller for every ISR change and
// advances the high watermark to the minimum log end offset of the ISR;
// acks=-1 waits for the HW; a replica that becomes a follower truncates by
// leader epoch (OffsetForLeaderEpoch, KIP-101/279) before fetching.
//
// Idempotent producers (KIP-98, not transactions) get ids from any broker
// (InitProducerId); every replica keeps each producer's epoch and last five
// batches from the headers it appends, reads them back from its log when it
// opens it or truncates it, and as leader answers a retried batch with its
// first offset instead of writing it again (producers.go).
package core
