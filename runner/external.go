package runner

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/cluster/external"
	"github.com/chaos-isr/chaos/internal/cli"
	"github.com/chaos-isr/chaos/nemesis"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/workload"
)

// RuntimeExternal tests a cluster the tester did not start: Apache Kafka,
// Redpanda, or chaos's own started apart, reached at Spec.External's
// bootstrap addresses and faulted only through the user's commands
// (package cluster/external).
const RuntimeExternal = "external"

// External is how a run of the external runtime reaches and faults its
// cluster.
type External struct {
	// Bootstrap are the addresses clients start from.
	Bootstrap []string `json:"bootstrap"`
	// Topic is an existing, empty topic to test, or the name of one to
	// create; empty: a new topic, chaos-RANDOM.
	Topic string `json:"topic,omitempty"`
	// Nodes name the brokers, NAME=HOST:PORT with the address the
	// cluster's metadata gives the broker; ControllerNode names a node
	// that is not a broker (a KRaft controller, chaos's controller) for
	// the faults that aim at a controller.
	Nodes          []string `json:"nodes,omitempty"`
	ControllerNode string   `json:"controller_node,omitempty"`
	// CombinedControllers: every broker is also a controller (KRaft
	// combined mode, Redpanda), so a fault that cuts a broker off cuts
	// off a controller with it, and no controller runs apart to name.
	CombinedControllers bool `json:"combined_controllers,omitempty"`
	// AllowWeakened runs the faults that cut links to the controller
	// without a controller node, though a controller that runs apart then
	// stays in touch with every broker; they are marked weakened in the
	// verdict. Without it (or a controller node, or CombinedControllers)
	// they are refused.
	AllowWeakened bool `json:"allow_weakened_faults,omitempty"`
	// Commands are the fault command templates.
	Commands external.Commands `json:"commands,omitempty"`
	// CommandTimeout bounds each command; 0: 60 s.
	CommandTimeout time.Duration `json:"command_timeout,omitempty"`
	// CheckCommands tries the fault commands before the workload
	// (external.Cluster.CheckCommands) and refuses the run at the first
	// broken one.
	CheckCommands bool `json:"check_commands,omitempty"`
}

// ExternalFlags are chaos run's and chaos campaign's flags for the
// external runtime (chaos sim has no use for them).
type ExternalFlags struct {
	// File is --cluster-file: the same settings in a JSON file (see
	// ClusterFile), which the flags given override.
	File                             string
	Bootstrap, Topic, ControllerNode string
	Nodes                            []string
	Commands                         external.Commands
	CommandTimeout                   time.Duration
	CombinedControllers              bool
	AllowWeakened, CheckCommands     bool
}

// RegisterExternal defines the external runtime's flags on fs.
func (f *ExternalFlags) RegisterExternal(fs *pflag.FlagSet) {
	fs.StringVar(&f.File, "cluster-file", "", "--runtime external: a JSON file with the cluster's bootstrap, topic, nodes, controller_node, commands and command_timeout (flags given override it)")
	fs.StringVar(&f.Bootstrap, "bootstrap", "", "--runtime external: the cluster's bootstrap addresses, HOST:PORT,...")
	fs.StringVar(&f.Topic, "topic", "", "--runtime external: an existing empty topic to test (judged by its own settings), or a new topic's name (default: a new topic chaos-RANDOM)")
	fs.StringArrayVar(&f.Nodes, "node", nil, "--runtime external: name a broker for fault commands, NAME=HOST:PORT as the cluster's metadata gives its address (repeatable; faults need every broker named)")
	fs.StringVar(&f.ControllerNode, "controller-node", "", "--runtime external: a node that is not a broker, NAME=HOST:PORT, for the faults that aim at the controller")
	apart := apartFaults()
	fs.BoolVar(&f.CombinedControllers, "combined-controllers", false, "--runtime external: every broker is also a controller (KRaft combined mode, Redpanda): cutting a broker off cuts off a controller too, so "+apart+" need no --controller-node")
	fs.BoolVar(&f.AllowWeakened, "allow-weakened-faults", false, "--runtime external: without --controller-node, run "+apart+" anyway, though a controller apart from the brokers stays reachable; the verdict, results.json and the report mark them weakened")
	for _, a := range external.Actions() {
		fs.StringVar(f.Commands.Field(a), a+"-cmd", "", "--runtime external: "+cmdDoc[a]+"; run with sh -c, placeholders {name} {host} {port} {addr} {id} {peers} {peer_hosts} {peer_addrs} {delay} {delay_ms}")
	}
	fs.DurationVar(&f.CommandTimeout, "cmd-timeout", 0, "--runtime external: how long a fault command may run before it is killed and the fault fails (default 60s)")
	fs.BoolVar(&f.CheckCommands, "check-commands", false, "--runtime external: before the workload, run the heal command on every node and probe the other fault commands for every node (sh -n parses it, command -v finds its program; not run); refuse the run at the first broken one")
}

