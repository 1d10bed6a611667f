package report

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/results"
)

const refusal = "broker 1 refused a replica read (UNSUPPORTED_VERSION)"

// externalRun is a run against a cluster chaos did not start: one kill
// window whose start command worked and whose restart failed, judged with
// replica-divergence unsupported.
func externalRun(t testing.TB) (*results.TestConfig, *checker.Results, []history.Op) {
	h := &hist{}
	h.send(0, 0, 0, "a", 0)
	kill := &history.Value{FaultInfo: &history.FaultInfo{Fault: "kill", Targets: []string{"k2"}, KilledBrokers: []int32{2}}}
	h.add(1, history.NemesisProcess, history.Invoke, "start-kill", kill, "")
	done := *kill.FaultInfo
	done.Commands = []history.Command{{Node: "k2", Action: "kill", Cmd: "ssh k2 systemctl kill kafka", Exit: 0, Output: "killed", Millis: 120}}
	h.add(1.2, history.NemesisProcess, history.Info, "start-kill", &history.Value{FaultInfo: &done}, "")
	h.send(2, 0, 0, "b", 1)
	stop := &history.Value{FaultInfo: &history.FaultInfo{Fault: "kill", Targets: []string{"k2"}}}
	h.add(3, history.NemesisProcess, history.Invoke, "stop-kill", stop, "")
	long := strings.Repeat("systemd: unit kafka.service not found\n", 20) + "the last line"
	stopped := *stop.FaultInfo
	stopped.Commands = []history.Command{{Node: "k2", Action: "start", Cmd: "ssh k2 systemctl start kafka", Exit: 5, Output: long, Error: "exit status 5", Millis: 2400}}
	h.add(3.5, history.NemesisProcess, history.Info, "stop-kill", &history.Value{FaultInfo: &stopped}, "")
	h.send(4, 0, 0, "c", 2)
	h.final(5, 0, 3, []history.Record{{Offset: 0, Value: "a"}, {Offset: 1, Value: "b"}, {Offset: 2, Value: "c"}})

	tc := testConfig()
	tc.Nemesis = []string{"kill"}
	tc.Cluster.Runtime = "external"
	tc.Cluster.Nodes = 3
	tc.Cluster.External = &results.External{
		Bootstrap: []string{"k1:9092", "k2:9092"},
		Nodes:     []results.ExternalNode{{Name: "ctl", Addr: "ctl:9093", ID: -1}, {Name: "k1", Addr: "k1:9092", ID: 1}, {Name: "k2", Addr: "k2:9092", ID: 2}},
		Commands:  map[string]string{"kill": "ssh {host} systemctl kill kafka", "start": "ssh {host} systemctl start kafka"},
		Notes:     []string{"the brokers' clocks are not compared"},
	}
	tc.Cluster.Unsupported = map[string]string{checker.ReplicaDivergenceName: refusal}
	return tc, check(h.ops, tc), h.ops
}

// TestExternalReportSaysWhatWasTested: the report of an external run shows
// the cluster as reached and faulted, every command a window ran and how
// it ended, and which checks ran, never chaos's own broker settings as
// zeros.
func TestExternalReportSaysWhatWasTested(t *testing.T) {
	tc, res, ops := externalRun(t)
	if r, _ := res.Get(checker.ReplicaDivergenceName); !r.Unsupported {
		t.Fatalf("replica-divergence: %+v, want unsupported", r)
	}
	dir := t.TempDir()
	writeRun(t, dir, tc, historyBytes(t, ops), res)
	// The node's log holds the whole output the history keeps the tail of.
	os.MkdirAll(filepath.Join(dir, "cluster"), 0o755)
	os.WriteFile(filepath.Join(dir, "cluster", "k2.log"), []byte("kill: ...\n"), 0o644)
	page := render(t, LoadRun(dir))
	checkPage(t, page)

	cfg := section(t, page, "config")
	for _, want := range []string{
		"k1:9092, k2:9092", "node ctl", "ctl:9093 (controller)", "k2:9092 (broker 2)",
		"ssh {host} systemctl kill kafka", "pause command", "not given",
		"created by the run", "the brokers&#39; clocks are not compared", "the cluster&#39;s own",
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("the configuration does not say %q", want)
		}
	}
	for _, wrong := range []string{">0 ms<", "lose unsynced", "planted bugs", ">fsync<"} {
		if strings.Contains(cfg, wrong) {
			t.Errorf("the configuration of an external run shows %q", wrong)
		}
	}

	verdict := section(t, page, "verdict")
	for _, want := range []string{`id="checks"`, "Checked: ", "cannot support it", refusal} {
		if !strings.Contains(verdict, want) {
			t.Errorf("the verdict does not say %q", want)
		}
	}
	if strings.Contains(verdict, "replica-divergence not checked: ") {
		t.Error("the verdict's notes repeat what the checks line says")
	}
	guarantees := section(t, page, "guarantees")
	if !strings.Contains(guarantees, "not checked") {
		t.Error("the guarantees table does not say replica-divergence was not checked")
	}

	faults := section(t, page, "faults")
	for _, want := range []string{
		"ssh k2 systemctl kill kafka", "120.0 ms", "killed",
		"ssh k2 systemctl start kafka", "FAILED: exit 5", "2.40 s", "exit status 5",
		"1 command failed", "<details><summary>output, 21 lines", "the last line", `k2 (<a href="cluster/k2.log">log</a>)`,
	} {
		if !strings.Contains(faults, want) {
			t.Errorf("the fault windows do not say %q", want)
		}
	}
	if n := strings.Count(faults, `class="row-invalid"`); n != 1 {
		t.Errorf("%d commands marked failed, want 1", n)
	}
}

