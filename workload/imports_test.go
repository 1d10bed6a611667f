package workload

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestNoBrokerImport: the workload, its dependencies included (tests
// aside), must not use any of the broker's packages. A codec shared with
// the system under test would make a bug in it symmetric, and a tester
// that agrees with the broker's mistakes cannot see them.
func TestNoBrokerImport(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed %d packages: %q", len(deps), deps)
	}
	for _, d := range deps {
		if d == "github.com/chaos-isr/chaos/broker" || strings.HasPrefix(d, "github.com/chaos-isr/chaos/broker/") {
			t.Errorf("workload depends on %s", d)
		}
	}
}
