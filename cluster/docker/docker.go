package docker

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	tcnetwork "github.com/testcontainers/testcontainers-go/network"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/chaos-isr/chaos/cluster"
	"github.com/chaos-isr/chaos/internal/clockfault"
	waitfor "github.com/chaos-isr/chaos/internal/wait"
	"github.com/chaos-isr/chaos/netfault"
)

// Ports the nodes listen on inside their containers.
const (
	brokerPort     = 9092
	controllerPort = 9091
)

// readyLine is what a broker and the controller log once they listen. The
// image has no shell for a health check, and a port bound on the host
// accepts connections (Docker's proxy) before the node inside listens.
const readyLine = cluster.ReadyLine

// Spec describes a cluster in containers.
type Spec struct {
	Nodes int
	// BasePort is broker i's host port on 127.0.0.1 (BasePort+i-1), the
	// controller's is BasePort-1; 0 picks free ports.
	BasePort int
	// DataDir holds each node's data directory (bind-mounted as /data) and,
	// after Close, each node's log, like the local runtime's.
	DataDir string
	// Binary is the static chaos binary put in the image; default: this
	// executable.
	Binary string
	// ClusterID is given to every node (--cluster-id), as in the local
	// runtime.
	ClusterID      string
	ControllerArgs []string
	BrokerArgs     []string
	// StartTimeout bounds each node's start; default 60s.
	StartTimeout time.Duration
	// NetworkFaults says the run will delay links. The delay mechanism is
	// then chosen before the brokers start (probed in the controller's
	// container): netem where the kernel has it, and otherwise the
	// userspace delay line, which needs every broker to run under a
	// relay (chaos netfault relay) from the start. Without it,
	// Cluster.Network falls back to netfault.HTB on such kernels.
	NetworkFaults bool
	// Delays forces the delay mechanism (netfault.Netem, HTB or
	// Userspace) with NetworkFaults; empty chooses as above.
	Delays string
}

// Node is one container of the cluster.
type Node struct {
	ID        int
	Name      string // controller, broker-N: the network alias too
	Container string // the container's name
	HostAddr  string // 127.0.0.1:port, what clients dial
	port      int    // the port inside the container
	DataDir   string
	LogPath   string

	ctr testcontainers.Container
	ip  string // on the private network; may change when restarted
	// down and paused say what the tester did to the node; network rules
	// for a node that is down or paused wait until it runs again (docker
	// exec needs a running, unpaused container). crashed: it went down
	// of itself (see watch).
	down, paused, crashed bool
}

// Cluster is a running cluster in containers.
type Cluster struct {
	spec  Spec
	run   string
	cli   *testcontainers.DockerClient
	net   *testcontainers.DockerNetwork
	nodes []*Node

	image  string     // the image's id
	mu     sync.Mutex // serialises lifecycle operations and network rules
	closed bool
	faults *Network
	// mechanism and why are the delay mechanism chosen at the start
	// (Spec.NetworkFaults), and why it is not netem.
	mechanism, why string
	// ImageHash is the sha256 of the binary the image holds.
	ImageHash string
	crashes   crashes
}

var _ cluster.Cluster = (*Cluster)(nil)

var setupOnce sync.Once

// newClient connects to the Docker engine, with a reason a person can act
// on when there is none.
func newClient(ctx context.Context) (*testcontainers.DockerClient, error) {
	setupOnce.Do(func() {
		// Ryuk, testcontainers' reaper, is an image to pull, and there may
		// be no registry; this package removes what it creates itself.
		// testcontainers reads the setting once, so set it before any use.
		os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
		// testcontainers narrates every step on stderr; the tester has its
		// own output.
		tclog.SetDefault(tclog.NewNoopLogger())
	})
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil, fmt.Errorf("the docker runtime needs a running Docker engine (DOCKER_HOST or /var/run/docker.sock): %w", err)
	}
	return cli, nil
}

// Available reports whether a Docker engine answers, and why not.
func Available(ctx context.Context) error {
	cli, err := newClient(ctx)
	if err != nil {
		return err
	}
	return cli.Close()
}

