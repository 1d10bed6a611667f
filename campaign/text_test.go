package campaign

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/results"
)

// TestWriteSummary: the summary's table counts anomalies in the
// checkers' order, says where each run is kept (a run without a
// directory by its log), names a refused cell and the worst verdict with
// the exit code, and ends with the index page.
func TestWriteSummary(t *testing.T) {
	avail, code := 0.975, 1
	rec := &results.Campaign{Seed: 9, Status: StatusComplete, Store: "st", ExitCode: &code, Cells: []*results.CampaignCell{
		{CampaignCellPlan: results.CampaignCellPlan{Label: "acks=1 isr=1 clean kill", Acks: 1, Prediction: "lost-write permitted"},
			Verdict: VerdictInvalid, Summary: results.CampaignSummary{Planned: 2, Runs: 2, Valid: 1, Invalid: 1,
				ExpectedSeen: map[string]int{"stale-read": 1, "lost-write": 2}, Availability: &avail},
			Runs: []results.CampaignRun{{Run: 1, Seed: 3, Verdict: VerdictValid, Dir: "a/1"}, {Run: 2, Seed: 4, Verdict: VerdictInvalid, Dir: "a/2"}}},
		{CampaignCellPlan: results.CampaignCellPlan{Label: "acks=0 isr=1 clean none", Prediction: "lost-write permitted"},
			Verdict: VerdictError, Refused: "--fsync: bogus", Summary: results.CampaignSummary{Planned: 3, Runs: 1, Errors: 1},
			Runs: []results.CampaignRun{{Run: 1, Seed: 5, Verdict: VerdictError, Log: "logs/2.log"}}},
	}}
	var b bytes.Buffer
	WriteSummary(&b, rec, "dir")
	out := b.String()
	for _, want := range []string{
		"\ncampaign seed 9, complete\n",
		"lost-write 2/2, stale-read 1/2",
		"97.5%", "n/a (acks=0)",
		"  acks=1 isr=1 clean kill run 2 (seed 4): invalid " + filepath.Join("st", "a/2") + "\n",
		"  acks=0 isr=1 clean none run 1 (seed 5): error (no run directory; see " + filepath.Join("dir", "logs/2.log") + ")\n",
		"  acks=0 isr=1 clean none: refused by chaos run (2 more runs skipped): --fsync: bogus\n",
		"verdict: INVALID (exit 1): acks=1 isr=1 clean kill: invalid; acks=0 isr=1 clean none: error\n",
		"index: " + filepath.Join("dir", results.CampaignIndexFile) + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the summary lacks %q:\n%s", want, out)
		}
	}
}

// TestDescribeRun: a run's line says its verdict, then the anomalies it
// showed (the unknown ones only when they made it unknown; the permitted
// ones with their instances), faults that never bit, and its error.
func TestDescribeRun(t *testing.T) {
	for _, tc := range []struct {
		r    results.CampaignRun
		want string
	}{
		{results.CampaignRun{Verdict: VerdictValid}, "VALID"},
		{results.CampaignRun{Verdict: VerdictInvalid, Unexpected: []string{"lost-write"}, Unknown: []string{"duplicate"}, Expected: []string{"stale-read"}},
			"INVALID (unexpected: lost-write; expected: stale-read)"},
		{results.CampaignRun{Verdict: VerdictUnknown, Unknown: []string{"nonlinearizable-send"}}, "UNKNOWN (unknown: nonlinearizable-send)"},
		{results.CampaignRun{Verdict: VerdictError, Error: "exit 3"}, "ERROR (exit 3)"},
		{results.CampaignRun{Verdict: VerdictValid, Expected: []string{"lost-write", "unseen"}, ExpectedInstances: map[string]int{"lost-write": 1040}, Observed: results.ObservedPermitted},
			"VALID (expected: lost-write 1040, unseen)"},
		{results.CampaignRun{Verdict: VerdictValid, Observed: results.ObservedToothless, WindowsRan: 3}, "VALID (none of the 3 fault windows bit)"},
		{results.CampaignRun{Verdict: VerdictUnknown, Observed: results.ObservedNoFaults}, "UNKNOWN (no fault started)"},
		{results.CampaignRun{Verdict: VerdictValid, NotChecked: []string{"replica-divergence"}}, "VALID (not checked: replica-divergence)"},
	} {
		if got := describeRun(tc.r); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.r, got, tc.want)
		}
	}
	p := Progress{N: 14, Total: 36, Run: 1, TimeLimit: time.Second,
		Cell: &results.CampaignCell{CampaignCellPlan: results.CampaignCellPlan{Label: "acks=1 isr=1 clean partition-leader"}, Summary: results.CampaignSummary{Planned: 1}}}
	if got := runPrefix(p); got != "[14/36] acks=1 isr=1 clean partition-leader run 1/1 ..." {
		t.Errorf("runPrefix: %q", got)
	}
}

