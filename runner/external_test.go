package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/results"
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
