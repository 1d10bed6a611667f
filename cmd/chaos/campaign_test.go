package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/broker/bug"
	"github.com/chaos-isr/chaos/campaign"
	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/results"
)

// Process faults only: the network fabric may not be wired when these run,
// and a campaign test must not depend on it. The short timings let a fault
// window open within 8 s.
var tinyRunArgs = []string{"--", "--replica-lag-time-max-ms", "2000", "--session-timeout-ms", "2000"}

func tinyCampaign(store string, seed string, timeLimit string, extra ...string) []string {
	args := []string{"campaign", "--store", store, "--seed", seed, "--nemesis", "kill;pause",
		"--time-limit", timeLimit, "--nemesis-interval", "2s"}
	args = append(args, extra...)
	return append(args, tinyRunArgs...)
}

// requireCampaign fails with the fix when the binary lacks the command,
// rather than with a puzzling "unknown command" further down.
func requireCampaign(t *testing.T) {
	t.Helper()
	if out, code := runChaos(t, "campaign", "--help"); code != 0 {
		t.Fatalf("the chaos binary has no campaign command (is root.AddCommand(newCampaignCmd()) in main.go?):\n%s", out)
	}
}

func readCampaign(t *testing.T, store string) results.Campaign {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(store, "campaigns", "latest", "campaign.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rec results.Campaign
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatalf("campaign.json: %v", err)
	}
	return rec
}

// junitFile is what these tests read of a campaign's JUnit XML (package
// campaign tests its shape).
type junitFile struct {
	Tests   int `xml:"tests,attr"`
	Errors  int `xml:"errors,attr"`
	Skipped int `xml:"skipped,attr"`
	Suites  []struct {
		Name  string     `xml:"name,attr"`
		Cases []struct{} `xml:"testcase"`
	} `xml:"testsuite"`
}

