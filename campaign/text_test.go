package campaign

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/internal/cli"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/runner"
)

// TestWriteSummary: the summary's table has a line per configuration
// and a row per cell under it, says of each cell what it observed, its
// worst verdict in how many runs, the model's word on lost writes and
// the share of sends acknowledged; it lists the runs that were not valid
// with what they found and where each is kept (one without a directory
// by its log), names a refused cell, counts the runs by verdict in the
// verdict line with the exit code, and ends with the index page.
func TestWriteSummary(t *testing.T) {
	avail, code := 0.975, 1
	perm := map[string]checker.Permission{"lost-write": {Permitted: true}}
	rec := &results.Campaign{Seed: 9, Status: StatusComplete, Store: "st", ExitCode: &code, Cells: []*results.CampaignCell{
		{CampaignCellPlan: results.CampaignCellPlan{Label: "acks=1 isr=1 clean kill", Acks: 1, MinInsyncReplicas: 1, Election: "clean", Nemesis: "kill",
			Prediction: "lost-write permitted", Permitted: perm},
			Verdict: VerdictInvalid, Summary: results.CampaignSummary{Planned: 2, Runs: 2, Valid: 1, Invalid: 1,
				ExpectedSeen: map[string]int{"stale-read": 1, "lost-write": 2}, Unexpected: map[string]int{"duplicate": 1}, Availability: &avail},
			Runs: []results.CampaignRun{{Run: 1, Seed: 3, Verdict: VerdictValid, Dir: "a/1"},
				{Run: 2, Seed: 4, Verdict: VerdictInvalid, Dir: "a/2", Unexpected: []string{"duplicate"}}}},
		{CampaignCellPlan: results.CampaignCellPlan{Label: "acks=0 isr=1 clean none", MinInsyncReplicas: 1, Nemesis: "none", Prediction: "lost-write permitted", Permitted: perm},
			Verdict: VerdictError, Refused: "--fsync: bogus", Summary: results.CampaignSummary{Planned: 3, Runs: 1, Errors: 1},
			Runs: []results.CampaignRun{{Run: 1, Seed: 5, Verdict: VerdictError, Log: "logs/2.log", Error: "exit 3: the broker said no"}}},
	}}
	var b bytes.Buffer
	WriteSummary(&b, rec, "dir", "")
	out := b.String()
	rows := tableRows(out)
	for _, want := range [][]string{
		{"acks=1 isr=1 clean"},
		{"kill", "BROKEN duplicate", "INVALID 1/2", "permitted", "97.5%"},
		{"acks=0 isr=1 clean"},
		{"none", "-", "ERROR 1/1", "permitted", "n/a"},
	} {
		if !slices.ContainsFunc(rows, func(r []string) bool { return slices.Equal(r, want) }) {
			t.Errorf("the table has no row %q:\n%s", want, out)
		}
	}
	for _, want := range []string{
		"\ncampaign seed 9, complete\n",
		"runs not valid (2 of 3; the others are on the index page):\n",
		"  acks=1 isr=1 clean kill run 2 (seed 4): INVALID\n    unexpected: duplicate\n    " + filepath.Join("st", "a/2") + "\n",
		"  acks=0 isr=1 clean none run 1 (seed 5): ERROR\n    exit 3: the broker said no\n    no run directory; its log:\n    " + filepath.Join("dir", "logs/2.log") + "\n",
		"  acks=0 isr=1 clean none: refused by chaos run (2 more runs skipped):\n    --fsync: bogus\n",
		"verdict: INVALID (exit 1): 5 runs: 1 VALID, 1 INVALID, 1 ERROR, 2 not run (1 cell refused)\n",
		"index: " + filepath.Join("dir", results.CampaignIndexFile) + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the summary lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "a/1") {
		t.Errorf("the summary lists a valid run:\n%s", out)
	}
	// --fail-on invalid: an unknown campaign exits 0 and says why; the
	// verdict is still what the runs showed.
	unknown := 2
	rec.ExitCode = &unknown
	rec.Cells = rec.Cells[:1]
	rec.Cells[0].Verdict, rec.Cells[0].Summary.Invalid, rec.Cells[0].Summary.Unknown = VerdictUnknown, 0, 1
	rec.Cells[0].Runs[1].Verdict = VerdictUnknown
	b.Reset()
	WriteSummary(&b, rec, "dir", cli.FailOnInvalid)
	if want := "verdict: UNKNOWN (exit 0, --fail-on invalid): 2 runs: 1 VALID, 1 UNKNOWN\n"; !strings.Contains(b.String(), want) {
		t.Errorf("the summary lacks %q:\n%s", want, b.String())
	}
}

