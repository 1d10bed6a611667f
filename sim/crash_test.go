package sim

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/runner"
)

// crashSpec is the scenario that exposes the planted bug
// truncation-index-out-of-range (docs/detection.md, P): a partition's
// leader cut off every few seconds, so that it truncates what it appended
// alone when it rejoins.
func crashSpec(t testing.TB, seed uint64, planted bool) runner.Spec {
	s := spec(t, seed, "partition-leader")
	if planted {
		s.Settings.Bugs = []string{"truncation-index-out-of-range"}
	}
	return s
}

// TestCrashIsAFinding: a broker whose state machine panics in chaos sim is
// a finding, not the tool's failure: the run completes with its whole
// store, INVALID for crash, the panic message and the node in the
// results, results.json, the report and the verdict line, the panic's
// stack in the history without addresses, the crashed broker restarted by
// the next heal, and the same seed replays the history byte for byte. The
// same seed without the bug records no crash.
func TestCrashIsAFinding(t *testing.T) {
	o := run(t, crashSpec(t, 3, true))
	r, _ := o.Results.Get(checker.CrashName)
	if o.Verdict != checker.Invalid || !slices.Contains(o.Results.Unexpected, checker.CrashName) || r.Forbidden == 0 {
		t.Fatalf("verdict %s, unexpected %v, crash %+v", o.Verdict, o.Results.Unexpected, r)
	}
	const msg = "panic: runtime error: index out of range"
	if !strings.HasPrefix(r.Details[0], "broker-") || !strings.Contains(r.Details[0], msg) {
		t.Errorf("the first crash is described as %q", r.Details[0])
	}
	if o.Detection == nil || o.Detection.Anomaly != checker.CrashName {
		t.Errorf("first detection %+v, want the crash", o.Detection)
	}
	stored, err := results.ReadResults(o.Dir + "/" + results.ResultsFile)
	if err != nil {
		t.Fatal(err)
	}
	if sr, _ := stored.Get(checker.CrashName); sr.Count != r.Count || !slices.Equal(sr.Details, r.Details) {
		t.Errorf("results.json holds crash %+v, the run found %+v", sr, r)
	}
	if page := file(t, o, results.ReportFile); !bytes.Contains(page, []byte("index out of range")) {
		t.Error("report.html does not show the panic")
	}
	var said bytes.Buffer
	if _, err := o.Say(&said, &said, nil); err != nil {
		t.Fatal(err)
	}
	verdict := said.String()[strings.LastIndex(said.String(), "verdict: "):]
	if !strings.HasPrefix(verdict, "verdict: INVALID: crash (broker-") || !strings.Contains(verdict, msg) || strings.Contains(said.String(), "goroutine ") {
		t.Errorf("chaos sim says:\n%s", said.String())
	}

	ops, err := history.ReadFile(o.Dir + "/" + results.HistoryFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := history.Pairs(ops); err != nil {
		t.Fatal(err)
	}
	crashes, restarts := 0, 0
	for _, op := range ops {
		if op.F == history.Crash && op.Type == history.Info {
			crashes++
			c := op.Value.Crashed()
			if op.Process != history.ClusterProcess || c == nil || op.Value.Broker == nil || c.Node != fmt.Sprintf("broker-%d", *op.Value.Broker) ||
				!strings.HasPrefix(c.Stack, "github.com/chaos-isr/chaos/broker/core.") || strings.Contains(c.Stack, "0x") || c.Exit != "" {
				t.Errorf("crash op %v: %+v", op, c)
			}
		}
		for _, tg := range op.Value.FaultTargets() {
			if op.Type == history.Info && strings.HasSuffix(tg, " (crashed)") {
				restarts++
			}
		}
	}
	if crashes != r.Count || restarts == 0 {
		t.Errorf("%d crash ops for %d crashes, %d restarts of crashed nodes", crashes, r.Count, restarts)
	}

	again := run(t, crashSpec(t, 3, true))
	if a, b := file(t, o, results.HistoryFile), file(t, again, results.HistoryFile); !bytes.Equal(a, b) {
		t.Errorf("seed 3 replayed another history (%d bytes, first %d)", len(b), len(a))
	}

	control := run(t, crashSpec(t, 3, false))
	if cr, _ := control.Results.Get(checker.CrashName); cr.Valid != checker.Valid || control.Verdict == checker.Invalid {
		t.Errorf("without the bug: verdict %s, crash %+v", control.Verdict, cr)
	}
}

// TestShrinkCrash: a crash finding shrinks like any other: the search
// keeps crash as its target and ends on a smaller run that still shows
// it.
func TestShrinkCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("a search of simulated runs")
	}
	got, err := Shrink(context.Background(), crashSpec(t, 3, true), ShrinkOptions{Runs: 6})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Target, []string{checker.CrashName}) || !slices.Contains(got.Outcome.Results.Unexpected, checker.CrashName) {
		t.Fatalf("target %v, the shrunk run shows %v", got.Target, got.Outcome.Results.Unexpected)
	}
	if got.Size.Windows >= got.OriginalSize.Windows {
		t.Errorf("nothing shrank: %+v from %+v", got.Size, got.OriginalSize)
	}
	t.Logf("%d runs: %+v -> %+v", got.Runs, got.OriginalSize, got.Size)
}
