package report

import (
	"bytes"
	"html"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/results"
)

// huntRecord is a hunt of 2,000 runs on one shard of four whose coverage
// stopped growing at run 800, with an unknown run and a finding whose
// shrinking kept nothing.
func huntRecord() results.Hunt {
	end := time.Date(2026, 12, 1, 10, 5, 0, 0, time.UTC)
	code := 1
	h := results.Hunt{Format: results.HuntFormat, Seed: 9, Command: []string{"/build/chaos", "hunt", "--shard", "2/4", "--seed", "9"},
		Store: "store", Start: end.Add(-5 * time.Minute), End: &end, Status: "complete", ExitCode: &code,
		Runs: 2000, Valid: 1998, Invalid: 1, Unknown: 1, Seconds: 300, Coverage: 800, Corpus: 40,
		Options: results.HuntOptions{Runs: 2000, Parallel: 2, Feedback: true, KeepGoing: true, ShrinkRuns: 5,
			Shard: &results.CampaignShard{Index: 2, Count: 4}, Config: results.HuntConfig{Acks: -1, MinInsyncReplicas: 2, Election: "clean"},
			Bugs: []string{"read-past-hw"}, Kinds: []string{"kill", "partition"}}}
	for r := 1; r <= 800; r++ {
		h.Growth = append(h.Growth, results.HuntGrowth{Run: r, Coverage: r})
	}
	h.Growth = append(h.Growth, results.HuntGrowth{Run: 2000, Coverage: 800})
	h.Findings = []results.HuntFinding{{HuntRun: results.HuntRun{Run: 1500, Seed: 77, Elapsed: results.Duration(4 * time.Minute), Verdict: "invalid",
		Scenario: "3 brokers", Replay: "chaos sim --seed 77 --schedule kill@1s+2s", Dir: "t/20261201T100400.000Z"},
		Anomalies: []string{"lost-write"}, Shrunk: &results.HuntShrunk{Runs: 1, Error: "nothing to shrink: the run shows no unexpected anomaly to keep"}}}
	h.Unjudged = []results.HuntRun{{Run: 12, Seed: 5, Verdict: "unknown", Reason: "no-convergence: not seen converged", Dir: "u/20261201T100001.000Z",
		Replay: "chaos sim --seed 5"}}
	return h
}

// TestHuntPage: the page leads with the finding, links to the finding's
// and the unknown run's reports from store/hunts/<time>, shows the
// commands as they are to be pasted, and says that the coverage reached
// a plateau; an empty record renders too.
func TestHuntPage(t *testing.T) {
	var buf bytes.Buffer
	if err := RenderHunt(&buf, HuntView{Hunt: huntRecord()}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	ids := checkPage(t, page)
	for _, id := range []string{"outcome", "findings", "finding-1", "coverage", "coverage-plot", "plateau", "unjudged", "settings"} {
		if !ids[id] {
			t.Errorf("no #%s", id)
		}
	}
	text := html.UnescapeString(page)
	for _, want := range []string{
		`class="verdict invalid"`, ">FOUND<", "found at run 1500, 4m0s into the hunt: lost-write",
		`href="../../t/20261201T100400.000Z/report.html"`, `href="../../u/20261201T100001.000Z/report.html"`,
		"chaos sim --seed 77 --schedule kill@1s+2s", "chaos hunt --shard 2/4 --seed 9",
		"Shrinking: no smaller run", "no-convergence: not seen converged",
		"The last quarter of the runs (1501 to 2000) added 0 sequences, 0.0% of the coverage: a plateau.",
		"of which this shard ran 1 in 4", "<p>nothing to shrink: the run shows",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Index(page, `id="outcome"`) > strings.Index(page, `id="findings"`) || strings.Index(page, `id="findings"`) > strings.Index(page, `id="coverage"`) {
		t.Error("the page does not lead with the outcome, then the findings, then the coverage")
	}

	// A hunt of a real runtime: its finding's command runs the scenario
	// again, and the page does not call it a replay.
	real := huntRecord()
	real.Options.Runtime = "local"
	real.Findings[0].Replay = "chaos run --seed 77 --schedule kill@1s+2s"
	buf.Reset()
	if err := RenderHunt(&buf, HuntView{Hunt: real}); err != nil {
		t.Fatal(err)
	}
	text = html.UnescapeString(buf.String())
	for _, want := range []string{"in real time on the local runtime", "run again:</p><pre><code>chaos run --seed 77", "does not replay"} {
		if !strings.Contains(text, want) {
			t.Errorf("a local hunt's page lacks %q", want)
		}
	}
	if strings.Contains(text, ">replay:<") || strings.Contains(text, "byte for byte") {
		t.Error("a local hunt's page calls its finding's command a replay")
	}

	buf.Reset()
	if err := RenderHunt(&buf, HuntView{}); err != nil {
		t.Fatal(err)
	}
	if ids := checkPage(t, buf.String()); !ids["outcome"] || !strings.Contains(buf.String(), "NO RUN YET") {
		t.Error("an empty hunt's page lacks its outcome")
	}
}
