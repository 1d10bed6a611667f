package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/results"
)

// campaignJSON is campaign.json as chaos campaign writes it (format 1),
// fields the view does not use included.
const campaignJSON = `{
  "format": 1, "seed": 42, "preset": "smoke", "spec": {"runs": 1}, "store": "store",
  "command": ["/tmp/bin/chaos", "campaign", "--preset", "smoke"], "versions": {"chaos": "dev"},
  "start": "2026-11-29T17:00:00Z", "end": "2026-11-29T17:01:00Z", "status": "complete", "exit_code": 1,
  "cells": [
    {"name": "acks-1_isr2_clean_kill+pause", "label": "acks=-1 isr=2 clean kill,pause", "acks": -1, "min_insync_replicas": 2,
     "election": "clean", "nemesis": "kill,pause", "args": ["run"], "model": {"acks": -1},
     "permitted": {"lost-write": {"permitted": false, "why": "clean"}, "stale-read": {"permitted": true, "why": "always"}},
     "prediction": "lost-write forbidden", "verdict": "valid",
     "summary": {"planned": 1, "runs": 1, "valid": 1, "availability": 0.97},
     "runs": [{"run": 1, "seed": 7, "verdict": "valid", "exit_code": 0, "start": "2026-11-29T17:00:00Z", "seconds": 25,
               "dir": "acks-1_isr2_clean_kill+pause/20261129T170000.000Z", "log": "logs/cell-1-run-1.log", "fault_windows": 2}]},
    {"name": "acks1_isr1_clean_partition-leader", "label": "acks=1 isr=1 clean partition-leader", "acks": 1, "min_insync_replicas": 1,
     "election": "clean", "nemesis": "partition-leader",
     "permitted": {"lost-write": {"permitted": true, "why": "acks=1"}},
     "prediction": "lost-write permitted", "verdict": "invalid",
     "summary": {"planned": 2, "runs": 2, "valid": 1, "invalid": 1, "expected_seen": {"lost-write": 1}, "unexpected": {"duplicate": 1}},
     "runs": [{"run": 1, "seed": 8, "verdict": "invalid", "exit_code": 1, "start": "2026-11-29T17:00:30Z", "seconds": 25,
               "dir": "acks1_isr1_clean_partition-leader/20261129T170030.000Z", "log": "logs/cell-2-run-1.log",
               "expected": ["lost-write"], "unexpected": ["duplicate"]},
              {"run": 2, "seed": 9, "verdict": "error", "exit_code": 3, "start": "2026-11-29T17:00:45Z", "seconds": 1,
               "log": "logs/cell-2-run-2.log", "error": "<b>boom</b>"}]}
  ]
}`

func TestCampaignMatrix(t *testing.T) {
	path := filepath.Join(t.TempDir(), results.CampaignFile)
	os.WriteFile(path, []byte(campaignJSON), 0o644)
	c, err := results.ReadCampaign(path)
	if err != nil {
		t.Fatal(err)
	}
	v := CampaignView{Campaign: c}
	p := buildCampaign(v)
	// Rows go from the weakest promise to the strongest; columns keep
	// the campaign's order.
	if len(p.Rows) != 2 || p.Rows[0].Label != "acks=1, min.insync=1, clean" || p.Rows[1].Label != "acks=-1, min.insync=2, clean" {
		t.Fatalf("rows %+v", p.Rows)
	}
	if len(p.Columns) != 2 || p.Columns[0] != "kill,pause" || p.Columns[1] != "partition-leader" {
		t.Fatalf("columns %v", p.Columns)
	}
	if c := p.Rows[0].Cells[1]; len(c) != 1 || c[0].Verdict != "invalid" || c[0].Seen != "lost-write 1/2" || c[0].Unexpected != "duplicate 1/2" {
		t.Fatalf("acks=1 x partition-leader: %+v", c)
	}
	if len(p.Rows[0].Cells[0]) != 0 || len(p.Rows[1].Cells[1]) != 0 {
		t.Fatal("a cell landed where the campaign has none")
	}
	var buf bytes.Buffer
	if err := RenderCampaign(&buf, v); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	ids := checkPage(t, page)
	if !ids["matrix"] {
		t.Fatal("no matrix")
	}
	matrix := page[strings.Index(page, `id="matrix"`):]
	matrix = matrix[:strings.Index(matrix, "</table>")]
	for _, want := range []string{
		`href="../../acks-1_isr2_clean_kill&#43;pause/20261129T170000.000Z/report.html"`,
		`href="../../acks1_isr1_clean_partition-leader/20261129T170030.000Z/report.html"`,
		"run 2: error", "97.0% of sends acknowledged", "<summary>permitted: stale-read</summary>stale-read",
	} {
		if !strings.Contains(matrix, want) {
			t.Errorf("the matrix lacks %s", want)
		}
	}
	if strings.Contains(page, "<b>boom") || !strings.Contains(page, "&lt;b&gt;boom") {
		t.Error("a run's error is not escaped")
	}
	if !strings.Contains(page, `href="logs/cell-2-run-2.log"`) || !strings.Contains(page, "chaos campaign --preset smoke") {
		t.Error("no log link or no command")
	}
	// Another page location moves the links.
	v.StoreRoot = "/store"
	buf.Reset()
	RenderCampaign(&buf, v)
	if !strings.Contains(buf.String(), `href="/store/acks1_isr1_clean_partition-leader/20261129T170030.000Z/report.html"`) {
		t.Error("StoreRoot is not used")
	}
}

