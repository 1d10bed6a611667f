package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/chaos-isr/chaos/campaign"
	"github.com/chaos-isr/chaos/internal/cli"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/runner"
	"github.com/chaos-isr/chaos/sim"
)

// The specs chaos run, chaos sim and chaos campaign would run for their
// arguments, made by the commands' own code (runSpec, sim's Spec, the
// campaign's Resolve and plan) from their own flag sets, so that a test
// sees the schedule a run would get.

// runArgsSpec is the spec of chaos run ARGS.
func runArgsSpec(args []string) (runner.Spec, error) {
	cmd, f := newRunCmdFlags()
	(&cobra.Command{Use: "chaos"}).AddCommand(cmd)
	if err := cmd.ParseFlags(args); err != nil {
		return runner.Spec{}, flagParseError(cmd, err)
	}
	return f.runSpec(cmd)
}

// simArgsSpec is the spec of chaos sim ARGS (not --from, which replays a
// stored run's windows).
func simArgsSpec(args []string) (runner.Spec, error) {
	cmd, f := newSimCmdFlags(nil)
	(&cobra.Command{Use: "chaos"}).AddCommand(cmd)
	if err := cmd.ParseFlags(args); err != nil {
		return runner.Spec{}, flagParseError(cmd, err)
	}
	f.sim = f.sim.Parsed(cmd.Flags(), f.run.Seed)
	return f.sim.Spec(f.run)
}

