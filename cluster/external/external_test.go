package external

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseNode(t *testing.T) {
	n, err := ParseNode("kafka-1=10.0.0.5:9092")
	if err != nil || n.Name != "kafka-1" || n.Host() != "10.0.0.5" || n.Port() != "9092" || n.ID != -1 {
		t.Fatalf("%+v %v", n, err)
	}
	for _, bad := range []string{"kafka-1", "=h:1", "k=h", "k=h:0", "k=h:x", "k;rm=h:1", "k=h$(x):1", "k=:1"} {
		if _, err := ParseNode(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestExpandAndCheck(t *testing.T) {
	node := Node{Name: "b1", Addr: "h1:9092", ID: 1}
	peers := []Node{{Name: "b2", Addr: "h2:9093", ID: 2}, {Name: "ctl", Addr: "h0:9091", ID: -1}}
	got := Expand("ssh {host} drop {peer_hosts} # {name} {id} {port} {addr} {peers} {peer_addrs} ${HOME} {{name}} {delay} {delay_ms}", node, peers, 1500*time.Millisecond)
	want := "ssh h1 drop h2 h0 # b1 1 9092 h1:9092 b2 ctl h2:9093 h0:9091 ${HOME} {b1} 1.5s 1500"
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if got := Expand("x {id}", peers[1], nil, 0); got != "x " {
		t.Fatalf("the controller node's id: %q", got)
	}
	if err := Check("docker kill {name} && echo ${HOME} {peers}"); err != nil {
		t.Fatal(err)
	}
	if err := Check("docker kill {nmae}"); err == nil || !strings.Contains(err.Error(), "{nmae}") {
		t.Fatalf("a misspelt placeholder: %v", err)
	}
}

// TestCommands runs real commands: what each did is recorded for the
// history and the node's log, a failure says which command and why, a
// command that outlives its timeout is killed with what it started, and a
// start waits until the node accepts connections.
func TestCommands(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	marks := t.TempDir()
	c := New(Spec{
		Brokers: []Node{{Name: "b1", Addr: ln.Addr().String(), ID: 1}, {Name: "b2", Addr: "127.0.0.1:1", ID: 2}},
		Commands: Commands{
			Kill:      "echo killed {name}; touch " + marks + "/{name}.killed",
			Start:     "echo starting {name}",
			Pause:     "echo no such process >&2; exit 7",
			Partition: "echo {name} cut from {peers}",
			Heal:      "sleep 10",
		},
		Timeout: 500 * time.Millisecond, StartWait: 300 * time.Millisecond, DownWait: 300 * time.Millisecond, LogDir: dir,
	})
	if err := c.Kill(2); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(marks, "b2.killed")); err != nil {
		t.Fatal("the kill command did not run")
	}
	// b1's address goes on answering: the kill did not kill it.
	if err := c.Kill(1); err == nil || !strings.Contains(err.Error(), "b1: the kill command exited 0, but "+ln.Addr().String()+" still accepts connections") {
		t.Fatalf("a kill that left the node up: %v", err)
	}
	if err := c.Restart(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	err = c.Pause(2)
	if err == nil || !strings.Contains(err.Error(), "pause command for b2 exited 7") || !strings.Contains(err.Error(), "no such process") {
		t.Fatalf("a failing command: %v", err)
	}
	if err := c.Restart(context.Background(), 2); err == nil || !strings.Contains(err.Error(), "accepts no connection") {
		t.Fatalf("a start whose node never listens: %v", err)
	}
	if err := c.Partition([]string{"b1"}, []string{"b2"}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = c.HealAll()
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the heal commands ran %s past their 500ms timeout", d)
	}
	if err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Fatalf("heal past its timeout: %v", err)
	}
	if err := c.Stop(1, time.Second); err == nil || !strings.Contains(err.Error(), "no --stop-cmd") {
		t.Fatalf("a command not given: %v", err)
	}
	cmds := c.TakeCommands()
	var seen []string
	for _, r := range cmds {
		seen = append(seen, r.Action+" "+r.Node)
	}
	want := "kill b2,kill b1,start b1,pause b2,start b2,partition b1,partition b2,heal b1,heal b2"
	if strings.Join(seen, ",") != want {
		t.Fatalf("commands %q, want %q", strings.Join(seen, ","), want)
	}
	if r := cmds[0]; r.Exit != 0 || r.Output != "killed b2\n" || r.Error != "" {
		t.Errorf("kill %+v", r)
	}
	if r := cmds[3]; r.Exit != 7 || r.Error == "" {
		t.Errorf("pause %+v", r)
	}
	if r := cmds[5]; r.Output != "b1 cut from b2\n" {
		t.Errorf("partition %+v", r)
	}
	if r := cmds[7]; r.Exit != -1 || !strings.Contains(r.Error, "timed out") {
		t.Errorf("heal %+v", r)
	}
	if len(c.TakeCommands()) != 0 {
		t.Error("commands taken twice")
	}
	log, err := os.ReadFile(filepath.Join(dir, "b2.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"pause: sh -c", "no such process", "-- exit 7 after"} {
		if !strings.Contains(string(log), w) {
			t.Errorf("b2.log lacks %q:\n%s", w, log)
		}
	}
	// Close restores what the test left: b1's stop was tried (a stop that
	// failed halfway may have stopped it), so b1 is started, and b2 was
	// killed and never started (its start failed); b2 was paused, but
	// there is no resume command to run.
	c.Close()
	var restored []string
	for _, r := range c.TakeCommands() {
		restored = append(restored, r.Action+" "+r.Node)
	}
	if got := strings.Join(restored, ","); got != "start b1,start b2" {
		t.Errorf("close ran %q, want start b1,start b2", got)
	}
}

// TestCloseRestores: a node killed and never started again (an
// interrupted run) is started by Close, and a cut network healed.
func TestCloseRestores(t *testing.T) {
	marks := t.TempDir()
	c := New(Spec{
		Brokers:  []Node{{Name: "b1", Addr: "127.0.0.1:1", ID: 1}},
		Commands: Commands{Kill: "true", Start: "touch " + marks + "/{name}.started", Partition: "true", Heal: "touch " + marks + "/{name}.healed"},
	})
	_ = c.Kill(1)
	if err := c.Partition([]string{"b1"}, nil); err != nil {
		t.Fatal(err)
	}
	c.Close()
	for _, f := range []string{"b1.started", "b1.healed"} {
		if _, err := os.Stat(filepath.Join(marks, f)); err != nil {
			t.Errorf("close did not restore: %s missing", f)
		}
	}
}

// TestSlow: the slow command runs on the slowed node with its peers and
// the delay; a delay of every link runs it on every node; heal at Close.
func TestSlow(t *testing.T) {
	marks := t.TempDir()
	c := New(Spec{
		Brokers:    []Node{{Name: "b1", Addr: "h1:1", ID: 1}, {Name: "b2", Addr: "h2:1", ID: 2}},
		Controller: &Node{Name: "ctl", Addr: "h0:1", ID: -1},
		Commands:   Commands{Slow: "echo {name} {peers} {delay_ms}", Heal: "touch " + marks + "/{name}.healed"},
	})
	if err := errors.Join(c.Slow("b2", "b1", time.Second), c.DelayAll(50*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	var outs []string
	for _, r := range c.TakeCommands() {
		outs = append(outs, strings.TrimSpace(r.Output))
	}
	if got, want := strings.Join(outs, "; "), "b2 b1 1000; ctl b1 b2 50; b1 ctl b2 50; b2 ctl b1 50"; got != want {
		t.Fatalf("slow commands said %q, want %q", got, want)
	}
	if !c.spec.Has(Delay) || !c.spec.Has(Slow) || FlagOf(Delay) != "--slow-cmd" {
		t.Error("the slow command does not give delays")
	}
	c.Close()
	if _, err := os.Stat(filepath.Join(marks, "ctl.healed")); err != nil {
		t.Error("close did not heal the delays")
	}
}

// TestPauseChecked: a pause command that exits 0 while the broker goes on
// answering fails; one after which it stops answering succeeds.
func TestPauseChecked(t *testing.T) {
	answering := true
	c := New(Spec{
		Brokers:  []Node{{Name: "b1", Addr: "127.0.0.1:1", ID: 1}},
		Commands: Commands{Pause: "true"},
		DownWait: 300 * time.Millisecond,
		Answers:  func(context.Context, string) bool { return answering },
	})
	if err := c.Pause(1); err == nil || !strings.Contains(err.Error(), "b1: the pause command exited 0, but the broker at 127.0.0.1:1 still answers requests") {
		t.Fatalf("a pause that paused nothing: %v", err)
	}
	answering = false
	if err := c.Pause(1); err != nil {
		t.Fatal(err)
	}
}

// TestCommandErrors: every way a fault command fails is a *CommandError
// naming the command as it ran (the nemesis stops the run at the first):
// a non-zero exit with its status and the output's last line, a timeout,
// and an exit 0 that left the node up.
func TestCommandErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c := New(Spec{
		Brokers:  []Node{{Name: "b1", Addr: ln.Addr().String(), ID: 1}},
		Commands: Commands{Kill: "true", Stop: "echo first; echo no such unit {name} >&2; exit 5", Pause: "sleep 5"},
		Timeout:  300 * time.Millisecond, DownWait: 200 * time.Millisecond,
	})
	for _, tc := range []struct {
		do       func() error
		exit     int
		timedOut bool
		cmd      string
		says     string
	}{
		{func() error { return c.Stop(1, 0) }, 5, false, "echo first; echo no such unit b1 >&2; exit 5", "stop command for b1 exited 5: echo first; echo no such unit b1 >&2; exit 5: no such unit b1"},
		{func() error { return c.Pause(1) }, -1, true, "sleep 5", "pause command for b1 timed out after 300ms"},
		{func() error { return c.Kill(1) }, 0, false, "true", "the kill command exited 0, but " + ln.Addr().String() + " still accepts connections"},
	} {
		err := tc.do()
		var ce *CommandError
		if !errors.As(err, &ce) {
			t.Errorf("%v: not a CommandError", err)
			continue
		}
		if ce.Exit != tc.exit || ce.TimedOut != tc.timedOut || ce.FaultCommand() != tc.cmd || !strings.Contains(ce.Error(), tc.says) {
			t.Errorf("%+v (%q), want exit %d timed out %v command %q saying %q", ce, ce.Error(), tc.exit, tc.timedOut, tc.cmd, tc.says)
		}
	}
}

// TestCheckCommands: the heal command runs on every node; the others are
// probed for every node without running: a command sh cannot parse, or
// whose program does not exist, is refused with the node and the command
// as it would run; commands that parse and name programs pass, and ran
// nothing.
func TestCheckCommands(t *testing.T) {
	marks := t.TempDir()
	logs := t.TempDir()
	spec := Spec{
		Brokers:    []Node{{Name: "b1", Addr: "127.0.0.1:1", ID: 1}, {Name: "b2", Addr: "127.0.0.1:2", ID: 2}},
		Controller: &Node{Name: "ctl", Addr: "127.0.0.1:3", ID: -1},
		Commands: Commands{
			Kill:      "touch " + marks + "/{name}.killed",
			Start:     "sh -c 'touch " + marks + "/{name}.started'",
			Partition: "for p in {peers}; do touch " + marks + "/{name}-$p.cut; done",
			Slow:      "echo {delay} > " + marks + "/{name}.slow",
			Heal:      "touch " + marks + "/{name}.healed",
		},
		LogDir: logs,
	}
	c := New(spec)
	did, err := c.CheckCommands(context.Background(), []string{Kill, Start, Partition, Slow, Heal}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if want := "ran heal on 3 nodes; probed kill, start, partition, slow for each of 3 nodes (sh -n, command -v; not run)"; did != want {
		t.Errorf("check said %q, want %q", did, want)
	}
	ran, _ := filepath.Glob(filepath.Join(marks, "*"))
	var names []string
	for _, p := range ran {
		names = append(names, filepath.Base(p))
	}
	if got := strings.Join(names, " "); got != "b1.healed b2.healed ctl.healed" {
		t.Errorf("the check ran %q; only the heal command should run, on every node", got)
	}
	if cmds := c.TakeCommands(); len(cmds) != 0 {
		t.Errorf("the check's commands %+v would go into the first window's record", cmds)
	}

	for _, bad := range []struct {
		cmds Commands
		want string
	}{
		{Commands{Kill: "dockr kill {name}"}, "kill command for ctl: no program dockr (command -v finds none on PATH or at that path): dockr kill ctl"},
		{Commands{Kill: "./bin/no-chaos cluster kill {name}"}, "kill command for ctl: no program ./bin/no-chaos"},
		{Commands{Partition: "for p in {peers}; do iptables -A INPUT -s $p -j DROP"}, "partition command for ctl: sh cannot parse it ("},
		{Commands{Heal: "echo needs root >&2; exit 4"}, "heal command for ctl exited 4: echo needs root >&2; exit 4: needs root"},
	} {
		s := spec
		s.Commands = bad.cmds
		_, err := New(s).CheckCommands(context.Background(), Actions(), time.Second)
		var ce *CommandError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%+v: %v, want a CommandError saying %q", bad.cmds, err, bad.want)
		}
	}
	log, _ := os.ReadFile(filepath.Join(logs, "ctl.log"))
	if !strings.Contains(string(log), "no program dockr") {
		t.Errorf("ctl.log does not say why the probe failed:\n%s", log)
	}
}
