package results

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestImports: the store and its renderer depend on the history, the
// checker and each other only in one direction, never on what runs a test
// (workload, nemesis, cluster), the system under test (broker) or the CLI.
// A stored schema that imported the workload's types would change with
// them; a renderer that imported the nemesis would draw what the nemesis
// plans rather than what the history and test.json record.
func TestImports(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no go command on PATH to list imports with")
		}
		t.Skip("no go command on PATH")
	}
	const mod = "github.com/chaos-isr/chaos/"
	forbidden := []string{"workload", "nemesis", "cluster", "broker", "cmd"}
	for _, pkg := range []struct {
		path  string
		extra []string
	}{
		{mod + "results", []string{"results/report"}},
		{mod + "results/report", nil},
	} {
		out, err := exec.Command(goCmd, "list", "-deps", "-f", "{{.ImportPath}}", pkg.path).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg.path, err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 2 {
			t.Fatalf("go list -deps %s listed %q", pkg.path, deps)
		}
		for _, dep := range deps {
			rel, ok := strings.CutPrefix(dep, mod)
			if !ok {
				continue
			}
			for _, f := range append(forbidden, pkg.extra...) {
				if rel == f || strings.HasPrefix(rel, f+"/") {
					t.Errorf("%s depends on %s", pkg.path, dep)
				}
			}
		}
	}
}
