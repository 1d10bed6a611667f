package memdriver

import (
	"fmt"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
)

// A node whose state machine panics has crashed, as a real broker or
// controller process does when its code panics: the driver recovers the
// panic where it steps the node (step, stepController), so that the rest
// of the cluster, and the simulation driving it, go on. The node is down
// from then on, with its storage as a kill leaves it (and its unsynced
// writes gone if Options.CrashLosesUnsynced), until Restart or
// RestartController starts it again; Options.OnCrash hears of it. Without
// OnCrash a panic is not recovered: a test that does not expect its nodes
// to crash fails where they do.

// Crash is a node's crash: which node, when, and its panic.
type Crash struct {
	// Node is the broker's id, or ControllerID.
	Node int32
	// At is the virtual time of the crash, in milliseconds.
	At int64
	// Panic is the panic's value, formatted.
	Panic string
	// Stack is where it panicked, innermost first, down to the driver:
	// each frame's function and file:line (the file's base name), without
	// the addresses, arguments and goroutine ids of a Go stack trace, so
	// that one run replays it byte for byte.
	Stack string
}

// step runs f, a step of broker n's state machine, and reports whether
// it returned; if it panicked, n crashed.
func (c *Cluster) step(n *node, f func()) (ok bool) {
	if c.opts.OnCrash == nil {
		f()
		return true
	}
	defer func() {
		if p := recover(); p != nil {
			c.crashBroker(n, Crash{Node: n.id, At: c.now, Panic: fmt.Sprint(p), Stack: panicStack()})
		}
	}()
	f()
	return true
}

// stepController is step for the controller.
func (c *Cluster) stepController(f func()) (ok bool) {
	if c.opts.OnCrash == nil {
		f()
		return true
	}
	defer func() {
		if p := recover(); p != nil {
			c.ctrlUp, c.ctrlCrashed = false, true
			c.tracef("controller crashed: panic: %v", p)
			c.opts.OnCrash(Crash{Node: ControllerID, At: c.now, Panic: fmt.Sprint(p), Stack: panicStack()})
		}
	}()
	f()
	return true
}

func (c *Cluster) crashBroker(n *node, cr Crash) {
	n.up, n.paused, n.backlog, n.crashed = false, false, nil, true
	if c.opts.CrashLosesUnsynced {
		n.logs.LoseUnsynced()
	}
	c.tracef("b%d crashed: panic: %s", n.id, cr.Panic)
	c.opts.OnCrash(cr)
}

// Crashed reports whether broker id is down because it crashed (not
// killed or stopped since, nor restarted).
func (c *Cluster) Crashed(id int32) bool {
	n := c.node(id)
	return n != nil && !n.up && n.crashed
}

// ControllerCrashed reports whether the controller is down because it
// crashed.
func (c *Cluster) ControllerCrashed() bool { return !c.ctrlUp && c.ctrlCrashed }

// driverPkg is this package's path followed by ".": frames from here on
// are the driver's, not the node's.
var driverPkg = reflect.TypeFor[Cluster]().PkgPath() + "."

// panicStack is the stack of the panic being recovered, called from the
// deferred function that recovers it: the frames from the one that
// panicked (the runtime's own panic frames left out) to the last before
// the driver's.
func panicStack() string {
	pcs := make([]uintptr, 64)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(1, pcs)])
	var out []string
	panicking := false
	for {
		f, more := frames.Next()
		switch {
		case !panicking:
			panicking = f.Function == "runtime.gopanic"
		case strings.HasPrefix(f.Function, driverPkg):
			more = false
		case len(out) == 0 && strings.HasPrefix(f.Function, "runtime."):
			// goPanicIndex, sigpanic, ...: how the runtime raised it.
		default:
			out = append(out, fmt.Sprintf("%s\n\t%s:%d", f.Function, filepath.Base(f.File), f.Line))
		}
		if !more {
			break
		}
	}
	return strings.Join(out, "\n")
}