// tableRows are the lines of out split at runs of two or more spaces,
// their indent dropped: the summary table's rows as cells.
func tableRows(out string) [][]string {
	var rows [][]string
	for _, l := range strings.Split(out, "\n") {
		rows = append(rows, regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(l), -1))
	}
	return rows
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
// does not read like one where nothing happened, nor one under acks=0,
// where nothing is acknowledged, like a promise kept.
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
	// Under acks=0 nothing is acknowledged: what was read and then lost
	// is what a run observed, never a promise kept.
	unacked := results.CampaignRun{Run: 1, Verdict: VerdictValid, Observed: results.ObservedUnacked, Expected: []string{"lost-write", "duplicate"},
		ExpectedInstances: map[string]int{"lost-write": 4160, "duplicate": 3}, WindowsRan: 1, WindowsBit: 1}
	quiet := results.CampaignRun{Run: 1, Verdict: VerdictValid, Observed: results.ObservedUnacked, WindowsRan: 1, WindowsBit: 1}
	var cells []*results.CampaignCell
	for i, r := range []results.CampaignRun{lossy, kept, idle, broken, none, old, unacked, quiet} {
		acks := 1
		if i >= 6 {
			acks = 0
		}
		c := &results.CampaignCell{CampaignCellPlan: results.CampaignCellPlan{Acks: acks, MinInsyncReplicas: 1, Nemesis: fmt.Sprintf("cell%d", i)},
			Summary: results.CampaignSummary{Planned: 1}, Runs: []results.CampaignRun{r}}
		c.Label = Scenario(c.CampaignCellPlan)
		Summarize(c)
		cells = append(cells, c)
	}
	if cells[0].Observed != results.ObservedPermitted || cells[0].Summary.ExpectedInstances["lost-write"] != 1040 || cells[5].Observed != results.ObservedKept {
		t.Errorf("cells observed %+v, %+v", cells[0], cells[5])
	}
	var b bytes.Buffer
	WriteSummary(&b, &results.Campaign{Seed: 1, Status: StatusComplete, Cells: cells}, "dir", "")
	out := b.String()
	rows := tableRows(out)
	for _, want := range [][]string{
		{"CONFIGURATION / NEMESIS", "OBSERVED", "VERDICT", "LOST-WRITE", "ACKED"},
		{"cell0", "PERMITTED lost-write 1040 (1/1 runs)", "VALID 1/1", "-", "-"},
		{"cell1", "KEPT (faults bit in 1/1 runs)", "VALID 1/1", "-", "-"},
		{"cell2", "FAULTS NEVER BIT", "VALID 1/1", "-", "-"},
		{"cell3", "BROKEN lost-write (1/1 runs)", "INVALID 1/1", "-", "-"},
		{"cell4", "NO FAULTS", "VALID 1/1", "-", "-"},
		{"cell5", "KEPT (faults ran)", "VALID 1/1", "-", "-"},
		{"cell6", "NO ACKS: 4160 read, then lost, 3 duplicated (1/1 runs)", "VALID 1/1", "-", "n/a"},
		{"cell7", "NO ACKS: no record read was lost (1/1 runs)", "VALID 1/1", "-", "n/a"},
	} {
		if !slices.ContainsFunc(rows, func(r []string) bool { return slices.Equal(r, want) }) {
			t.Errorf("the table has no row %q:\n%s", want, out)
		}
	}
	for _, want := range []string{
		"OBSERVED, what the runs saw, before the verdict",
		"write stall of 500ms",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the summary lacks %q:\n%s", want, out)
		}
	}
}

// TestSeedSummaryFits120: the seed preset's summary keeps to 120
// columns, whatever its cells saw: ten runs a cell, the longest
// observations, invalid and unknown runs with what they found, errors
// with long reasons, a refused cell. Only a path, which cannot be
// broken, may be longer.
func TestSeedSummaryFits120(t *testing.T) {
	p, _ := Preset("seed")
	plan, err := p.Plan(func(args []string) (runner.Spec, error) { return testBase(), nil })
	if err != nil {
		t.Fatal(err)
	}
	code := 1
	rec := &results.Campaign{Seed: 18446744073709551615 >> 1, Status: StatusComplete, Store: "store", ExitCode: &code}
	long := strings.Repeat("the broker said something long about why this run could not go on ", 5)
	for i, pc := range plan.Cells {
		c := &results.CampaignCell{CampaignCellPlan: pc.CampaignCellPlan, Summary: results.CampaignSummary{Planned: 10}}
		for r := 1; r <= 10; r++ {
			run := results.CampaignRun{Run: r, Seed: RunSeed(1, c.Name, r), Verdict: VerdictValid, Dir: c.Name + "/20261201T000000.000Z",
				Observed: results.ObservedPermitted, Expected: []string{"inconsistent-offsets", "nonmonotonic-poll", "nonlinearizable-send", "stale-read"},
				ExpectedInstances: map[string]int{"inconsistent-offsets": 123456, "nonmonotonic-poll": 98765, "nonlinearizable-send": 246912, "stale-read": 99999}}
			switch {
			case i%7 == 0 && r == 3:
				run.Verdict, run.Observed, run.Unexpected = VerdictInvalid, results.ObservedBroken, []string{"nonlinearizable-send", "inconsistent-offsets", "replica-divergence"}
				run.UnexpectedInstances = map[string]int{"nonlinearizable-send": 123456}
			case i%5 == 0 && r == 4:
				run.Verdict, run.Unknown = VerdictUnknown, []string{"nonlinearizable-send", "stale-read", "replica-divergence", "poll-skip"}
			case i%11 == 0 && r == 5:
				run.Verdict, run.Observed, run.Error, run.Dir = VerdictError, results.ObservedNone, "exit 3: "+long, ""
				run.Log = fmt.Sprintf("logs/%03d_%s_run%d.log", i*10+r, c.Name, r)
			}
			c.Runs = append(c.Runs, run)
		}
		if i == 13 {
			c.Refused = "--fsync: not a policy, got \"sometimes\"; " + long
		}
		Summarize(c)
		rec.Cells = append(rec.Cells, c)
	}
	var b bytes.Buffer
	WriteSummary(&b, rec, filepath.Join("store", "campaigns", "20261201T000000.000Z"), cli.FailOnInvalid)
	out := b.String()
	for _, l := range strings.Split(out, "\n") {
		if len([]rune(l)) > SummaryWidth && strings.Contains(strings.TrimSpace(l), " ") {
			t.Errorf("a line of %d columns:\n%s", len([]rune(l)), l)
		}
	}
	if !strings.Contains(out, "verdict: INVALID (exit 1): 1080 runs:") || strings.Count(out, "\n  ") < 60 {
		t.Errorf("the summary:\n%s", out)
	}
}
