package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A history whose second line is damaged: one readable operation.
const damagedHistory = `{"history":"chaos","version":1}
{"index":0,"time":1000,"process":0,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"value":"0-1"}}
{"index":1,"time":2000,"process":0,"type":"maybe","f":"send"}
{"index":2,"time":3000,"process":0,"type":"ok","f":"send","value":{"topic":"t","partition":0,"value":"0-1","offset":0}}
`

// TestReportCommand: "chaos report STORE" renders every run and campaign
// below the store once (store/latest is another name, not another run),
// prints each page, and exits 3 for a directory holding neither.
func TestReportCommand(t *testing.T) {
	store := t.TempDir()
	run := filepath.Join(store, "t", "20260101T000000.000Z")
	writeFiles(t, run, map[string]string{"test.json": `{"name":"t","seed":5}`, "history.jsonl": damagedHistory})
	campaign := filepath.Join(store, "campaigns", "20260101T000000.000Z")
	writeFiles(t, campaign, map[string]string{"campaign.json": `{"seed":3,"status":"complete","cells":[]}`})
	if err := os.Symlink(filepath.Join("t", "20260101T000000.000Z"), filepath.Join(store, "latest")); err != nil {
		t.Fatal(err)
	}
	out, code := runChaos(t, "report", store)
	if code != 0 {
		t.Fatalf("chaos report exited %d:\n%s", code, out)
	}
	if lines := strings.Fields(out); len(lines) != 2 {
		t.Errorf("chaos report printed %d pages, want 2 (the run and the campaign):\n%s", len(lines), out)
	}
	for _, page := range []string{filepath.Join(run, "report.html"), filepath.Join(campaign, "index.html")} {
		if !strings.Contains(out, page) {
			t.Errorf("chaos report does not name %s:\n%s", page, out)
		}
		if _, err := os.Stat(page); err != nil {
			t.Errorf("not written: %v", err)
		}
	}
	if out, code := runChaos(t, "report", filepath.Join(store, "latest")); code != 0 || !strings.Contains(out, "report.html") {
		t.Errorf("chaos report store/latest: exit %d:\n%s", code, out)
	}
	if out, code := runChaos(t, "report", t.TempDir()); code != exitErrorCode || !strings.Contains(out, "no run") {
		t.Errorf("chaos report on an empty directory: exit %d:\n%s", code, out)
	}
}
