package campaign_test

import (
	"context"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/chaos-isr/chaos/broker/bug"
	"github.com/chaos-isr/chaos/campaign"
	"github.com/chaos-isr/chaos/runner"
	"github.com/chaos-isr/chaos/sim"
)

// bugsSeed is the campaign seed of the bugs preset's regression test:
// with it, every run of every cell below is what the test asserts. A
// change that loses detection power fails it; one that only moves the
// runs' seeds (a renamed cell) may need another seed, chosen by
// running the preset in simulation with --runs 50 (docs/detection.md).
const bugsSeed = 1

// notCaught are the bugs the preset's scenarios do not expose in 90% of
// the seeds, and why: their cells run, but whether a run catches them is
// only logged. A bug caught in every run here is said so, to be moved out.
var notCaught = map[string]string{
	"isr-rejoin-before-epoch-start": "the readmitted follower lacks the records only until the answer to the very fetch that readmitted it, one round trip",
	"stale-epoch-fetch":             "a zombie follower needs metadata stale across two leader changes while it still reaches the leader; one fault at a time rarely makes one",
}

// TestBugsPresetCells: the bugs preset plants every bug chaos knows,
// one cell each in chaos bugs' order, then a control cell (no bug) for
// every scenario the bug cells use, and each cell carries its own nemesis
// interval.
func TestBugsPresetCells(t *testing.T) {
	p, ok := campaign.Preset("bugs")
	if !ok {
		t.Fatal("no preset bugs")
	}
	all := bug.All()
	if len(p.Cells) <= len(all) {
		t.Fatalf("%d cells for %d bugs and their controls", len(p.Cells), len(all))
	}
	for i, b := range all {
		if c := p.Cells[i]; !slices.Equal(c.Bugs, []string{b.Name}) {
			t.Errorf("cell %d plants %v, want %s alone (chaos bugs' order)", i, c.Bugs, b.Name)
		}
	}
	controls := p.Cells[len(all):]
	for _, c := range controls {
		if len(c.Bugs) > 0 {
			t.Errorf("control cell %+v plants %v", c, c.Bugs)
		}
	}
	for _, c := range p.Cells {
		if !slices.Contains(c.RunArgs, "--nemesis-interval") {
			t.Errorf("cell %+v has no nemesis interval of its own", c)
		}
		if !slices.ContainsFunc(controls, func(x campaign.CellSpec) bool { return sameScenario(x, c) }) {
			t.Errorf("cell %+v has no control cell", c)
		}
	}
	for i, c := range controls {
		for _, d := range controls[:i] {
			if sameScenario(c, d) {
				t.Errorf("control cell %+v is there twice", c)
			}
		}
	}
}

func sameScenario(a, b campaign.CellSpec) bool {
	return a.Acks == b.Acks && a.MinInsyncReplicas == b.MinInsyncReplicas && a.Election == b.Election &&
		a.Nemesis == b.Nemesis && slices.Equal(a.RunArgs, b.RunArgs)
}

