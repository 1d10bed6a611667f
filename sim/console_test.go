package sim

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/runner"
)

// TestPrintSweep: the table counts runs and seeds by verdict and runs by
// anomaly, and lists each run that was not valid with its replay
// command; the exit code is the worst run's.
func TestPrintSweep(t *testing.T) {
	invalid := &checker.Results{Valid: checker.Invalid, Unexpected: []string{checker.LostWriteName},
		Results: []checker.Result{{Name: checker.LostWriteName, Valid: checker.Invalid, Forbidden: 2}}}
	runs := []SweepRun{
		{Seed: 1, Outcome: runner.Outcome{Verdict: checker.Valid}},
		{Seed: 2, Outcome: runner.Outcome{Verdict: checker.Invalid, Results: invalid, Report: "r/report.html"}},
		{Seed: 3, Err: errors.New("boom")},
		{Seed: 4, Outcome: runner.Outcome{Verdict: checker.Unknown}},
	}
	var b strings.Builder
	printSweep(&b, runs, 1500*time.Millisecond, func(seed uint64) string { return fmt.Sprint("replay ", seed) })
	want := `
4 runs in 1.5s
VERDICT  RUNS  SEEDS
valid    1     
invalid  1     2
unknown  1     4
error    1     3

ANOMALY     RUNS FOUND  RUNS FORBIDDEN
lost-write  1           1

runs that were not valid (each replays with its command):
  seed 2 INVALID: lost-write
    replay 2
    report: r/report.html
  seed 3 ERROR: boom
    replay 3
  seed 4 UNKNOWN
    replay 4
`
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
	if got := SweepExitCode(runs); got != 1 {
		t.Errorf("exit %d, want 1", got)
	}
	if got := SweepExitCode(runs[2:]); got != runner.ExitError {
		t.Errorf("exit %d, want %d", got, runner.ExitError)
	}
	if got := SweepExitCode(runs[3:]); got != 2 {
		t.Errorf("exit %d, want 2", got)
	}
}
