package control

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/chaos-isr/chaos/cluster"
	"github.com/chaos-isr/chaos/history"
)

// SocketName is the control socket's name in the cluster's data directory.
const SocketName = "control.sock"

// SocketPath is where the cluster up with data directory dir listens.
func SocketPath(dir string) string { return filepath.Join(dir, SocketName) }

// The operations a Request may ask for.
const (
	OpKill      = string(history.ActKill)      // SIGKILL (or docker kill)
	OpStop      = string(history.ActStop)      // graceful: SIGTERM, then kill after StopTimeout
	OpStart     = string(history.ActStart)     // restart a killed or stopped node; done once it listens
	OpPause     = string(history.ActPause)     // SIGSTOP (docker pause)
	OpResume    = string(history.ActResume)    // SIGCONT (docker unpause)
	OpPartition = string(history.ActPartition) // cut every link between Node and each of Peers, both ways
	OpHeal      = string(history.ActHeal)      // remove every network fault
	OpSlow      = string(history.ActSlow)      // delay every link between Node and each of Peers by Delay, both ways
)

// Ops lists them.
func Ops() []string {
	return []string{OpKill, OpStop, OpStart, OpPause, OpResume, OpPartition, OpSlow, OpHeal}
}

// StopTimeout is how long a stopped node has to shut down before it is
// killed.
const StopTimeout = 10 * time.Second

// NoNetworkHint is what a partition asked of a cluster without network
// faults says to do.
const NoNetworkHint = "start chaos cluster up with --network-faults"

// Request is one fault asked of the running cluster. Nodes are named as
// cluster.NodeName names them: "controller", "broker-N".
type Request struct {
	Op    string   `json:"op"`
	Node  string   `json:"node,omitempty"`
	Peers []string `json:"peers,omitempty"`
	// Delay is a slow request's delay, each way.
	Delay time.Duration `json:"delay,omitempty"`
}

// ErrNoCluster is wrapped by Do's error when nothing serves the socket:
// no file there, or a file left by a cluster up that was killed.
var ErrNoCluster = errors.New("no control socket")

// maxSocketPath is the room Linux gives a unix socket's path (108 bytes
// with the terminating NUL); a longer one fails with a bare EINVAL.
const maxSocketPath = 107

func checkPath(path string) error {
	if len(path) > maxSocketPath {
		return fmt.Errorf("control socket path %s is %d bytes, more than a unix socket allows (%d): use a shorter --data", path, len(path), maxSocketPath)
	}
	return nil
}

// Serve serves the control API for c (and nw, nil when the cluster was
// started without network faults) on a unix socket at path until stop is
// called or ctx ends. A socket file left there by a killed cluster up is
// replaced; one that still answers is refused. stop waits for a request
// in progress to end (a start is cancelled), and removes the socket, so
// that once it returns nothing touches c: the caller may Close it.
func Serve(ctx context.Context, path string, c cluster.Cluster, nw cluster.Network) (stop func(), err error) {
	if err := checkPath(path); err != nil {
		return nil, err
	}
	if err := removeStale(ctx, path); err != nil {
		return nil, err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "unix", path)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	h := &handler{c: c, net: nw}
	srv := &http.Server{
		Handler:           h,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ReadHeaderTimeout: 5 * time.Second,
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer scancel()
			if srv.Shutdown(sctx) != nil {
				_ = srv.Close()
			}
			<-done
			// A handler still running after the grace period holds mu:
			// taking it waits for the handler, whose context is gone.
			h.mu.Lock()
			h.closed = true
			h.mu.Unlock()
			os.Remove(path)
		})
	}
	go func() {
		<-ctx.Done()
		stop()
	}()
	return stop, nil
}

// removeStale removes a socket file nothing answers on; one that answers
// belongs to a cluster up still running.
func removeStale(ctx context.Context, path string) error {
	if _, err := os.Lstat(path); err != nil {
		return nil
	}
	dctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(dctx, "unix", path)
	if err == nil {
		conn.Close()
		return fmt.Errorf("another chaos cluster up serves %s", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

type handler struct {
	c   cluster.Cluster
	net cluster.Network
	// mu makes faults one at a time, as the nemesis applies them: the
	// runtimes do not expect two changes of one node at once.
	mu     sync.Mutex
	closed bool
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/fault" {
		http.Error(w, "POST /fault only", http.StatusNotFound)
		return
	}
	var req Request
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&req); err != nil {
		http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		http.Error(w, "the cluster is stopping", http.StatusServiceUnavailable)
		return
	}
	did, err := h.do(r.Context(), req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusUnprocessableEntity)
		return
	}
	fmt.Fprintln(w, did)
}

