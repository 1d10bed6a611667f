// Package control defines what brokers and the controller say to each other,
// and the cluster metadata the controller owns.
//
// The controller is the single writer of leadership and ISR (as in KRaft).
// Brokers register, heartbeat, ask it to create topics and to change a
// partition's ISR (AlterPartition-style); it answers every heartbeat from a
// broker whose metadata is stale with a full Snapshot, which is how leadership
// reaches the replicas (a LeaderAndIsr-style push, carried on the heartbeat).
// Messages are plain structs; the real driver encodes them as JSON frames, the
// in-memory driver passes them as values.
package control
