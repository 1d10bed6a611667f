// Package integration holds process-level tests of the chaos broker: real
// controller and broker processes started by the local cluster runtime
// (package cluster) on 127.0.0.1, driven by three independent Kafka clients
// (kcat/librdkafka, franz-go and IBM/sarama) and by raw wire-protocol
// requests, while processes are killed, paused and restarted.
//
// The unit and in-memory tests of the broker check the state machines; these
// tests check what only real processes show: sockets, signals, files that
// survive a kill -9, timers, and client libraries that were not written with
// this broker in mind. Timings are shortened (session timeouts and
// replica.lag.time.max.ms of about a second and a half) so the package runs
// in a few minutes; every wait is a poll with a deadline, never a sleep
// standing in for an assertion.
//
// TestClients needs kcat on PATH. Without it the test skips, unless CI=true,
// where it fails: a CI run that silently skips its client matrix proves
// nothing.
package integration
