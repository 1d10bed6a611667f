package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/results"
)

// A history whose second line is damaged: one readable operation.
const damagedHistory = `{"history":"chaos","version":1}
{"index":0,"time":1000,"process":0,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"value":"0-1"}}
{"index":1,"time":2000,"process":0,"type":"maybe","f":"send"}
{"index":2,"time":3000,"process":0,"type":"ok","f":"send","value":{"topic":"t","partition":0,"value":"0-1","offset":0}}
`

// TestJudgeRunReportsADamagedHistory: a run whose history cannot be judged
// ends with an error, and still with a report saying what is damaged.
func TestJudgeRunReportsADamagedHistory(t *testing.T) {
	run, err := results.NewRun(t.TempDir(), "t", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, run.Dir, map[string]string{"history.jsonl": damagedHistory})
	var out bytes.Buffer
	if _, err := judgeRun(&out, run, results.TestConfig{Name: "t"}); err == nil {
		t.Fatal("a damaged history was judged")
	}
	page, err := os.ReadFile(run.Path("report.html"))
	if err != nil {
		t.Fatalf("no report for a run with a damaged history: %v\n%s", err, out.String())
	}
	if !strings.Contains(string(page), "history.jsonl is damaged") || !strings.Contains(string(page), "NO VERDICT") {
		t.Errorf("the report does not say the history is damaged and there is no verdict")
	}
}

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