// TestSummaryObserved: the table says what each cell observed before its
// verdict, so that a valid cell that lost a thousand permitted writes
// does not read like one where nothing happened, and sums up the
// windows' recovery per cell.
func TestSummaryObserved(t *testing.T) {
	d := func(s string) *results.Duration {
		v, _ := time.ParseDuration(s)
		x := results.Duration(v)
		return &x
	}
	lossy := results.CampaignRun{Run: 1, Verdict: VerdictValid, Expected: []string{"lost-write"}, ExpectedInstances: map[string]int{"lost-write": 1040},
		WindowsRan: 2, WindowsBit: 2, Recovery: []results.WindowRecovery{{Fault: "kill", FirstAck: d("1s"), FullISR: d("3s")}, {Fault: "kill", FirstAck: d("2s"), FirstAckUnobserved: ""}}}
	lossy.Observed = results.ObservedPermitted
	kept := results.CampaignRun{Run: 1, Verdict: VerdictValid, Observed: results.ObservedKept, WindowsRan: 1, WindowsBit: 1,
		Recovery: []results.WindowRecovery{{Fault: "pause", FirstAck: d("600ms"), FullISR: d("200ms")}}}
	idle := results.CampaignRun{Run: 1, Verdict: VerdictValid, Observed: results.ObservedToothless, WindowsRan: 1,
		Recovery: []results.WindowRecovery{{Fault: "slow", FirstAck: d("5ms"), FullISRUnobserved: "no sample"}}}
	broken := results.CampaignRun{Run: 1, Verdict: VerdictInvalid, Observed: results.ObservedBroken, Unexpected: []string{"lost-write"}}
	none := results.CampaignRun{Run: 1, Verdict: VerdictValid, Observed: results.ObservedNoFaults}
	// A run recorded before runs had a class: its faults scheduled count.
	old := results.CampaignRun{Run: 1, Verdict: VerdictValid, FaultWindows: 3}
	var cells []*results.CampaignCell
	for i, r := range []results.CampaignRun{lossy, kept, idle, broken, none, old} {
		c := &results.CampaignCell{CampaignCellPlan: results.CampaignCellPlan{Label: fmt.Sprintf("cell%d", i), Acks: 1}, Summary: results.CampaignSummary{Planned: 1},
			Runs: []results.CampaignRun{r}}
		Summarize(c)
		cells = append(cells, c)
	}
	if cells[0].Observed != results.ObservedPermitted || cells[0].Summary.ExpectedInstances["lost-write"] != 1040 || cells[5].Observed != results.ObservedKept {
		t.Errorf("cells observed %+v, %+v", cells[0], cells[5])
	}
	var b bytes.Buffer
	WriteSummary(&b, &results.Campaign{Seed: 1, Status: StatusComplete, Cells: cells}, "dir")
	out := b.String()
	for _, want := range []string{
		"CELL   OBSERVED",
		"cell0  PERMITTED lost-write 1040 (1/1 runs)",
		"first ack 1s/2s, full ISR 3s/3s (1/2)",
		"cell1  KEPT (faults bit in 1/1 runs)",
		"first ack 600ms/600ms, full ISR 200ms/200ms",
		"cell2  FAULTS NEVER BIT",
		"full ISR not observed (0/1)",
		"cell3  BROKEN (1/1 runs)",
		"cell4  NO FAULTS",
		"cell5  KEPT (faults ran)",
		"OBSERVED (what the runs saw, before the verdict)",
		"write stall of 500ms or more",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the summary lacks %q:\n%s", want, out)
		}
	}
}