// apartFaults names the fault kinds that cut or slow links to the
// controller, as help lists them.
func apartFaults() string {
	var names []string
	for _, f := range nemesis.Faults() {
		if f.ApartController != "" {
			names = append(names, f.Name)
		}
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

var cmdDoc = map[string]string{
	external.Kill:      "command that kills node {name} at once (kill -9)",
	external.Start:     "command that starts a killed or stopped node again (chaos waits until {addr} accepts connections)",
	external.Stop:      "command that stops a node gracefully",
	external.Pause:     "command that pauses a node (SIGSTOP)",
	external.Resume:    "command that resumes a paused node",
	external.Partition: "command, run on each node of a partition's side, that cuts it off from {peers}, both ways",
	external.Slow:      "command that delays the links between {name} and {peers} by {delay} ({delay_ms} ms), each way (slow-follower, latency)",
	external.Heal:      "command, run on every node, that removes every cut and delay",
}

// given says whether any external flag was set.
func (f ExternalFlags) given() bool {
	return f.File != "" || f.Bootstrap != "" || f.Topic != "" || f.ControllerNode != "" || len(f.Nodes) > 0 || f.Commands != (external.Commands{}) ||
		f.CombinedControllers || f.AllowWeakened || f.CheckCommands || f.CommandTimeout != 0
}

// apply checks the external flags against the runtime, naming a bad one,
// and puts them into s.
func (f ExternalFlags) apply(s *Spec) error {
	if s.Runtime != RuntimeExternal {
		if f.given() {
			return cli.Error("runtime", s.Runtime, "not external, but the external runtime's flags were given (--bootstrap, --node, --*-cmd ...)", "--runtime external")
		}
		return nil
	}
	if f.File != "" {
		var err error
		if f, err = f.withFile(); err != nil {
			return err
		}
	}
	if f.Bootstrap == "" {
		return cli.Error("bootstrap", "", "missing", "the cluster's bootstrap addresses, HOST:PORT,... (--runtime external starts no cluster)")
	}
	x := &External{Topic: f.Topic, Nodes: f.Nodes, ControllerNode: f.ControllerNode, Commands: f.Commands, CommandTimeout: f.CommandTimeout,
		CombinedControllers: f.CombinedControllers, AllowWeakened: f.AllowWeakened, CheckCommands: f.CheckCommands}
	for _, a := range strings.Split(f.Bootstrap, ",") {
		a = strings.TrimSpace(a)
		if _, _, err := net.SplitHostPort(a); err != nil {
			return cli.Error("bootstrap", f.Bootstrap, fmt.Sprintf("%q is not HOST:PORT", a), "HOST:PORT,...")
		}
		x.Bootstrap = append(x.Bootstrap, a)
	}
	for _, n := range f.Nodes {
		if _, err := external.ParseNode(n); err != nil {
			return cli.Error("node", n, err.Error(), "NAME=HOST:PORT")
		}
	}
	if f.ControllerNode != "" {
		if _, err := external.ParseNode(f.ControllerNode); err != nil {
			return cli.Error("controller-node", f.ControllerNode, err.Error(), "NAME=HOST:PORT")
		}
		if f.CombinedControllers {
			return cli.Error("combined-controllers", true, "given with --controller-node, which names a controller that runs apart from the brokers", "one or the other")
		}
	}
	for _, a := range external.Actions() {
		if err := external.Check(f.Commands.Of(a)); err != nil {
			return cli.Error(a+"-cmd", f.Commands.Of(a), err.Error(), "a shell command with placeholders")
		}
	}
	if f.CommandTimeout < 0 {
		return cli.Error("cmd-timeout", f.CommandTimeout, "negative", "a duration such as 60s (leave it out for 60s)")
	}
	s.External = x
	return nil
}

// ClusterFile is --cluster-file's JSON: an external cluster described
// once, for every run against it, e.g.
//
//	{"bootstrap": "10.0.0.1:9092,10.0.0.2:9092",
//	 "nodes": ["kafka-1=10.0.0.1:9092", "kafka-2=10.0.0.2:9092"],
//	 "commands": {"kill": "ssh {host} sudo systemctl kill -s KILL kafka",
//	              "start": "ssh {host} sudo systemctl start kafka"},
//	 "command_timeout": "30s"}
type ClusterFile struct {
	Bootstrap      string   `json:"bootstrap"`
	Topic          string   `json:"topic,omitempty"`
	Nodes          []string `json:"nodes,omitempty"`
	ControllerNode string   `json:"controller_node,omitempty"`
	// CombinedControllers is --combined-controllers: a property of the
	// cluster, so the file may say it once.
	CombinedControllers bool              `json:"combined_controllers,omitempty"`
	Commands            external.Commands `json:"commands,omitempty"`
	CommandTimeout      string            `json:"command_timeout,omitempty"`
}

// withFile is the flags with what --cluster-file says wherever a flag
// was not given.
func (f ExternalFlags) withFile() (ExternalFlags, error) {
	bad := func(why string) error {
		return cli.Error("cluster-file", f.File, why, `a JSON object with bootstrap, and optionally topic, nodes ["NAME=HOST:PORT", ...], controller_node, combined_controllers (true), commands {"kill": ..., "start": ...} and command_timeout ("60s")`)
	}
	data, err := os.ReadFile(f.File)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return f, bad(pe.Err.Error())
		}
		return f, bad(err.Error())
	}
	var cf ClusterFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cf); err != nil {
		return f, bad(err.Error())
	}
	f.Bootstrap = cmp.Or(f.Bootstrap, cf.Bootstrap)
	f.Topic = cmp.Or(f.Topic, cf.Topic)
	f.ControllerNode = cmp.Or(f.ControllerNode, cf.ControllerNode)
	f.CombinedControllers = f.CombinedControllers || cf.CombinedControllers
	if len(f.Nodes) == 0 {
		f.Nodes = cf.Nodes
	}
	for _, a := range external.Actions() {
		if p := f.Commands.Field(a); *p == "" {
			*p = cf.Commands.Of(a)
		}
	}
	if cf.CommandTimeout != "" && f.CommandTimeout == 0 {
		d, err := time.ParseDuration(cf.CommandTimeout)
		if err != nil {
			return f, bad("command_timeout: " + err.Error())
		}
		f.CommandTimeout = d
	}
	return f, nil
}