// TestBugsPresetCatchesEveryBug is the regression test of detection
// power: the bugs preset in simulation, as chaos campaign --preset bugs
// --runtime sim --seed 1 runs it (3 runs a cell). Every run of a bug's
// cell must catch it (an invalid verdict) but for the bugs of notCaught,
// and no run of a control cell may show an anomaly its configuration
// forbids. A checker, nemesis or broker change that loses a detection, or
// raises a false alarm, fails it with the bug, the seed and the command
// that replays the run.
func TestBugsPresetCatchesEveryBug(t *testing.T) {
	if testing.Short() {
		t.Skip("many simulated runs: make test runs it, make test-fast does not")
	}
	p, _ := campaign.Preset("bugs")
	p.Runtime = runner.RuntimeSim
	store := t.TempDir()
	plan, err := campaign.NewPlan(p.Record(), simBase(store, p.RunArgs), sim.Validate)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	rec, _, err := campaign.Run(context.Background(), plan, campaign.Options{
		Seed: bugsSeed, Executor: campaign.InProcess{Version: "test", Run: sim.Run}, Parallel: runtime.GOMAXPROCS(0),
		Preset: "bugs", Command: []string{"chaos", "campaign", "--preset", "bugs", "--runtime", "sim"}, Versions: map[string]string{"chaos": "test"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d runs in %s", plan.Runs(), time.Since(start).Round(time.Millisecond))
	if len(rec.Detection) != len(rec.Cells) {
		t.Fatalf("the detection matrix has %d rows for %d cells", len(rec.Detection), len(rec.Cells))
	}
	for _, c := range rec.Cells {
		if len(c.Runs) != p.Runs {
			t.Errorf("%s: %d runs, want %d", c.Label, len(c.Runs), p.Runs)
		}
		for _, r := range c.Runs {
			replay := "chaos " + strings.Join(withoutStore(c.Args), " ") + " --seed " + strconv.FormatUint(r.Seed, 10)
			if r.Verdict == campaign.VerdictError {
				t.Errorf("%s run %d (seed %d) ended in an error: %s\n  replay: %s", c.Label, r.Run, r.Seed, r.Error, replay)
				continue
			}
			if len(c.Bugs) == 0 {
				if r.Verdict == campaign.VerdictInvalid || len(r.Unexpected) > 0 {
					t.Errorf("control %s run %d (seed %d) raised a false alarm: %s %v\n  replay: %s", c.Label, r.Run, r.Seed, r.Verdict, r.Unexpected, replay)
				}
				continue
			}
			if name := c.Bugs[0]; r.Verdict != campaign.VerdictInvalid && notCaught[name] == "" {
				t.Errorf("bug %s was not caught by run %d (seed %d) of %s: verdict %s\n  replay: %s", name, r.Run, r.Seed, c.Label, r.Verdict, replay)
			}
		}
	}
	for _, d := range rec.Detection {
		if len(d.Bugs) != 1 {
			continue
		}
		if why := notCaught[d.Bugs[0].Name]; why != "" {
			t.Logf("%s caught in %d of %d runs (not expected to be: %s)", d.Bugs[0].Name, d.Caught, d.Runs, why)
			if d.Caught == d.Runs {
				t.Logf("%s was caught in every run: take it out of notCaught", d.Bugs[0].Name)
			}
		}
	}
}

// withoutStore is a cell's args without the test's temporary store, as
// a replay command needs them.
func withoutStore(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] == "--store" && i+1 < len(args) {
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// simBase is the campaign.Base chaos campaign --runtime sim plans with,
// for the chaos run flags the preset's run args use: the campaign's run
// args, then a cell's own, on chaos run's defaults. A flag it does not
// know refuses the cell, so that a preset using a new one fails here
// rather than run something else.
func simBase(store string, campaignArgs []string) campaign.Base {
	return func(cellArgs []string) (runner.Spec, error) {
		s := runner.DefaultSpec()
		s.Store, s.Runtime = store, runner.RuntimeSim
		fs := pflag.NewFlagSet("chaos run", pflag.ContinueOnError)
		fs.Int64Var(&s.Settings.ReplicaLagTimeMaxMs, "replica-lag-time-max-ms", s.Settings.ReplicaLagTimeMaxMs, "")
		fs.Int64Var(&s.Settings.SessionTimeoutMs, "session-timeout-ms", s.Settings.SessionTimeoutMs, "")
		fs.Int64Var(&s.Settings.HeartbeatIntervalMs, "heartbeat-interval-ms", s.Settings.HeartbeatIntervalMs, "")
		fs.Int32Var(&s.Settings.Partitions, "partitions", s.Settings.Partitions, "")
		fs.BoolVar(&s.Settings.LoseUnsynced, "lose-unsynced", s.Settings.LoseUnsynced, "")
		fs.StringVar(&s.Settings.Fsync, "fsync", s.Settings.Fsync, "")
		fs.DurationVar(&s.NemesisInterval, "nemesis-interval", s.NemesisInterval, "")
		fs.DurationVar(&s.RequestTimeout, "request-timeout", s.RequestTimeout, "")
		fs.IntVar(&s.Retries, "retries", s.Retries, "")
		fs.BoolVar(&s.Idempotent, "idempotent", s.Idempotent, "")
		fs.IntVar(&s.Concurrency, "concurrency", s.Concurrency, "")
		fs.IntVar(&s.Consumers, "consumers", s.Consumers, "")
		fs.Float64Var(&s.Rate, "rate", s.Rate, "")
		fs.StringVar(&s.SubVia, "sub-via", s.SubVia, "")
		fs.StringVar(&s.Workload, "workload", s.Workload, "")
		if err := fs.Parse(append(slices.Clone(campaignArgs), cellArgs...)); err != nil {
			return runner.Spec{}, err
		}
		return s, nil
	}
}
