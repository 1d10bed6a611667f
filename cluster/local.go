package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/chaos-isr/chaos/internal/clockfault"
)

// ControllerNode is the node id of the controller; brokers are 1..n.
const ControllerNode = 0

// Spec describes a local cluster.
type Spec struct {
	Nodes          int
	Host           string // default 127.0.0.1
	BasePort       int    // broker i listens on BasePort+i-1
	ControllerPort int    // default BasePort-1
	DataDir        string // each node gets a subdirectory; logs go here too
	Binary         string // the chaos binary; default: this executable
	// ClusterID is given to the controller and every broker (--cluster-id):
	// brokers report it to clients, who can tell this cluster from another
	// one on the same ports. Empty: the nodes' default.
	ClusterID      string
	ControllerArgs []string
	BrokerArgs     []string
	// BrokerArgsFor adds flags for one broker after BrokerArgs (a later
	// flag wins): the tester points a broker's --controller and
	// --peer-addr at its proxies this way.
	BrokerArgsFor func(id int) []string
}

// Node is one process of the cluster.
type Node struct {
	ID      int
	Role    string // "controller" or "broker"
	Addr    string
	DataDir string
	LogPath string

	args     []string
	cmd      *exec.Cmd
	exited   chan struct{}
	exitErr  error // how the process ended; set before exited closes
	logStart int64 // the log's size when this incarnation started
	paused   bool
	// ending: the runtime is killing or stopping this incarnation, so
	// its exit is no crash.
	ending atomic.Bool
}

// PID is the node's process id, or 0 if it is not running.
func (n *Node) PID() int {
	if n.cmd == nil || n.cmd.Process == nil || n.isExited() {
		return 0
	}
	return n.cmd.Process.Pid
}

func (n *Node) isExited() bool {
	select {
	case <-n.exited:
		return true
	default:
		return false
	}
}

// Local is a running local cluster.
type Local struct {
	spec  Spec
	mu    sync.Mutex // guards each node's cmd against Abort
	nodes []*Node    // index 0 is the controller

	// crashMu guards what the runtime knows of nodes that died on their
	// own (see WatchCrashes): the watcher, the crashes it has yet to
	// hear of, and the nodes down since.
	crashMu sync.Mutex
	onCrash func(Crash)
	pending []Crash
	down    map[int]bool
}

// Start launches the controller and the brokers and waits until each
// accepts connections.
func Start(ctx context.Context, spec Spec) (*Local, error) {
	if spec.Nodes < 1 {
		return nil, fmt.Errorf("a cluster needs at least one node, got %d", spec.Nodes)
	}
	if spec.Host == "" {
		spec.Host = "127.0.0.1"
	}
	if spec.ControllerPort == 0 {
		spec.ControllerPort = spec.BasePort - 1
	}
	if err := CheckPorts(spec.BasePort, spec.Nodes, spec.ControllerPort); err != nil {
		return nil, err
	}
	if spec.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		spec.Binary = exe
	}
	if spec.DataDir == "" {
		return nil, errors.New("a data directory is required")
	}
	l := &Local{spec: spec}
	ctrlAddr := net.JoinHostPort(spec.Host, strconv.Itoa(spec.ControllerPort))
	ctrl := &Node{ID: ControllerNode, Role: "controller", Addr: ctrlAddr, DataDir: filepath.Join(spec.DataDir, "controller")}
	var idArgs []string
	if spec.ClusterID != "" {
		idArgs = []string{"--cluster-id", spec.ClusterID}
	}
	ctrl.args = append([]string{"controller", "--listen", ctrlAddr, "--data", ctrl.DataDir}, idArgs...)
	ctrl.args = append(ctrl.args, spec.ControllerArgs...)
	l.nodes = append(l.nodes, ctrl)
	for i := 1; i <= spec.Nodes; i++ {
		addr := net.JoinHostPort(spec.Host, strconv.Itoa(spec.BasePort+i-1))
		n := &Node{ID: i, Role: "broker", Addr: addr, DataDir: filepath.Join(spec.DataDir, NodeName(i))}
		n.args = append([]string{"broker", "--id", strconv.Itoa(i), "--listen", addr, "--controller", ctrlAddr, "--data", n.DataDir}, idArgs...)
		n.args = append(n.args, spec.BrokerArgs...)
		if spec.BrokerArgsFor != nil {
			n.args = append(n.args, spec.BrokerArgsFor(i)...)
		}
		l.nodes = append(l.nodes, n)
	}
	for _, n := range l.nodes {
		n.LogPath = filepath.Join(spec.DataDir, n.name()+".log")
		if err := l.start(n); err != nil {
			l.Close()
			return nil, err
		}
	}
	for _, n := range l.nodes {
		if err := waitListening(ctx, n); err != nil {
			l.Close()
			return nil, err
		}
	}
	return l, nil
}

