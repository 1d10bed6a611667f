package external

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/chaos-isr/chaos/cluster"
	"github.com/chaos-isr/chaos/history"
)

// Node is a node the user named: a broker, at the address the cluster's
// metadata gives it (what clients dial), or the controller node.
type Node struct {
	Name string `json:"name"`
	Addr string `json:"addr"`
	// ID is the broker id the cluster's metadata gives the node, once the
	// runner has matched it; -1 for the controller node.
	ID int32 `json:"id"`
}

// Host is the host part of the node's address.
func (n Node) Host() string {
	h, _, _ := net.SplitHostPort(n.Addr)
	return h
}

// Port is the port part of the node's address.
func (n Node) Port() string {
	_, p, _ := net.SplitHostPort(n.Addr)
	return p
}

// namePattern keeps names and hosts safe to put into a shell command as
// they are: a template need not quote them.
var (
	namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	hostPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]+$`)
)

// ParseNode reads NAME=HOST:PORT.
func ParseNode(s string) (Node, error) {
	name, addr, ok := strings.Cut(s, "=")
	if !ok {
		return Node{}, fmt.Errorf("%q is not NAME=HOST:PORT", s)
	}
	if !namePattern.MatchString(name) {
		return Node{}, fmt.Errorf("%q: the name %q takes letters, digits, '.', '_' and '-' only (it goes into commands as it is)", s, name)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return Node{}, fmt.Errorf("%q: %q is not HOST:PORT", s, addr)
	}
	if !hostPattern.MatchString(host) {
		return Node{}, fmt.Errorf("%q: the host %q takes letters, digits, '.', ':', '_' and '-' only", s, host)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return Node{}, fmt.Errorf("%q: port %q is not a port from 1 to 65535", s, port)
	}
	return Node{Name: name, Addr: addr, ID: -1}, nil
}

// Commands are the command templates, by what they do to a node. An empty
// one is not supplied: the faults that need it are refused.
type Commands struct {
	Kill      string `json:"kill,omitempty"`
	Start     string `json:"start,omitempty"`
	Stop      string `json:"stop,omitempty"`
	Pause     string `json:"pause,omitempty"`
	Resume    string `json:"resume,omitempty"`
	Partition string `json:"partition,omitempty"`
	Slow      string `json:"slow,omitempty"`
	Heal      string `json:"heal,omitempty"`
}

// The actions, as commands are recorded and flags named (--ACTION-cmd):
// history's one set of them.
const (
	Kill      = string(history.ActKill)
	Start     = string(history.ActStart)
	Stop      = string(history.ActStop)
	Pause     = string(history.ActPause)
	Resume    = string(history.ActResume)
	Partition = string(history.ActPartition)
	Slow      = string(history.ActSlow)
	Heal      = string(history.ActHeal)
)

// Actions lists them in the order flags are documented.
func Actions() []string { return history.Strings(history.CommandActions()) }

// Of is the template for action ("" for none, or no such action).
func (c Commands) Of(action string) string {
	if f := c.Field(action); f != nil {
		return *f
	}
	return ""
}

// Field is the template field of action, for flags and files to fill;
// nil for no such action.
func (c *Commands) Field(action string) *string {
	switch action {
	case Kill:
		return &c.Kill
	case Start:
		return &c.Start
	case Stop:
		return &c.Stop
	case Pause:
		return &c.Pause
	case Resume:
		return &c.Resume
	case Partition:
		return &c.Partition
	case Slow:
		return &c.Slow
	case Heal:
		return &c.Heal
	}
	return nil
}

// Placeholders are what a template may name, with what each becomes.
var Placeholders = []struct{ Name, Doc string }{
	{"name", "the node's name (--node NAME=...)"},
	{"host", "the host of the node's address"},
	{"port", "the port of the node's address"},
	{"addr", "the node's HOST:PORT"},
	{"id", "the node's broker id in the cluster's metadata (empty for the controller node)"},
	{"peers", "the names of the nodes on the other side, space-separated (partition; heal: every other node)"},
	{"peer_hosts", "their hosts, space-separated"},
	{"peer_addrs", "their HOST:PORTs, space-separated"},
	{"delay", "slow: how long the links between the node and its peers hold every byte, each way, as 1s or 50ms"},
	{"delay_ms", "slow: the same in whole milliseconds"},
}

// placeholder matches {word}, but not ${word}: a shell variable in braces
// is the shell's.
var placeholder = regexp.MustCompile(`(^|[^$])\{([a-z_]+)\}`)

// Check refuses a template that names a placeholder there is none of.
func Check(template string) error {
	for _, m := range placeholder.FindAllStringSubmatch(template, -1) {
		if !slices.ContainsFunc(Placeholders, func(p struct{ Name, Doc string }) bool { return p.Name == m[2] }) {
			var known []string
			for _, p := range Placeholders {
				known = append(known, "{"+p.Name+"}")
			}
			return fmt.Errorf("{%s} is not a placeholder; known: %s", m[2], strings.Join(known, " "))
		}
	}
	return nil
}

// Expand fills template's placeholders for node and its peers (and a
// slow command's delay).
func Expand(template string, node Node, peers []Node, delay time.Duration) string {
	id := ""
	if node.ID >= 0 {
		id = strconv.Itoa(int(node.ID))
	}
	var names, hosts, addrs []string
	for _, p := range peers {
		names, hosts, addrs = append(names, p.Name), append(hosts, p.Host()), append(addrs, p.Addr)
	}
	vals := map[string]string{
		"name": node.Name, "host": node.Host(), "port": node.Port(), "addr": node.Addr, "id": id,
		"peers": strings.Join(names, " "), "peer_hosts": strings.Join(hosts, " "), "peer_addrs": strings.Join(addrs, " "),
		"delay": delay.String(), "delay_ms": strconv.FormatInt(delay.Milliseconds(), 10),
	}
	return placeholder.ReplaceAllStringFunc(template, func(m string) string {
		sub := placeholder.FindStringSubmatch(m)
		v, ok := vals[sub[2]]
		if !ok {
			return m
		}
		return sub[1] + v
	})
}

// Spec is an external cluster as the tester reaches and faults it.
type Spec struct {
	// Bootstrap are the addresses clients start from.
	Bootstrap []string
	// Brokers are the named brokers, in the nemesis's order: broker i is
	// Brokers[i-1].
	Brokers []Node
	// Controller is the controller node, if one was named: node 0.
	Controller *Node
	Commands   Commands
	// Timeout bounds each command; StartWait how long a started broker
	// may take to accept connections again; DownWait how long a killed
	// or stopped one may go on accepting them.
	Timeout, StartWait, DownWait time.Duration
	// LogDir holds NAME.log for each node: the commands run on it.
	LogDir string
	// Answers says whether the broker at addr answers a request within
	// a second (the runner asks through the protocol); a paused broker
	// must not. Nil: pauses are not checked.
	Answers func(ctx context.Context, addr string) bool
}

// ControllerNode is what Has and FlagOf call the controller node; Delay,
// a delay of every link, which the slow command gives.
const (
	ControllerNode = "controller"
	Delay          = "delay"
)

// Has says whether the spec can do what: an action (Actions) whose
// command was given, or ControllerNode, a controller node to aim at.
// Anything else (delays, one-way or random drops, losing unsynced
// writes) no external cluster has. The nemesis's needs go by the same
// words (the runner checks one against the other).
func (s Spec) Has(what string) bool {
	switch what {
	case ControllerNode:
		return s.Controller != nil
	case Delay:
		// Every link delayed is every node slowed from all the others.
		return s.Commands.Slow != ""
	}
	return slices.Contains(Actions(), what) && s.Commands.Of(what) != ""
}

// FlagOf names the flag that supplies what, "" for what no flag does.
func FlagOf(what string) string {
	switch {
	case what == ControllerNode:
		return "--controller-node"
	case what == Delay:
		return "--slow-cmd"
	case slices.Contains(Actions(), what):
		return "--" + what + "-cmd"
	}
	return ""
}

// Cluster is an external cluster being tested: the process and network
// faults its commands give.
type Cluster struct {
	spec Spec

	mu     sync.Mutex
	cmds   []history.Command
	down   map[string]bool // killed or stopped, to start at Close
	paused map[string]bool
	cut    bool
	closed bool
}

var (
	_ cluster.Cluster = (*Cluster)(nil)
	_ cluster.Network = (*Cluster)(nil)
)

// New is the cluster spec describes; it runs nothing.
func New(spec Spec) *Cluster {
	if spec.Timeout <= 0 {
		spec.Timeout = 60 * time.Second
	}
	if spec.StartWait <= 0 {
		spec.StartWait = 60 * time.Second
	}
	if spec.DownWait <= 0 {
		spec.DownWait = 5 * time.Second
	}
	return &Cluster{spec: spec, down: map[string]bool{}, paused: map[string]bool{}}
}

// node is node id: 0 the controller node, brokers 1..n.
func (c *Cluster) node(id int) (Node, error) {
	if id == 0 {
		if c.spec.Controller == nil {
			return Node{}, errors.New("no controller node was named (--controller-node)")
		}
		return *c.spec.Controller, nil
	}
	if id < 1 || id > len(c.spec.Brokers) {
		return Node{}, fmt.Errorf("no broker %d: %d were named", id, len(c.spec.Brokers))
	}
	return c.spec.Brokers[id-1], nil
}

// Name is node id's name, as the nemesis records it.
func (c *Cluster) Name(id int) string {
	n, err := c.node(id)
	if err != nil {
		return cluster.NodeName(id)
	}
	return n.Name
}

// nodes are every named node, the controller node first.
func (c *Cluster) nodes() []Node {
	var out []Node
	if c.spec.Controller != nil {
		out = append(out, *c.spec.Controller)
	}
	return append(out, c.spec.Brokers...)
}

func (c *Cluster) byName(name string) (Node, bool) {
	i := slices.IndexFunc(c.nodes(), func(n Node) bool { return n.Name == name })
	if i < 0 {
		return Node{}, false
	}
	return c.nodes()[i], true
}

// Kill runs the kill command on node id, then checks that the node's
// address stops accepting connections.
func (c *Cluster) Kill(id int) error { return c.takeDown(Kill, id) }

// Stop runs the stop command on node id (the command itself decides how
// gracefully; timeout is the chaos runtime's and unused here), then
// checks as Kill does.
func (c *Cluster) Stop(id int, _ time.Duration) error { return c.takeDown(Stop, id) }

// takeDown runs a kill or stop command. A command that exits 0 and leaves
// the node answering (the wrong container, a unit that restarts at once)
// would make a window of a fault that never happened, judged as if it
// had: the node's address must refuse a connection within DownWait.
func (c *Cluster) takeDown(action string, id int) error {
	if err := c.act(context.Background(), action, id, c.down); err != nil {
		return err
	}
	n, _ := c.node(id)
	if err := refusing(n.Addr, c.spec.DownWait); err != nil {
		return c.noEffect(action, n, fmt.Sprintf("%s: the %s command exited 0, but %v: did it %s the node?", n.Name, action, err, action))
	}
	return nil
}

// refusing waits up to wait for addr to refuse a connection once.
func refusing(addr string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return nil
		}
		conn.Close()
		if time.Now().After(deadline) {
			return fmt.Errorf("%s still accepts connections after %s", addr, wait)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Pause runs the pause command on node id. A broker that goes on
// answering after its pause command exited 0 was not paused (the wrong
// process, a command that did nothing): the window fails rather than be
// judged as a pause that never happened.
func (c *Cluster) Pause(id int) error {
	if err := c.act(context.Background(), Pause, id, c.paused); err != nil {
		return err
	}
	n, _ := c.node(id)
	if c.spec.Answers == nil || n.ID < 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.spec.DownWait)
	defer cancel()
	for ctx.Err() == nil {
		if !c.spec.Answers(ctx, n.Addr) {
			return nil
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
	return c.noEffect(Pause, n, fmt.Sprintf("%s: the pause command exited 0, but the broker at %s still answers requests after %s: did it pause the node?", n.Name, n.Addr, c.spec.DownWait))
}

// Resume runs the resume command on node id.
func (c *Cluster) Resume(id int) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	err = c.run(context.Background(), Resume, n, nil)
	c.mu.Lock()
	delete(c.paused, n.Name)
	c.mu.Unlock()
	return err
}

// Restart runs the start command on node id, then waits until the node
// accepts connections at its address, as a restart in the tester's own
// runtimes returns once the node listens.
func (c *Cluster) Restart(ctx context.Context, id int) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	if err := c.run(ctx, Start, n, nil); err != nil {
		return err
	}
	if err := listening(ctx, n.Addr, c.spec.StartWait); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s: the start command succeeded, but %w", n.Name, err)
		}
		return c.noEffect(Start, n, fmt.Sprintf("%s: the start command succeeded, but %v", n.Name, err))
	}
	c.mu.Lock()
	delete(c.down, n.Name)
	c.mu.Unlock()
	return nil
}

// act runs action on node id and marks it in state (to undo at Close),
// whether or not the command succeeded: a kill that failed halfway may
// still have killed.
func (c *Cluster) act(ctx context.Context, action string, id int, state map[string]bool) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	c.mu.Lock()
	state[n.Name] = true
	c.mu.Unlock()
	return c.run(ctx, action, n, nil)
}

// listening waits up to wait for addr to accept a connection.
func listening(ctx context.Context, addr string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		d := net.Dialer{Timeout: time.Second}
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			conn.Close()
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s accepts no connection after %s: %v", addr, wait, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Partition runs the partition command on every node of a with the nodes
// of b as its peers, and on every node of b with those of a: each node
// cuts itself off from the other side, as Jepsen's iptables rules do.
// Every command runs even when one fails; the error joins their failures.
func (c *Cluster) Partition(a, b []string) error {
	c.mu.Lock()
	c.cut = true
	c.mu.Unlock()
	var errs []error
	c.partitionSide(a, b, &errs)
	c.partitionSide(b, a, &errs)
	return errors.Join(errs...)
}

func (c *Cluster) partitionSide(side, other []string, errs *[]error) {
	peers := c.named(Partition, other, errs)
	for _, n := range c.named(Partition, side, errs) {
		if err := c.run(context.Background(), Partition, n, peers); err != nil {
			*errs = append(*errs, err)
		}
	}
}

// named are the nodes called names, in order; a name no node has fails
// the network fault (action) it was given for.
func (c *Cluster) named(action string, names []string, errs *[]error) []Node {
	var out []Node
	for _, name := range names {
		if n, ok := c.byName(name); ok {
			out = append(out, n)
		} else {
			*errs = append(*errs, fmt.Errorf("%s: no node named %s", action, name))
		}
	}
	return out
}

// others are every node but n.
func (c *Cluster) others(n Node) []Node {
	return slices.DeleteFunc(c.nodes(), func(p Node) bool { return p.Name == n.Name })
}

// HealAll runs the heal command on every node, with every other node as
// its peers.
func (c *Cluster) HealAll() error {
	var errs []error
	for _, n := range c.nodes() {
		if err := c.run(context.Background(), Heal, n, c.others(n)); err != nil {
			errs = append(errs, err)
		}
	}
	c.mu.Lock()
	c.cut = false
	c.mu.Unlock()
	return errors.Join(errs...)
}

// Slow runs the slow command on from, with to as its peer.
func (c *Cluster) Slow(from, to string, d time.Duration) error {
	var errs []error
	for _, n := range c.named(Slow, []string{from}, &errs) {
		c.slow(n, c.named(Slow, []string{to}, &errs), d, &errs)
	}
	return errors.Join(errs...)
}

// DelayAll runs the slow command on every node, with every other node as
// its peers.
func (c *Cluster) DelayAll(d time.Duration) error {
	var errs []error
	for _, n := range c.nodes() {
		c.slow(n, c.others(n), d, &errs)
	}
	return errors.Join(errs...)
}

func (c *Cluster) slow(n Node, peers []Node, d time.Duration, errs *[]error) {
	c.mu.Lock()
	c.cut = true
	c.mu.Unlock()
	if err := c.runDelay(context.Background(), Slow, n, peers, d); err != nil {
		*errs = append(*errs, err)
	}
}

// OneWay and DropAll have no command: the faults that need them are
// refused before a run (Spec.Has), so reaching one is a bug to report,
// not a fault to fake.
func (c *Cluster) OneWay(_, _ []string) error {
	return errors.New("one-way drops: the external runtime has no command for them")
}

// DropAll: see OneWay.
func (c *Cluster) DropAll(float64, uint64) error {
	return errors.New("random drops: the external runtime has no command for them")
}

// TakeCommands returns the commands run since the last call.
func (c *Cluster) TakeCommands() []history.Command {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.cmds
	c.cmds = nil
	return out
}

// Bootstrap is the comma-separated bootstrap addresses.
func (c *Cluster) Bootstrap() string { return strings.Join(c.spec.Bootstrap, ",") }

// ControllerAddr is the controller node's address, or "".
func (c *Cluster) ControllerAddr() string {
	if c.spec.Controller == nil {
		return ""
	}
	return c.spec.Controller.Addr
}

// Info describes the named nodes, the controller node first. Whether a
// node runs is not known here: Running says only that the tester has not
// killed or stopped it.
func (c *Cluster) Info() []cluster.NodeInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []cluster.NodeInfo
	add := func(id int, n Node, role string) {
		out = append(out, cluster.NodeInfo{ID: id, Name: n.Name, Role: role, Addr: n.Addr, Where: "external",
			Running: !c.down[n.Name], Log: c.logPath(n.Name)})
	}
	if c.spec.Controller != nil {
		add(0, *c.spec.Controller, "controller")
	}
	for i, n := range c.spec.Brokers {
		add(i+1, n, "broker")
	}
	return out
}

// Close leaves the cluster as the test found it, as far as the commands
// can: it heals the network, resumes paused nodes and starts the ones
// killed or stopped and not started since (a run that was interrupted
// leaves them so). The commands it runs are logged but in no history:
// the run's is closed. Safe to call more than once.
func (c *Cluster) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	cut, paused, down := c.cut, keys(c.paused), keys(c.down)
	c.mu.Unlock()
	if cut && c.spec.Commands.Heal != "" {
		_ = c.HealAll() // logged; there is no history left to record it in
	}
	for _, name := range paused {
		if n, ok := c.byName(name); ok && c.spec.Commands.Resume != "" {
			_ = c.run(context.Background(), Resume, n, nil)
		}
	}
	for _, name := range down {
		if n, ok := c.byName(name); ok && c.spec.Commands.Start != "" {
			_ = c.run(context.Background(), Start, n, nil)
		}
	}
}

// Abort gives up on the cluster at once: nothing is restored (the user
// asked for it with a second interrupt); the node logs say what was left.
func (c *Cluster) Abort() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (c *Cluster) logPath(name string) string {
	if c.spec.LogDir == "" {
		return ""
	}
	return filepath.Join(c.spec.LogDir, name+".log")
}

// maxOutput is how much of a command's output the history keeps: its
// tail, where the reason for a failure usually is. The node's log keeps
// it whole.
const maxOutput = 2000

// run runs action's command on node, records it, and says how it failed.
func (c *Cluster) run(ctx context.Context, action string, node Node, peers []Node) error {
	return c.runDelay(ctx, action, node, peers, 0)
}

// runDelay is run with a slow command's delay.
func (c *Cluster) runDelay(ctx context.Context, action string, node Node, peers []Node, delay time.Duration) error {
	tmpl := c.spec.Commands.Of(action)
	if tmpl == "" {
		return fmt.Errorf("%s %s: no --%s-cmd was given", action, node.Name, action)
	}
	line := Expand(tmpl, node, peers, delay)
	ctx, cancel := context.WithTimeout(ctx, c.spec.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", line)
	// A group of its own, so that a timeout kills what the command
	// started too (ssh, docker) and the tester leaves no orphans.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	runErr := cmd.Run()
	rec := history.Command{Node: node.Name, Action: action, Cmd: line, Exit: -1, Millis: time.Since(start).Milliseconds()}
	if cmd.ProcessState != nil && cmd.ProcessState.Exited() {
		rec.Exit = cmd.ProcessState.ExitCode()
	}
	text := out.String()
	rec.Output = text
	if len(text) > maxOutput {
		rec.Output = "..." + text[len(text)-maxOutput:]
	}
	var err error
	ce := &CommandError{Action: action, Node: node.Name, Cmd: line, Exit: rec.Exit, Tail: lastLine(text)}
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		ce.msg = fmt.Sprintf("%s command for %s timed out after %s: %s", action, node.Name, c.spec.Timeout, line)
		ce.TimedOut, err = true, ce
	case runErr != nil && rec.Exit > 0:
		ce.msg = fmt.Sprintf("%s command for %s exited %d: %s%s", action, node.Name, rec.Exit, line, prefixed(ce.Tail))
		err = ce
	case runErr != nil && ctx.Err() != nil:
		// The run gave up on the command (an interrupt): not the
		// command's failure.
		err = fmt.Errorf("%s command for %s: %s: %w", action, node.Name, line, runErr)
	case runErr != nil:
		ce.msg = fmt.Sprintf("%s command for %s: %s: %v", action, node.Name, line, runErr)
		err = ce
	}
	if err != nil {
		rec.Error = err.Error()
	}
	c.mu.Lock()
	c.cmds = append(c.cmds, rec)
	c.mu.Unlock()
	c.log(node.Name, start, rec, text)
	return err
}

// CommandError is a fault command of the user's that failed: it exited
// non-zero, ran past its timeout, or exited 0 without the effect it is
// for (a killed node that still accepts connections). Such a command
// fails the same way in every later window, so the nemesis stops the run
// at the first one (it knows it by FaultCommand) rather than go on to the
// time limit with windows that never start.
type CommandError struct {
	Action, Node string
	// Cmd is the command as it ran, placeholders filled in.
	Cmd string
	// Exit is its exit status: -1 if it did not exit (killed at its
	// timeout, or it did not start); 0 if it exited 0 without effect.
	Exit     int
	TimedOut bool
	// Tail is the last line of its output, where the reason usually is.
	Tail string
	msg  string
}

func (e *CommandError) Error() string { return e.msg }

// FaultCommand is the command that failed.
func (e *CommandError) FaultCommand() string { return e.Cmd }

// noEffect is the error of action's command on n that exited 0 but did
// not do what it is for; the node's log says so after the command.
func (c *Cluster) noEffect(action string, n Node, why string) error {
	c.logLine(n.Name, "-- "+why)
	return &CommandError{Action: action, Node: n.Name, Cmd: Expand(c.spec.Commands.Of(action), n, nil, 0), msg: why}
}

// lastLine is the output's last non-empty line, for an error that says
// why without the whole output.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	l := strings.TrimSpace(lines[len(lines)-1])
	if len(l) > 300 {
		l = l[:300] + "..."
	}
	return l
}

// prefixed is s as ": s", or "" for none.
func prefixed(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}

// log appends the command and its whole output to the node's log.
func (c *Cluster) log(name string, at time.Time, rec history.Command, out string) {
	path := c.logPath(name)
	if path == "" {
		return
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	status := fmt.Sprintf("exit %d", rec.Exit)
	if rec.Error != "" && rec.Exit <= 0 {
		status = rec.Error
	}
	fmt.Fprintf(f, "%s %s: sh -c %q\n%s", at.UTC().Format(time.RFC3339Nano), rec.Action, rec.Cmd, out)
	if out != "" && !strings.HasSuffix(out, "\n") {
		fmt.Fprintln(f)
	}
	fmt.Fprintf(f, "-- %s after %dms\n", status, rec.Millis)
}

// logLine appends a line of the tester's own to the node's log.
func (c *Cluster) logLine(name, line string) {
	path := c.logPath(name)
	if path == "" || os.MkdirAll(filepath.Dir(path), 0o755) != nil {
		return
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintln(f, line)
}