func TestScanStoreNewestFirst(t *testing.T) {
	store := t.TempDir()
	mk := func(test, stamp string, tc *results.TestConfig, res *checker.Results, report bool) string {
		dir := filepath.Join(store, test, stamp)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		writeRun(t, dir, tc, nil, res)
		if report {
			os.WriteFile(filepath.Join(dir, results.ReportFile), []byte("<html>"), 0o644)
		}
		return dir
	}
	tc := testConfig()
	tc.Nemesis = []string{"kill"}
	valid := &checker.Results{Valid: checker.Valid}
	invalid := &checker.Results{Valid: checker.Invalid, Unexpected: []string{"lost-write"},
		Results: []checker.Result{{Name: checker.LostWriteName, Valid: checker.Invalid, Count: 3}}}
	mk("a", "20261129T170000.000Z", tc, valid, true)
	mk("a", "20261129T180000.000Z", tc, nil, false) // interrupted
	last := mk("b", "20261129T175959.999Z", tc, invalid, true)
	mk("b", "20261129T160000.000Z", nil, nil, false)
	os.WriteFile(filepath.Join(store, "b", "20261129T150000.000Z"), []byte("a file"), 0o644)
	os.MkdirAll(filepath.Join(store, "b", "x.tmp"), 0o755)
	// Damaged files are reported, not fatal.
	bad := mk("c", "20261129T120000.000Z", nil, nil, false)
	os.WriteFile(filepath.Join(bad, results.ResultsFile), []byte("{"), 0o644)
	os.WriteFile(filepath.Join(bad, results.TestFile), []byte("{"), 0o644)
	os.Symlink(last, filepath.Join(store, "latest"))
	os.Symlink("20261129T175959.999Z", filepath.Join(store, "b", "latest"))
	camp := filepath.Join(store, "campaigns", "20261129T190000.000Z")
	os.MkdirAll(camp, 0o755)
	os.WriteFile(filepath.Join(camp, results.CampaignFile), []byte(campaignJSON), 0o644)
	broken := filepath.Join(store, "campaigns", "20261129T200000.000Z")
	os.MkdirAll(broken, 0o755)
	os.WriteFile(filepath.Join(broken, results.CampaignFile), []byte("{"), 0o644)
	os.Symlink("20261129T190000.000Z", filepath.Join(store, "campaigns", "latest"))
	hunt := &results.Run{Store: store, Test: results.HuntsDir, Dir: filepath.Join(store, results.HuntsDir, "20261129T210000.000Z")}
	os.MkdirAll(hunt.Dir, 0o755)
	if err := hunt.WriteJSON(results.HuntFile, huntRecord()); err != nil {
		t.Fatal(err)
	}

	v, err := ScanStore(store)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, r := range v.Runs {
		dirs = append(dirs, r.Dir)
	}
	want := []string{"a/20261129T180000.000Z", "b/20261129T175959.999Z", "a/20261129T170000.000Z", "b/20261129T160000.000Z", "c/20261129T120000.000Z"}
	if strings.Join(dirs, " ") != strings.Join(want, " ") {
		t.Fatalf("runs %v, want %v", dirs, want)
	}
	if r := v.Runs[1]; r.Verdict != "invalid" || r.LostWrites != 3 || !r.Report || r.Seed != 7 || !strings.Contains(r.Summary, "kill") {
		t.Fatalf("run %+v", r)
	}
	if r := v.Runs[0]; r.Verdict != "" || r.Report || !strings.Contains(r.Note, "no verdict") {
		t.Fatalf("interrupted run %+v", r)
	}
	if r := v.Runs[4]; !strings.Contains(r.Note, "results.json is damaged") || !strings.Contains(r.Note, "test.json is damaged") {
		t.Fatalf("damaged run %+v", r)
	}
	if len(v.Campaigns) != 2 || v.Campaigns[0].Note == "" || v.Campaigns[1].Verdict != "invalid" || v.Campaigns[1].Cells != 2 || v.Campaigns[1].Runs != 3 {
		t.Fatalf("campaigns %+v", v.Campaigns)
	}
	if len(v.Hunts) != 1 || v.Hunts[0].Seed != 9 || v.Hunts[0].Runs != 2000 || v.Hunts[0].Findings != 1 || v.Hunts[0].Unjudged != 1 || v.Hunts[0].Page {
		t.Fatalf("hunts %+v", v.Hunts)
	}
	if v.Runs[0].Start != time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC) {
		t.Fatalf("start %v", v.Runs[0].Start)
	}
	var buf bytes.Buffer
	if err := RenderStore(&buf, v); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	ids := checkPage(t, page)
	if !ids["runs"] || !ids["hunts"] {
		t.Fatal("no runs table, or no hunts")
	}
	if hunts := page[strings.Index(page, `id="hunts"`):]; !strings.Contains(hunts, "1 finding") || !strings.Contains(hunts, "./hunts/20261129T210000.000Z/") {
		t.Fatal("the hunts table does not show the hunt's finding and directory")
	}
	runs := page[strings.Index(page, `id="runs"`):]
	if i, j := strings.Index(runs, "a/20261129T180000.000Z/"), strings.Index(runs, "b/20261129T175959.999Z/report.html"); i < 0 || j < 0 || i > j {
		t.Fatal("the runs table is not newest first with links")
	}
	if _, err := ScanStore(filepath.Join(store, "missing")); err == nil {
		t.Fatal("a missing store is no error")
	}
}

