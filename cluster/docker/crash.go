package docker

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/moby/moby/client"

	"github.com/chaos-isr/chaos/cluster"
)

// A container that stops without the tester killing or stopping it (its
// node crashed) is noticed by a watcher that asks Docker every
// crashPoll: within that much of its death, rather than at once as the
// local runtime's process wait does. It is recorded as a crash with its
// exit code and the end of its log, and is down until the next heal
// restarts it.

// crashPoll is how often the watcher asks Docker whether each node runs.
const crashPoll = 250 * time.Millisecond

// crashes is what the cluster knows of nodes that died on their own.
type crashes struct {
	mu      sync.Mutex
	onCrash func(cluster.Crash)
	pending []cluster.Crash
	stop    chan struct{}
	once    sync.Once
}

var _ cluster.CrashWatcher = (*Cluster)(nil)

// watch starts the watcher; stopWatching ends it.
func (c *Cluster) watch() {
	c.crashes.stop = make(chan struct{})
	go func() {
		t := time.NewTicker(crashPoll)
		defer t.Stop()
		for {
			select {
			case <-c.crashes.stop:
				return
			case <-t.C:
			}
			for _, cr := range c.notice() {
				c.crashed(cr)
			}
		}
	}()
}

func (c *Cluster) stopWatching() {
	c.crashes.once.Do(func() {
		if c.crashes.stop != nil {
			close(c.crashes.stop)
		}
	})
}

// notice asks Docker about every node the tester left running, under the
// cluster's lock (a kill in progress marks its node down before it lets
// go), and returns the crashes of those that stopped.
func (c *Cluster) notice() []cluster.Crash {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []cluster.Crash
	for _, n := range c.nodes {
		if c.closed || n.down || n.ctr == nil {
			continue
		}
		select {
		case <-c.crashes.stop:
			return nil
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r, err := c.cli.ContainerInspect(ctx, n.ctr.GetContainerID(), client.ContainerInspectOptions{})
		if err != nil || r.Container.State == nil || r.Container.State.Running {
			cancel()
			continue
		}
		exit := fmt.Sprintf("exit status %d", r.Container.State.ExitCode)
		if r.Container.State.OOMKilled {
			exit += " (killed: out of memory)"
		}
		var logs bytes.Buffer
		_ = c.copyLogs(ctx, n, &logs, "100")
		cancel()
		c.wentDown(n)
		n.crashed = true
		out = append(out, cluster.NewCrash(n.ID, exit, logs.String()))
	}
	return out
}

func (c *Cluster) crashed(cr cluster.Crash) {
	c.crashes.mu.Lock()
	fn := c.crashes.onCrash
	if fn == nil {
		c.crashes.pending = append(c.crashes.pending, cr)
	}
	c.crashes.mu.Unlock()
	if fn != nil {
		fn(cr)
	}
}

// WatchCrashes calls fn for each node whose container stops without
// Kill, Stop, Close or Abort stopping it, within crashPoll of its death;
// crashes before the call first. A nil fn stops the calls.
func (c *Cluster) WatchCrashes(fn func(cluster.Crash)) {
	c.crashes.mu.Lock()
	c.crashes.onCrash = fn
	pending := c.crashes.pending
	if fn != nil {
		c.crashes.pending = nil
	}
	c.crashes.mu.Unlock()
	if fn == nil {
		return
	}
	for _, cr := range pending {
		fn(cr)
	}
}

// Crashed lists the nodes down since their container stopped on its own.
func (c *Cluster) Crashed() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []int
	for _, n := range c.nodes {
		if n.down && n.crashed {
			out = append(out, n.ID)
		}
	}
	return out
}
