package runner

import (
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

// TestJudgeReportsADamagedHistory: a run whose history cannot be judged
// ends with an error, and still with a report saying what is damaged.
func TestJudgeReportsADamagedHistory(t *testing.T) {
	run, err := results.NewRun(t.TempDir(), "t", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(run.Dir, results.HistoryFile), []byte(damagedHistory), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err := Judge(run, results.TestConfig{Name: "t"})
	if err == nil || o.Verdict != "" {
		t.Fatalf("a damaged history was judged: %+v", o)
	}
	page, err := os.ReadFile(run.Path(results.ReportFile))
	if err != nil || o.Report == "" {
		t.Fatalf("no report for a run with a damaged history: %v %+v", err, o)
	}
	if !strings.Contains(string(page), "history.jsonl is damaged") || !strings.Contains(string(page), "NO VERDICT") {
		t.Errorf("the report does not say the history is damaged and there is no verdict")
	}
}