func TestCampaignViewMatchesTheRecord(t *testing.T) {
	// Decoding campaign.json must fill every field the page reads: a
	// renamed JSON field in the record would silently empty the page.
	var v CampaignView
	if err := json.Unmarshal([]byte(campaignJSON), &v); err != nil {
		t.Fatal(err)
	}
	c := v.Cells[1]
	if v.Seed != 42 || v.Status != "complete" || *v.ExitCode != 1 || c.Acks != 1 || c.Nemesis != "partition-leader" || c.Prediction == "" ||
		!c.Permitted[checker.LostWriteName].Permitted || c.Summary.Invalid != 1 || c.Summary.ExpectedSeen["lost-write"] != 1 ||
		c.Runs[0].Dir == "" || c.Runs[0].Unexpected[0] != "duplicate" || c.Runs[1].Error == "" || v.Cells[0].Summary.Availability == nil {
		t.Fatalf("decoded %+v", v)
	}
}

func TestEmptyPagesRender(t *testing.T) {
	var buf bytes.Buffer
	if err := RenderCampaign(&buf, CampaignView{}); err != nil {
		t.Fatal(err)
	}
	if ids := checkPage(t, buf.String()); !ids["matrix"] {
		t.Fatal("an empty campaign has no matrix")
	}
	buf.Reset()
	if err := RenderStore(&buf, StoreView{Root: "store", Problems: []string{"x: permission denied"}}); err != nil {
		t.Fatal(err)
	}
	if ids := checkPage(t, buf.String()); !ids["runs"] || !strings.Contains(buf.String(), "permission denied") {
		t.Fatal("an empty store page lacks its runs table or its problems")
	}
}