// do applies req and says what it did.
func (h *handler) do(ctx context.Context, req Request) (string, error) {
	nodes := h.c.Info()
	find := func(name string) (cluster.NodeInfo, error) {
		i := slices.IndexFunc(nodes, func(n cluster.NodeInfo) bool { return n.Name == name })
		if i < 0 {
			names := make([]string, len(nodes))
			for j, n := range nodes {
				names[j] = n.Name
			}
			return cluster.NodeInfo{}, fmt.Errorf("no node %q in this cluster; its nodes are %s", name, strings.Join(names, ", "))
		}
		return nodes[i], nil
	}
	if req.Op == OpHeal {
		if h.net == nil {
			return "nothing to heal: the cluster runs without network faults", nil
		}
		if err := h.net.HealAll(); err != nil {
			return "", fmt.Errorf("heal: %w", err)
		}
		return "healed every network fault", nil
	}
	if !slices.Contains(Ops(), req.Op) {
		return "", fmt.Errorf("unknown operation %q; one of %s", req.Op, strings.Join(Ops(), ", "))
	}
	n, err := find(req.Node)
	if err != nil {
		return "", err
	}
	switch req.Op {
	case OpKill:
		if !n.Running {
			return n.Name + " is not running: nothing to kill", nil
		}
		if err := h.c.Kill(n.ID); err != nil {
			return "", fmt.Errorf("kill %s: %w", n.Name, err)
		}
		return "killed " + n.Name, nil
	case OpStop:
		if !n.Running {
			return n.Name + " is not running: nothing to stop", nil
		}
		if err := h.c.Stop(n.ID, StopTimeout); err != nil {
			return "", fmt.Errorf("stop %s: %w", n.Name, err)
		}
		return "stopped " + n.Name, nil
	case OpStart:
		if n.Running {
			return "", fmt.Errorf("%s is running (%s): kill or stop it first", n.Name, n.Where)
		}
		if err := h.c.Restart(ctx, n.ID); err != nil {
			return "", fmt.Errorf("start %s: %w", n.Name, err)
		}
		return fmt.Sprintf("started %s; it listens on %s", n.Name, n.Addr), nil
	case OpPause, OpResume:
		if !n.Running {
			return "", fmt.Errorf("%s is not running: nothing to %s", n.Name, req.Op)
		}
		f, did := h.c.Pause, "paused "
		if req.Op == OpResume {
			f, did = h.c.Resume, "resumed "
		}
		if err := f(n.ID); err != nil {
			return "", fmt.Errorf("%s %s: %w", req.Op, n.Name, err)
		}
		return did + n.Name, nil
	}
	// OpPartition and OpSlow.
	if len(req.Peers) == 0 {
		return "", fmt.Errorf("%s %s from what? name one peer or more", req.Op, n.Name)
	}
	var peers []string
	for _, p := range req.Peers {
		if _, err := find(p); err != nil {
			return "", err
		}
		if p == n.Name {
			return "", fmt.Errorf("cannot %s %s from itself", req.Op, p)
		}
		if !slices.Contains(peers, p) {
			peers = append(peers, p)
		}
	}
	if h.net == nil {
		return "", errors.New("the cluster runs without network faults: " + NoNetworkHint)
	}
	if req.Op == OpSlow {
		if req.Delay <= 0 {
			return "", fmt.Errorf("slow %s: a delay of %s; give a positive one", n.Name, req.Delay)
		}
		// A link is named by the node that dials it: both ends dial.
		var errs []error
		for _, p := range peers {
			errs = append(errs, h.net.Slow(n.Name, p, req.Delay), h.net.Slow(p, n.Name, req.Delay))
		}
		if err := errors.Join(errs...); err != nil {
			return "", fmt.Errorf("slow: %w", err)
		}
		return fmt.Sprintf("slowed the links between %s and %s by %s (both ways)", n.Name, strings.Join(peers, ", "), req.Delay), nil
	}
	if err := h.net.Partition([]string{n.Name}, peers); err != nil {
		return "", fmt.Errorf("partition: %w", err)
	}
	return fmt.Sprintf("partitioned %s from %s (both ways)", n.Name, strings.Join(peers, ", ")), nil
}

// Do asks the cluster up serving the socket at path for req and returns
// what it did, one line. An error wraps ErrNoCluster when nothing serves
// the socket; otherwise it is the cluster's refusal, as text.
func Do(ctx context.Context, path string, req Request) (string, error) {
	if err := checkPath(path); err != nil {
		return "", err
	}
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		},
	}}
	defer client.CloseIdleConnections()
	body, err := json.Marshal(req)
	if err != nil {
		return "", err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://chaos-cluster/fault", bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	hr.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(hr)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ECONNREFUSED) {
			return "", fmt.Errorf("%w at %s", ErrNoCluster, path)
		}
		return "", err
	}
	defer resp.Body.Close()
	text, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		return "", err
	}
	msg := strings.TrimSpace(string(text))
	if resp.StatusCode != http.StatusOK {
		if msg == "" {
			msg = resp.Status
		}
		return "", errors.New(msg)
	}
	return msg, nil
}