// validateExternal is Validate's part for the external runtime: what the
// faults need must have been supplied, and what only chaos's own brokers
// have must not be asked for.
func (s Spec) validateExternal(bad func(string, ...any)) {
	x := s.External
	if s.Runtime != RuntimeExternal {
		if x != nil {
			bad("external: given, but the runtime is %s", s.Runtime)
		}
		return
	}
	if x == nil || len(x.Bootstrap) == 0 {
		bad("external.bootstrap: empty; the external runtime starts no cluster and needs its addresses")
		return
	}
	names := map[string]bool{}
	for _, n := range append(slices.Clone(x.Nodes), x.ControllerNode) {
		if n == "" {
			continue
		}
		node, err := external.ParseNode(n)
		if err != nil {
			bad("external.nodes: %v", err)
			continue
		}
		if names[node.Name] {
			bad("external.nodes: %s named twice", node.Name)
		}
		names[node.Name] = true
	}
	for _, a := range external.Actions() {
		if err := external.Check(x.Commands.Of(a)); err != nil {
			bad("external.commands.%s: %v", a, err)
		}
	}
	spec := x.spec()
	for _, m := range nemesis.Missing(s.Faults, spec.Has) {
		bad("faults: %s", flagsFor(m))
	}
	if !x.AllowWeakened {
		apart := nemesis.ApartController(s.Faults)
		for _, k := range slices.Sorted(maps.Keys(x.weakened(s.Faults))) {
			bad("faults: %s cannot be applied as documented without --controller-node: if the controller runs apart from the brokers, %s. "+
				"Give --controller-node NAME=HOST:PORT (a controller that runs apart, for the faults to cut off too), "+
				"--combined-controllers (every broker is also a controller: KRaft combined mode, Redpanda), "+
				"or --allow-weakened-faults (run it anyway, marked weakened in the verdict)", k, apart[k])
		}
	}
	if len(s.Faults) > 0 && len(x.Nodes) == 0 {
		bad("faults: %s on an external cluster needs the brokers named (--node NAME=HOST:PORT for each)", strings.Join(s.Faults, ","))
	}
	st := s.Settings
	switch {
	case len(st.Bugs) > 0:
		bad("settings.bugs: %s: bugs are planted in chaos's own brokers, which the external runtime does not start", strings.Join(st.Bugs, ","))
	case st.LoseUnsynced || nemesis.LosesUnsynced(s.Faults):
		bad("settings.lose_unsynced: only chaos's own brokers keep unsynced writes in memory to lose them")
	case s.BasePort != 0:
		bad("base_port: %d: the external runtime starts no cluster; its addresses are external.bootstrap", s.BasePort)
	}
}

