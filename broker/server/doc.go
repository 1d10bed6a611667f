// Package server is the real driver of the broker and controller state
// machines: TCP listeners, one event loop goroutine per process that owns
// the state machine, a ticker, files through storage.DiskFactory, and
// outgoing connections to peers and the controller. RunBroker and
// RunController run a node as chaos broker and chaos controller do, from
// its flags (package node), until a signal.
//
// Each inbound connection is served one request at a time (Kafka mutes a
// connection while a request is in flight), so responses leave in request
// order without bookkeeping. The event loop never blocks on the network:
// connection goroutines hand it decoded requests and take back replies.
package server
