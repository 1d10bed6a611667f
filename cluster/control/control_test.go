package control

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/cluster"
)

// fakeCluster is a cluster of a controller and three brokers that records
// what it is asked.
type fakeCluster struct {
	mu      sync.Mutex
	running map[int]bool
	calls   []string
}

func newFake() *fakeCluster {
	return &fakeCluster{running: map[int]bool{0: true, 1: true, 2: true, 3: true}}
}

func (f *fakeCluster) call(s string, id int, running bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("%s %d", s, id))
	f.running[id] = running
	return nil
}

func (f *fakeCluster) Kill(id int) error                  { return f.call("kill", id, false) }
func (f *fakeCluster) Stop(id int, _ time.Duration) error { return f.call("stop", id, false) }
func (f *fakeCluster) Restart(ctx context.Context, id int) error {
	return f.call("restart", id, true)
}
func (f *fakeCluster) Pause(id int) error  { return f.call("pause", id, true) }
func (f *fakeCluster) Resume(id int) error { return errors.New("SIGCONT refused") }
func (f *fakeCluster) Bootstrap() string   { return "" }
func (f *fakeCluster) ControllerAddr() string {
	return ""
}
func (f *fakeCluster) Close() {}
func (f *fakeCluster) Abort() {}
func (f *fakeCluster) Info() []cluster.NodeInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []cluster.NodeInfo
	for id := range 4 {
		out = append(out, cluster.NodeInfo{ID: id, Name: cluster.NodeName(id), Running: f.running[id], Where: fmt.Sprintf("pid %d", 100+id)})
	}
	return out
}

// fakeNet records partitions and fails its next change when told to.
type fakeNet struct {
	cluster.Network // the faults the API never asks for
	calls           []string
	fail            error
}

func (n *fakeNet) Partition(a, b []string) error {
	n.calls = append(n.calls, fmt.Sprint("partition ", a, b))
	return n.take()
}
func (n *fakeNet) HealAll() error { n.calls = append(n.calls, "heal"); return n.take() }
func (n *fakeNet) take() error    { err := n.fail; n.fail = nil; return err }

func serve(t *testing.T, c cluster.Cluster, nw cluster.Network) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), SocketName)
	stop, err := Serve(context.Background(), path, c, nw)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return path
}

func TestControl(t *testing.T) {
	c, nw := newFake(), &fakeNet{}
	path := serve(t, c, nw)
	ctx := context.Background()
	for _, tc := range []struct {
		req     Request
		want    string // what it did, or with err the error
		err     bool
		call    string // the cluster's or the network's last call
		netCall bool
	}{
		{Request{Op: OpKill, Node: "broker-2"}, "killed broker-2", false, "kill 2", false},
		{Request{Op: OpKill, Node: "broker-2"}, "broker-2 is not running: nothing to kill", false, "kill 2", false},
		{Request{Op: OpStart, Node: "broker-2"}, "started broker-2", false, "restart 2", false},
		{Request{Op: OpStart, Node: "broker-2"}, "broker-2 is running (pid 102): kill or stop it first", true, "restart 2", false},
		{Request{Op: OpStop, Node: "controller"}, "stopped controller", false, "stop 0", false},
		{Request{Op: OpPause, Node: "controller"}, "controller is not running: nothing to pause", true, "stop 0", false},
		{Request{Op: OpPause, Node: "broker-1"}, "paused broker-1", false, "pause 1", false},
		{Request{Op: OpResume, Node: "broker-1"}, "resume broker-1: SIGCONT refused", true, "pause 1", false},
		{Request{Op: OpKill, Node: "broker-9"}, `no node "broker-9" in this cluster; its nodes are controller, broker-1, broker-2, broker-3`, true, "pause 1", false},
		{Request{Op: "explode", Node: "broker-1"}, `unknown operation "explode"`, true, "pause 1", false},
		{Request{Op: OpPartition, Node: "broker-1", Peers: []string{"broker-2", "controller", "broker-2"}}, "partitioned broker-1 from broker-2, controller (both ways)", false, "partition [broker-1] [broker-2 controller]", true},
		{Request{Op: OpPartition, Node: "broker-1", Peers: []string{"broker-1"}}, "cannot partition broker-1 from itself", true, "partition [broker-1] [broker-2 controller]", true},
		{Request{Op: OpPartition, Node: "broker-1", Peers: []string{"nope"}}, `no node "nope"`, true, "partition [broker-1] [broker-2 controller]", true},
		{Request{Op: OpPartition, Node: "broker-1"}, "name one peer or more", true, "partition [broker-1] [broker-2 controller]", true},
		{Request{Op: OpHeal}, "healed every network fault", false, "heal", true},
	} {
		did, err := Do(ctx, path, tc.req)
		got := did
		if err != nil {
			got = err.Error()
		}
		if (err != nil) != tc.err || !strings.Contains(got, tc.want) {
			t.Errorf("%+v: %q, %v; want %q (error: %v)", tc.req, did, err, tc.want, tc.err)
		}
		calls := c.calls
		if tc.netCall {
			calls = nw.calls
		}
		if len(calls) == 0 || calls[len(calls)-1] != tc.call {
			t.Errorf("%+v: calls %q; want the last to be %q", tc.req, calls, tc.call)
		}
	}
	nw.fail = errors.New("iptables: no such chain")
	if _, err := Do(ctx, path, Request{Op: OpHeal}); err == nil || !strings.Contains(err.Error(), "iptables: no such chain") {
		t.Errorf("a failed heal said %v; want the network's error", err)
	}
}