// Check reports why this process cannot run a cluster in containers: a
// binary the image cannot run (default: this executable), or no Docker
// engine. A command calls it before it creates anything, so that a refusal
// leaves nothing behind.
func Check(ctx context.Context, binary string) error {
	if binary == "" {
		var err error
		if binary, err = os.Executable(); err != nil {
			return err
		}
	}
	if err := checkStatic(binary); err != nil {
		return err
	}
	return Available(ctx)
}

func randomID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Start builds the image if needed, sweeps what dead testers left, creates
// the network and starts the controller and the brokers, waiting until
// each listens.
func Start(ctx context.Context, spec Spec) (_ *Cluster, err error) {
	if spec.Nodes < 1 {
		return nil, fmt.Errorf("a cluster needs at least one node, got %d", spec.Nodes)
	}
	if spec.DataDir == "" {
		return nil, errors.New("a data directory is required")
	}
	if spec.StartTimeout <= 0 {
		spec.StartTimeout = 60 * time.Second
	}
	if spec.Binary == "" {
		if spec.Binary, err = os.Executable(); err != nil {
			return nil, err
		}
	}
	if spec.BasePort == 0 {
		if spec.BasePort, err = cluster.FreeBasePort("127.0.0.1", spec.Nodes); err != nil {
			return nil, err
		}
	}
	if err := cluster.CheckPorts(spec.BasePort, spec.Nodes, 0); err != nil {
		return nil, err
	}
	// The host ports are known before anything starts: one held by
	// another process is named now, rather than as whatever Docker makes
	// of it when a container cannot bind it.
	for id := 0; id <= spec.Nodes; id++ {
		if err := cluster.CheckFree(cluster.NodeName(id), net.JoinHostPort("127.0.0.1", strconv.Itoa(spec.BasePort+id-1))); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(spec.DataDir, 0o755); err != nil {
		return nil, err
	}
	cli, err := newClient(ctx)
	if err != nil {
		return nil, err
	}
	c := &Cluster{spec: spec, run: randomID(), cli: cli}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	// Held until the containers exist (see lockImage); released before
	// Close on a failure, which takes it again.
	unlock, err := lockImage()
	if err != nil {
		return nil, err
	}
	locked := true
	defer func() {
		if locked {
			unlock()
		}
	}()
	if _, err := sweep(ctx, cli, false); err != nil {
		return nil, fmt.Errorf("removing leftovers of earlier runs: %w", err)
	}
	provider, err := testcontainers.NewDockerProvider()
	if err != nil {
		return nil, err
	}
	defer provider.Close()
	if c.image, c.ImageHash, err = ensureImage(ctx, cli, provider, spec.Binary); err != nil {
		return nil, err
	}
	labels := c.labels("")
	c.net, err = tcnetwork.New(ctx, tcnetwork.WithLabels(labels))
	if err != nil {
		return nil, fmt.Errorf("creating the network: %w", err)
	}

	ctrl := &Node{ID: cluster.ControllerNode, Name: "controller", port: controllerPort}
	c.nodes = append(c.nodes, ctrl)
	for i := 1; i <= spec.Nodes; i++ {
		c.nodes = append(c.nodes, &Node{ID: i, Name: cluster.NodeName(i), port: brokerPort})
	}
	for _, n := range c.nodes {
		n.Container = fmt.Sprintf("chaos-%s-%s", c.run, n.Name)
		n.HostAddr = net.JoinHostPort("127.0.0.1", strconv.Itoa(spec.BasePort+n.ID-1))
		n.DataDir = filepath.Join(spec.DataDir, n.Name)
		n.LogPath = filepath.Join(spec.DataDir, n.Name+".log")
		if err := os.MkdirAll(n.DataDir, 0o755); err != nil {
			return nil, err
		}
	}
	// The controller first: brokers register with it as they start.
	if err := c.create(ctx, ctrl); err != nil {
		return nil, err
	}
	if spec.NetworkFaults {
		if err := c.chooseDelays(ctx); err != nil {
			return nil, err
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(c.nodes))
	for _, n := range c.nodes[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[n.ID] = c.create(ctx, n)
		}()
	}
	wg.Wait()
	unlock()
	locked = false
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	c.watch()
	return c, nil
}

func (c *Cluster) labels(node string) map[string]string {
	l := map[string]string{labelRun: c.run, labelOwner: cluster.Owner(), labelHost: hostname()}
	if node != "" {
		l[labelNode] = node
	}
	return l
}

// args are the node's command line inside its container.
func (c *Cluster) args(n *Node) []string {
	listen := "0.0.0.0:" + strconv.Itoa(n.port)
	var id []string
	if c.spec.ClusterID != "" {
		id = []string{"--cluster-id", c.spec.ClusterID}
	}
	if n.ID == cluster.ControllerNode {
		return slices.Concat([]string{"controller", "--listen", listen, "--data", "/data"}, id, c.spec.ControllerArgs)
	}
	// Peers dial each other by alias on the private network, or through
	// the relay's link to the alias.
	var relay []string
	dial := func(peer int) string {
		target := net.JoinHostPort(cluster.NodeName(peer), strconv.Itoa(brokerPort))
		if peer == cluster.ControllerNode {
			target = net.JoinHostPort("controller", strconv.Itoa(controllerPort))
		}
		if c.mechanism != netfault.Userspace {
			return target
		}
		l := netfault.RelayLink{To: cluster.NodeName(peer), Listen: relayAddr(peer), Target: target}
		relay = append(relay, "--link", l.String())
		return l.Listen
	}
	a := []string{"broker", "--id", strconv.Itoa(n.ID), "--listen", listen,
		// Clients on the host get the bound host port.
		"--advertise", n.HostAddr,
		"--controller", dial(cluster.ControllerNode),
		"--data", "/data"}
	a = slices.Concat(a, id, c.spec.BrokerArgs)
	for j := 1; j <= c.spec.Nodes; j++ {
		if j != n.ID {
			a = append(a, "--peer-addr", fmt.Sprintf("%d=%s", j, dial(j)))
		}
	}
	if relay != nil {
		a = slices.Concat([]string{"netfault", "relay"}, relay, []string{"--"}, a)
	}
	return a
}

// relayAddr is where a broker's relay listens for its connections to node
// id: on the container's own loopback, so a port per peer is free.
func relayAddr(id int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(relayBasePort+id)) }

