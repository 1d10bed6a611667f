package checker

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// docPath is the project's description of the guarantee model, whose
// matrix this package's tests generate.
const docPath = "../docs/guarantees.md"

// matrix renders the guarantee matrix of docs/guarantees.md from the
// model: which truncations each configuration and fault class permits, and
// whether it permits an acknowledgement while the ISR is below
// min.insync.replicas.
func matrix() string {
	var b strings.Builder
	b.WriteString("| acks | min.insync.replicas | election | faults | uncommitted truncation | committed truncation | ack below min.insync.replicas |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	yes := func(ok bool) string {
		if ok {
			return "yes"
		}
		return "no"
	}
	row := func(acks, isr int, election, class string) {
		m := permitted(Config{Acks: acks, MinInsyncReplicas: isr, Election: election, ReplicationFactor: 3, MaxInFlight: 1}, class)
		p := m[LostWriteName]
		fmt.Fprintf(&b, "| %d | %d | %s | %s | %s | %s | %s |\n", acks, isr, election, class,
			yes(p.Causes[UncommittedTruncation]), yes(p.Causes[CommittedTruncation]), yes(m[AckBelowMinISRName].Permitted))
	}
	for _, c := range []struct{ acks, isr int }{{0, 1}, {1, 1}, {-1, 1}, {-1, 2}} {
		for _, class := range []string{FaultsF1, FaultsF2, FaultsF3} {
			row(c.acks, c.isr, "clean", class)
		}
	}
	for _, c := range []struct{ acks, isr int }{{0, 1}, {1, 1}, {-1, 2}} {
		row(c.acks, c.isr, "unclean", FaultsF1)
	}
	return b.String()
}

// TestGuaranteesDoc keeps the matrix of docs/guarantees.md equal to what
// the model says (go test ./checker -run TestGuaranteesDoc -update
// rewrites it), and checks that the page names every anomaly and cause.
func TestGuaranteesDoc(t *testing.T) {
	data, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	const begin, end = "<!-- matrix:begin", "<!-- matrix:end -->"
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no matrix markers", docPath)
	}
	i += strings.Index(doc[i:], "\n") + 1
	want := matrix()
	if doc[i:j] != want {
		if *update {
			if err := os.WriteFile(docPath, []byte(doc[:i]+want+doc[j:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("the matrix of %s differs from the model; run go test ./checker -run TestGuaranteesDoc -update\nthe model says:\n%s", docPath, want)
	}
	for _, n := range Names() {
		if !strings.Contains(doc, "| "+n+" |") {
			t.Errorf("%s has no row for anomaly %s", docPath, n)
		}
	}
	for _, c := range Causes() {
		if !strings.Contains(doc, strings.ReplaceAll(string(c), "-", " ")) {
			t.Errorf("%s does not explain cause %s", docPath, c)
		}
	}
}
