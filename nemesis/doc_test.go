package nemesis

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/faults.md's fault table from the registry")

// faultTable renders docs/faults.md's table of faults from the registry.
func faultTable() string {
	var b strings.Builder
	b.WriteString("| Name | Fault | Network | Brokers killed at once (of 3) |\n|---|---|---|---|\n")
	for _, f := range Faults() {
		net := ""
		if f.Network {
			net = "yes"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %d |\n", f.Name, f.Doc, net, f.Kills(3))
	}
	return b.String()
}

// TestFaultTable keeps docs/faults.md's table of faults equal to the
// registry (go test ./nemesis -run TestFaultTable -update rewrites it).
func TestFaultTable(t *testing.T) {
	const path = "../docs/faults.md"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	const begin, end = "<!-- faults:begin", "<!-- faults:end -->"
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no fault table markers", path)
	}
	i += strings.Index(doc[i:], "\n") + 1
	if want := faultTable(); doc[i:j] != want {
		if *update {
			if err := os.WriteFile(path, []byte(doc[:i]+want+doc[j:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("the fault table of %s differs from the registry; run go test ./nemesis -run TestFaultTable -update\nthe registry says:\n%s", path, want)
	}
}

// TestRegistry: names are sorted (Lookup searches), unique, documented,
// and every fault can start.
func TestRegistry(t *testing.T) {
	for i, f := range faults {
		if i > 0 && faults[i-1].Name >= f.Name {
			t.Errorf("%s after %s: the registry must be in name order", f.Name, faults[i-1].Name)
		}
		if f.Doc == "" || f.Kills == nil || f.start == nil {
			t.Errorf("%s lacks a doc, Kills or a start", f.Name)
		}
		if g, ok := Lookup(f.Name); !ok || g != f {
			t.Errorf("Lookup(%s) = %v, %v", f.Name, g, ok)
		}
	}
	if _, ok := Lookup("meteor"); ok {
		t.Error("Lookup found a fault that does not exist")
	}
}
