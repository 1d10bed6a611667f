package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/cluster"
	"github.com/chaos-isr/chaos/cluster/external"
	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/internal/testbin"
	"github.com/chaos-isr/chaos/nemesis"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/results/report"
	"github.com/chaos-isr/chaos/workload"
)

// externalSpec is a short no-fault test of the external cluster at
// bootstrap.
func externalSpec(t *testing.T, bootstrap ...string) Spec {
	s := DefaultSpec()
	s.Store, s.Seed, s.Runtime = t.TempDir(), 7, RuntimeExternal
	s.TimeLimit, s.Rate, s.MonitorInterval = 3*time.Second, 200, 200*time.Millisecond
	s.ConvergeTimeout = 20 * time.Second
	s.External = &External{Bootstrap: bootstrap}
	return s
}

// TestExternalKfake runs a whole test against franz-go's in-process fake
// cluster: a foreign implementation of the protocol, which chaos did not
// start and cannot fault. The run completes; what kfake cannot give is
// marked not checked with the reason (and left out of the verdict), what
// it can give is checked, and the verdict is valid.
func TestExternalKfake(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.ClusterID("kfake-test"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := externalSpec(t, c.ListenAddrs()...)
	var logged []string
	o, err := Run(context.Background(), s, Options{Log: func(format string, args ...any) {
		logged = append(logged, fmt.Sprintf(format, args...))
	}})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, strings.Join(logged, "\n"))
	}
	if o.ClusterID != "kfake-test" {
		t.Errorf("cluster id %q, want kfake's own", o.ClusterID)
	}
	tc, err := results.ReadTestConfig(filepath.Join(o.Dir, results.TestFile))
	if err != nil {
		t.Fatal(err)
	}
	if tc.Cluster.Runtime != RuntimeExternal || tc.Cluster.External == nil || tc.Cluster.Nodes != 3 {
		t.Fatalf("test.json cluster %+v", tc.Cluster)
	}
	if !strings.HasPrefix(tc.Workload.Topic, "chaos-") {
		t.Errorf("topic %q: a run on an external cluster makes a topic of its own", tc.Workload.Topic)
	}
	res := o.Results
	for _, r := range res.Results {
		if r.Unsupported {
			t.Logf("not checked: %s: %s", r.Name, r.NotChecked)
			if r.NotChecked == "" {
				t.Errorf("%s is not checked without a reason", r.Name)
			}
			if _, ok := tc.Cluster.Unsupported[r.Name]; !ok {
				t.Errorf("%s is not checked, but test.json does not say so", r.Name)
			}
		}
	}
	t.Logf("notes: %q; assumed: %q; unsupported: %v", res.Notes, tc.Cluster.External.Notes, tc.Cluster.Unsupported)
	if o.Verdict != checker.Valid {
		for _, r := range res.Results {
			t.Logf("%s %s %v", r.Name, r.Valid, r.Details)
		}
		t.Fatalf("verdict %s, want valid", o.Verdict)
	}
	if got := res.Ops["send"].OK; got < 100 {
		t.Errorf("%d acknowledged sends: the run hardly ran", got)
	}
	if _, err := os.Stat(o.Report); err != nil {
		t.Errorf("report: %v", err)
	}
}

// TestExternalKfakeSubscribe runs the subscribe workload against kfake,
// which implements consumer groups itself: a coordinator chaos did not
// write. The members join, poll and commit through it, the final phase's
// member joins and fetches the committed offsets, the group checks judge
// them, and the verdict is valid.
func TestExternalKfakeSubscribe(t *testing.T) {
	res := validKfakeRun(t, func(s *Spec) { s.SubVia = "subscribe" })
	if ok := res.Ops["assign"].OK; ok < 2 {
		t.Errorf("%d members joined the group (the final phase's included)", ok)
	}
	if ok := res.Ops["commit"].OK; ok < 10 {
		t.Errorf("%d commits acknowledged: the members hardly ran", ok)
	}
	for _, r := range res.Results {
		switch r.Name {
		case checker.OffsetRegressionName, checker.FencedCommitName, checker.UnreadBelowCommitName:
			if !r.Judged() {
				t.Errorf("%s was not judged: %s", r.Name, r.NotChecked)
			}
		}
	}
}