// relayBasePort is the relay's port for the controller; broker i's is i
// above it.
const relayBasePort = 19000

// chooseDelays picks the delay mechanism before the brokers start, since
// the userspace one changes how they are started.
func (c *Cluster) chooseDelays(ctx context.Context) error {
	switch c.spec.Delays {
	case netfault.Netem, netfault.HTB, netfault.Userspace:
		c.mechanism = c.spec.Delays
		return nil
	case "":
	default:
		return fmt.Errorf("unknown delay mechanism %q (want %s, %s or %s)", c.spec.Delays, netfault.Netem, netfault.HTB, netfault.Userspace)
	}
	p, err := c.probe(ctx)
	if err != nil {
		return err
	}
	c.mechanism, c.why = p.Mechanism, p.Why
	if p.Mechanism != netfault.Netem {
		c.mechanism = netfault.Userspace
	}
	return nil
}

func (c *Cluster) create(ctx context.Context, n *Node) error {
	port := network.MustParsePort(fmt.Sprintf("%d/tcp", n.port))
	_, hostPort, _ := net.SplitHostPort(n.HostAddr)
	req := testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image:          c.image,
			Name:           n.Container,
			Cmd:            c.args(n),
			Labels:         c.labels(n.Name),
			ExposedPorts:   []string{port.String()},
			Networks:       []string{c.net.Name},
			NetworkAliases: map[string][]string{c.net.Name: {n.Name}},
			WaitingFor:     wait.ForLog(readyLine).WithStartupTimeout(c.spec.StartTimeout),
			ConfigModifier: func(cfg *container.Config) {
				// The node runs as the tester's user, so that its data in
				// the run directory stays the tester's to read and delete.
				cfg.User = fmt.Sprintf("%d:%d", os.Getuid(), os.Getgid())
			},
			HostConfigModifier: func(hc *container.HostConfig) {
				hc.PortBindings = network.PortMap{port: {{HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: hostPort}}}
				hc.Binds = []string{n.DataDir + ":/data"}
				// For netfault, run by docker exec as root.
				hc.CapAdd = []string{"NET_ADMIN"}
			},
		},
		Started: true,
	}
	ctr, err := testcontainers.GenericContainer(ctx, req)
	if ctr != nil {
		c.mu.Lock()
		n.ctr = ctr
		c.mu.Unlock()
	}
	if err != nil {
		return fmt.Errorf("starting %s: %w%s", n.Name, err, c.logTail(n))
	}
	return c.refreshIP(ctx, n)
}

