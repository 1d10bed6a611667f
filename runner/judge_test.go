package runner

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
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
	o, err := Judge(run, results.TestConfig{Name: "t"}, nil)
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

// TestJudgeShowsHowFarItHasCome: a run's judge tells Options.Judging
// that it judges, each check's end up to all of them, linearizability's
// partition, that it writes the report, and "" once it is over (the
// verdict takes the line).
func TestJudgeShowsHowFarItHasCome(t *testing.T) {
	run, err := results.NewRun(t.TempDir(), "t", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	const h = `{"history":"chaos","version":1}
{"index":0,"time":1000,"process":0,"type":"invoke","f":"send","value":{"topic":"t","partition":0,"value":"0-1"}}
{"index":1,"time":3000,"process":0,"type":"ok","f":"send","value":{"topic":"t","partition":0,"value":"0-1","offset":0}}
`
	if err := os.WriteFile(filepath.Join(run.Dir, results.HistoryFile), []byte(h), 0o644); err != nil {
		t.Fatal(err)
	}
	var steps []string
	if _, err := Judge(run, results.TestConfig{Name: "t"}, func(s string) { steps = append(steps, s) }); err != nil {
		t.Fatal(err)
	}
	all := regexp.MustCompile(`^judging: (\d+) of (\d+) checks done$`)
	done := slices.IndexFunc(steps, func(s string) bool {
		m := all.FindStringSubmatch(s)
		return m != nil && m[1] == m[2]
	})
	linStep := regexp.MustCompile(`^judging: \d+ of \d+ checks done; linearizability: partition 1 of 1$`)
	lin := slices.IndexFunc(steps, linStep.MatchString)
	report := slices.Index(steps, "writing the report")
	if steps[0] != "judging" || lin < 0 || done < lin || report < done || steps[len(steps)-1] != "" {
		t.Errorf("steps %q: want judging, each check's end, linearizability's partition, all checks done, the report, then \"\"", steps)
	}
}
