package runner

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/nemesis"
	"github.com/chaos-isr/chaos/results"
)

// TestRealTrigger: on real processes, a fault armed on leader-change
// kills the new leader right after its election. One window kills a
// leader and arms a second kill on the leader change that follows (the
// controller fences the dead broker after the session timeout and elects
// another); the second kill must come within 50 ms, plus a poll, of the
// moment the new leader took the leadership, as its own log says (the
// line "TOPIC-P: leader, epoch E", written when its heartbeat brought it
// the election), and after the controller decided it (its log's
// "TOPIC-P: leader ID epoch E"). The logs' wall times are put on the
// history's clock by the workload's start, which the Workload hook sees
// (a little after the history's zero, so the latency measured is an upper
// bound); the kill's time is its start operation's, recorded after the
// kill returned. The run is judged as any other: the kinds that ran are
// kill-leader's.
func TestRealTrigger(t *testing.T) {
	s := shortSpec(t)
	s.Faults, s.NemesisInterval, s.TimeLimit = nil, 0, 9*time.Second
	w, err := nemesis.ParseSchedule("kill-leader+kill-leader:leader-change~0ms@1s+5s")
	if err != nil {
		t.Fatal(err)
	}
	s.Windows = w
	var began time.Time
	o, err := Run(context.Background(), s, Options{Workload: func(*Status) func() {
		began = time.Now()
		return func() {}
	}})
	if err != nil {
		t.Fatalf("run: %v (%+v)", err, o)
	}
	ops, err := history.ReadFile(filepath.Join(o.Dir, results.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	tc, err := results.ReadTestConfig(filepath.Join(o.Dir, results.TestFile))
	if err != nil {
		t.Fatal(err)
	}
	var starts []history.Op
	for _, op := range ops {
		if op.Process == history.NemesisProcess && op.Type == history.Invoke && strings.HasPrefix(op.F, "start-") {
			starts = append(starts, op)
		}
	}
	var infos []history.Op
	for _, op := range ops {
		if op.Process == history.NemesisProcess && op.Type == history.Info && strings.HasPrefix(op.F, "start-") {
			infos = append(infos, op)
		}
	}
	if len(starts) != 2 || len(infos) != 2 || infos[1].Error != "" || starts[1].F != "start-kill-leader" {
		t.Fatalf("want two kill-leader starts, the second fired; got %+v", infos)
	}
	kill := starts[1]
	targets := strings.Join(kill.Value.Targets, "; ")
	t.Logf("second kill at %s: %s", time.Duration(kill.Time), targets)
	var p, from, to int32
	var seen float64
	i := strings.Index(targets, "fired on leader-change: ")
	j := strings.Index(targets, "seen at ")
	if i < 0 || j < 0 {
		t.Fatalf("the targets do not say what fired it: %q", targets)
	}
	if _, err := fmt.Sscanf(targets[i:], "fired on leader-change: partition %d epoch %d -> %d", &p, &from, &to); err != nil {
		t.Fatalf("%v in %q", err, targets)
	}
	if _, err := fmt.Sscanf(targets[j:], "seen at %fs", &seen); err != nil {
		t.Fatalf("%v in %q", err, targets)
	}
	if len(kill.Value.KilledBrokers) != 1 {
		t.Fatalf("killed %v", kill.Value.KilledBrokers)
	}
	leader := kill.Value.KilledBrokers[0]
	onClock := func(file, line string) (time.Duration, bool) {
		t.Helper()
		at, ok := logTime(t, filepath.Join(o.Dir, "cluster", file), line)
		return at.Sub(began), ok
	}
	key := fmt.Sprintf("%s-%d: ", tc.Workload.Topic, p)
	decided, ok := onClock("controller.log", fmt.Sprintf("%sleader %d epoch %d ", key, leader, to))
	if !ok {
		t.Fatalf("the controller's log does not say it elected broker %d in epoch %d", leader, to)
	}
	killed := time.Duration(kill.Time)
	took, ok := onClock(fmt.Sprintf("broker-%d.log", leader), fmt.Sprintf("%sleader, epoch %d,", key, to))
	if !ok {
		// Killed before its own heartbeat brought it the election (the
		// others heard first, and the watch asks them all): no later
		// than it would have taken the leadership.
		t.Logf("broker %d was killed before it heard of its election", leader)
		took = killed
	}
	seenAt := time.Duration(seen * float64(time.Second))
	t.Logf("partition %d epoch %d: the controller elected broker %d at %s, it took the leadership at %s, the nemesis saw it at %s and killed it at %s: %s after it became leader, %s after the election, %s after the nemesis saw it",
		p, to, leader, decided, took, seenAt, killed, killed-took, killed-decided, killed-seenAt)
	poll := 10 * time.Millisecond
	if killed < decided || killed-took > 50*time.Millisecond+poll {
		t.Errorf("the new leader was killed %s after it took the leadership (%s after the election), want within 50ms and a poll", killed-took, killed-decided)
	}
	if killed-seenAt > 50*time.Millisecond {
		t.Errorf("killed %s after the poll that saw the election, want within 50ms", killed-seenAt)
	}
	if o.Verdict != checker.Valid || len(o.Results.Faults) != 1 || o.Results.Faults[0] != "kill-leader" || o.Results.FaultWindows["kill-leader"] != 2 {
		t.Errorf("verdict %s, faults that ran %v, windows %v", o.Verdict, o.Results.Faults, o.Results.FaultWindows)
	}
}

// logTime is the time of the first line of a node's log that contains
// text (the log's lines start "PREFIX: 2006/01/02 15:04:05.000000 "), and
// whether there is one.
func logTime(t *testing.T, path, text string) (time.Time, bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, text) {
			continue
		}
		_, rest, _ := strings.Cut(line, ": ")
		if len(rest) < 26 {
			break
		}
		at, err := time.ParseInLocation("2006/01/02 15:04:05.000000", rest[:26], time.Local)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return at, true
	}
	return time.Time{}, false
}