func (n *Node) name() string { return NodeName(n.ID) }

// Nodes returns the controller followed by the brokers.
func (l *Local) Nodes() []*Node { return l.nodes }

// Node returns the node with the id (ControllerNode for the controller).
func (l *Local) Node(id int) (*Node, error) {
	if id < 0 || id >= len(l.nodes) {
		return nil, fmt.Errorf("no node %d (brokers are 1..%d, the controller is %d)", id, len(l.nodes)-1, ControllerNode)
	}
	return l.nodes[id], nil
}

// Bootstrap is the comma-separated list of broker addresses.
func (l *Local) Bootstrap() string {
	var addrs []string
	for _, n := range l.nodes[1:] {
		addrs = append(addrs, n.Addr)
	}
	return strings.Join(addrs, ",")
}

// ControllerAddr is the controller's address.
func (l *Local) ControllerAddr() string { return l.nodes[0].Addr }

func (l *Local) start(n *Node) error {
	if err := os.MkdirAll(l.spec.DataDir, 0o755); err != nil {
		return err
	}
	logf, err := os.OpenFile(n.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fi, err := logf.Stat()
	if err != nil {
		logf.Close()
		return err
	}
	n.logStart = fi.Size()
	cmd := exec.Command(l.spec.Binary, n.args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Own process group: a Ctrl-C at the terminal reaches only the
		// parent, which then stops the children in order.
		Setpgid: true,
		// If the parent dies, even by SIGKILL, the kernel kills the child.
		Pdeathsig: syscall.SIGKILL,
	}
	if err := Spawn(cmd); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", n.name(), err)
	}
	// Info reads cmd and exited under mu while "cluster up" restarts a
	// node: a new cmd with the old, closed exited would say it died.
	l.mu.Lock()
	n.cmd, n.paused = cmd, false
	n.exited = make(chan struct{})
	n.ending.Store(false)
	l.mu.Unlock()
	l.crashMu.Lock()
	delete(l.down, n.ID)
	l.crashMu.Unlock()
	go func(exited chan struct{}, logStart int64) {
		err := cmd.Wait()
		logf.Close()
		n.exitErr = err
		// Read before exited closes: a restart may start the next
		// incarnation right after.
		crashed := !n.ending.Load()
		close(exited)
		if crashed {
			l.crashed(NewCrash(n.ID, ExitText(err), logFrom(n.LogPath, logStart)))
		}
	}(n.exited, n.logStart)
	return nil
}

var _ CrashWatcher = (*Local)(nil)

// crashed notes a node that exited without the runtime killing or
// stopping it, and tells the watcher.
func (l *Local) crashed(c Crash) {
	l.crashMu.Lock()
	if l.down == nil {
		l.down = map[int]bool{}
	}
	l.down[c.ID] = true
	fn := l.onCrash
	if fn == nil {
		l.pending = append(l.pending, c)
	}
	l.crashMu.Unlock()
	if fn != nil {
		fn(c)
	}
}

// WatchCrashes calls fn, from the goroutine that saw the process exit,
// for each node that exits without Kill, Stop, Close or Abort ending it;
// crashes before the call first. A nil fn stops the calls (crashes are
// then kept for the next watcher).
func (l *Local) WatchCrashes(fn func(Crash)) {
	l.crashMu.Lock()
	l.onCrash = fn
	pending := l.pending
	if fn != nil {
		l.pending = nil
	}
	l.crashMu.Unlock()
	if fn == nil {
		return
	}
	for _, c := range pending {
		fn(c)
	}
}

