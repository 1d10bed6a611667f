package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/results"
)

// TestCampaignCellsSayWhatWasObserved: of two valid cells, the one that
// lost a thousand permitted writes is amber with the count, the one whose
// faults bit green, one whose faults never bit grey; the verdict comes
// second, and the windows' recovery is summed up.
func TestCampaignCellsSayWhatWasObserved(t *testing.T) {
	sec := results.Duration(time.Second)
	cell := func(nem, observed string, s results.CampaignSummary, runs ...results.CampaignRun) *results.CampaignCell {
		s.Runs, s.Planned, s.Valid = len(runs), len(runs), len(runs)
		s.Observed = map[string]int{observed: len(runs)}
		return &results.CampaignCell{CampaignCellPlan: results.CampaignCellPlan{Name: nem, Label: nem, Acks: 1, MinInsyncReplicas: 1, Nemesis: nem},
			Verdict: "valid", Observed: observed, Summary: s, Runs: runs}
	}
	c := results.Campaign{Status: "complete", Cells: []*results.CampaignCell{
		cell("kill", results.ObservedPermitted, results.CampaignSummary{ExpectedInstances: map[string]int{"lost-write": 1040},
			Recovery: &results.CampaignRecovery{Windows: 2, FirstAck: results.CampaignDurStats{Observed: 2, Median: &sec, Max: &sec}}},
			results.CampaignRun{Run: 1, Verdict: "valid", Observed: results.ObservedPermitted, ExpectedInstances: map[string]int{"lost-write": 1040}}),
		cell("pause", results.ObservedKept, results.CampaignSummary{}, results.CampaignRun{Run: 1, Verdict: "valid", Observed: results.ObservedKept, WindowsRan: 2, WindowsBit: 1}),
		cell("slow", results.ObservedToothless, results.CampaignSummary{}, results.CampaignRun{Run: 1, Verdict: "valid", Observed: results.ObservedToothless, WindowsRan: 2,
			NotChecked: []string{"replica-divergence"}}),
	}}
	var buf bytes.Buffer
	if err := RenderCampaign(&buf, CampaignView{Campaign: c}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	ids := checkPage(t, page)
	if !ids["matrix"] || !ids["observed-legend"] {
		t.Fatal("no matrix or no legend")
	}
	for _, want := range []string{
		`class="cellbox obs-permitted" id="cell-1" data-observed="permitted" data-verdict="valid"`,
		`<div class="o obs-permitted">PERMITTED lost-write 1040 (1/1 runs)</div>` + "\n" + `<div class="v valid">valid</div>`,
		`recovery (median/max): first ack 1s/1s, full ISR not observed (0/2)`,
		`class="cellbox obs-kept" id="cell-2"`, `KEPT (faults bit in 1/1 runs)`,
		`class="cellbox obs-toothless" id="cell-3"`, `FAULTS NEVER BIT`,
		`<span class="pill obs-permitted">permitted</span>`,
		// A valid run's line says what its verdict does not speak of.
		`not checked (the cluster cannot support it): replica-divergence`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
}

// TestRunReportObservedAndRecovery: a run's report says what it observed
// above its verdict, and has a recovery row per window, with the times
// it could see and why not the others.
func TestRunReportObservedAndRecovery(t *testing.T) {
	ms := func(n int64) int64 { return n * int64(time.Millisecond) }
	val := func() *history.Value { return &history.Value{Topic: "t"} }
	fault := &history.Value{FaultInfo: &history.FaultInfo{Fault: "kill", KilledBrokers: []int32{1}}}
	smp := func(isr ...int32) *history.Value {
		return &history.Value{Topic: "t", Sample: &history.Sample{Leader: history.Int32(2), Epoch: history.Int32(1), ISR: isr, Replicas: []int32{1, 2, 3}}}
	}
	ops := []history.Op{
		{Time: ms(0), Process: history.MonitorProcess, Type: history.OK, F: history.Monitor, Value: smp(1, 2, 3)},
		{Time: ms(10), Process: 0, Type: history.Invoke, F: history.Send, Value: val()},
		{Time: ms(20), Process: 0, Type: history.OK, F: history.Send, Value: val()},
		{Time: ms(1000), Process: history.NemesisProcess, Type: history.Info, F: "start-kill", Value: fault},
		{Time: ms(1100), Process: 0, Type: history.Invoke, F: history.Send, Value: val()},
		{Time: ms(1300), Process: 0, Type: history.OK, F: history.Send, Value: val()},
		{Time: ms(2000), Process: history.NemesisProcess, Type: history.Info, F: "stop-kill", Value: fault},
	}
	for i := range ops {
		ops[i].Index = int64(i)
	}
	res := &checker.Results{Valid: checker.Valid, Config: checker.Config{Acks: -1, MinInsyncReplicas: 2, ReplicationFactor: 3, Election: "clean", MaxInFlight: 1},
		Faults: []string{"kill"}, FaultWindows: map[string]int{"kill": 1}}
	var buf bytes.Buffer
	if err := RenderRun(&buf, RunData{Results: res, Ops: ops}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	ids := checkPage(t, page)
	for _, id := range []string{"observed", "recovery", "recovery-table", "verdict"} {
		if !ids[id] {
			t.Errorf("no id %s", id)
		}
	}
	for _, want := range []string{
		`<span class="pill obs-kept">observed: promise kept under faults that bit</span> No anomaly, under faults that bit: 1 of 1 fault windows`,
		`<td>kill</td><td class="num">0.300 s</td>`,
		`not observed: no sample of t-0 after the heal`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the report lacks %s", want)
		}
	}
}

// TestHeatmapAnswersTheSeedsQuestion: the index page leads with a
// heatmap, a configuration per row and a fault per column, each cell
// coloured by what its runs observed of lost writes, with the count:
// acknowledged writes lost where the configuration forbids it and where
// it permits it, records read and then lost under acks=0 (where nothing
// is acknowledged, never "kept"), none lost under faults that bit,
// faults that never bit; a verdict that is not valid is flagged.
func TestHeatmapAnswersTheSeedsQuestion(t *testing.T) {
	perm := func(ok bool) map[string]checker.Permission {
		return map[string]checker.Permission{checker.LostWriteName: {Permitted: ok}}
	}
	cell := func(acks int, nem, observed, verdict string, p map[string]checker.Permission, s results.CampaignSummary) *results.CampaignCell {
		s.Runs, s.Planned = 2, 2
		s.Observed = map[string]int{observed: 2}
		c := &results.CampaignCell{CampaignCellPlan: results.CampaignCellPlan{Name: fmt.Sprintf("a%d_%s", acks, nem), Acks: acks, MinInsyncReplicas: 2,
			Election: "clean", Nemesis: nem, Permitted: p}, Verdict: verdict, Observed: observed, Summary: s}
		c.Label = c.Name
		return c
	}
	lw := checker.LostWriteName
	c := results.Campaign{Status: "complete", Cells: []*results.CampaignCell{
		cell(-1, "kill", results.ObservedBroken, "invalid", perm(false), results.CampaignSummary{Invalid: 1, Valid: 1,
			Unexpected: map[string]int{lw: 1}, UnexpectedInstances: map[string]int{lw: 12}}),
		cell(-1, "pause", results.ObservedKept, "valid", perm(false), results.CampaignSummary{Valid: 2}),
		cell(-1, "slow", results.ObservedToothless, "valid", perm(false), results.CampaignSummary{Valid: 2}),
		cell(1, "kill", results.ObservedPermitted, "unknown", perm(true), results.CampaignSummary{Valid: 1, Unknown: 1,
			ExpectedSeen: map[string]int{lw: 2}, ExpectedInstances: map[string]int{lw: 3800}}),
		cell(1, "pause", results.ObservedKept, "valid", perm(true), results.CampaignSummary{Valid: 2, ExpectedSeen: map[string]int{lw: 0}}),
		cell(0, "kill", results.ObservedUnacked, "valid", perm(true), results.CampaignSummary{Valid: 2,
			ExpectedSeen: map[string]int{lw: 1}, ExpectedInstances: map[string]int{lw: 4160, checker.DuplicateName: 5}}),
		cell(0, "pause", results.ObservedUnacked, "valid", perm(true), results.CampaignSummary{Valid: 2}),
	}}
	var buf bytes.Buffer
	if err := RenderCampaign(&buf, CampaignView{Campaign: c}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if ids := checkPage(t, page); !ids["heatmap"] || !ids["heat-legend"] {
		t.Fatal("no heatmap, or no legend")
	}
	heat := page[strings.Index(page, `id="heatmap"`):]
	heat = heat[:strings.Index(heat, "</table>")]
	if i, j := strings.Index(page, `id="heatmap"`), strings.Index(page, `id="matrix"`); i > j {
		t.Error("the heatmap does not lead the page")
	}
	// Rows from the weakest promise to the strongest, columns the faults.
	rows := strings.Split(heat, "<tr")[2:]
	if len(rows) != 3 || !strings.Contains(rows[0], "acks=0, min.insync=2, clean") || !strings.Contains(rows[2], "acks=-1, min.insync=2, clean") {
		t.Fatalf("heatmap rows:\n%s", heat)
	}
	for _, want := range []struct {
		row  int
		cell string
	}{
		{2, `class="heat h-broken" href="#cell-1"`},
		{2, `<span class="count">12</span><span class="hruns"><span class="pill invalid">invalid</span> 1/2 runs</span></span><span class="what">acked writes lost</span><span class="note">forbidden here</span>`},
		{2, `class="heat h-kept" href="#cell-2"`},
		{2, `<span class="what">lost, faults bit</span><span class="note">loss forbidden</span>`},
		{2, `class="heat h-toothless" href="#cell-3"`},
		{1, `class="heat h-lost" href="#cell-4"`},
		{1, `<span class="count">3800</span><span class="hruns"><span class="pill unknown">unknown</span> 2/2 runs</span></span><span class="what">acked writes lost</span><span class="note">permitted here</span>`},
		{1, `<span class="note">loss permitted, not seen</span>`},
		{0, `class="heat h-unacked-lost" href="#cell-6"`},
		{0, `<span class="count">4160</span><span class="hruns">1/2 runs</span></span><span class="what">read, then lost</span><span class="note">acks=0: none acked; 5 duplicated</span>`},
		{0, `class="heat h-unacked" href="#cell-7"`},
	} {
		if !strings.Contains(rows[want.row], want.cell) {
			t.Errorf("heatmap row %d lacks %s:\n%s", want.row, want.cell, rows[want.row])
		}
	}
	if strings.Contains(rows[0], "h-kept") || strings.Contains(rows[0], "KEPT") {
		t.Errorf("an acks=0 cell reads as kept:\n%s", rows[0])
	}
	// The detailed cells say the same: under acks=0 what was read and
	// then lost, never KEPT.
	for _, want := range []string{
		`class="cellbox obs-unacked" id="cell-6"`, `NO ACKS: 4160 read, then lost, 5 duplicated (2/2 runs)`,
		`class="cellbox obs-unacked" id="cell-7"`, `NO ACKS: no record read was lost (2/2 runs)`,
		`BROKEN lost-write 12 (2/2 runs)`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
}