// apartCluster starts a cluster of chaos's brokers that no run owns, as
// chaos cluster up does, for runs of the external runtime to test.
func apartCluster(t *testing.T) *Cluster {
	t.Helper()
	c := testCluster(t, RuntimeLocal, false)
	t.Cleanup(c.Close)
	return c
}

// testCluster starts three of chaos's brokers in runtime rt, with network
// faults if withNet, with the runner's default settings.
func testCluster(t *testing.T, rt string, withNet bool) *Cluster {
	t.Helper()
	bin, err := testbin.Path()
	if err != nil {
		t.Fatal(err)
	}
	base, err := cluster.FreeBasePort("127.0.0.1", 3)
	if err != nil {
		t.Fatal(err)
	}
	st := DefaultSpec().Settings
	c, err := StartCluster(context.Background(), rt, cluster.Spec{
		Nodes: 3, BasePort: base, DataDir: t.TempDir(), ClusterID: NewClusterID(), Binary: bin,
		ControllerArgs: st.ControllerArgs(), BrokerArgs: st.BrokerArgs(),
	}, withNet)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// brokerNodes names the cluster's brokers for --node.
func brokerNodes(c *Cluster) []string {
	var out []string
	for _, n := range c.Info() {
		if n.Role == "broker" {
			out = append(out, n.Name+"="+n.Addr)
		}
	}
	return out
}

// TestExternalRefusals: what cannot be tested is refused before anything
// is written, with the reason: a fault whose commands were not given, an
// unreachable bootstrap address, a --node that is not one of the
// cluster's brokers, a non-empty topic.
func TestExternalRefusals(t *testing.T) {
	s := externalSpec(t, "127.0.0.1:1")
	s.Faults, s.NemesisInterval, s.TimeLimit = []string{"kill-leader", "one-way"}, time.Second, 4*time.Second
	s.External.Nodes = []string{"b1=127.0.0.1:1"}
	err := s.Validate()
	for _, want := range []string{"kill-leader cannot run on this external cluster: it needs kill (give --kill-cmd), start (give --start-cmd)",
		"one-way cannot run on this external cluster: it needs one-way (no command"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %v lacks %q", err, want)
		}
	}
	if _, err := Run(context.Background(), s, Options{}); err == nil {
		t.Fatal("a run with faults it cannot inject started")
	}
	assertNoRun(t, s.Store)

	s = externalSpec(t, "127.0.0.1:1")
	start := time.Now()
	_, err = Run(context.Background(), s, Options{})
	if err == nil || !strings.Contains(err.Error(), "no broker at 127.0.0.1:1 answered") {
		t.Fatalf("unreachable bootstrap: %v", err)
	}
	t.Logf("unreachable bootstrap refused in %s: %v", time.Since(start).Round(time.Millisecond), err)
	assertNoRun(t, s.Store)

	c := apartCluster(t)
	s = externalSpec(t, strings.Split(c.Bootstrap(), ",")...)
	s.External.Nodes = []string{"stranger=127.0.0.1:1"}
	if _, err = Run(context.Background(), s, Options{}); err == nil || !strings.Contains(err.Error(), "--node stranger=127.0.0.1:1 is not a broker the cluster lists") {
		t.Fatalf("a node that is not a broker: %v", err)
	}
	assertNoRun(t, s.Store)

	// A topic of the user's that holds records the test did not write.
	s = externalSpec(t, strings.Split(c.Bootstrap(), ",")...)
	s.External.Topic = "used"
	boot := strings.Split(c.Bootstrap(), ",")
	if err := workload.CreateTopic(context.Background(), boot, workload.TopicSpec{Name: "used", Partitions: 1, ReplicationFactor: 3, MinInsyncReplicas: 2}, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	cl := workload.NewSyncClient(boot, workload.ClientOptions{ID: "test", Timeout: 5 * time.Second})
	defer cl.Close()
	for i := 0; ; i++ {
		o := cl.Send(context.Background(), history.Key{Topic: "used", Partition: 0}, "old", -1)
		if o.Type == history.OK {
			break
		}
		if i == 50 {
			t.Fatalf("send: %+v", o)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err = Run(context.Background(), s, Options{}); err == nil || !strings.Contains(err.Error(), "topic used is not empty (partition 0 ends at offset ") {
		t.Fatalf("a non-empty topic: %v", err)
	}
	assertNoRun(t, s.Store)
}

// assertNoRun checks that a refused run left no run directory behind.
func assertNoRun(t *testing.T, store string) {
	t.Helper()
	var runs []string
	_ = filepath.WalkDir(store, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			runs = append(runs, p)
		}
		return nil
	})
	if len(runs) > 0 {
		t.Errorf("a refused run left %v", runs)
	}
}

// TestExternalFailingCommand: a kill command that fails leaves a window
// that never started, so the run is UNKNOWN, never VALID; the history
// holds the command with its exit status and output, the node's log has
// it too, and results.json and the report are written. The existing
// topic the user named is tested, judged by its own settings.
func TestExternalFailingCommand(t *testing.T) {
	c := apartCluster(t)
	boot := strings.Split(c.Bootstrap(), ",")
	if err := workload.CreateTopic(context.Background(), boot, workload.TopicSpec{Name: "mine", Partitions: 2, ReplicationFactor: 3, MinInsyncReplicas: 3}, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	s := externalSpec(t, boot...)
	s.External.Topic = "mine"
	s.External.Nodes = brokerNodes(c)
	s.External.Commands = external.Commands{Kill: "echo cannot reach {name} at {host} >&2; exit 4", Start: "true"}
	s.Faults, s.NemesisInterval, s.TimeLimit = []string{"kill"}, time.Second, 3*time.Second
	o, err := Run(context.Background(), s, Options{})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if o.Verdict != checker.Unknown {
		t.Fatalf("verdict %s with a kill command that always fails, want unknown", o.Verdict)
	}
	tc, err := results.ReadTestConfig(filepath.Join(o.Dir, results.TestFile))
	if err != nil {
		t.Fatal(err)
	}
	if tc.Cluster.MinInsyncReplicas != 3 || tc.Workload.Partitions != 2 || !tc.Cluster.External.TopicExisted {
		t.Errorf("the existing topic's settings were not what the run was judged by: %+v %+v", tc.Cluster, tc.Workload)
	}
	res, err := results.ReadResults(filepath.Join(o.Dir, results.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(res.Notes, func(n string) bool {
		return strings.Contains(n, "kill command for broker-") && strings.Contains(n, "exited 4")
	}) {
		t.Errorf("the verdict's notes %q do not say which command failed and how", res.Notes)
	}
	ops, err := history.ReadFile(filepath.Join(o.Dir, results.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	var cmd *history.Command
	for _, op := range ops {
		if op.Process == history.NemesisProcess && op.Type == history.Info && op.Value.FaultInfo != nil && len(op.Value.Commands) > 0 {
			cmd = &op.Value.Commands[0]
			if op.Error == "" || !strings.Contains(op.Error, "exited 4") {
				t.Errorf("the window's error %q does not say the command failed", op.Error)
			}
			break
		}
	}
	if cmd == nil {
		for _, op := range ops {
			if op.Process == history.NemesisProcess {
				t.Logf("%+v %+v", op, op.Value.FaultInfo)
			}
		}
		t.Fatal("no command in the history")
	}
	if cmd.Action != external.Kill || cmd.Exit != 4 || !strings.Contains(cmd.Output, "cannot reach broker-") || !strings.Contains(cmd.Cmd, "127.0.0.1") {
		t.Errorf("command %+v", cmd)
	}
	logs, _ := filepath.Glob(filepath.Join(o.Dir, "cluster", "broker-*.log"))
	if len(logs) == 0 {
		t.Fatal("no node log of the commands")
	}
	if _, err := os.Stat(o.Report); err != nil {
		t.Errorf("report: %v", err)
	}
}

// TestClusterFile: --cluster-file describes the cluster once; a flag
// given overrides it; a file with a misspelt field is refused by name.
func TestClusterFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "cluster.json")
	if err := os.WriteFile(file, []byte(`{"bootstrap": "h1:9092,h2:9092", "nodes": ["k1=h1:9092", "k2=h2:9092"],
		"commands": {"kill": "ssh {host} kill", "start": "ssh {host} start"}, "command_timeout": "5s"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	s := DefaultSpec()
	s.Runtime = RuntimeExternal
	f := ExternalFlags{File: file, Commands: external.Commands{Kill: "docker kill {name}"}}
	if err := f.apply(&s); err != nil {
		t.Fatal(err)
	}
	x := s.External
	if strings.Join(x.Bootstrap, ",") != "h1:9092,h2:9092" || len(x.Nodes) != 2 || x.Commands.Start != "ssh {host} start" ||
		x.Commands.Kill != "docker kill {name}" || x.CommandTimeout != 5*time.Second {
		t.Fatalf("external %+v", x)
	}
	if err := os.WriteFile(file, []byte(`{"bootstrap": "h1:9092", "node": ["k1=h1:9092"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	err := ExternalFlags{File: file}.apply(&s)
	if err == nil || !strings.Contains(err.Error(), `unknown field "node"`) {
		t.Fatalf("a misspelt field: %v", err)
	}
	err = ExternalFlags{File: filepath.Join(dir, "none.json")}.apply(&s)
	if err == nil || !strings.Contains(err.Error(), "--cluster-file") {
		t.Fatalf("a missing file: %v", err)
	}
}

// TestNeedsMeetExternalWords: the nemesis's needs and the external
// runtime's actions go by the same words; one renamed on either side
// would make a fault the user gave commands for refused (or one they did
// not, accepted).
func TestNeedsMeetExternalWords(t *testing.T) {
	all := external.Spec{Controller: &external.Node{Name: "c"}}
	for _, a := range external.Actions() {
		*all.Commands.Field(a) = "true"
	}
	supplied := map[string]bool{}
	for _, f := range nemesis.Faults() {
		for _, n := range f.Needs {
			if all.Has(n) {
				supplied[n] = true
			}
		}
	}
	for _, a := range append(external.Actions(), external.ControllerNode, external.Delay) {
		if !supplied[a] {
			t.Errorf("no fault needs %q, which the external runtime supplies: a word differs", a)
		}
	}
	for _, n := range []string{nemesis.NeedOneWay, nemesis.NeedDrop, nemesis.NeedLoseUnsynced} {
		if all.Has(n) {
			t.Errorf("the external runtime claims %q", n)
		}
	}
}

// TestExternalStopsAtFailingCommand: the first fault command that fails
// stops the run at once, well before its time limit: the window is healed
// (its start command run), the history and results.json are written, the
// verdict is UNKNOWN (exit 2) and says which command failed, with its exit
// status and the last line of its output; test.json keeps why, so chaos
// check judges the stored run the same way.
func TestExternalStopsAtFailingCommand(t *testing.T) {
	c := apartCluster(t)
	marks := t.TempDir()
	s := externalSpec(t, strings.Split(c.Bootstrap(), ",")...)
	s.External.Nodes = brokerNodes(c)
	s.External.Commands = external.Commands{Kill: "echo no container {name} >&2; exit 7", Start: "touch " + marks + "/{name}.started"}
	s.Faults, s.NemesisInterval, s.TimeLimit = []string{"kill"}, time.Second, 60*time.Second
	start := time.Now()
	var logged []string
	o, err := Run(context.Background(), s, Options{Log: func(format string, args ...any) {
		logged = append(logged, fmt.Sprintf(format, args...))
	}})
	took := time.Since(start)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, strings.Join(logged, "\n"))
	}
	t.Logf("a 60s run with a failing kill command ended after %s", took.Round(time.Millisecond))
	if took > 20*time.Second {
		t.Errorf("the run went on for %s after its kill command failed", took)
	}
	if o.Verdict != checker.Unknown || o.ExitCode() != 2 {
		t.Fatalf("verdict %s, exit %d, want unknown and 2", o.Verdict, o.ExitCode())
	}
	tc, err := results.ReadTestConfig(filepath.Join(o.Dir, results.TestFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"stopped at the first failing fault command", "kill command for broker-", "exited 7", "no container broker-"} {
		if !strings.Contains(tc.Stopped, want) {
			t.Errorf("test.json's stopped %q lacks %q", tc.Stopped, want)
		}
	}
	res, err := results.ReadResults(filepath.Join(o.Dir, results.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if res.Config.Stopped != tc.Stopped || res.Valid != checker.Unknown {
		t.Errorf("results.json: valid %s, stopped %q", res.Valid, res.Config.Stopped)
	}
	var line strings.Builder
	report.WriteVerdict(&line, res)
	if !strings.Contains(line.String(), "verdict: UNKNOWN: stopped at the first failing fault command (in a kill window): kill command for broker-") {
		t.Errorf("the verdict line does not say the run stopped at the command:\n%s", line.String())
	}
	ops, err := history.ReadFile(filepath.Join(o.Dir, results.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	var windows []string
	for _, op := range ops {
		if op.Process == history.NemesisProcess && op.Type == history.Info {
			windows = append(windows, op.F)
		}
		if op.Type == history.Info && op.F == history.Send && op.Time > int64(20*time.Second) {
			t.Fatalf("a send at %dms: the workload went on", op.Time/1e6)
		}
	}
	if strings.Join(windows, ",") != "start-kill,stop-kill" {
		t.Errorf("nemesis ops %v, want the one window that failed and its heal", windows)
	}
	if started, _ := filepath.Glob(filepath.Join(marks, "*.started")); len(started) != 1 {
		t.Errorf("%d start commands ran, want the one that undoes the failed kill", len(started))
	}
	if _, err := os.Stat(o.Report); err != nil {
		t.Errorf("report: %v", err)
	}
	if again, err := Judge(&results.Run{Store: s.Store, Dir: o.Dir}, tc, nil); err != nil || again.Verdict != checker.Unknown {
		t.Errorf("judged again from the store: %s, %v", again.Verdict, err)
	}
}

// TestExternalCheckCommands: --check-commands refuses a run whose fault
// command is broken before the workload: no history is written, the heal command ran on every node, the broken command is
// named with the node it would run for.
func TestExternalCheckCommands(t *testing.T) {
	c := apartCluster(t)
	marks := t.TempDir()
	s := externalSpec(t, strings.Split(c.Bootstrap(), ",")...)
	s.External.Nodes = brokerNodes(c)
	s.External.Commands = external.Commands{Kill: "no-such-chaos-tool kill {name}", Start: "true", Partition: "true", Heal: "touch " + marks + "/{name}.healed"}
	s.External.CheckCommands, s.External.CombinedControllers = true, true
	s.Faults, s.NemesisInterval, s.TimeLimit = []string{"kill", "partition"}, time.Second, 60*time.Second
	start := time.Now()
	_, err := Run(context.Background(), s, Options{})
	if err == nil || !strings.Contains(err.Error(), "--check-commands: kill command for broker-1: no program no-such-chaos-tool") {
		t.Fatalf("a kill command naming no program: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("refused after %s", d)
	}
	if healed, _ := filepath.Glob(filepath.Join(marks, "*.healed")); len(healed) != 3 {
		t.Errorf("the heal command ran on %d nodes, want every one of 3", len(healed))
	}
	if hs, _ := filepath.Glob(filepath.Join(s.Store, "*", "*", results.HistoryFile)); len(hs) > 0 {
		t.Errorf("a refused run wrote %v", hs)
	}
}

// TestExternalWeakened: without --controller-node, a fault that cuts
// links to the controller is refused, naming the three ways on; with the
// brokers said to be the controllers, or a controller named, it is not;
// with --allow-weakened-faults it runs, and test.json, results.json and the
// verdict line mark it weakened.
func TestExternalWeakened(t *testing.T) {
	s := externalSpec(t, "127.0.0.1:1")
	s.External.Nodes = []string{"b1=127.0.0.1:1"}
	s.External.Commands = external.Commands{Partition: "true", Heal: "true", Kill: "true", Start: "true"}
	s.Faults, s.NemesisInterval, s.TimeLimit = []string{"partition-leader+kill", "kill"}, time.Second, 4*time.Second
	err := s.Validate()
	for _, want := range []string{"partition-leader cannot be applied as documented without --controller-node: if the controller runs apart from the brokers, the leader still reaches the controller",
		"--controller-node NAME=HOST:PORT", "--combined-controllers", "--allow-weakened-faults"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %v lacks %q", err, want)
		}
	}
	if err != nil && strings.Contains(err.Error(), "faults: kill ") {
		t.Errorf("kill, which leaves the controller alone, refused: %v", err)
	}
	for _, ok := range []func(x *External){
		func(x *External) { x.CombinedControllers = true },
		func(x *External) { x.ControllerNode = "ctl=127.0.0.1:2" },
		func(x *External) { x.AllowWeakened = true },
	} {
		t2 := s
		x := *s.External
		ok(&x)
		t2.External = &x
		if err := t2.Validate(); err != nil {
			t.Errorf("%+v refused: %v", x, err)
		}
	}
	f := ExternalFlags{Bootstrap: "h:1", ControllerNode: "ctl=h:2", CombinedControllers: true}
	if err := f.apply(&Spec{Runtime: RuntimeExternal}); err == nil || !strings.Contains(err.Error(), "--combined-controllers") {
		t.Errorf("--combined-controllers with --controller-node: %v", err)
	}

	c := apartCluster(t)
	s = externalSpec(t, strings.Split(c.Bootstrap(), ",")...)
	s.External.Nodes = brokerNodes(c)
	s.External.Commands = external.Commands{Partition: "true", Heal: "true"}
	s.External.AllowWeakened = true
	s.Faults, s.NemesisInterval = []string{"partition-leader"}, time.Second
	o, err := Run(context.Background(), s, Options{})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	const why = "without --controller-node: the leader still reaches the controller"
	tc, err := results.ReadTestConfig(filepath.Join(o.Dir, results.TestFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tc.Cluster.Weakened["partition-leader"], why) {
		t.Errorf("test.json's weakened %v", tc.Cluster.Weakened)
	}
	res, err := results.ReadResults(filepath.Join(o.Dir, results.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Weakened["partition-leader"], why) {
		t.Fatalf("results.json's weakened %v (faults that ran: %v)", res.Weakened, res.Faults)
	}
	var line strings.Builder
	report.WriteVerdict(&line, res)
	if !strings.Contains(line.String(), "(weakened: partition-leader "+why) {
		t.Errorf("the verdict line does not mark the weakened fault:\n%s", line.String())
	}
}

// TestExternalKfakeTxn: the transactional workload against franz-go's
// kfake, a broker chaos did not write that implements transactions: its
// transactions commit and abort, its consumers read both isolation
// levels, and the run is valid, with the transactional checks judged.
func TestExternalKfakeTxn(t *testing.T) {
	res := validKfakeRun(t, func(s *Spec) { s.Workload = "txn" })
	if ok := res.Ops["txn"].OK; ok < 10 {
		t.Errorf("%d transactions committed: the producers hardly ran", ok)
	}
	if failed := res.Ops["txn"].Fail; failed < 2 {
		t.Errorf("%d transactions aborted: the aborts were not exercised", failed)
	}
	for _, r := range res.Results {
		switch r.Name {
		case checker.AbortedReadName, checker.PrecommittedReadName, checker.G0Name, checker.G1cName:
			if !r.Judged() {
				t.Errorf("%s was not judged: %s", r.Name, r.NotChecked)
			}
		}
	}
}

// validKfakeRun runs the external runtime for 10 s against a kfake cluster
// of three brokers, with set's changes to the spec, and fails t unless the
// verdict is valid.
func validKfakeRun(t *testing.T, set func(*Spec)) *checker.Results {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(3), kfake.ClusterID("kfake-test"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	s := externalSpec(t, c.ListenAddrs()...)
	s.TimeLimit = 10 * time.Second
	set(&s)
	o, err := Run(context.Background(), s, Options{})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if o.Verdict != checker.Valid {
		for _, r := range o.Results.Results {
			t.Logf("%s %s %v %s", r.Name, r.Valid, r.Details, r.NotChecked)
		}
		t.Fatalf("verdict %s, want valid", o.Verdict)
	}
	return o.Results
}