// TestChaosRunReportKeepsItsSettings: a run on chaos's own cluster still
// shows the broker settings it gave.
func TestChaosRunReportKeepsItsSettings(t *testing.T) {
	tc := testConfig()
	tc.Cluster.Runtime = "local"
	tc.Cluster.SessionTimeoutMs = 6000
	page := render(t, RunData{Config: tc})
	for _, want := range []string{"6000 ms", "lose unsynced writes on kill", "planted bugs"} {
		if !strings.Contains(page, want) {
			t.Errorf("the report does not say %q", want)
		}
	}
	if strings.Contains(page, "not given") {
		t.Error("a local run's report lists external commands")
	}
}

// TestVerdictLineNamesUnsupportedChecks: what chaos run prints last says
// that the verdict leaves out what the cluster cannot support, and why
// each check was not checked.
func TestVerdictLineNamesUnsupportedChecks(t *testing.T) {
	_, res, _ := externalRun(t)
	var buf bytes.Buffer
	WriteVerdict(&buf, res)
	out := buf.String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := lines[len(lines)-1]
	if !strings.HasPrefix(last, "verdict: ") || !strings.Contains(last, "(not checked: replica-divergence: the cluster cannot support it)") {
		t.Errorf("verdict line %q does not name the unsupported check", last)
	}
	if strings.Contains(last, "could not judge replica-divergence") {
		t.Errorf("verdict line %q counts an unsupported check as undecided", last)
	}
	if !strings.Contains(out, "replica-divergence (not checked: the cluster cannot support it):\n  not checked: "+refusal) {
		t.Errorf("the details do not say why replica-divergence was not checked:\n%s", out)
	}
	for _, l := range lines {
		if f := strings.Fields(l); len(f) > 2 && f[0] == checker.ReplicaDivergenceName && !strings.HasPrefix(f[1], "(") && f[1] != "not" {
			t.Errorf("results row %q does not say not checked", l)
		}
	}
}

// TestValidVerdictSaysWhatItLeftOut: a valid run with a check the cluster
// cannot support reads VALID with the check named beside it, in the
// report and in what chaos run prints, and the count of checks that ran.
func TestValidVerdictSaysWhatItLeftOut(t *testing.T) {
	res := &checker.Results{Valid: checker.Valid, Notes: []string{checker.ReplicaDivergenceName + " not checked: " + refusal + "; the verdict speaks of the other checks"}}
	for _, name := range checker.Names() {
		r := checker.Result{Name: name, Valid: checker.Valid}
		if name == checker.ReplicaDivergenceName {
			r = checker.Result{Name: name, Valid: checker.Unknown, NotChecked: refusal, Unsupported: true, Details: []string{"not checked: " + refusal}}
		}
		res.Results = append(res.Results, r)
	}
	var buf bytes.Buffer
	WriteVerdict(&buf, res)
	if want := "verdict: VALID (not checked: replica-divergence: the cluster cannot support it)\n"; !strings.HasSuffix(buf.String(), want) {
		t.Errorf("output ends\n%s\nwant %q", buf.String(), want)
	}
	page := render(t, RunData{Results: res})
	verdict := section(t, page, "verdict")
	want := fmt.Sprintf("Checked: %d of %d checks.", len(res.Results)-1, len(res.Results))
	for _, w := range []string{">VALID<", "by the checks that ran", want, "replica-divergence (" + refusal + ")"} {
		if !strings.Contains(verdict, w) {
			t.Errorf("the verdict does not say %q", w)
		}
	}
}

// TestCommandsOutsideWindowsShown: a heal that closed no window still ran
// its commands on the cluster; the report lists them, a timed-out one as
// failed without an exit status.
func TestCommandsOutsideWindowsShown(t *testing.T) {
	h := &hist{}
	h.send(0, 0, 0, "a", 0)
	v := &history.Value{FaultInfo: &history.FaultInfo{Fault: "heal"}}
	h.add(1, history.NemesisProcess, history.Invoke, "heal", v, "")
	done := *v.FaultInfo
	done.Commands = []history.Command{{Node: "k1", Action: "heal", Cmd: "iptables -F", Exit: -1, Error: "timed out after 30s", Millis: 30000}}
	h.add(31, history.NemesisProcess, history.Info, "heal", &history.Value{FaultInfo: &done}, "timed out")
	page := render(t, RunData{Ops: h.ops})
	faults := section(t, page, "faults")
	for _, want := range []string{"Fault commands outside any window", "iptables -F", "FAILED: no exit", "timed out after 30s", "30.00 s"} {
		if !strings.Contains(faults, want) {
			t.Errorf("the fault section does not say %q", want)
		}
	}
}
