// Package sim runs whole tests in deterministic simulation: the broker's
// and the controller's state machines (broker/core, broker/controller) in
// the in-memory driver (broker/memdriver), on a virtual clock, driven by
// the same workload generator, nemesis, monitor and final phase as a real
// run, and judged by the same checkers into the same store and report.
// The same seed and spec give a byte-identical history and results on
// every repeat; another seed, another interleaving.
//
// Exact replay needs one event loop that owns every choice, so nothing
// here runs in a goroutine of its own: the cluster's messages, the
// producers' and consumers' operations, the monitor's samples and the
// nemesis's windows are all events on the driver's queue, ordered by
// virtual time and then by the order they were queued. Randomness comes
// from the seed alone (message delays, the workload's and the nemesis's
// choices), and no map is iterated where its order could matter.
//
// The clients, the workers, the monitor and the final phase are package
// workload's own (workload.Client and workload.Phases), run with the
// simulated world as their workload.Env: its clock, and wires that carry
// their requests as messages through the simulated network instead of
// sockets (wire.go). A request is a message with a virtual delay; a worker
// whose request is in flight waits for the answer or its timeout; a
// connection to a broker that was killed or restarted since is reset, as
// TCP would.
//
// Faults go through the nemesis's own code (its Opening steps and Close),
// acting on the simulated cluster through cluster.Runtime and
// cluster.Network: the same targets from the same seed, recorded the same
// way, killed_brokers included. A partition holds the messages of the
// links it cuts and delivers them once healed, as a stalled TCP stream
// does.
//
// What simulation cannot model: real kernels (socket buffers, scheduling,
// a partition's retransmissions), disks (fsync latency, torn writes: the
// in-memory log loses exactly its unsynced suffix), clocks (each node's
// virtual clock is the same one; time is whole milliseconds), the TCP
// server's framing and connection handling (broker/server is not run),
// and the cost of anything: a simulated second takes what its events take.
//
// chaos sim is a thin command over this package, which also holds what a
// person at a terminal needs of it: Flags decides which of the command's
// own flags go together and which seeds they name (refusing a value as
// every chaos command does, FlagError), Console runs a run, a sweep or a
// search and prints its progress and its tables, and Args, ReplayCommand
// and SweepReplay are the command lines that replay a run, which its
// test.json records and the tables print. They live here, next to the
// sweeps and searches they serve, so that the command only maps flags to
// calls and results to exit codes.
package sim