// TestStoreLinksEscapeNames: the store page links to directories by
// whatever names they have; one named like a scheme or with an anchor in
// it must still link to itself.
func TestStoreLinksEscapeNames(t *testing.T) {
	v := StoreView{Runs: []StoreRun{{Test: "x:y", Dir: "x:y/a#b?c", Report: true}}}
	var buf bytes.Buffer
	if err := RenderStore(&buf, v); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`href="./x:y/a%23b%3Fc/"`, `href="./x:y/a%23b%3Fc/report.html"`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("the store page lacks %s", want)
		}
	}
}

// detectionJSON is a detection campaign's campaign.json: a bug caught in
// every run, one never caught, one caught in some, a control without
// false alarm and one with.
const detectionJSON = `{
  "format": 1, "seed": 3, "spec": {"runs": 3}, "store": "store", "command": ["chaos", "campaign", "--preset", "bugs"],
  "start": "2026-11-29T17:00:00Z", "status": "complete", "exit_code": 1,
  "detection": [
    {"cell": "a_bug-ack-before-replicate", "scenario": "acks=-1 isr=2 clean partition-leader", "bugs": [{"name": "ack-before-replicate", "node": "broker"}],
     "planned": 3, "runs": 3, "caught": 3, "anomalies": {"unseen": 3, "lost-write": 3}, "timed": 3, "median_time": "4.456s", "median_ops": 4459},
    {"cell": "b_bug-min-isr-ignored", "scenario": "acks=-1 isr=2 clean partition-leader [--rate <200>]", "bugs": [{"name": "min-isr-ignored", "node": "broker"}],
     "planned": 3, "runs": 3, "caught": 0},
    {"cell": "c_bug-unclean-when-clean", "scenario": "acks=-1 isr=2 clean slow-followers-kill-leader", "bugs": [{"name": "unclean-when-clean", "node": "controller"}],
     "planned": 3, "runs": 3, "errors": 1, "caught": 1, "anomalies": {"lost-write": 1}, "timed": 1, "median_time": "12s", "median_ops": 900},
    {"cell": "d", "scenario": "acks=-1 isr=2 clean partition-leader", "planned": 3, "runs": 3, "caught": 0},
    {"cell": "e", "scenario": "acks=1 isr=1 clean kill", "planned": 3, "runs": 2, "caught": 1, "anomalies": {"duplicate": 1}}
  ],
  "cells": [
    {"name": "a_bug-ack-before-replicate", "label": "acks=-1 isr=2 clean partition-leader bug=ack-before-replicate", "acks": -1, "min_insync_replicas": 2,
     "election": "clean", "nemesis": "partition-leader", "bugs": ["ack-before-replicate"], "verdict": "invalid", "summary": {"planned": 3, "runs": 3, "invalid": 3},
     "runs": [{"run": 1, "seed": 7, "verdict": "invalid", "exit_code": 1, "start": "2026-11-29T17:00:00Z", "seconds": 1, "dir": "a/1", "log": "logs/1.log",
               "unexpected": ["lost-write", "unseen"], "detection": {"anomaly": "lost-write", "op": 9032, "time": "4.456s", "ops": 4459}}]},
    {"name": "b_bug-min-isr-ignored", "label": "acks=-1 isr=2 clean partition-leader [--rate 200] bug=min-isr-ignored", "acks": -1, "min_insync_replicas": 2,
     "election": "clean", "nemesis": "partition-leader", "bugs": ["min-isr-ignored"], "verdict": "valid", "summary": {"planned": 3, "runs": 3, "valid": 3}, "runs": []},
    {"name": "c_bug-unclean-when-clean", "label": "x bug=unclean-when-clean", "acks": -1, "min_insync_replicas": 2,
     "election": "clean", "nemesis": "slow-followers-kill-leader", "bugs": ["unclean-when-clean"], "verdict": "invalid", "summary": {"planned": 3, "runs": 3}, "runs": []},
    {"name": "d", "label": "acks=-1 isr=2 clean partition-leader", "acks": -1, "min_insync_replicas": 2, "election": "clean", "nemesis": "partition-leader",
     "verdict": "valid", "summary": {"planned": 3, "runs": 3, "valid": 3}, "runs": []},
    {"name": "e", "label": "acks=1 isr=1 clean kill", "acks": 1, "min_insync_replicas": 1, "election": "clean", "nemesis": "kill",
     "verdict": "invalid", "summary": {"planned": 3, "runs": 2, "invalid": 1}, "runs": []}
  ]
}`

