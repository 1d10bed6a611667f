package runner

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/checker"
)

// TestSpecAndOutcomeFiles: a spec and an outcome survive their files (how
// a campaign talks to its child runs), and a spec file with a field the
// spec lacks is refused.
func TestSpecAndOutcomeFiles(t *testing.T) {
	dir := t.TempDir()
	s := DefaultSpec()
	s.Name, s.Seed, s.Faults, s.NemesisInterval, s.TimeLimit = "x", 7, []string{"kill", "pause"}, 3*time.Second, 9*time.Second
	s.Command, s.Binary, s.Settings.LoseUnsynced = []string{"chaos", "run", "--seed", "7"}, "/bin/chaos", true
	path := filepath.Join(dir, "spec.json")
	if err := s.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	back, err := ReadSpecFile(path)
	if err != nil || !reflect.DeepEqual(back, s) {
		t.Fatalf("spec read back %+v, %v; wrote %+v", back, err, s)
	}
	if err := os.WriteFile(path, []byte(`{"store": "s", "nodez": 3}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadSpecFile(path); err == nil || !strings.Contains(err.Error(), `unknown field "nodez"`) {
		t.Errorf("a misspelt field: %v", err)
	}
	o := Outcome{Dir: "store/x/1", Name: "x", Seed: 7, ClusterID: "chaos-1", Verdict: checker.Invalid, Report: "store/x/1/report.html",
		Detection: &checker.Detection{Anomaly: "lost-write", Op: 12, Time: 3e9, Ops: 7}}
	path = filepath.Join(dir, "outcome.json")
	if err := o.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	if back, err := ReadOutcomeFile(path); err != nil || !reflect.DeepEqual(back, o) || back.ExitCode() != 1 {
		t.Fatalf("outcome read back %+v, %v; wrote %+v", back, err, o)
	}
}