// weakened says which of the faults this external cluster can apply only
// in part, with what they lack, as checker.Config.Weakened takes it: the
// faults that cut links to the controller, when no controller node was
// named and the brokers were not said to be the controllers.
func (x *External) weakened(faults []string) map[string]string {
	if x == nil || x.ControllerNode != "" || x.CombinedControllers {
		return nil
	}
	out := map[string]string{}
	for k, why := range nemesis.ApartController(faults) {
		out[k] = "without --controller-node: " + why
	}
	return out
}

// flagsFor says, of a Missing line ("kill-leader needs kill, start"),
// which flags would supply what the fault needs, or that none can.
func flagsFor(missing string) string {
	fault, needs, _ := strings.Cut(missing, " needs ")
	var parts []string
	for _, n := range strings.Split(needs, ", ") {
		if f := external.FlagOf(n); f != "" {
			parts = append(parts, fmt.Sprintf("%s (give %s)", n, f))
		} else {
			parts = append(parts, n+" (no command of the external runtime does it)")
		}
	}
	return fmt.Sprintf("%s cannot run on this external cluster: it needs %s", fault, strings.Join(parts, ", "))
}

// spec is the external cluster's runtime spec before the run matched its
// nodes to the cluster's brokers.
func (x *External) spec() external.Spec {
	es := external.Spec{Bootstrap: x.Bootstrap, Commands: x.Commands, Timeout: x.CommandTimeout}
	for _, n := range x.Nodes {
		if node, err := external.ParseNode(n); err == nil {
			es.Brokers = append(es.Brokers, node)
		}
	}
	if node, err := external.ParseNode(x.ControllerNode); err == nil {
		es.Controller = &node
	}
	return es
}

// connected is an external cluster as a run found it.
type connected struct {
	cluster   *external.Cluster
	spec      external.Spec
	clusterID string
	brokers   int
	// anyBroker is the lowest broker id the metadata lists, to ask for
	// broker configs.
	anyBroker int32
	// brokerIDs are the metadata ids of the nemesis's brokers 1..n.
	brokerIDs []int32
}

