package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/internal/testbin"
	"github.com/chaos-isr/chaos/results"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

// shortSpec is a few seconds' test of a real cluster: the nodes are the
// chaos binary's processes, the lifecycle runs in this test.
func shortSpec(t *testing.T) Spec {
	t.Helper()
	bin, err := testbin.Path()
	if err != nil {
		t.Fatal(err)
	}
	s := DefaultSpec()
	s.Store, s.Binary, s.Seed = t.TempDir(), bin, 42
	s.TimeLimit, s.Rate, s.MonitorInterval = 6*time.Second, 200, 200*time.Millisecond
	s.Settings.ReplicaLagTimeMaxMs, s.Settings.SessionTimeoutMs = 2000, 2000
	s.Faults, s.NemesisInterval = []string{"kill"}, 2*time.Second
	return s
}

// TestRunInProcess runs a whole short test through the library: a cluster
// of real processes, a kill window, the final phase and the checkers; the
// outcome carries the verdict, and the store holds what chaos run leaves.
func TestRunInProcess(t *testing.T) {
	s := shortSpec(t)
	var started, logged []string
	var ups, workloads int
	o, err := Run(context.Background(), s, Options{
		Version:   "test",
		Started:   func(dir string, seed uint64, id string) { started = append(started, dir, id) },
		ClusterUp: func(func()) { ups++ },
		Workload: func(st *Status) func() {
			workloads++
			if st.Limit != s.TimeLimit {
				t.Errorf("status limit %s", st.Limit)
			}
			return func() {}
		},
		Log: func(format string, args ...any) { logged = append(logged, format) },
	})
	if err != nil {
		t.Fatalf("run: %v (%+v)", err, o)
	}
	if o.Verdict != checker.Valid || o.ExitCode() != 0 || o.Results == nil || o.Seed != 42 {
		t.Fatalf("outcome %+v", o)
	}
	if r, _ := o.Results.Get(checker.LostWriteName); r.Valid != checker.Valid {
		t.Errorf("lost-write %s: %v", r.Valid, r.Details)
	}
	if len(o.Results.Faults) != 1 || o.Results.Faults[0] != "kill" {
		t.Errorf("faults that ran: %v", o.Results.Faults)
	}
	if len(started) != 2 || started[0] != o.Dir || !strings.HasPrefix(started[1], "chaos-") || ups != 1 || workloads != 1 {
		t.Errorf("hooks: started %v, cluster up %d, workload %d", started, ups, workloads)
	}
	if len(logged) == 0 {
		t.Error("nothing logged")
	}
	for _, f := range []string{results.TestFile, results.HistoryFile, results.ResultsFile, results.ReportFile} {
		if _, err := os.Stat(filepath.Join(o.Dir, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	tc, err := results.ReadTestConfig(filepath.Join(o.Dir, results.TestFile))
	if err != nil || tc.Seed != 42 || tc.Name != "acksall_isr2_clean_kill" || tc.Versions["chaos"] != "test" {
		t.Errorf("test.json: %+v, %v", tc, err)
	}
}

// TestRunInterrupted: a context that ends mid-run gives an interrupted
// outcome, no verdict, and a readable history and report in the store.
func TestRunInterrupted(t *testing.T) {
	s := shortSpec(t)
	s.TimeLimit = time.Minute
	ctx, cancel := context.WithCancel(context.Background())
	o, err := Run(ctx, s, Options{Workload: func(*Status) func() {
		time.AfterFunc(2*time.Second, cancel)
		return func() {}
	}})
	if err != nil || !o.Interrupted || o.Verdict != "" || o.ExitCode() != ExitInterrupted {
		t.Fatalf("outcome %+v, %v", o, err)
	}
	if o.Report == "" {
		t.Errorf("no report: %s", o.ReportErr)
	}
	if data, err := os.ReadFile(filepath.Join(o.Dir, results.HistoryFile)); err != nil || len(data) == 0 {
		t.Errorf("history: %v", err)
	}
}

// TestSpecValidate: impossible specs are refused with the field and the
// reason, all at once, before anything starts.
func TestSpecValidate(t *testing.T) {
	good := DefaultSpec()
	if err := good.Validate(); err != nil {
		t.Fatalf("the default spec: %v", err)
	}
	for _, c := range []struct {
		edit func(*Spec)
		want string
	}{
		{func(s *Spec) { s.Runtime = "moon" }, "runtime"},
		{func(s *Spec) { s.Nodes = 2 }, "settings.replication_factor: above nodes 2, got 3"},
		{func(s *Spec) { s.Settings.MinInsyncReplicas = 4 }, "min.insync.replicas 4 is above the replication factor 3"},
		{func(s *Spec) { s.Faults = []string{"meteor"} }, `faults: "meteor"`},
		{func(s *Spec) { s.Faults, s.TimeLimit = []string{"kill"}, 5*time.Second }, "no fault window fits"},
		{func(s *Spec) { s.Rate = -1 }, "rate"},
		{func(s *Spec) { s.Acks = 2 }, "acks"},
		{func(s *Spec) { s.Settings.ReplicaFetchWaitMaxMs = 20000 }, "replica_fetch_wait_max_ms"},
		{func(s *Spec) { s.Settings.Fsync = "sometimes" }, `settings.fsync: not an fsync policy, got "sometimes"`},
	} {
		s := DefaultSpec()
		c.edit(&s)
		if err := s.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", s, err, c.want)
		}
	}
	if _, err := Run(context.Background(), Spec{}, Options{}); err == nil {
		t.Error("Run accepted an empty spec")
	}
}