func (c *Cluster) refreshIP(ctx context.Context, n *Node) error {
	r, err := c.cli.ContainerInspect(ctx, n.ctr.GetContainerID(), client.ContainerInspectOptions{})
	if err != nil {
		return err
	}
	if r.Container.NetworkSettings == nil || r.Container.NetworkSettings.Networks[c.net.Name] == nil {
		return fmt.Errorf("%s is not on network %s", n.Name, c.net.Name)
	}
	n.ip = r.Container.NetworkSettings.Networks[c.net.Name].IPAddress.String()
	return nil
}

// logTail is the end of a node's log, for errors.
func (c *Cluster) logTail(n *Node) string {
	if n.ctr == nil {
		return ""
	}
	var buf bytes.Buffer
	if err := c.copyLogs(context.Background(), n, &buf, "10"); err != nil || buf.Len() == 0 {
		return ""
	}
	return "; its log ends:\n" + strings.TrimRight(buf.String(), "\n")
}

func (c *Cluster) copyLogs(ctx context.Context, n *Node, w *bytes.Buffer, tail string) error {
	rc, err := c.cli.ContainerLogs(ctx, n.ctr.GetContainerID(), client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Tail: tail})
	if err != nil {
		return err
	}
	defer rc.Close()
	_, err = stdcopy.StdCopy(w, w, rc)
	return err
}

// Node returns the node with the id.
func (c *Cluster) Node(id int) (*Node, error) {
	if id < 0 || id >= len(c.nodes) {
		return nil, fmt.Errorf("no node %d (brokers are 1..%d, the controller is %d)", id, len(c.nodes)-1, cluster.ControllerNode)
	}
	return c.nodes[id], nil
}

// Nodes returns the controller followed by the brokers.
func (c *Cluster) Nodes() []*Node { return c.nodes }

// Run is the run's id, the value of the chaos.run label.
func (c *Cluster) Run() string { return c.run }

// NetworkName is the private network's name.
func (c *Cluster) NetworkName() string { return c.net.Name }

// Bootstrap is the comma-separated host addresses of the brokers.
func (c *Cluster) Bootstrap() string {
	var a []string
	for _, n := range c.nodes[1:] {
		a = append(a, n.HostAddr)
	}
	return strings.Join(a, ",")
}

// ControllerAddr is the controller's host address.
func (c *Cluster) ControllerAddr() string { return c.nodes[0].HostAddr }

// Info describes the nodes, asking Docker whether each runs.
func (c *Cluster) Info() []NodeInfo {
	var out []NodeInfo
	for _, n := range c.nodes {
		running := false
		if r, err := c.cli.ContainerInspect(context.Background(), n.ctr.GetContainerID(), client.ContainerInspectOptions{}); err == nil && r.Container.State != nil {
			running = r.Container.State.Running
		}
		role := "broker"
		if n.ID == cluster.ControllerNode {
			role = "controller"
		}
		out = append(out, NodeInfo{ID: n.ID, Name: n.Name, Role: role, Addr: n.HostAddr,
			Where: "container " + n.Container, Running: running, Log: n.LogPath})
	}
	return out
}

// NodeInfo is cluster.NodeInfo.
type NodeInfo = cluster.NodeInfo

// Kill sends SIGKILL to a node's container and waits until it stopped.
func (c *Cluster) Kill(id int) error {
	return c.withNode(id, func(n *Node) error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := c.cli.ContainerKill(ctx, n.ctr.GetContainerID(), client.ContainerKillOptions{Signal: "KILL"}); err != nil && !isNotRunning(err) {
			return fmt.Errorf("kill %s: %w", n.Name, err)
		}
		c.wentDown(n)
		return c.waitStopped(ctx, n)
	})
}

