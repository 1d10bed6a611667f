package report

import (
	"bytes"
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