// TestCampaignDetectionMatrix: a detection campaign's page shows a row
// per cell with its bugs, node, scenario, runs, what caught them and how
// soon; a bug never caught says so in a style of its own (not the
// caught one's green), as do a control's false alarms; the matrix of
// configurations holds only the cells without bugs, and the run list
// links a bug cell's runs to its row.
func TestCampaignDetectionMatrix(t *testing.T) {
	var c results.Campaign
	if err := json.Unmarshal([]byte(detectionJSON), &c); err != nil {
		t.Fatal(err)
	}
	p := buildCampaign(CampaignView{Campaign: c})
	if len(p.Detection) != 5 || !p.Matrix || len(p.Rows) != 2 || len(p.Columns) != 2 {
		t.Fatalf("detection %d rows, matrix %v with rows %+v, columns %v", len(p.Detection), p.Matrix, p.Rows, p.Columns)
	}
	want := []detectionRow{
		{ID: "cell-1", Bugs: "ack-before-replicate", Node: "broker", Scenario: "acks=-1 isr=2 clean partition-leader", Runs: "3 of 3",
			Class: "caught", Caught: "3/3 (100%)", Anomalies: "lost-write 3/3, unseen 3/3", Time: "4.456 s", Ops: "4459"},
		{ID: "cell-2", Bugs: "min-isr-ignored", Node: "broker", Scenario: "acks=-1 isr=2 clean partition-leader [--rate <200>]", Runs: "3 of 3",
			Class: "missed", Caught: "not caught (0/3)", Anomalies: "-", Time: "-", Ops: "-"},
		{ID: "cell-3", Bugs: "unclean-when-clean", Node: "controller", Scenario: "acks=-1 isr=2 clean slow-followers-kill-leader", Runs: "3 of 3 (1 errors)",
			Class: "partly", Caught: "1/3 (33%)", Anomalies: "lost-write 1/3", Time: "12.000 s", Ops: "900"},
		{Href: "#cell-4", Control: true, Bugs: "control (no bug)", Node: "-", Scenario: "acks=-1 isr=2 clean partition-leader", Runs: "3 of 3",
			Class: "clean", Caught: "no false alarm (0/3)", Anomalies: "-", Time: "-", Ops: "-"},
		{Href: "#cell-5", Control: true, Bugs: "control (no bug)", Node: "-", Scenario: "acks=1 isr=1 clean kill", Runs: "2 of 3",
			Class: "false-alarm", Caught: "false alarms 1/2 (50%)", Anomalies: "duplicate 1/2", Time: "-", Ops: "-"},
	}
	for i, w := range want {
		if p.Detection[i] != w {
			t.Errorf("row %d:\n%+v\nwant\n%+v", i, p.Detection[i], w)
		}
	}
	var buf bytes.Buffer
	if err := RenderCampaign(&buf, CampaignView{Campaign: c}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	ids := checkPage(t, page)
	if !ids["detection"] || !ids["matrix"] || !ids["cell-1"] || !ids["cell-4"] {
		t.Fatalf("ids %v", ids)
	}
	table := page[strings.Index(page, `id="detection"`):]
	table = table[:strings.Index(table, "</table>")]
	for _, s := range []string{`<span class="pill missed">not caught (0/3)</span>`, `<span class="pill caught">3/3 (100%)</span>`,
		`<span class="pill false-alarm">`, `[--rate &lt;200&gt;]`, `<a href="#cell-4">control (no bug)</a>`, "median time to first detection"} {
		if !strings.Contains(table, s) {
			t.Errorf("the detection table lacks %s", s)
		}
	}
	matrix := page[strings.Index(page, `id="matrix"`):]
	matrix = matrix[:strings.Index(matrix, "</table>")]
	if strings.Contains(matrix, "bug=") || !strings.Contains(matrix, `id="cell-4"`) {
		t.Errorf("the matrix holds a bug cell, or lacks the control")
	}
	if !strings.Contains(page, `<a href="#cell-1">acks=-1 isr=2 clean partition-leader bug=ack-before-replicate</a>`) {
		t.Errorf("a bug cell's run does not link to its row")
	}
	// Every cell a bug's: no matrix.
	c.Cells = c.Cells[:3]
	if p := buildCampaign(CampaignView{Campaign: c}); p.Matrix {
		t.Error("a matrix without a cell")
	}
}
