// Package queue is the queue workload (--workload queue, the default),
// Jepsen's Kafka queue test: producers send unique values "<process>-<n>"
// to the topic's partitions, consumers poll them back, and every send,
// poll and end-offset read is recorded with an honest outcome. The
// Generator decides what each worker does next and when (pure, seeded);
// Queue steps its workers on the workload's Phases, a Client of its own
// each.
//
// Its consumers read one of two ways (--sub-via): assign, each polling
// partitions of its own from where it left off; or subscribe, as the
// members of one consumer group whose coordinator balances the
// partitions among them (subscribe.go): each join, poll and commit is
// recorded with the member's generation, and the final phase has a new
// member join and fetch the group's committed offsets. Its group members
// are what the nemesis's group faults act on (workload.GroupMembers).
package queue
