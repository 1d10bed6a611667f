// Package memdriver runs a whole cluster (a controller and brokers) in one
// goroutine on a virtual clock, for deterministic tests of the state
// machines. Messages go through a queue with seeded random delays; links can
// be cut, nodes killed (optionally losing unsynced writes), restarted, paused
// and resumed, in the style of go.etcd.io/raft's in-memory network. Every
// delivered event and every log line is written to a trace: the same seed and
// the same script give the same trace, byte for byte.
package memdriver
