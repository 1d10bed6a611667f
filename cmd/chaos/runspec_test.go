package main

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/campaign"
	"github.com/chaos-isr/chaos/internal/cli"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/runner"
)

// TestCampaignChildProtocol: chaos run --spec-file runs exactly the spec
// in the file, refuses run flags beside it, and writes the outcome file
// also when it refuses (the campaign learns why from it, never from the
// output).
func TestCampaignChildProtocol(t *testing.T) {
	dir := t.TempDir()
	good := runner.DefaultSpec()
	good.Store = filepath.Join(dir, "store")
	goodFile := filepath.Join(dir, "good.json")
	if err := good.WriteFile(goodFile); err != nil {
		t.Fatal(err)
	}
	bad := good
	bad.Settings.Fsync = "bogus"
	badFile := filepath.Join(dir, "bad.json")
	if err := bad.WriteFile(badFile); err != nil {
		t.Fatal(err)
	}
	outcome := filepath.Join(dir, "outcome.json")
	if _, err := execValidate(t, "run", "--spec-file", goodFile, "--outcome-file", outcome, "--quiet"); !errors.Is(err, cli.ErrValidated) {
		t.Fatalf("a good spec file: %v", err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--spec-file", badFile}, `settings.fsync: not an fsync policy, got "bogus"`},
		{[]string{"--spec-file", goodFile, "--acks", "1", "--store", dir}, "--spec-file: runs exactly the spec in the file, so --acks, --store cannot be given with it"},
		{[]string{"--spec-file", filepath.Join(dir, "none.json")}, "--spec-file: open"},
		{[]string{"--spec-file", outcome}, "not a run spec"},
	} {
		args := append(append([]string{"run"}, tc.args...), "--outcome-file", outcome)
		_, err := execValidate(t, args...)
		if err == nil || errors.Is(err, cli.ErrValidated) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want a refusal saying %q", tc.args, err, tc.want)
			continue
		}
		o, rerr := runner.ReadOutcomeFile(outcome)
		if rerr != nil || o.Error != err.Error() || o.Dir != "" || o.ExitCode() != runner.ExitError {
			t.Errorf("%v: outcome %+v (%v), want the refusal %q and no run directory", tc.args, o, rerr, err)
		}
	}
}

// TestCampaignArgsReplaySpec: the chaos run arguments campaign.json
// records for a run (its cell's args and --seed) give chaos run exactly the
// spec the campaign ran, so the command replays the run.
func TestCampaignArgsReplaySpec(t *testing.T) {
	specs := []campaign.Spec{preset(t, "smoke"), preset(t, "seed"), {CampaignSpec: results.CampaignSpec{
		Cells: []campaign.CellSpec{{Acks: 0, MinInsyncReplicas: 3, Election: "unclean", Nemesis: "lose-unsynced,kill-all"}},
		Runs:  1, TimeLimit: results.Duration(40 * time.Second), Runtime: "docker",
		RunArgs: []string{"--nodes", "5", "--replication-factor", "4", "--fsync", "interval:50ms", "--rate", "0", "--monitor-interval", "0"},
	}}}
	for _, spec := range specs {
		plan, err := planCampaign(spec, "some/store")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range plan.Cells {
			want := c.RunSpec(42, 1, "chaos")
			run, f := newRunCmdFlags()
			if err := run.Flags().Parse(want.Command[2:]); err != nil {
				t.Fatalf("%s: %v", c.Label, err)
			}
			got, err := f.runSpec(run)
			if err != nil {
				t.Fatalf("%s: chaos %s: %v", c.Label, strings.Join(want.Command[1:], " "), err)
			}
			got.Command, want.Command = nil, nil
			// The campaign chose the interval where its cell gave none
			// (runner.FitSchedule); the args carry it, so the replay is
			// told it: the same interval and schedule, given this time.
			if want.NemesisIntervalChosen && got.NemesisInterval == want.NemesisInterval {
				got.NemesisIntervalChosen = true
			}
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			if string(g) != string(w) {
				t.Errorf("%s: the recorded args give\n%s\nthe campaign ran\n%s", c.Label, g, w)
			}
		}
	}
}
