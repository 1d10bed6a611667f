package deps

import (
	"encoding/json"
	"io"
	"os/exec"
	"path"
	"strings"
	"testing"
)

const module = "github.com/chaos-isr/chaos"

// imports lists every package of the module with the module's packages it
// imports directly or indirectly (go list -deps), test files left out.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "-deps=false", module+"/...")
	cmd.Dir = "../.."
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	direct := map[string][]string{}
	dec := json.NewDecoder(out)
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, module+"/") {
				direct[rel(p.ImportPath)] = append(direct[rel(p.ImportPath)], rel(imp))
			}
		}
		if _, ok := direct[rel(p.ImportPath)]; !ok {
			direct[rel(p.ImportPath)] = nil
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	// The closure: what each package depends on at all.
	all := map[string][]string{}
	var visit func(p string, seen map[string]bool)
	visit = func(p string, seen map[string]bool) {
		for _, d := range direct[p] {
			if !seen[d] {
				seen[d] = true
				visit(d, seen)
			}
		}
	}
	for p := range direct {
		seen := map[string]bool{}
		visit(p, seen)
		for d := range seen {
			all[p] = append(all[p], d)
		}
	}
	return all
}

func rel(p string) string { return strings.TrimPrefix(strings.TrimPrefix(p, module), "/") }

func under(p, root string) bool { return p == root || strings.HasPrefix(p, root+"/") }

// TestDependencyRules enforces the rules of docs/architecture.md.
func TestDependencyRules(t *testing.T) {
	deps := imports(t)
	if len(deps) < 10 {
		t.Fatalf("go list found only %d packages", len(deps))
	}
	tester := []string{"checker", "cluster", "nemesis", "workload", "results", "runner", "campaign", "history", "proxy", "netfault", "sim", "shard", "cmd"}
	rules := []struct {
		name   string
		from   func(p string) bool
		denied func(d string) bool
	}{
		{"broker imports no tester package", func(p string) bool { return under(p, "broker") },
			func(d string) bool {
				for _, x := range tester {
					if under(d, x) {
						return true
					}
				}
				return false
			}},
		{"checker imports only history, internal/blocks, internal/intern and internal/offheap", func(p string) bool { return p == "checker" },
			func(d string) bool {
				return d != "history" && d != "internal/blocks" && d != "internal/intern" && d != "internal/offheap"
			}},
		{"internal/blocks imports only internal/offheap", func(p string) bool { return p == "internal/blocks" },
			func(d string) bool { return d != "internal/offheap" }},
		{"internal/offheap imports nothing of the module", func(p string) bool { return p == "internal/offheap" },
			func(string) bool { return true }},
		{"internal/intern imports nothing of the module", func(p string) bool { return p == "internal/intern" },
			func(string) bool { return true }},
		{"workload imports no broker package", func(p string) bool { return under(p, "workload") },
			func(d string) bool { return under(d, "broker") }},
		{"cluster never imports nemesis", func(p string) bool { return under(p, "cluster") },
			func(d string) bool { return under(d, "nemesis") }},
		{"results imports no workload, nemesis, cluster or broker", func(p string) bool { return under(p, "results") },
			func(d string) bool {
				return under(d, "workload") || under(d, "nemesis") || under(d, "cluster") || under(d, "broker")
			}},
		{"only sim, hunt (which runs sim) and cmd import the in-memory cluster", func(p string) bool {
			return !under(p, "sim") && !under(p, "hunt") && !under(p, "cmd") && !under(p, "broker")
		},
			func(d string) bool { return under(d, "broker/memdriver") }},
		{"the store never imports its renderer", func(p string) bool { return p == "results" },
			func(d string) bool { return under(d, "results/report") || under(d, "results/serve") }},
		{"history imports nothing of the module", func(p string) bool { return p == "history" },
			func(string) bool { return true }},
		{"cli imports nothing of the module", func(p string) bool { return p == "internal/cli" },
			func(string) bool { return true }},
		{"only cmd imports cmd", func(p string) bool { return !under(p, "cmd") },
			func(d string) bool { return under(d, "cmd") }},
	}
	for _, r := range rules {
		for p, ds := range deps {
			if !r.from(p) {
				continue
			}
			for _, d := range ds {
				if r.denied(d) {
					t.Errorf("%s: %s depends on %s", r.name, p, path.Clean(d))
				}
			}
		}
	}
}
