// Package planted plants a failure in a simulated run, for the tests of
// shrinking and reproducing one (package sim, chaos sim --shrink and
// --from). The simulated broker has no failure we know of, so the tests
// take a run of scenario 1 (acks=1, a partition's leader cut off: writes
// only the old leader had are lost, which acks=1 permits) and judge it as
// if its producers had asked for acks=-1, which promises that an
// acknowledged write is committed and never lost. The history is the
// run's own; only the promise it is held to is stricter, exactly as
// "chaos check --acks -1" would judge it. Its lost writes are then
// forbidden, and they show only when a window cut a leader off while
// producers wrote to it: what a broker that acknowledged writes before
// replicating them would look like.
package planted

import (
	"path/filepath"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/results"
)

// AsAcksAll names the anomalies the stored run in dir shows that acks=-1
// forbids. It skips the linearizability search, the slow part of
// judging: the loss alone is the planted failure (judge a run's
// results.json the same way with chaos check --acks -1
// --skip-linearizability).
func AsAcksAll(dir string) ([]string, error) {
	tc, err := results.ReadTestConfig(filepath.Join(dir, results.TestFile))
	if err != nil {
		return nil, err
	}
	ops, err := history.ReadFile(filepath.Join(dir, results.HistoryFile))
	if err != nil {
		return nil, err
	}
	cfg := tc.CheckerConfig()
	cfg.Acks = -1
	return checker.Check(ops, cfg, checker.Options{SkipLinearizability: true}).Unexpected, nil
}
