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
	for _, c := range []struct{ acks, isr int }{{1, 1}, {1, 2}, {-1, 1}, {-1, 2}} {
		for _, class := range []string{FaultsF1, FaultsF2, FaultsF3} {
			row(c.acks, c.isr, "elr", class)
		}
	}
	return b.String()
}

// anomalyTable renders docs/guarantees.md's anomaly table from
// anomalyDocs, in Names' order.
func anomalyTable() string {
	var b strings.Builder
	b.WriteString("| anomaly | meaning | causes it can have |\n|---|---|---|\n")
	for _, n := range Names() {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", n, anomalyDocs[n].meaning, anomalyDocs[n].causes)
	}
	return b.String()
}

// TestGuaranteesDoc keeps the matrix and the anomaly table of
// docs/guarantees.md equal to what the model and anomalyDocs say (go test
// ./checker -run TestGuaranteesDoc -update rewrites them), and checks that
// the page names every anomaly and cause.
func TestGuaranteesDoc(t *testing.T) {
	data, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	for _, part := range []struct{ name, want string }{{"matrix", matrix()}, {"anomalies", anomalyTable()}} {
		begin, end := "<!-- "+part.name+":begin", "<!-- "+part.name+":end -->"
		i, j := strings.Index(doc, begin), strings.Index(doc, end)
		if i < 0 || j < i {
			t.Fatalf("%s has no %s markers", docPath, part.name)
		}
		i += strings.Index(doc[i:], "\n") + 1
		if doc[i:j] == part.want {
			continue
		}
		if *update {
			doc = doc[:i] + part.want + doc[j:]
			if err := os.WriteFile(docPath, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("the %s of %s differs from the code; run go test ./checker -run TestGuaranteesDoc -update\nthe code says:\n%s", part.name, docPath, part.want)
	}
	for _, n := range Names() {
		if Meaning(n) == "" || anomalyDocs[n].causes == "" {
			t.Errorf("anomaly %s has no meaning or causes in anomalyDocs", n)
		}
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