// connect asks the external cluster who its brokers are and matches the
// named nodes to them: every --node must be a broker the cluster lists,
// and with faults every broker must be named, so that a fault aimed at a
// leader can reach it.
func (x *External) connect(ctx context.Context, logDir string, faults bool) (*connected, error) {
	md, err := workload.ClusterMetadata(ctx, x.Bootstrap, 10*time.Second)
	if err != nil {
		return nil, fmt.Errorf("external cluster: %w", err)
	}
	es := x.spec()
	es.LogDir = logDir
	es.Answers = answers
	byID := map[int32]external.Node{}
	for _, n := range es.Brokers {
		id, ok := brokerAt(md.Brokers, n.Addr)
		if !ok {
			return nil, fmt.Errorf("external cluster: --node %s=%s is not a broker the cluster lists (%s)", n.Name, n.Addr, listBrokers(md.Brokers))
		}
		if other, dup := byID[id]; dup {
			return nil, fmt.Errorf("external cluster: --node %s and --node %s are both broker %d", other.Name, n.Name, id)
		}
		n.ID = id
		byID[id] = n
	}
	if faults {
		var unnamed []string
		for _, id := range slices.Sorted(maps.Keys(md.Brokers)) {
			if _, ok := byID[id]; !ok {
				unnamed = append(unnamed, fmt.Sprintf("%d at %s", id, md.Brokers[id]))
			}
		}
		if len(unnamed) > 0 {
			return nil, fmt.Errorf("external cluster: faults need every broker named, and --node names none for broker %s", strings.Join(unnamed, ", broker "))
		}
	}
	c := &connected{clusterID: md.ClusterID, brokers: len(md.Brokers), anyBroker: slices.Min(slices.Collect(maps.Keys(md.Brokers)))}
	es.Brokers = nil
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		es.Brokers = append(es.Brokers, byID[id])
		c.brokerIDs = append(c.brokerIDs, id)
	}
	c.spec = es
	c.cluster = external.New(es)
	return c, nil
}

// answers says whether the broker at addr answers a metadata request
// within a second: a paused one does not.
func answers(ctx context.Context, addr string) bool {
	cl := workload.NewSyncClient(nil, workload.ClientOptions{ID: "chaos-probe", Timeout: time.Second})
	defer cl.Close()
	_, err := cl.Metadata(ctx, "", addr)
	return err == nil
}

// brokerAt finds the broker listed at addr: the same string, or the same
// port on a host that resolves to the same address (localhost and
// 127.0.0.1).
func brokerAt(brokers map[int32]string, addr string) (int32, bool) {
	for id, a := range brokers {
		if a == addr {
			return id, true
		}
	}
	host, port, _ := net.SplitHostPort(addr)
	ips, _ := net.LookupHost(host)
	for _, id := range slices.Sorted(maps.Keys(brokers)) {
		h, p, err := net.SplitHostPort(brokers[id])
		if err != nil || p != port {
			continue
		}
		theirs, _ := net.LookupHost(h)
		for _, ip := range ips {
			if slices.Contains(theirs, ip) {
				return id, true
			}
		}
	}
	return 0, false
}

func listBrokers(bs map[int32]string) string {
	var out []string
	for _, id := range slices.Sorted(maps.Keys(bs)) {
		out = append(out, fmt.Sprintf("%d at %s", id, bs[id]))
	}
	return "it lists " + strings.Join(out, ", ")
}