// TestCampaignTiny: two cells of one 8 s run each. The exit code is the
// worst run's, campaign.json has both cells with their runs and the seeds
// the runs really used, and the JUnit file parses with a suite per cell.
func TestCampaignTiny(t *testing.T) {
	requireCampaign(t)
	store := t.TempDir()
	junit := filepath.Join(store, "junit.xml")
	start := time.Now()
	out, code := runChaos(t, tinyCampaign(store, "11", "8s", "--junit", junit)...)
	t.Logf("campaign took %s:\n%s", time.Since(start).Round(time.Second), out)
	if !strings.HasPrefix(out, "campaign ") || !strings.Contains(out, "seed 11\n") {
		t.Fatalf("output does not start with the campaign directory and seed")
	}
	rec := readCampaign(t, store)
	if rec.Status != "complete" || rec.Seed != 11 || len(rec.Cells) != 2 {
		t.Fatalf("campaign.json: status %q seed %d, %d cells", rec.Status, rec.Seed, len(rec.Cells))
	}
	var all []results.CampaignRun
	for _, c := range rec.Cells {
		if len(c.Runs) != 1 {
			t.Fatalf("cell %s has %d runs, want 1", c.Name, len(c.Runs))
		}
		r := c.Runs[0]
		all = append(all, r)
		if r.Verdict == campaign.VerdictError || r.Dir == "" {
			t.Fatalf("cell %s: run %+v", c.Name, r)
		}
		if r.Seed != campaign.RunSeed(11, c.Name, 1) {
			t.Errorf("cell %s: seed %d, want the derived %d", c.Name, r.Seed, campaign.RunSeed(11, c.Name, 1))
		}
		var tc results.TestConfig
		data, err := os.ReadFile(filepath.Join(store, r.Dir, "test.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &tc); err != nil {
			t.Fatal(err)
		}
		if tc.Seed != r.Seed || tc.Name != c.Name {
			t.Errorf("cell %s: the run used seed %d name %q, campaign.json says %d %q", c.Name, tc.Seed, tc.Name, r.Seed, c.Name)
		}
		var res checker.Results
		data, err = os.ReadFile(filepath.Join(store, r.Dir, "results.json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &res); err != nil {
			t.Fatal(err)
		}
		if checker.ExitCode(res.Valid) != r.ExitCode {
			t.Errorf("cell %s: results.json says %s, the run exited %d", c.Name, res.Valid, r.ExitCode)
		}
		if r.Sends == nil || r.Sends.OK == 0 || c.Summary.Availability == nil {
			t.Errorf("cell %s: no send counts or availability: %+v", c.Name, c.Summary)
		}
	}
	want := campaign.VerdictExitCode(campaign.WorstVerdict(all))
	if code != want || rec.ExitCode == nil || *rec.ExitCode != want {
		t.Fatalf("exit %d, campaign.json exit_code %v, want %d from the runs %+v", code, rec.ExitCode, want, all)
	}
	// acks=-1, min.insync.replicas=2, clean under process faults is the
	// headline guarantee: an invalid run is a finding (an unknown one may
	// be a slow machine's linearizability timeout, and is only logged).
	if code == exitInvalid {
		t.Errorf("the headline configuration was invalid under kill and pause")
	}

	data, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var ju junitFile
	if err := xml.Unmarshal(data, &ju); err != nil {
		t.Fatalf("JUnit XML does not parse: %v\n%s", err, data)
	}
	if len(ju.Suites) != 2 || ju.Tests != 2 || len(ju.Suites[0].Cases) != 1 || ju.Suites[0].Name != rec.Cells[0].Name {
		t.Fatalf("JUnit: %+v", ju)
	}
}

// TestCampaignSIGTERM: a campaign stopped while its second run has a
// broker paused (the hardest moment to clean up: a stopped process ignores
// SIGTERM) forwards the stop, exits 130, leaves no process behind, keeps
// the first run's results and records what finished.
func TestCampaignSIGTERM(t *testing.T) {
	requireCampaign(t)
	store := t.TempDir()
	junit := filepath.Join(store, "junit.xml")
	cmd := exec.Command(chaosBin(t), tinyCampaign(store, "5", "8s", "--junit", junit)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	second := filepath.Join(store, "acksall_isr2_clean_pause", "latest", "history.jsonl")
	deadline := time.Now().Add(60 * time.Second)
	for {
		if data, err := os.ReadFile(second); err == nil && bytes.Contains(data, []byte(`"type":"info","f":"start-pause"`)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the second run paused no broker within 60s:\n%s", out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	stopped := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(90 * time.Second):
		t.Fatalf("the campaign did not stop within 90s of SIGTERM:\n%s", out.String())
	}
	t.Logf("stopped %s after SIGTERM:\n%s", time.Since(stopped).Round(100*time.Millisecond), out.String())
	if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
		t.Fatalf("exit %d, want %d", code, exitInterrupted)
	}
	if left := processesMentioning(t, store); len(left) > 0 {
		t.Fatalf("processes left behind:\n%s", strings.Join(left, "\n"))
	}
	rec := readCampaign(t, store)
	if rec.Status != "interrupted" || len(rec.Cells) != 2 || len(rec.Cells[0].Runs) != 1 || len(rec.Cells[1].Runs) != 1 {
		t.Fatalf("campaign.json: %+v", rec)
	}
	first, cut := rec.Cells[0].Runs[0], rec.Cells[1].Runs[0]
	if first.Verdict == campaign.VerdictError || first.Verdict == campaign.VerdictInterrupted || cut.Verdict != campaign.VerdictInterrupted {
		t.Fatalf("verdicts %q and %q, want a verdict and interrupted", first.Verdict, cut.Verdict)
	}
	var res checker.Results
	data, err := os.ReadFile(filepath.Join(store, first.Dir, "results.json"))
	if err == nil {
		err = json.Unmarshal(data, &res)
	}
	if err != nil || res.Valid == "" {
		t.Fatalf("the finished run's results.json: %v", err)
	}
	var ju junitFile
	if data, err := os.ReadFile(junit); err != nil || xml.Unmarshal(data, &ju) != nil || ju.Skipped != 1 {
		t.Fatalf("JUnit after an interrupt: %v %+v", err, ju)
	}
}

// TestCampaignSIGKILL: a campaign killed outright takes its run and the
// run's cluster with it (PR_SET_PDEATHSIG all the way down).
func TestCampaignSIGKILL(t *testing.T) {
	requireCampaign(t)
	store := t.TempDir()
	cmd := exec.Command(chaosBin(t), "campaign", "--store", store, "--seed", "3", "--nemesis", "pause",
		"--time-limit", "60s", "--nemesis-interval", "2s")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	hist := filepath.Join(store, "acksall_isr2_clean_pause", "latest", "history.jsonl")
	deadline := time.Now().Add(30 * time.Second)
	for {
		if fi, err := os.Stat(hist); err == nil && fi.Size() > 10_000 {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("the run wrote no history within 30s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if n := len(processesMentioning(t, store)); n < 5 {
		t.Fatalf("expected the campaign, the run and its cluster running, found %d processes", n)
	}
	cmd.Process.Kill()
	cmd.Wait()
	var left []string
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if left = processesMentioning(t, store); len(left) == 0 {
			break
		}
	}
	if len(left) > 0 {
		t.Fatalf("processes left behind after SIGKILL of the campaign:\n%s", strings.Join(left, "\n"))
	}
	if rec := readCampaign(t, store); rec.Status != "running" || len(rec.Cells) != 1 {
		t.Fatalf("campaign.json after SIGKILL: %+v", rec)
	}
}

// TestCampaignRunRefusalIsPerCell: when chaos run refuses a cell (exit 3
// before it starts anything), the campaign records the reason for that
// cell, skips the cell's other runs, and exits 3 instead of crashing.
func TestCampaignRunRefusalIsPerCell(t *testing.T) {
	requireCampaign(t)
	store := t.TempDir()
	junit := filepath.Join(store, "junit.xml")
	out, code := runChaos(t, "campaign", "--store", store, "--seed", "1", "--runs", "3", "--time-limit", "5s",
		"--junit", junit, "--", "--fsync", "bogus")
	if code != exitErrorCode || !strings.Contains(out, "bogus") {
		t.Fatalf("exit %d, want 3 with the reason:\n%s", code, out)
	}
	rec := readCampaign(t, store)
	c := rec.Cells[0]
	if len(c.Runs) != 1 || c.Runs[0].Verdict != campaign.VerdictError || !strings.Contains(c.Refused, "bogus") || c.Verdict != campaign.VerdictError {
		t.Fatalf("cell record: %+v", c)
	}
	var ju junitFile
	if data, err := os.ReadFile(junit); err != nil || xml.Unmarshal(data, &ju) != nil || ju.Errors != 1 || ju.Skipped != 2 {
		t.Fatalf("JUnit: %v %+v", err, ju)
	}
}

// TestCampaignRefusesImpossible: impossible cells are all named, with the
// reason, before anything runs.
func TestCampaignRefusesImpossible(t *testing.T) {
	requireCampaign(t)
	store := t.TempDir()
	spec := filepath.Join(store, "spec.json")
	if err := os.WriteFile(spec, []byte(`{"min_insync_replicas": [2, 4], "nemesis": ["kill", "meteor"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--spec", spec},
			[]string{"3 impossible", "isr=4 clean kill: min.insync.replicas 4 exceeds the replication factor 3", `unknown nemesis "meteor"`}},
		{[]string{"--min-insync-replicas", "2,4", "--nemesis", "kill;pause"},
			[]string{"2 impossible", "isr=4 clean kill: min.insync.replicas 4 exceeds the replication factor 3", "isr=4 clean pause:"}},
		// A bad value of a matrix flag is the flag's error, before any cell.
		{[]string{"--nemesis", "kill;meteor"}, []string{`--nemesis: not a fault, got "meteor"`}},
		{[]string{"--min-insync-replicas", "3", "--", "--replication-factor", "2"},
			[]string{"min.insync.replicas 3 exceeds the replication factor 2"}},
		{[]string{"--nemesis", "kill", "--time-limit", "10s", "--nemesis-interval", "10s"},
			[]string{"shorter than twice the nemesis interval"}},
		{[]string{"--nemesis", "kill,pause", "--time-limit", "30s", "--nemesis-interval", "10s"},
			[]string{"no room for a window of each of the 2 kinds kill,pause in the time limit 30s", "a time limit of 55s or more"}},
		{[]string{"--election", "clean,maybe"}, []string{`--election: not an election policy, got "maybe"; use clean, unclean or elr`}},
		{[]string{"--preset", "smoke", "--acks", "1"}, []string{"cannot be combined"}},
		{[]string{"--preset", "nope"}, []string{`--preset: not a preset, got "nope"; use bugs, seed or smoke`}},
		{[]string{"--", "--seed", "4"}, []string{"--seed set by the campaign"}},
		{[]string{"--", "--no-such-flag"}, []string{"--no-such-flag: no such flag for chaos run"}},
	} {
		args := append([]string{"campaign", "--store", store}, tc.args...)
		out, code := runChaos(t, args...)
		if code != exitErrorCode {
			t.Errorf("%v: exit %d, want 3:\n%s", tc.args, code, out)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: output lacks %q:\n%s", tc.args, w, out)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(store, "campaigns")); err == nil {
		t.Errorf("a refused campaign created %s", filepath.Join(store, "campaigns"))
	}
}

var planSeed = regexp.MustCompile(`run \d+/\d+ seed (\d+):`)

// TestCampaignSeedsReplay: the same campaign seed plans the same run seeds
// (and commands); another seed plans others.
func TestCampaignSeedsReplay(t *testing.T) {
	requireCampaign(t)
	plan := func(seed string) []string {
		out, code := runChaos(t, "campaign", "--preset", "seed", "--seed", seed, "--dry-run")
		if code != 0 {
			t.Fatalf("dry run exited %d:\n%s", code, out)
		}
		var seeds []string
		for _, m := range planSeed.FindAllStringSubmatch(out, -1) {
			seeds = append(seeds, m[1])
		}
		if z := preset(t, "seed").Size(); len(seeds) != z.Cells*z.Runs || len(seeds) != 108 {
			t.Fatalf("the seed preset planned %d runs, want %d (108):\n%s", len(seeds), z.Cells*z.Runs, out)
		}
		return seeds
	}
	a, b, c := plan("1234"), plan("1234"), plan("1235")
	if strings.Join(a, ",") != strings.Join(b, ",") {
		t.Fatalf("same campaign seed, different run seeds:\n%v\n%v", a, b)
	}
	same := 0
	for i := range a {
		if a[i] == c[i] {
			same++
		}
	}
	if same > 0 {
		t.Fatalf("%d run seeds unchanged by another campaign seed", same)
	}
}

// preset is a preset's spec.
func preset(t *testing.T, name string) campaign.Spec {
	t.Helper()
	p, ok := campaign.Preset(name)
	if !ok {
		t.Fatalf("no preset %q", name)
	}
	return p
}

// planCells plans a spec's cells as chaos campaign does.
func planCells(spec campaign.Spec, store string) ([]campaign.Cell, error) {
	plan, err := planCampaign(spec, store)
	if err != nil {
		return nil, err
	}
	return plan.Cells, nil
}

func TestCampaignPresetsAndModel(t *testing.T) {
	for name, want := range map[string]int{"smoke": 2, "seed": 108} {
		cells, err := planCells(preset(t, name), "store")
		if err != nil || len(cells) != want {
			t.Fatalf("preset %s: %d cells, %v", name, len(cells), err)
		}
	}
	cells, _ := planCells(preset(t, "smoke"), "store")
	if cells[0].Prediction != "lost-write forbidden" || cells[1].Prediction != "lost-write permitted" {
		t.Fatalf("smoke predictions: %q, %q", cells[0].Prediction, cells[1].Prediction)
	}
	// Pass-through flags are judged the way the run will be: with brokers
	// that lose unsynced writes kill-all destroys data on every node (F3,
	// loss permitted); under fsync always the lose-unsynced nemesis
	// destroys nothing (F1, loss forbidden).
	for _, c := range []struct {
		nemesis string
		args    []string
		want    string
	}{
		{"kill-all", nil, "lost-write forbidden"},
		{"kill-all", []string{"--lose-unsynced"}, "lost-write permitted"},
		{"lose-unsynced", nil, "lost-write permitted"},
		{"lose-unsynced", []string{"--fsync", "always"}, "lost-write forbidden"},
		// A damaged disk loses data whatever the storage settings.
		{"corrupt", []string{"--fsync", "always"}, "lost-write permitted"},
		// KIP-966's case: clean election permits the loss, ELR does not.
		{"stop-followers-kill-leader", nil, "lost-write permitted"},
		{"stop-followers-kill-leader elr", nil, "lost-write forbidden"},
	} {
		nemesis, election, _ := strings.Cut(c.nemesis, " ")
		spec := campaign.Spec{CampaignSpec: results.CampaignSpec{Cells: []campaign.CellSpec{{Acks: -1, MinInsyncReplicas: 2, Nemesis: nemesis, Election: election}}, TimeLimit: results.Duration(30 * time.Second),
			NemesisInterval: results.Duration(5 * time.Second), RunArgs: c.args}}
		cells, err := planCells(spec, "store")
		if err != nil || cells[0].Prediction != c.want {
			t.Errorf("%s %v: %v, %v; want %q", c.nemesis, c.args, cells, err, c.want)
		}
	}
	// The seed preset's first label is the example of the issue's
	// progress line's shape.
	cells, _ = planCells(preset(t, "seed"), "store")
	if cells[0].Label != "acks=0 isr=1 clean kill-leader" || cells[0].Name != "acks0_isr1_clean_kill-leader" {
		t.Fatalf("first seed cell: %q %q", cells[0].Label, cells[0].Name)
	}
}

func TestCampaignSpecFile(t *testing.T) {
	requireCampaign(t)
	dir := t.TempDir()
	write := func(s string) string {
		p := filepath.Join(dir, "spec.json")
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	out, code := runChaos(t, "campaign", "--dry-run", "--seed", "1", "--spec", write(`{
		"cells": [{"acks": "all", "min_insync_replicas": 2, "nemesis": "kill,pause"},
		          {"acks": 1, "min_insync_replicas": 1, "election": "unclean"}],
		"runs": 2, "time_limit": "20s", "nemesis_interval": "3.5s",
		"run_args": ["--replica-lag-time-max-ms", "2000"]}`), "--runs", "3")
	if code != 0 || !strings.Contains(out, "[6/6] acks=1 isr=1 unclean none run 3/3") ||
		!strings.Contains(out, "--nemesis kill,pause --time-limit 20s --nemesis-interval 3.5s --replica-lag-time-max-ms 2000") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for spec, want := range map[string]string{
		`{"acks": [1], "runz": 2}`:                                        `unknown field "runz"`,
		`{"cells": [{"min_insync_replicas": 1}]}`:                         "acks and min_insync_replicas are required",
		`{"cells": [{"acks": 1, "min_insync_replicas": 1}], "acks": [1]}`: "either cells or the matrix",
		`{"acks": [2]}`: "acks must be 0, 1 or -1",
	} {
		out, code := runChaos(t, "campaign", "--dry-run", "--spec", write(spec))
		if code != exitErrorCode || !strings.Contains(out, want) {
			t.Errorf("spec %s: exit %d, want 3 saying %q:\n%s", spec, code, want, out)
		}
	}
}

// simCampaign is a tiny campaign in simulation: 2 cells x 2 runs of 10 s
// (acks=1 under kill and partition-leader: the partition loses writes).
func simCampaign(store, seed string, extra ...string) []string {
	args := []string{"campaign", "--runtime", "sim", "--store", store, "--seed", seed, "--acks", "1", "--min-insync-replicas", "1",
		"--nemesis", "kill;partition-leader", "--runs", "2", "--time-limit", "10s", "--nemesis-interval", "3s"}
	return append(append(args, extra...), tinyRunArgs...)
}

// campaignDir is the campaign directory of a campaign's output.
func campaignDir(t *testing.T, out string) string {
	t.Helper()
	first, _, _ := strings.Cut(out, "\n")
	dir, ok := strings.CutPrefix(first, "campaign ")
	if !ok {
		t.Fatalf("the output does not start with the campaign directory:\n%s", out)
	}
	return dir
}

// campaignNormalized is a campaign.json with what two executions of one
// simulated campaign may differ in blanked: the times, the command, the
// stores (in the record, in each cell's args, and in each run directory's
// timestamp) and the shards a merged record lists.
func campaignNormalized(t *testing.T, file string) string {
	t.Helper()
	rec, err := results.ReadCampaign(file)
	if err != nil {
		t.Fatal(err)
	}
	var zero time.Time
	rec.Start, rec.End, rec.Store, rec.Command, rec.Merged = zero, nil, "", nil, nil
	for _, c := range rec.Cells {
		for i := range c.Args {
			if i > 0 && c.Args[i-1] == "--store" {
				c.Args[i] = "STORE"
			}
		}
		for i := range c.Runs {
			r := &c.Runs[i]
			r.Start, r.Seconds = zero, 0
			r.Dir = filepath.Dir(r.Dir) + "/TIMESTAMP"
		}
	}
	data, _ := json.MarshalIndent(rec, "", "  ")
	return string(data)
}

// TestCampaignSim: a campaign in the sim runtime runs its runs in
// simulation, writes the store and campaign.json a real campaign writes,
// and is its seed's alone: run again (with another parallelism) it gives
// the same campaign.json but for times and directories, and each run's
// recorded command, "chaos sim ... --seed N", replays its history byte for
// byte.
func TestCampaignSim(t *testing.T) {
	requireCampaign(t)
	var files []string
	for _, parallel := range []string{"1", "2"} {
		store := t.TempDir()
		start := time.Now()
		out, code := runChaos(t, simCampaign(store, "5", "--parallel", parallel)...)
		t.Logf("--parallel %s: %s:\n%s", parallel, time.Since(start).Round(time.Millisecond), out)
		if code != exitValid || !strings.Contains(out, "2 cells x 2 runs, each 10s") || !strings.Contains(out, "verdict: VALID") {
			t.Fatalf("exit %d", code)
		}
		// One line per run, in the plan's order whatever ended first.
		var order []string
		for _, l := range strings.Split(out, "\n") {
			if m := regexp.MustCompile(`^\[(\d)/4\] acks=1 isr=1 clean (\S+) run (\d)/2 \.\.\. VALID`).FindStringSubmatch(l); m != nil {
				order = append(order, m[2]+"/"+m[3])
			}
		}
		if strings.Join(order, " ") != "kill/1 kill/2 partition-leader/1 partition-leader/2" {
			t.Errorf("--parallel %s: the runs' lines: %v", parallel, order)
		}
		dir := campaignDir(t, out)
		files = append(files, filepath.Join(dir, results.CampaignFile))
		rec := readCampaign(t, store)
		if rec.Spec.Runtime != "sim" || rec.Cells[1].Summary.ExpectedSeen["lost-write"] == 0 {
			t.Errorf("--parallel %s: runtime %q, partition-leader cell %+v", parallel, rec.Spec.Runtime, rec.Cells[1].Summary)
		}
		if parallel != "2" {
			continue
		}
		r := rec.Cells[1].Runs[0]
		var tc results.TestConfig
		data, err := os.ReadFile(filepath.Join(store, r.Dir, results.TestFile))
		if err == nil {
			err = json.Unmarshal(data, &tc)
		}
		if err != nil || tc.Cluster.Runtime != "sim" || len(tc.Command) < 2 || tc.Command[1] != "sim" || tc.Seed != r.Seed {
			t.Fatalf("test.json: %v: runtime %q, command %q", err, tc.Cluster.Runtime, tc.Command)
		}
		replay, code := runChaos(t, tc.Command[1:]...)
		if code != exitValid {
			t.Fatalf("the recorded command %q: exit %d:\n%s", tc.Command, code, replay)
		}
		again, err := os.ReadFile(filepath.Join(store, "latest", results.HistoryFile))
		if err != nil {
			t.Fatal(err)
		}
		if orig, _ := os.ReadFile(filepath.Join(store, r.Dir, results.HistoryFile)); !bytes.Equal(orig, again) {
			t.Errorf("the recorded command %q stored another history", tc.Command)
		}
	}
	if a, b := campaignNormalized(t, files[0]), campaignNormalized(t, files[1]); a != b {
		t.Fatalf("campaign.json, --parallel 1:\n%s\n--parallel 2:\n%s", a, b)
	}
	// Real runs side by side would change what they test.
	out, code := runChaos(t, "campaign", "--preset", "smoke", "--parallel", "2", "--dry-run")
	if code != exitErrorCode || !strings.Contains(out, "--parallel: more than one run at a time outside the sim runtime") {
		t.Errorf("--parallel 2 in the local runtime: exit %d:\n%s", code, out)
	}
	out, code = runChaos(t, "campaign", "--runtime", "sim", "--dry-run", "--", "--base-port", "9092")
	if code != exitErrorCode || !strings.Contains(out, "--base-port: no ports in a simulation") {
		t.Errorf("--base-port in simulation: exit %d:\n%s", code, out)
	}
}

// TestCampaignDetection: a campaign whose spec file plants a bug in one
// cell (with run args of its own) and none in its control prints the
// detection matrix (the bug caught, by which anomalies, how soon; the
// control without false alarm) and keeps it in campaign.json; the
// recorded command of a run with the bug replays it; and a cell with an
// unknown bug or a run arg chaos run refuses (or the campaign sets) is
// refused with the reason.
func TestCampaignDetection(t *testing.T) {
	requireCampaign(t)
	dir, store := t.TempDir(), t.TempDir()
	write := func(s string) string {
		p := filepath.Join(dir, "spec.json")
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	spec := write(`{"cells": [
		{"acks": -1, "min_insync_replicas": 2, "nemesis": "partition-leader", "bugs": ["ack-before-replicate"], "run_args": ["--rate", "200"]},
		{"acks": -1, "min_insync_replicas": 2, "nemesis": "partition-leader", "run_args": ["--rate", "200"]}],
		"runs": 2, "time_limit": "20s", "nemesis_interval": "5s", "runtime": "sim"}`)
	start := time.Now()
	out, code := runChaos(t, "campaign", "--spec", spec, "--store", store, "--seed", "3", "--parallel", "2")
	t.Logf("%s:\n%s", time.Since(start).Round(time.Millisecond), out)
	if code != 0 {
		t.Fatalf("exit %d: every bug run caught and no false alarm is a detection campaign's success", code)
	}
	for _, re := range []string{
		`(?m)^BUG +NODE +SCENARIO +RUNS +CAUGHT +CAUGHT BY +MEDIAN TIME +MEDIAN OPS$`,
		`(?m)^ack-before-replicate +broker +acks=-1 isr=2 clean partition-leader \[--rate 200\] +2/2 +2/2 \(100%\) +lost-write 2/2, unseen 2/2\S* .* +\d+(\.\d+)?s +\d+$`,
		`(?m)^control \(no bug\) +- +acks=-1 isr=2 clean partition-leader \[--rate 200\] +2/2 +no false alarm \(0/2\) +- +- +-$`,
		`(?m)^detection: DETECTED \(exit 0\): 1 of 1 bug cells caught in every run$`,
		`(?m)^\[1/4\] acks=-1 isr=2 clean partition-leader \[--rate 200\] bug=ack-before-replicate run 1/2 \.\.\. INVALID`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("the output lacks %s", re)
		}
	}
	// The control is a cell without bugs: the table of those holds it.
	if !strings.Contains(out, "\ncells without bugs:\nCONFIGURATION / NEMESIS ") {
		t.Errorf("no table of the cells without bugs")
	}
	rec := readCampaign(t, store)
	if len(rec.Detection) != 2 || rec.Detection[0].Caught != 2 || rec.Detection[1].Caught != 0 || rec.Detection[0].MedianOps == nil {
		t.Fatalf("detection %+v", rec.Detection)
	}
	r := rec.Cells[0].Runs[0]
	tc, err := results.ReadTestConfig(filepath.Join(store, r.Dir, results.TestFile))
	if err != nil {
		t.Fatal(err)
	}
	cmd := strings.Join(tc.Command[1:], " ")
	if len(tc.Cluster.Bugs) != 1 || tc.Cluster.Bugs[0] != "ack-before-replicate" || !strings.Contains(cmd, " --bug ack-before-replicate --rate 200 --seed ") {
		t.Fatalf("test.json: bugs %v, command %s", tc.Cluster.Bugs, cmd)
	}
	replay, code := runChaos(t, tc.Command[1:]...)
	if code != exitInvalid {
		t.Fatalf("the recorded command %s: exit %d:\n%s", cmd, code, replay)
	}
	again, _ := os.ReadFile(filepath.Join(store, "latest", results.HistoryFile))
	if orig, _ := os.ReadFile(filepath.Join(store, r.Dir, results.HistoryFile)); len(orig) == 0 || !bytes.Equal(orig, again) {
		t.Errorf("the recorded command %s stored another history", cmd)
	}
	// Refusals, cell by cell.
	out, code = runChaos(t, "campaign", "--dry-run", "--spec", write(`{"cells": [
		{"acks": -1, "min_insync_replicas": 2, "nemesis": "kill", "bugs": ["no-such-bug"]},
		{"acks": -1, "min_insync_replicas": 2, "nemesis": "kill", "run_args": ["--bogus"]},
		{"acks": -1, "min_insync_replicas": 2, "nemesis": "kill", "run_args": ["--acks", "1"]},
		{"acks": -1, "min_insync_replicas": 2, "nemesis": "kill", "run_args": ["--bug", "nope"]},
		{"acks": -1, "min_insync_replicas": 2, "nemesis": "kill", "bugs": ["ack-before-replicate"], "run_args": ["--rate", "50"]}],
		"runs": 1, "time_limit": "20s", "nemesis_interval": "5s"}`))
	for _, want := range []string{
		"refusing the campaign: 4 impossible cell(s)",
		`acks=-1 isr=2 clean kill bug=no-such-bug: unknown bug "no-such-bug"`,
		"acks=-1 isr=2 clean kill [--bogus]: flags for chaos run: --bogus: no such flag for chaos run",
		"acks=-1 isr=2 clean kill [--acks 1]: run_args: --acks set by the campaign itself",
		`acks=-1 isr=2 clean kill [--bug nope]: flags for chaos run: --bug: not a known bug`,
	} {
		if code != exitErrorCode || !strings.Contains(out, want) {
			t.Errorf("exit %d, want 3 saying %q:\n%s", code, want, out)
		}
	}
	out, code = runChaos(t, "campaign", "--dry-run", "--", "--bug", "nope")
	if code != exitErrorCode || !strings.Contains(out, "--bug: not a known bug") {
		t.Errorf("-- --bug nope: exit %d:\n%s", code, out)
	}
}

// TestBugsPresetPlans: chaos campaign plans the bugs preset as it is, a
// cell for every planted bug and a control for every scenario, each
// cell's own nemesis interval in its replay command, in both runtimes.
func TestBugsPresetPlans(t *testing.T) {
	for _, rt := range []string{"sim", "local"} {
		out, code := runChaos(t, "campaign", "--preset", "bugs", "--runtime", rt, "--dry-run", "--seed", "1", "--store", t.TempDir())
		if code != 0 {
			t.Fatalf("%s: exit %d:\n%s", rt, code, out)
		}
		for _, name := range bug.Names() {
			if !strings.Contains(out, "bug="+name+" run 1/3") {
				t.Errorf("%s: no cell plants %s", rt, name)
			}
		}
		if !strings.Contains(out, "--nemesis kill-leader --time-limit 30s --replica-lag-time-max-ms 2000 --session-timeout-ms 2000 --nemesis-interval 100ms") {
			t.Errorf("%s: the quick leader changes' own interval is not in their command:\n%s", rt, out)
		}
	}
}
