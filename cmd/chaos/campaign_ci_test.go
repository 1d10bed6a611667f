package main

import (
	"encoding/xml"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/results/report"
)

// What a CI job needs of a campaign (issue 23): the index's command
// repeats it, each JUnit testcase says how to replay its run, --fail-on
// chooses what fails the job, and docs/sharding.md's workflow passes as
// written on a correct broker.

var repeatCmd = regexp.MustCompile(`Repeat the campaign[^<]*</p><pre><code>([^<]*)</code></pre>`)

// TestCampaignRepeatCommand: a campaign given no --seed (so it drew one)
// and chaos run flags after "--" prints on its index page a command that,
// run as it is, plans and runs the same campaign: the same seed, cells,
// run seeds and, in simulation, the same results. Each JUnit testcase
// carries the command that replays its run, the one its test.json
// records.
func TestCampaignRepeatCommand(t *testing.T) {
	requireCampaign(t)
	store := t.TempDir()
	junit := filepath.Join(t.TempDir(), "junit.xml")
	args := []string{"campaign", "--runtime", "sim", "--store", store, "--acks", "1", "--min-insync-replicas", "1",
		"--nemesis", "kill;partition-leader", "--time-limit", "6s", "--nemesis-interval", "2s", "--junit", junit,
		"--", "--replica-lag-time-max-ms", "2000", "--rate", "200"}
	out, code := runChaos(t, args...)
	if code != exitValid {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	first := filepath.Join(campaignDir(t, out), results.CampaignFile)
	rec := readCampaign(t, store)
	page, err := os.ReadFile(filepath.Join(campaignDir(t, out), results.CampaignIndexFile))
	if err != nil {
		t.Fatal(err)
	}
	m := repeatCmd.FindStringSubmatch(string(page))
	if m == nil {
		t.Fatalf("the index page has no repeat command")
	}
	cmd, err := parseShell(html.UnescapeString(m[1]))
	if err != nil || len(cmd.Stages) != 1 || cmd.Stages[0][0] != "chaos" {
		t.Fatalf("the repeat command %q: %v", m[1], err)
	}
	words := cmd.Stages[0][1:]
	if !strings.Contains(m[1], fmt.Sprintf("--seed %d -- --replica-lag-time-max-ms", rec.Seed)) {
		t.Errorf("the repeat command %q does not give the seed the campaign drew (%d) before --", m[1], rec.Seed)
	}
	again, code := runChaos(t, words...)
	if code != exitValid {
		t.Fatalf("the repeat command %q exited %d:\n%s", m[1], code, again)
	}
	second := filepath.Join(campaignDir(t, again), results.CampaignFile)
	if a, b := campaignNormalized(t, first), campaignNormalized(t, second); a != b {
		t.Fatalf("the repeat command ran another campaign:\n%s\nthe first:\n%s", b, a)
	}
	repeated := readCampaign(t, store)
	for i, c := range rec.Cells {
		for k, r := range c.Runs {
			x := readFile(t, filepath.Join(store, r.Dir, results.ResultsFile))
			y := readFile(t, filepath.Join(store, repeated.Cells[i].Runs[k].Dir, results.ResultsFile))
			if x != y {
				t.Errorf("%s run %d: results.json differs in the repeat", c.Name, r.Run)
			}
		}
	}

	// JUnit: every testcase's replay is its run's recorded command.
	var ju struct {
		Suites []struct {
			Name  string `xml:"name,attr"`
			Cases []struct {
				Name  string `xml:"name,attr"`
				Props []struct {
					Name  string `xml:"name,attr"`
					Value string `xml:"value,attr"`
				} `xml:"properties>property"`
				Out string `xml:"system-out"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(readFile(t, junit)), &ju); err != nil {
		t.Fatal(err)
	}
	for i, c := range rec.Cells {
		for k, r := range c.Runs {
			tc, err := results.ReadTestConfig(filepath.Join(store, r.Dir, results.TestFile))
			if err != nil {
				t.Fatal(err)
			}
			want := tc.Command
			want[0] = "chaos"
			tcase := ju.Suites[i].Cases[k]
			replay := ""
			for _, p := range tcase.Props {
				if p.Name == "replay" {
					replay = p.Value
				}
			}
			if replay != report.ShellJoin(want) || !strings.Contains(tcase.Out, "replay: "+replay) || tcase.Name != "run 1" {
				t.Errorf("%s: testcase %q replays %q (output %q), want the recorded %q", c.Name, tcase.Name, replay, tcase.Out, report.ShellJoin(want))
			}
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestFailOn: --fail-on invalid passes an unknown verdict (exit 0, and
// says so, the verdict unchanged) and still fails an invalid one; the
// default fails both. For a campaign, chaos check and chaos run. Without
// consumers the poll checks have nothing to judge: unknown.
func TestFailOn(t *testing.T) {
	requireCampaign(t)
	store := t.TempDir()
	camp := func(extra ...string) (string, int) {
		args := append([]string{"campaign", "--runtime", "sim", "--store", store, "--seed", "4", "--time-limit", "5s"}, extra...)
		return runChaos(t, append(args, "--", "--consumers", "0")...)
	}
	out, code := camp()
	if code != exitUnknown || !strings.Contains(out, "verdict: UNKNOWN (exit 2): 1 runs: 1 UNKNOWN") {
		t.Fatalf("a campaign of an unknown run: exit %d:\n%s", code, out)
	}
	out, code = camp("--fail-on", "invalid")
	if code != exitValid || !strings.Contains(out, "verdict: UNKNOWN (exit 0, --fail-on invalid): 1 runs: 1 UNKNOWN") {
		t.Fatalf("--fail-on invalid, an unknown run: exit %d:\n%s", code, out)
	}
	rec := readCampaign(t, store)
	if *rec.ExitCode != exitUnknown || rec.Cells[0].Verdict != "unknown" {
		t.Errorf("the record says exit %d, verdict %s: it must keep what the runs showed", *rec.ExitCode, rec.Cells[0].Verdict)
	}
	dir := filepath.Join(store, rec.Cells[0].Runs[0].Dir)
	if out, code = runChaos(t, "check", dir); code != exitUnknown {
		t.Errorf("chaos check of the unknown run: exit %d:\n%s", code, out)
	}
	if out, code = runChaos(t, "check", dir, "--fail-on", "invalid"); code != exitValid ||
		!strings.Contains(out, "verdict: UNKNOWN") || !strings.Contains(out, "exit 0: --fail-on invalid (the verdict would exit 2)") {
		t.Errorf("chaos check --fail-on invalid of the unknown run: exit %d:\n%s", code, out)
	}
	// An invalid verdict fails whatever the flag: the acks=1 losses of a
	// partitioned leader judged as if acks=-1 had been promised.
	lossy := t.TempDir()
	out, code = runChaos(t, "sim", "--store", lossy, "--acks", "1", "--min-insync-replicas", "1", "--nemesis", "partition-leader",
		"--nemesis-interval", "3s", "--time-limit", "10s", "--replica-lag-time-max-ms", "2000", "--session-timeout-ms", "2000", "--seed", "1", "--quiet")
	if code != exitValid {
		t.Fatalf("the acks=1 run: exit %d:\n%s", code, out)
	}
	if out, code = runChaos(t, "check", filepath.Join(lossy, "latest"), "--acks", "-1", "--fail-on", "invalid"); code != exitInvalid {
		t.Errorf("chaos check --acks -1 --fail-on invalid of lost acks=1 writes: exit %d, want 1:\n%s", code, out)
	}
	// chaos run, a real one.
	out, code = runChaos(t, "run", "--store", t.TempDir(), "--consumers", "0", "--time-limit", "3s", "--quiet", "--fail-on", "invalid")
	if code != exitValid || !strings.Contains(out, "verdict: UNKNOWN") || !strings.Contains(out, "exit 0: --fail-on invalid (the verdict would exit 2)") {
		t.Errorf("chaos run --fail-on invalid, an unknown run: exit %d:\n%s", code, out)
	}
}