// topic creates the run's topic on the external cluster, or describes the
// existing one the user gave, and returns what the topic is (the run is
// judged by it) and what the run had to assume.
func (x *External) topic(ctx context.Context, s Spec) (workload.TopicSpec, bool, []string, error) {
	want := workload.TopicSpec{
		Name: x.Topic, Partitions: s.Settings.Partitions, ReplicationFactor: s.Settings.ReplicationFactor,
		MinInsyncReplicas: s.Settings.MinInsyncReplicas, Unclean: s.Settings.Election == "unclean", ELR: s.Settings.Election == "elr", Foreign: true,
	}
	if want.Name == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		want.Name = "chaos-" + hex.EncodeToString(b[:])
	} else {
		ex, ok, err := workload.DescribeExisting(ctx, x.Bootstrap, x.Topic)
		if err != nil {
			return want, false, nil, err
		}
		if ok {
			if why := ex.NotEmpty(); why != "" {
				return want, true, nil, errors.New(why)
			}
			return ex.Spec, true, workload.Assumed(ex.Configs), nil
		}
	}
	if err := workload.CreateTopic(ctx, x.Bootstrap, want, 30*time.Second); err != nil {
		return want, false, nil, err
	}
	desc, err := workload.TopicConfigs(ctx, x.Bootstrap, want.Name)
	if err != nil {
		return want, false, nil, err
	}
	// A cluster with KIP-966 on (Kafka 4.1's default) promises more than
	// clean election: it is judged by what it runs.
	want.ELR = want.ELR || desc.ELR && !want.Unclean
	return want, false, workload.Assumed(desc.Configs), nil
}

// unsupported says which checks the external cluster cannot support:
// crash always (the runtime does not watch processes it did not start),
// and replica-divergence when its brokers refuse replica reads.
func (x *External) unsupported(ctx context.Context, topic string, partitions int32) (map[string]string, error) {
	why, err := workload.ReplicaReadsRefused(ctx, x.Bootstrap, topic, partitions)
	if err != nil {
		return nil, err
	}
	out := map[string]string{checker.CrashName: unwatched}
	if why != "" {
		out[checker.ReplicaDivergenceName] = why
	}
	return out, nil
}

// unwatched is why the external runtime leaves crash unchecked.
const unwatched = "the external runtime does not watch the processes of a cluster it did not start: a node that dies on its own is not recorded (its effects on the data are still judged)"

// stored is test.json's account of the external cluster.
func (c *connected) stored(x *External, topicExisted bool, notes []string) *results.External {
	out := &results.External{Bootstrap: x.Bootstrap, TopicExisted: topicExisted, Notes: notes, Commands: map[string]string{}}
	if c.spec.Controller != nil {
		out.Nodes = append(out.Nodes, results.ExternalNode{Name: c.spec.Controller.Name, Addr: c.spec.Controller.Addr, ID: -1})
	}
	for _, n := range c.spec.Brokers {
		out.Nodes = append(out.Nodes, results.ExternalNode{Name: n.Name, Addr: n.Addr, ID: n.ID})
	}
	for _, a := range external.Actions() {
		if t := x.Commands.Of(a); t != "" {
			out.Commands[a] = t
		}
	}
	return out
}

// Base puts the flags into a campaign's base spec, whose cells take the
// campaign's runtime later: Validate then refuses them with any runtime
// but external.
func (f ExternalFlags) Base(s *Spec) error {
	if !f.given() {
		return nil
	}
	t := *s
	t.Runtime = RuntimeExternal
	if err := f.apply(&t); err != nil {
		return err
	}
	s.External = t.External
	return nil
}

// Runnable are the kinds among kinds that this external cluster can be
// faulted with as documented: those whose commands were given, on named
// brokers, not weakened without leave, and none that loses unsynced
// writes (only chaos's own brokers keep them to lose). chaos hunt draws
// from them.
func (x *External) Runnable(kinds []string) []string {
	if len(x.Nodes) == 0 {
		return nil
	}
	spec := x.spec()
	var out []string
	for _, k := range kinds {
		one := []string{k}
		if len(nemesis.Missing(one, spec.Has)) > 0 || nemesis.LosesUnsynced(one) || (!x.AllowWeakened && len(x.weakened(one)) > 0) {
			continue
		}
		out = append(out, k)
	}
	return out
}

// Apply checks the external flags against s's runtime, naming a bad one,
// and puts them into s: for a command that makes its own specs (chaos
// hunt draws them).
func (f ExternalFlags) Apply(s *Spec) error { return f.apply(s) }