func TestControlWithoutNetwork(t *testing.T) {
	path := serve(t, newFake(), nil)
	ctx := context.Background()
	_, err := Do(ctx, path, Request{Op: OpPartition, Node: "broker-1", Peers: []string{"broker-2"}})
	if err == nil || !strings.Contains(err.Error(), NoNetworkHint) {
		t.Errorf("partition without a network: %v; want %q", err, NoNetworkHint)
	}
	if did, err := Do(ctx, path, Request{Op: OpHeal}); err != nil || !strings.Contains(did, "nothing to heal") {
		t.Errorf("heal without a network: %q, %v", did, err)
	}
}

// TestControlNoCluster: no socket, a socket left by a killed cluster up
// (nothing listens) and a stopped server all say ErrNoCluster; a stale
// socket is replaced by the next Serve; a live one is not.
func TestControlNoCluster(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, SocketName)
	if _, err := Do(ctx, path, Request{Op: OpHeal}); !errors.Is(err, ErrNoCluster) {
		t.Errorf("no socket: %v; want ErrNoCluster", err)
	}
	stop, err := Serve(ctx, path, newFake(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Serve(ctx, path, newFake(), nil); err == nil || !strings.Contains(err.Error(), "another chaos cluster up") {
		t.Errorf("a second Serve on a live socket: %v", err)
	}
	stop()
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stop left the socket: %v", err)
	}
	if _, err := Do(ctx, path, Request{Op: OpHeal}); !errors.Is(err, ErrNoCluster) {
		t.Errorf("after stop: %v; want ErrNoCluster", err)
	}
	// What a SIGKILLed cluster up leaves: the file, nobody listening.
	ln, err := netListenUnixNoUnlink(path)
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the stale socket is gone: %v", err)
	}
	if _, err := Do(ctx, path, Request{Op: OpHeal}); !errors.Is(err, ErrNoCluster) {
		t.Errorf("stale socket: %v; want ErrNoCluster", err)
	}
	stop, err = Serve(ctx, path, newFake(), nil)
	if err != nil {
		t.Fatalf("Serve over a stale socket: %v", err)
	}
	defer stop()
	if _, err := Do(ctx, path, Request{Op: OpHeal}); err != nil {
		t.Errorf("after replacing the stale socket: %v", err)
	}
	long := filepath.Join(dir, strings.Repeat("d", 120), SocketName)
	if _, err := Serve(ctx, long, newFake(), nil); err == nil || !strings.Contains(err.Error(), "use a shorter --data") {
		t.Errorf("a path too long for a unix socket: %v", err)
	}
}

// TestControlStopCancelsStart: stop cancels a start in progress and
// returns once it ended, so that the caller may then Close the cluster.
func TestControlStopCancelsStart(t *testing.T) {
	c := &slowStart{fakeCluster: newFake(), started: make(chan struct{})}
	c.running[2] = false
	path := filepath.Join(t.TempDir(), SocketName)
	stop, err := Serve(context.Background(), path, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := Do(context.Background(), path, Request{Op: OpStart, Node: "broker-2"})
		errc <- err
	}()
	<-c.started
	stop()
	if !slices.Contains(c.calls, "restart ended") {
		t.Errorf("stop returned before the start ended: %q", c.calls)
	}
	if err := <-errc; err == nil {
		t.Errorf("a start cut short by stop succeeded")
	}
}

type slowStart struct {
	*fakeCluster
	started chan struct{}
}

func (s *slowStart) Restart(ctx context.Context, id int) error {
	close(s.started)
	<-ctx.Done()
	s.mu.Lock()
	s.calls = append(s.calls, "restart ended")
	s.mu.Unlock()
	return ctx.Err()
}

// netListenUnixNoUnlink listens on path and leaves the file behind on
// Close, as a process killed while listening does.
func netListenUnixNoUnlink(path string) (*net.UnixListener, error) {
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	ln.SetUnlinkOnClose(false)
	return ln, nil
}
