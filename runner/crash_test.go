package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/results"
)

// TestRunCrash: in chaos run's local runtime a broker process that dies
// on its own (the planted bug truncation-index-out-of-range panics when a
// cut-off leader rejoins and truncates) is noticed when it exits, recorded
// as a crash with its exit status, its panic and the end of its log, said
// on the run's log, restarted by the next heal, and the run completes
// INVALID for crash. The same run without the bug records no crash.
func TestRunCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("a real cluster for 12 s")
	}
	s := shortSpec(t)
	s.Faults, s.NemesisInterval, s.TimeLimit = []string{"partition-leader"}, 5*time.Second, 12*time.Second
	s.Settings.Bugs = []string{"truncation-index-out-of-range"}
	var logged []string
	o, err := Run(context.Background(), s, Options{Log: func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	r, _ := o.Results.Get(checker.CrashName)
	if o.Verdict != checker.Invalid || !slices.Contains(o.Results.Unexpected, checker.CrashName) || r.Count == 0 {
		t.Fatalf("verdict %s, unexpected %v, crash %+v\n%s", o.Verdict, o.Results.Unexpected, r, strings.Join(logged, "\n"))
	}
	ops, err := history.ReadFile(filepath.Join(o.Dir, results.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := history.Pairs(ops); err != nil {
		t.Fatal(err)
	}
	var crashed []string
	restarted := 0
	for _, op := range ops {
		if c := op.Value.Crashed(); c != nil && op.Type == history.Info {
			crashed = append(crashed, c.Node)
			if op.Process != history.ClusterProcess || op.Value.Broker == nil || c.Exit != "exit status 2" ||
				!strings.HasPrefix(c.Panic, "runtime error: index out of range") || !strings.Contains(c.Log, "goroutine ") ||
				!strings.Contains(c.Log, "core.droppedEpochs") {
				t.Errorf("crash op %v: %+v", op, c)
			}
		}
		for _, tg := range op.Value.FaultTargets() {
			if op.Type == history.Info && strings.HasSuffix(tg, " (crashed)") {
				restarted++
			}
		}
	}
	if len(crashed) != r.Count || restarted == 0 {
		t.Errorf("crashes %v (result: %d), %d restarts of crashed nodes", crashed, r.Count, restarted)
	}
	said := strings.Join(logged, "\n")
	if !strings.Contains(said, crashed[0]+" exited on its own (exit status 2: panic: runtime error: index out of range") {
		t.Errorf("the run's log does not say %s crashed:\n%s", crashed[0], said)
	}

	s.Settings.Bugs, s.Store = nil, t.TempDir()
	control, err := Run(context.Background(), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if cr, _ := control.Results.Get(checker.CrashName); cr.Valid != checker.Valid || control.Verdict != checker.Valid {
		t.Errorf("without the bug: verdict %s, crash %s %v", control.Verdict, cr.Valid, cr.Details)
	}
}
