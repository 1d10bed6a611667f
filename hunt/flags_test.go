package hunt

import (
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/chaos-isr/chaos/runner"
)

// TestExternalHuntCommand: a hunt of an external cluster prints each
// finding as the chaos run command that runs it again against the same
// cluster: the external flags as given (every --node, a bool set to false
// left out, since the bare flag would mean true), the drawn flags and the
// schedule, which chaos run takes back as a spec of that cluster.
func TestExternalHuntCommand(t *testing.T) {
	var f Flags
	fs := pflag.NewFlagSet("hunt", pflag.ContinueOnError)
	f.Register(fs)
	err := fs.Parse([]string{"--runtime", "external", "--bootstrap", "127.0.0.1:9092", "--time", "1m",
		"--node", "b1=127.0.0.1:9092", "--node", "b2=127.0.0.1:9093", "--node", "b3=127.0.0.1:9094",
		"--kill-cmd", "kill -9 {name}", "--start-cmd", "start {name}", "--combined-controllers=false", "--check-commands"})
	if err != nil {
		t.Fatal(err)
	}
	o, err := f.Options()
	if err != nil {
		t.Fatal(err)
	}
	if o.Parallel != 1 || o.ShrinkRuns != 0 || o.Execute == nil || !o.Draw.OwnCluster {
		t.Fatalf("options of an external hunt: parallel %d, shrink %d, execute %v, own cluster %v", o.Parallel, o.ShrinkRuns, o.Execute != nil, o.Draw.OwnCluster)
	}
	s := Draw(7, o.Base, o.Draw)
	cmd := o.Command(s)
	line := strings.Join(cmd, " ")
	for _, want := range []string{" run ", "--runtime external", "--node b1=127.0.0.1:9092 --node b2=127.0.0.1:9093 --node b3=127.0.0.1:9094",
		"--kill-cmd kill -9 {name}", "--check-commands", "--schedule ", "--seed 7"} {
		if !strings.Contains(line, want) {
			t.Errorf("the command lacks %q: %s", want, line)
		}
	}
	for _, not := range []string{"--combined-controllers", "--session-timeout-ms", "--nodes"} {
		if strings.Contains(line, not) {
			t.Errorf("the command has %q: %s", not, line)
		}
	}
	var rf runner.Flags
	rfs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	rf.Register(rfs)
	rf.RegisterSchedule(rfs)
	rf.External.RegisterExternal(rfs)
	if err := rfs.Parse(cmd[2:]); err != nil {
		t.Fatalf("chaos run does not parse %v: %v", cmd[2:], err)
	}
	got, err := rf.Spec()
	if err != nil {
		t.Fatalf("chaos run refuses the printed command: %v", err)
	}
	if got.Windows.String() != s.Windows.String() || !slices.Equal(got.External.Nodes, s.External.Nodes) || got.Seed != s.Seed {
		t.Errorf("chaos run's spec: windows %s, nodes %v, seed %d; want %s, %v, %d", got.Windows, got.External.Nodes, got.Seed, s.Windows, s.External.Nodes, s.Seed)
	}
}