// campaignArgsSpecs are the specs of the cells of chaos campaign ARGS.
func campaignArgsSpecs(args []string) ([]runner.Spec, error) {
	var f campaign.Flags
	fs := pflag.NewFlagSet("campaign", pflag.ContinueOnError)
	f.Register(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	f.RunArgs = fs.Args()
	spec, err := f.Resolve(baseSpec(f.Store))
	if err != nil {
		return nil, err
	}
	plan, err := planCampaign(spec, f.Store)
	if err != nil {
		return nil, err
	}
	var out []runner.Spec
	for _, c := range plan.Cells {
		out = append(out, c.Spec)
	}
	return out, nil
}

// everyKindRuns says which kinds of s's faults some seed's schedule
// leaves without a window: s's own seed's, or, when it is drawn at
// random, any of the first 200. A spec the flags would refuse for it says
// so (ScheduleShort) without a seed.
func everyKindRuns(s runner.Spec) error {
	if len(s.Faults) == 0 || len(s.Windows) > 0 {
		return nil
	}
	if need, short := s.ScheduleShort(); short {
		return fmt.Errorf("%d kinds at nemesis interval %s need %s, the time limit is %s", len(s.Faults), s.NemesisInterval, need, s.TimeLimit)
	}
	seeds := []uint64{s.Seed}
	if s.Seed == 0 {
		seeds = nil
		for seed := uint64(1); seed <= 200; seed++ {
			seeds = append(seeds, seed)
		}
	}
	for _, seed := range seeds {
		s.Seed = seed
		if miss := s.Schedule().Uncovered(s.Faults); len(miss) > 0 {
			return fmt.Errorf("seed %d at nemesis interval %s in %s: no window for %s", seed, s.NemesisInterval, s.TimeLimit, strings.Join(miss, ", "))
		}
	}
	return nil
}

// TestNemesisIntervalFitsTheKinds: chaos run and chaos sim without
// --nemesis-interval choose one that gives each kind a window in the time
// limit, whatever the seed; a given one that cannot is refused with the
// smallest time limit that can, and accepted with --allow-partial-schedule.
func TestNemesisIntervalFitsTheKinds(t *testing.T) {
	four := []string{"--nemesis", "kill,partition,pause,slow-follower", "--time-limit", "60s"}
	for name, spec := range map[string]func([]string) (runner.Spec, error){"run": runArgsSpec, "sim": simArgsSpec} {
		s, err := spec(append(slices.Clone(four), "--seed", "3"))
		if err != nil {
			t.Fatalf("chaos %s: %v", name, err)
		}
		if s.NemesisInterval != 5700*time.Millisecond || !s.NemesisIntervalChosen {
			t.Errorf("chaos %s: interval %s, chosen %v; want 5.7s, chosen", name, s.NemesisInterval, s.NemesisIntervalChosen)
		}
		// The seed: at 10 s it ran kill and partition only.
		if miss := s.Schedule().Uncovered(s.Faults); len(miss) > 0 {
			t.Errorf("chaos %s --seed 3: no window for %v in %s", name, miss, s.Schedule())
		}
		if err := everyKindRuns(s); err != nil {
			t.Errorf("chaos %s: %v", name, err)
		}
		old := s
		old.NemesisInterval = runner.DefaultNemesisInterval
		if miss := old.Schedule().Uncovered(old.Faults); len(miss) == 0 {
			t.Errorf("seed 3 at 10s covers every kind: the test no longer shows the issue's schedule")
		}

		_, err = spec(append(slices.Clone(four), "--nemesis-interval", "10s"))
		if err == nil || !strings.Contains(err.Error(), "--nemesis-interval: too long for a window of each of the 4 kinds") ||
			!strings.Contains(err.Error(), "--time-limit 1m45s or more") || !strings.Contains(err.Error(), "--allow-partial-schedule") {
			t.Errorf("chaos %s --nemesis-interval 10s: %v", name, err)
		}
		s, err = spec(append(slices.Clone(four), "--nemesis-interval", "10s", "--allow-partial-schedule", "--seed", "3"))
		if err != nil || s.NemesisInterval != 10*time.Second || s.CoverageNote() == "" {
			t.Errorf("chaos %s --nemesis-interval 10s --allow-partial-schedule: %v, interval %s, note %q", name, err, s.NemesisInterval, s.CoverageNote())
		}
		_, err = spec([]string{"--nemesis", "kill,partition,pause,slow-follower", "--time-limit", "8s"})
		if err == nil || !strings.Contains(err.Error(), "--time-limit: too short for a window of each of the 4 kinds") || !strings.Contains(err.Error(), "--time-limit 10.5s or more") {
			t.Errorf("chaos %s --time-limit 8s: %v", name, err)
		}
	}
	// The same through the commands as a user runs them: refused with
	// exit 3 before anything starts, accepted as the validation stop.
	for _, c := range []struct {
		args []string
		want string // "": accepted
	}{
		{append([]string{"run"}, four...), ""},
		{append([]string{"run", "--nemesis-interval", "10s"}, four...), "--time-limit 1m45s or more"},
		{append([]string{"run", "--nemesis-interval", "10s", "--allow-partial-schedule"}, four...), ""},
		{append([]string{"sim", "--nemesis-interval", "10s"}, four...), "--time-limit 1m45s or more"},
		{[]string{"campaign", "--nemesis", "kill,partition,pause,slow-follower", "--time-limit", "60s", "--nemesis-interval", "10s"}, "a time limit of 1m45s or more"},
		{[]string{"campaign", "--nemesis", "kill,partition,pause,slow-follower", "--time-limit", "60s", "--nemesis-interval", "10s", "--", "--allow-partial-schedule"}, ""},
		{[]string{"campaign", "--nemesis", "kill,partition,pause,slow-follower", "--time-limit", "60s"}, ""},
	} {
		_, err := execValidate(t, c.args...)
		switch {
		case c.want == "" && !errors.Is(err, cli.ErrValidated):
			t.Errorf("chaos %s: %v, want it accepted", strings.Join(c.args, " "), err)
		case c.want != "" && (err == nil || errors.Is(err, cli.ErrValidated) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("chaos %s: %v, want a refusal saying %q", strings.Join(c.args, " "), err, c.want)
		}
	}
	cells, err := campaignArgsSpecs([]string{"--nemesis", "kill,partition,pause,slow-follower", "--time-limit", "60s"})
	if err != nil || len(cells) != 1 || cells[0].NemesisInterval != 5700*time.Millisecond {
		t.Errorf("a campaign cell of four kinds in 60 s: %v %+v", err, cells)
	}
}

// TestExamplesInjectEveryKind: every chaos run, chaos sim and chaos
// campaign command of the README and docs/ (and make run's) that injects
// faults gives each kind it names a window: its spec, made by the
// command's own flag parsing and schedule code, has room for every kind
// whatever the seed, and its seed's schedule (or each of 200 when it
// draws one) opens a window of each. An example may leave kinds out only
// with --allow-partial-schedule.
func TestExamplesInjectEveryKind(t *testing.T) {
	repo, dir := repoRoot(t), t.TempDir()
	// A page's cluster file or spec is where its commands read it.
	t.Chdir(dir)
	var cmds []readmeCmd
	for _, page := range docPages(t) {
		cmds = append(cmds, readPage(t, repo, page, dir)...)
	}
	cmds = append(cmds, makeRunCommand(t, repo))
	checked := 0
	for _, c := range cmds {
		args, ok := chaosArgs(c.Stages[0])
		nemesis := slices.ContainsFunc(args, func(a string) bool { return a == "--nemesis" || strings.HasPrefix(a, "--nemesis=") })
		// A campaign's preset or spec file names its faults itself.
		if !ok || len(args) == 0 || !nemesis && args[0] != "campaign" || slices.Contains(args, "merge") {
			continue
		}
		if slices.Contains(args, "--allow-partial-schedule") {
			t.Logf("%s: allows a partial schedule", c)
			continue
		}
		var specs []runner.Spec
		var err error
		switch args[0] {
		case "run":
			var s runner.Spec
			s, err = runArgsSpec(args[1:])
			specs = []runner.Spec{s}
		case "sim":
			if slices.Contains(args, "--from") {
				continue // a stored run's windows
			}
			var s runner.Spec
			s, err = simArgsSpec(args[1:])
			specs = []runner.Spec{s}
		case "campaign":
			specs, err = campaignArgsSpecs(args[1:])
		default:
			continue
		}
		if err != nil {
			t.Errorf("%s: refused: %v", c, err)
			continue
		}
		var said []string
		for _, s := range specs {
			if err := everyKindRuns(s); err != nil {
				t.Errorf("%s: %v", c, err)
			}
			if len(s.Faults) > 0 && len(s.Windows) == 0 {
				checked++
				if w := fmt.Sprintf("%s at %s in %s", strings.Join(s.Faults, ","), s.NemesisInterval, s.TimeLimit); !slices.Contains(said, w) {
					said = append(said, w)
				}
			}
		}
		if len(said) > 0 {
			t.Logf("%s:%d: %s", c.File, c.Line, strings.Join(said, "; "))
		}
	}
	if checked < 20 {
		t.Errorf("only %d fault-injecting example specs checked: the scan misses the pages' commands", checked)
	}
}

// makeRunCommand is make run's chaos command, from the Makefile's recipe
// as written (make -n would need make), as a page's command.
func makeRunCommand(t *testing.T, repo string) readmeCmd {
	t.Helper()
	mk, err := os.ReadFile(filepath.Join(repo, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(mk), "\n")
	i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "run:") })
	if i < 0 || i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "\t$(BIN) run ") {
		t.Fatal("the Makefile has no run target whose recipe is $(BIN) run ...")
	}
	c, err := parseShell(strings.Replace(strings.TrimSpace(lines[i+1]), "$(BIN)", "bin/chaos", 1))
	if err != nil {
		t.Fatal(err)
	}
	c.File, c.Line = "Makefile", i+2
	return c
}