// Crashed lists the nodes that exited on their own and have not been
// started again, in id order.
func (l *Local) Crashed() []int {
	l.crashMu.Lock()
	defer l.crashMu.Unlock()
	var out []int
	for _, n := range l.nodes {
		if l.down[n.ID] {
			out = append(out, n.ID)
		}
	}
	return out
}

// logFrom is what the log at path holds past offset: one incarnation's
// output.
func logFrom(path string, offset int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	data, _ := io.ReadAll(io.NewSectionReader(f, offset, 1<<30))
	return string(data)
}

// spawner starts every child from one OS thread that never exits:
// PR_SET_PDEATHSIG fires when the *thread* that forked the child dies, and
// the Go runtime may retire other threads at any time, which would kill a
// child in the middle of its life.
var spawner = struct {
	once sync.Once
	reqs chan spawnReq
}{reqs: make(chan spawnReq)}

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

// Spawn starts cmd from the process's spawner thread. Use it for any child
// started with SysProcAttr.Pdeathsig, which must outlive the starting
// goroutine's thread.
func Spawn(cmd *exec.Cmd) error {
	spawner.once.Do(func() {
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for r := range spawner.reqs {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error)
	spawner.reqs <- spawnReq{cmd: cmd, done: done}
	return <-done
}

// ReadyLine is what a broker and the controller log once they listen. A
// node is up when its own log says so: a connection to its port proves
// nothing, since another process may hold that port.
const ReadyLine = "listening on"

// waitListening waits until n's current incarnation logs ReadyLine, and
// fails at once, with the reason, if it exits first.
func waitListening(ctx context.Context, n *Node) error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		if logSince(n.LogPath, n.logStart, ReadyLine) {
			return nil
		}
		if n.isExited() {
			if logSince(n.LogPath, n.logStart, ReadyLine) {
				// Up, then gone: a later check reports it.
				return nil
			}
			return n.startFailure()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s is not listening on %s after 15s; see %s", n.name(), n.Addr, n.LogPath)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// startFailure says why n exited before it listened: its exit, whether
// its address is held by another process, and the end of its log.
func (n *Node) startFailure() error {
	how := "exited"
	if n.exitErr != nil {
		how = n.exitErr.Error()
	}
	busy := CheckFree(n.name(), n.Addr)
	if busy == nil {
		return fmt.Errorf("%s exited during start-up (%s)\n%s ends:\n%s", n.name(), how, n.LogPath, tail(n.LogPath, 10))
	}
	err := fmt.Errorf("%s exited during start-up (%s): %s\n%s ends:\n%s", n.name(), how, busy, n.LogPath, tail(n.LogPath, 10))
	if errors.Is(busy, ErrPortInUse) {
		err = portError{err}
	}
	return err
}

// logSince reports whether the log holds s past offset.
func logSince(path string, offset int64, s string) bool {
	return strings.Contains(logFrom(path, offset), s)
}

func tail(path string, lines int) string {
	data, _ := os.ReadFile(path)
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// Kill sends SIGKILL to a node and waits for it to die.
func (l *Local) Kill(id int) error { return l.signalAndWait(id, syscall.SIGKILL, 0) }

// Stop asks a node to shut down (SIGTERM) and kills it after timeout.
func (l *Local) Stop(id int, timeout time.Duration) error {
	return l.signalAndWait(id, syscall.SIGTERM, timeout)
}

func (l *Local) signalAndWait(id int, sig syscall.Signal, timeout time.Duration) error {
	n, err := l.Node(id)
	if err != nil {
		return err
	}
	if n.cmd == nil || n.isExited() {
		return nil
	}
	n.ending.Store(true)
	if n.paused && sig == syscall.SIGTERM {
		_ = n.cmd.Process.Signal(syscall.SIGCONT) // a stopped process cannot handle SIGTERM
	}
	_ = n.cmd.Process.Signal(sig)
	if timeout > 0 {
		select {
		case <-n.exited:
			return nil
		case <-time.After(timeout):
			_ = n.cmd.Process.Signal(syscall.SIGKILL)
		}
	}
	<-n.exited
	n.paused = false
	return nil
}

var (
	_ Clocks = (*Local)(nil)
	_ Disks  = (*Local)(nil)
)

// DamageDisk damages down node id's data directory (DamageDir).
func (l *Local) DamageDisk(id int, what string, seed uint64) (string, error) {
	n, err := l.downNode(id)
	if err != nil {
		return "", err
	}
	return DamageDir(n.DataDir, what, seed)
}

// SnapshotDisk copies down node id's data directory aside (SnapshotDir).
func (l *Local) SnapshotDisk(id int) error {
	n, err := l.downNode(id)
	if err != nil {
		return err
	}
	return SnapshotDir(n.DataDir)
}

// RestoreDisk puts the copy of down node id's data directory back.
func (l *Local) RestoreDisk(id int) error {
	n, err := l.downNode(id)
	if err != nil {
		return err
	}
	return RestoreDir(n.DataDir)
}

// downNode is node id, which must not be running: a disk is damaged or
// copied only while nothing writes it.
func (l *Local) downNode(id int) (*Node, error) {
	n, err := l.Node(id)
	if err != nil {
		return nil, err
	}
	if n.cmd != nil && !n.isExited() {
		return nil, fmt.Errorf("%s is running: its disk is damaged or copied only while it is down", n.name())
	}
	return n, nil
}

// SetClock sets node id's clock fault in its data directory, which the
// node reads within 100 ms, and at its next start if it is down
// (package clockfault).
func (l *Local) SetClock(id int, offset time.Duration, rate float64) error {
	n, err := l.Node(id)
	if err != nil {
		return err
	}
	return clockfault.Write(n.DataDir, clockfault.Fault{Offset: offset, Rate: rate})
}

// Pause stops a node with SIGSTOP; Resume continues it.
func (l *Local) Pause(id int) error { return l.signal(id, syscall.SIGSTOP, true) }

// Resume continues a paused node with SIGCONT.
func (l *Local) Resume(id int) error { return l.signal(id, syscall.SIGCONT, false) }

func (l *Local) signal(id int, sig syscall.Signal, paused bool) error {
	n, err := l.Node(id)
	if err != nil {
		return err
	}
	if n.PID() == 0 {
		return fmt.Errorf("%s is not running", n.name())
	}
	if err := n.cmd.Process.Signal(sig); err != nil {
		return err
	}
	n.paused = paused
	if paused {
		// kill(2) returns once the signal is queued; a thread running on
		// another core stops only at its next return to user space, and
		// could still answer a request meanwhile. A pause is in effect
		// once every thread of the process is stopped.
		waitStopped(n.PID(), time.Second)
	}
	return nil
}

// waitStopped waits up to limit until every thread of pid is stopped
// (state T in /proc), as far as /proc says.
func waitStopped(pid int, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
		if err != nil || len(tasks) == 0 {
			return
		}
		stopped := true
		for _, t := range tasks {
			b, err := os.ReadFile(t)
			// The state follows the command name's closing parenthesis.
			if i := bytes.LastIndexByte(b, ')'); err == nil && i >= 0 && i+2 < len(b) && b[i+2] != 'T' && b[i+2] != 't' {
				stopped = false
				break
			}
		}
		if stopped {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// Restart starts a stopped or killed node again on its data directory and
// waits until it accepts connections.
func (l *Local) Restart(ctx context.Context, id int) error {
	n, err := l.Node(id)
	if err != nil {
		return err
	}
	if n.PID() != 0 {
		return fmt.Errorf("%s is still running (pid %d)", n.name(), n.PID())
	}
	if err := l.start(n); err != nil {
		return err
	}
	return waitListening(ctx, n)
}

// Abort sends SIGKILL to every node and returns: the kernel does the rest
// (and would anyway when this process exits: PR_SET_PDEATHSIG).
func (l *Local) Abort() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, n := range l.nodes {
		if n.cmd != nil && n.cmd.Process != nil {
			n.ending.Store(true)
			_ = n.cmd.Process.Kill()
		}
	}
}

// Close stops every node: SIGTERM, then SIGKILL for any still alive after
// two seconds. It is safe to call more than once.
func (l *Local) Close() {
	var wg sync.WaitGroup
	for _, n := range l.nodes {
		if n.cmd == nil || n.isExited() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = l.Stop(n.ID, 2*time.Second)
		}()
	}
	wg.Wait()
}