// wentDown notes that a node stopped: its network namespace, and the
// rules in it, went with it.
func (c *Cluster) wentDown(n *Node) {
	n.down, n.paused = true, false
	if c.faults != nil {
		delete(c.faults.applied, n.Name)
	}
}

// Stop asks a node to shut down (SIGTERM) and kills it after timeout.
func (c *Cluster) Stop(id int, timeout time.Duration) error {
	return c.withNode(id, func(n *Node) error {
		ctx, cancel := context.WithTimeout(context.Background(), timeout+30*time.Second)
		defer cancel()
		secs := int((timeout + time.Second - 1) / time.Second)
		if n.paused {
			// A frozen process cannot handle SIGTERM.
			_, _ = c.cli.ContainerUnpause(ctx, n.ctr.GetContainerID(), client.ContainerUnpauseOptions{})
		}
		if _, err := c.cli.ContainerStop(ctx, n.ctr.GetContainerID(), client.ContainerStopOptions{Timeout: &secs}); err != nil {
			return fmt.Errorf("stop %s: %w", n.Name, err)
		}
		c.wentDown(n)
		return c.waitStopped(ctx, n)
	})
}

func (c *Cluster) waitStopped(ctx context.Context, n *Node) error {
	for {
		r, err := c.cli.ContainerInspect(ctx, n.ctr.GetContainerID(), client.ContainerInspectOptions{})
		if err != nil {
			return err
		}
		if r.Container.State == nil || !r.Container.State.Running {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s still running: %w", n.Name, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// isNotRunning: the daemon answers a kill of a container that is not
// running with 409 Conflict, which the client types (errdefs), so the
// kill has nothing left to do.
func isNotRunning(err error) bool { return cerrdefs.IsConflict(err) }

// withNode runs f on node id under the cluster's lock.
func (c *Cluster) withNode(id int, f func(n *Node) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := c.Node(id)
	if err != nil {
		return err
	}
	return f(n)
}

// Pause freezes a node's container (docker pause); Resume thaws it.
func (c *Cluster) Pause(id int) error {
	return c.withNode(id, func(n *Node) error {
		if _, err := c.cli.ContainerPause(context.Background(), n.ctr.GetContainerID(), client.ContainerPauseOptions{}); err != nil {
			return fmt.Errorf("pause %s: %w", n.Name, err)
		}
		n.paused = true
		return nil
	})
}

// Resume thaws a paused node and installs network rules that changed
// while it was frozen.
func (c *Cluster) Resume(id int) error {
	return c.withNode(id, func(n *Node) error {
		if _, err := c.cli.ContainerUnpause(context.Background(), n.ctr.GetContainerID(), client.ContainerUnpauseOptions{}); err != nil {
			return fmt.Errorf("resume %s: %w", n.Name, err)
		}
		n.paused = false
		return c.syncRules(context.Background(), false)
	})
}

// Restart starts a stopped or killed node's container again (same
// container: same data, same host port) and waits until it listens.
func (c *Cluster) Restart(ctx context.Context, id int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, err := c.Node(id)
	if err != nil {
		return err
	}
	var before bytes.Buffer
	_ = c.copyLogs(ctx, n, &before, "all")
	seen := strings.Count(before.String(), readyLine)
	if _, err := c.cli.ContainerStart(ctx, n.ctr.GetContainerID(), client.ContainerStartOptions{}); err != nil {
		return fmt.Errorf("restart %s: %w", n.Name, err)
	}
	n.down, n.paused, n.crashed = false, false, false
	deadline := time.Now().Add(c.spec.StartTimeout)
	for {
		var logs bytes.Buffer
		_ = c.copyLogs(ctx, n, &logs, "all")
		if strings.Count(logs.String(), readyLine) > seen {
			break
		}
		r, err := c.cli.ContainerInspect(ctx, n.ctr.GetContainerID(), client.ContainerInspectOptions{})
		if err == nil && r.Container.State != nil && !r.Container.State.Running {
			n.down = true
			return fmt.Errorf("%s exited during restart%s", n.Name, c.logTail(n))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not listening %s after its restart%s", n.Name, c.spec.StartTimeout, c.logTail(n))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	old := n.ip
	if err := c.refreshIP(ctx, n); err != nil {
		return err
	}
	// A restarted container has a fresh network namespace, without rules,
	// and maybe a new address that every other node's rules must learn.
	return c.syncRules(ctx, old != n.ip)
}

// Abort removes the containers (killing them) and the network at once,
// without copying the logs. It takes no lock, so it can cut a Close short.
func (c *Cluster) Abort() {
	c.stopWatching()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c.removeAll(ctx)
}

// removeAll removes the run's containers, found by their label (those that
// failed half-way through creation too), and its network. It checks until
// they are gone: a removal that Close started at the same time makes ours
// fail, and the process may exit right after.
func (c *Cluster) removeAll(ctx context.Context) {
	_ = waitfor.Until(ctx, 50*time.Millisecond, 0, func() (bool, error) {
		cs, err := c.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", labelRun+"="+c.run)})
		if err != nil || len(cs.Items) == 0 {
			return true, err
		}
		var wg sync.WaitGroup
		for _, x := range cs.Items {
			wg.Go(func() {
				_, _ = c.cli.ContainerRemove(ctx, x.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
			})
		}
		wg.Wait()
		return false, nil
	})
	if c.net == nil {
		return
	}
	_ = waitfor.Until(ctx, 100*time.Millisecond, 0, func() (bool, error) {
		_, err := c.cli.NetworkRemove(ctx, c.net.ID, client.NetworkRemoveOptions{})
		return err == nil || cerrdefs.IsNotFound(err), err
	})
}

// Close writes each node's log into the data directory, then removes the
// containers and the network. Safe to call more than once; it works even
// when the run's context was cancelled.
func (c *Cluster) Close() {
	c.stopWatching()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for _, n := range c.nodes {
		if n.ctr == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var logs bytes.Buffer
			if err := c.copyLogs(ctx, n, &logs, "all"); err == nil {
				_ = os.WriteFile(n.LogPath, logs.Bytes(), 0o644)
			}
			_, _ = c.cli.ContainerRemove(ctx, n.ctr.GetContainerID(), client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		}()
	}
	wg.Wait()
	c.removeAll(ctx)
	if unlock, err := lockImage(); err == nil {
		removeOldImages(ctx, c.cli)
		unlock()
	}
	_ = c.cli.Close()
}

var (
	_ cluster.Clocks = (*Cluster)(nil)
	_ cluster.Disks  = (*Cluster)(nil)
)

// SetClock sets node id's clock fault in its data directory, which is
// bind-mounted as the container's /data: the node reads it within 100 ms
// (package clockfault).
func (c *Cluster) SetClock(id int, offset time.Duration, rate float64) error {
	n, err := c.Node(id)
	if err != nil {
		return err
	}
	return clockfault.Write(n.DataDir, clockfault.Fault{Offset: offset, Rate: rate})
}

// DamageDisk damages node id's data directory, on the host side of its
// bind mount (cluster.DamageDir); the caller has killed the node.
func (c *Cluster) DamageDisk(id int, what string, seed uint64) (string, error) {
	n, err := c.Node(id)
	if err != nil {
		return "", err
	}
	return cluster.DamageDir(n.DataDir, what, seed)
}

// SnapshotDisk copies node id's data directory aside (cluster.SnapshotDir);
// the caller has killed the node.
func (c *Cluster) SnapshotDisk(id int) error {
	n, err := c.Node(id)
	if err != nil {
		return err
	}
	return cluster.SnapshotDir(n.DataDir)
}

// RestoreDisk puts the copy of node id's data directory back
// (cluster.RestoreDir); the caller has killed the node.
func (c *Cluster) RestoreDisk(id int) error {
	n, err := c.Node(id)
	if err != nil {
		return err
	}
	return cluster.RestoreDir(n.DataDir)
}
