// Package broker is the system under test: a minimal Kafka-protocol broker and
// controller that replicate the way the seed describes (leader and pulling
// followers per partition, an ISR kept by replica.lag.time.max.ms and
// replica.lag.max.messages, min.insync.replicas, acks 0/1/-1, clean or unclean
// leader election, idempotent producers but not transactions).
//
// It knows nothing of the tester: a user can run it and talk to it with kcat.
// The logic lives in pure state machines (core for a broker, controller for the
// controller) that read no clock and open no sockets or files, in the style of
// go.etcd.io/raft. Drivers feed them events: server is the real driver (TCP,
// timers, files) and memdriver runs whole clusters in memory on a virtual clock
// for deterministic tests.
//
// Subpackages:
//
//	batch       Kafka v2 record batch headers: parse, verify CRC, stamp offsets
//	control     the broker <-> controller messages and the cluster metadata
//	storage     a partition's log: in memory, or segmented on disk
//	core        the broker state machine (replication, ISR, HW, acks)
//	controller  the controller state machine (registration, fencing, elections)
//	wire        Kafka framing and request/response encoding with kmsg
//	server      the real driver for a broker or the controller
//	memdriver   the in-memory driver: virtual clock, message queue, seeded faults
//	bug         the bugs that can be planted on purpose, all off by default
package broker
