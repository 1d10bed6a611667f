package campaign

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/results"
)

func TestCampaignRunSeed(t *testing.T) {
	seen := map[uint64]bool{}
	for _, cell := range []string{"acks1_isr1_clean_kill", "acks1_isr1_clean_pause"} {
		for run := 1; run <= 50; run++ {
			s := RunSeed(99, cell, run)
			if s == 0 || s>>63 != 0 || seen[s] {
				t.Fatalf("seed %d for %s run %d: zero, top bit set or repeated", s, cell, run)
			}
			seen[s] = true
			if RunSeed(99, cell, run) != s {
				t.Fatal("runSeed is not deterministic")
			}
		}
	}
}

// TestCampaignJUnitShape: every verdict maps to the JUnit element CI
// systems expect, and the file survives an encoding/xml round trip.
func TestCampaignJUnitShape(t *testing.T) {
	c := &results.CampaignCell{CampaignCellPlan: results.CampaignCellPlan{Name: "acks1_isr1_clean_kill", Label: "acks=1 isr=1 clean kill",
		Permitted: checker.Permitted(checker.Config{Acks: 1, MinInsyncReplicas: 1, ReplicationFactor: 3, MaxInFlight: 1}),
		Args:      []string{"sim", "--store", "my store", "--name", "acks1_isr1_clean_kill", "--acks", "1"}}}
	c.Summary.Planned = 6
	for i, v := range []string{VerdictValid, VerdictInvalid, VerdictUnknown, VerdictError, VerdictInterrupted} {
		r := results.CampaignRun{Run: i + 1, Seed: uint64(i + 10), Verdict: v, Seconds: 1.5, Dir: "d/x"}
		switch v {
		case VerdictValid:
			r.NotChecked = []string{checker.ReplicaDivergenceName}
		case VerdictInvalid:
			r.Unexpected = []string{checker.DuplicateName}
		case VerdictUnknown:
			r.Unknown = []string{checker.NonlinearizableSendName}
		case VerdictError:
			r.Error = "exit 3: a <reason> with ]]> in it"
		}
		c.Runs = append(c.Runs, r)
	}
	rec := &results.Campaign{Seed: 7, Store: "store", Cells: []*results.CampaignCell{c}}
	path := filepath.Join(t.TempDir(), "junit.xml")
	if err := WriteJUnit(path, rec); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	var ju junitTestsuites
	if err := xml.Unmarshal(data, &ju); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	s := ju.Suites[0]
	if ju.Tests != 6 || ju.Failures != 1 || ju.Errors != 2 || ju.Skipped != 2 || s.Tests != 6 || len(s.Cases) != 6 {
		t.Fatalf("counts: %+v", ju)
	}
	cs := s.Cases
	if cs[0].Failure != nil || cs[0].Error != nil || cs[0].Skipped != nil ||
		cs[1].Failure == nil || cs[1].Failure.Type != "invalid" || !strings.Contains(cs[1].Failure.Text, "duplicate is forbidden") ||
		cs[2].Error == nil || cs[2].Error.Type != "unknown" ||
		cs[3].Error == nil || cs[3].Error.Message != "exit 3: a <reason> with ]]> in it" ||
		cs[4].Skipped == nil || cs[5].Skipped == nil || cs[5].Name != "run 6" ||
		cs[0].Name != "run 1" || !strings.Contains(cs[0].SystemOut.Text, "not checked (the cluster cannot support it): replica-divergence") {
		t.Fatalf("cases: %+v", cs)
	}
	// Each run that ran carries the command that replays it, by its seed,
	// in a property and in its output; the names stay "run N".
	for i, tc := range cs[:5] {
		want := fmt.Sprintf("chaos sim --store 'my store' --name acks1_isr1_clean_kill --acks 1 --seed %d", i+10)
		props := map[string]string{}
		for _, p := range tc.Properties {
			props[p.Name] = p.Value
		}
		if props["replay"] != want || props["seed"] != fmt.Sprint(i+10) || !strings.Contains(tc.SystemOut.Text, "replay: "+want+"\n") || tc.Name != fmt.Sprintf("run %d", i+1) {
			t.Errorf("run %d: name %q, properties %v, output %q; want the replay %q", i+1, tc.Name, props, tc.SystemOut.Text, want)
		}
	}
	// A reader that knows only the common JUnit schema sees the same.
	var generic struct {
		Suites []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
				Error   *struct{} `xml:"error"`
				Skipped *struct{} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(data, &generic); err != nil || generic.Suites[0].Name != c.Name || len(generic.Suites[0].Cases) != 6 {
		t.Fatalf("generic read: %v %+v", err, generic)
	}
}

func TestCampaignExitCodeOrder(t *testing.T) {
	for _, tc := range []struct {
		verdicts []string
		want     int
	}{
		{[]string{VerdictValid, VerdictValid}, 0},
		{[]string{VerdictValid, VerdictUnknown}, 2},
		{[]string{VerdictUnknown, VerdictError}, 3},
		{[]string{VerdictError, VerdictInvalid, VerdictUnknown}, 1},
		{[]string{VerdictInterrupted, VerdictValid}, 0},
		{nil, 0},
	} {
		c := &results.CampaignCell{}
		for _, v := range tc.verdicts {
			c.Runs = append(c.Runs, results.CampaignRun{Verdict: v})
		}
		if got := ExitCode([]*results.CampaignCell{c}); got != tc.want {
			t.Errorf("%v: exit %d, want %d", tc.verdicts, got, tc.want)
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestDetectionExitCode: in a campaign whose cells plant bugs, a bug run
// passes when caught, and the campaign fails on a miss or a false alarm.
func TestDetectionExitCode(t *testing.T) {
	cell := func(bugs []string, verdicts ...string) *results.CampaignCell {
		c := &results.CampaignCell{}
		c.Bugs = bugs
		for _, v := range verdicts {
			c.Runs = append(c.Runs, results.CampaignRun{Verdict: v})
		}
		return c
	}
	bug := []string{"hw-ignores-isr"}
	for _, c := range []struct {
		name  string
		cells []*results.CampaignCell
		want  int
	}{
		{"all caught, control clean", []*results.CampaignCell{cell(bug, VerdictInvalid, VerdictInvalid), cell(nil, VerdictValid)}, 0},
		{"one run missed", []*results.CampaignCell{cell(bug, VerdictInvalid, VerdictValid), cell(nil, VerdictValid)}, 1},
		{"unknown is a miss", []*results.CampaignCell{cell(bug, VerdictUnknown), cell(nil, VerdictValid)}, 1},
		{"false alarm", []*results.CampaignCell{cell(bug, VerdictInvalid), cell(nil, VerdictInvalid)}, 1},
		{"error", []*results.CampaignCell{cell(bug, VerdictInvalid, VerdictError), cell(nil, VerdictValid)}, 3},
		{"control unknown", []*results.CampaignCell{cell(bug, VerdictInvalid), cell(nil, VerdictUnknown)}, 2},
		{"no bugs: the worst run", []*results.CampaignCell{cell(nil, VerdictValid, VerdictInvalid)}, 1},
	} {
		if got := ExitCode(c.cells); got != c.want {
			t.Errorf("%s: exit %d, want %d", c.name, got, c.want)
		}
	}
}