// TestChosenIntervalRunsEveryKind: a simulated run of four kinds in 20 s
// without --nemesis-interval says the interval it chose in its header,
// records it in test.json, opens a window of every kind (results.json's
// fault_windows), and its replay command (with the interval, as chaos sim
// prints it) runs the same history again.
func TestChosenIntervalRunsEveryKind(t *testing.T) {
	store := t.TempDir()
	kinds := []string{"kill", "partition", "pause", "slow-follower"}
	args := []string{"sim", "--store", store, "--nemesis", strings.Join(kinds, ","), "--time-limit", "20s", "--seed", "3",
		"--replica-lag-time-max-ms", "1000", "--session-timeout-ms", "1000"}
	out, code := runChaos(t, args...)
	if code != exitValid || !strings.Contains(out, "nemesis interval 1.9s, chosen so that each of the 4 kinds gets a window in 20s (--nemesis-interval sets one)\n") {
		t.Fatalf("chaos %s: exit %d:\n%s", strings.Join(args, " "), code, out)
	}
	dir := filepath.Join(store, "latest")
	tc, err := results.ReadTestConfig(filepath.Join(dir, results.TestFile))
	if err != nil {
		t.Fatal(err)
	}
	if tc.NemesisInterval != 1900*time.Millisecond || !tc.NemesisIntervalChosen {
		t.Errorf("test.json: nemesis_interval %s, chosen %v", tc.NemesisInterval, tc.NemesisIntervalChosen)
	}
	res, err := results.ReadResults(filepath.Join(dir, results.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range kinds {
		if res.FaultWindows[k] < 1 {
			t.Errorf("no %s window ran: fault_windows %v, schedule %s", k, res.FaultWindows, tc.Schedule)
		}
	}
	if len(res.FaultsNotStarted) > 0 {
		t.Errorf("never started: %v", res.FaultsNotStarted)
	}
	hist, err := os.ReadFile(filepath.Join(dir, results.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	if stored := runner.StoredSpec(tc); stored.Windows.String() != tc.Schedule.String() {
		t.Errorf("the stored spec (chaos sim --from) replays %s, test.json planned %s", stored.Windows, tc.Schedule)
	}
	// The replay command chaos sim prints for a run of this spec.
	s, err := simArgsSpec(args[1:])
	if err != nil {
		t.Fatal(err)
	}
	replay := sim.Args(s)
	if !strings.Contains(strings.Join(replay, " "), "--nemesis-interval 1.9s") {
		t.Errorf("the replay command %v does not carry the chosen interval", replay)
	}
	store2 := t.TempDir()
	replay = append(append([]string{"sim"}, replay...), "--store", store2)
	if out, code := runChaos(t, replay...); code != exitValid || strings.Contains(out, "chosen so that") {
		t.Fatalf("replay %v: exit %d (an interval given is not chosen again):\n%s", replay, code, out)
	}
	again, err := os.ReadFile(filepath.Join(store2, "latest", results.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(hist, again) {
		t.Errorf("the replay stored another history (%d bytes, then %d)", len(hist), len(again))
	}
}
