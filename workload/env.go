package workload

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Env is the world the workload's machine runs in, as its driver gives it:
// a clock, timers, and connections to the cluster. The machine (Client and
// the phases built on it: the workers, the monitor, the final phase) does
// no I/O and reads no clock of its own: it asks Env. Every callback Env
// makes (a timer's, an answer's) runs on the driver's one loop, one at a
// time, so that nothing in the machine locks and, on a virtual clock, the
// same events give the same history. The TCP driver (Live, SyncClient) runs
// the loop in real time; package sim runs it on its simulated cluster's
// clock.
type Env interface {
	// Now is the time since the workload started: the history's clock.
	Now() time.Duration
	// Stamp is the timestamp a produced batch carries, in milliseconds.
	Stamp() int64
	// After calls fn on the loop once d has passed.
	After(d time.Duration, fn func())
	// NewWire is the connections of a new client: its requests carry
	// o.ID and wait o.Timeout for their answers.
	NewWire(o ClientOptions) Wire
}

// Wire is one client's connections to the cluster: a connection kept per
// broker, and one-off connections to an address. Each call's done is
// called once, on the loop: with the answer, or with why none came; an
// error wrapping ErrNotSent means the request never left. An acks=0
// produce gets no answer: done(nil, nil) once it is written.
type Wire interface {
	// Call sends req to broker id at addr on the connection kept to it,
	// dialled if there is none (or if it was to another address).
	// Requests on one connection reach the broker in the order they were
	// called. A connection that failed is dropped, and the next call
	// dials again.
	Call(id int32, addr string, req kmsg.Request, done func(kmsg.Response, error))
	// CallAddr sends req on a connection of its own to addr, closed once
	// answered: for the brokers the client does not know by id yet.
	CallAddr(addr string, req kmsg.Request, done func(kmsg.Response, error))
	// Close drops the connections. Answers still on their way are not
	// delivered: a client replaced after an unknown outcome hears
	// nothing more of its old requests.
	Close()
}
