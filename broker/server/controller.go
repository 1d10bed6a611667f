package server

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/chaos-isr/chaos/broker/control"
	"github.com/chaos-isr/chaos/broker/controller"
	"github.com/chaos-isr/chaos/internal/atomicfile"
)

// ControllerOptions configure the controller process.
type ControllerOptions struct {
	Config  controller.Config
	Listen  string
	DataDir string
	TickMs  int64
	Logger  *log.Logger
}

type controlCall struct {
	req   any
	reply chan any
}

// Controller is a running controller process.
type Controller struct {
	opts  ControllerOptions
	ln    net.Listener
	ctrl  *controller.Controller
	clock *faultClock
	log   *log.Logger
	calls chan controlCall
	wg    sync.WaitGroup
	saved int64
}

const metadataFile = "metadata.json"

// StartController loads the persisted metadata, listens and serves.
func StartController(ctx context.Context, opts ControllerOptions) (*Controller, error) {
	if opts.Logger == nil {
		opts.Logger = log.New(os.Stderr, "controller: ", log.LstdFlags|log.Lmicroseconds)
	}
	if opts.TickMs <= 0 {
		opts.TickMs = 50
	}
	if err := opts.Config.Validate(); err != nil {
		return nil, err
	}
	if opts.DataDir == "" {
		return nil, errors.New("a data directory is required")
	}
	if err := os.MkdirAll(opts.DataDir, 0o755); err != nil {
		return nil, err
	}
	restored, err := loadMetadata(filepath.Join(opts.DataDir, metadataFile))
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	c := &Controller{opts: opts, ln: ln, ctrl: controller.New(opts.Config, restored),
		log: opts.Logger, calls: make(chan controlCall)}
	c.clock = newFaultClock(ctx, opts.DataDir, func() int64 { return time.Since(start).Milliseconds() }, opts.Logger)
	c.saved = c.ctrl.Version()
	c.log.Printf("listening on %s, cluster %s, data %s, metadata version %d, session timeout %dms",
		ln.Addr(), cmp.Or(opts.Config.ClusterID, control.DefaultClusterID), opts.DataDir, c.ctrl.Version(), opts.Config.SessionTimeoutMs)
	if !opts.Config.Bugs.Empty() {
		c.log.Printf("PLANTED BUGS: %s: this controller breaks replication rules on purpose", opts.Config.Bugs)
	}
	c.wg.Add(2)
	go c.accept(ctx)
	go c.loop(ctx)
	return c, nil
}

// Addr is the address the controller listens on.
func (c *Controller) Addr() net.Addr { return c.ln.Addr() }

// Wait blocks until the controller has shut down.
func (c *Controller) Wait() { c.wg.Wait() }

func loadMetadata(path string) (*control.Snapshot, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s control.Snapshot
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%s is corrupt: %w", path, err)
	}
	return &s, nil
}

// persist writes the metadata before any response of the step that changed
// it leaves: nobody learns a decision the controller could forget.
func (c *Controller) persist() error {
	if c.ctrl.Version() == c.saved {
		return nil
	}
	data, err := json.MarshalIndent(c.ctrl.Snapshot(), "", " ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(c.opts.DataDir, metadataFile), data); err != nil {
		return err
	}
	c.saved = c.ctrl.Version()
	return nil
}

func (c *Controller) now() int64 { return c.clock.now() }

func (c *Controller) loop(ctx context.Context) {
	defer c.wg.Done()
	tick := time.NewTicker(time.Duration(c.opts.TickMs) * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			c.log.Printf("stopped")
			return
		case call := <-c.calls:
			resp := c.ctrl.Handle(c.now(), call.req)
			c.events()
			if err := c.persist(); err != nil {
				// Without its metadata on disk the controller must not
				// answer: stop, as a controller with a broken disk would.
				c.log.Fatalf("cannot persist metadata: %v", err)
			}
			call.reply <- resp
		case <-tick.C:
			c.ctrl.Tick(c.now())
			c.events()
			if err := c.persist(); err != nil {
				c.log.Fatalf("cannot persist metadata: %v", err)
			}
		}
	}
}

func (c *Controller) events() {
	for _, e := range c.ctrl.Events() {
		c.log.Print(e)
	}
}

func (c *Controller) accept(ctx context.Context) {
	defer c.wg.Done()
	var conns sync.Map
	go func() {
		<-ctx.Done()
		c.ln.Close()
		conns.Range(func(k, _ any) bool { k.(net.Conn).Close(); return true })
	}()
	for {
		conn, err := c.ln.Accept()
		if err != nil {
			return
		}
		conns.Store(conn, true)
		go func() {
			defer conns.Delete(conn)
			defer conn.Close()
			c.serve(ctx, conn)
		}()
	}
}

func (c *Controller) serve(ctx context.Context, conn net.Conn) {
	reply := make(chan any, 1)
	for {
		req, err := readControl(conn)
		if err != nil {
			if !errors.Is(err, io.EOF) && ctx.Err() == nil {
				c.log.Printf("%s: closing: %v", conn.RemoteAddr(), err)
				_ = writeControl(conn, &errorMessage{Error: err.Error()})
			}
			return
		}
		select {
		case c.calls <- controlCall{req: req, reply: reply}:
		case <-ctx.Done():
			return
		}
		resp := <-reply
		if e, ok := resp.(error); ok {
			resp = &errorMessage{Error: e.Error()}
		}
		if err := writeControl(conn, resp); err != nil {
			return
		}
	}
}
