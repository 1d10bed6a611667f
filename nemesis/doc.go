// Package nemesis injects faults into a running cluster on a seeded
// schedule and records each one in the history, so that a run can be
// replayed and its report can shade the fault windows.
//
// A schedule is data (Schedule: which fault starts when and for how long),
// drawn from a seed before the run. Targets that depend on the cluster's
// state, such as "the leader of a partition", are resolved when the fault
// starts and written into the history. Every fault has a heal, and HealAll
// undoes whatever is still in effect before the final reads.
//
// The nemesis reaches the cluster only through two small interfaces:
// Runtime (processes: kill, stop, pause, restart) and Network (links
// between nodes: partitions and delays), plus a Leaders function that asks
// the cluster, over the Kafka protocol, who leads what.
package nemesis
