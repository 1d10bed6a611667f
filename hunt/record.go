package hunt

import (
	"cmp"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/results/report"
	"github.com/chaos-isr/chaos/runner"
	"github.com/chaos-isr/chaos/sim"
)

// record is a hunt's directory in the store (results.Hunt says what it
// holds) while the hunt goes.
type record struct {
	dir    *results.Run
	h      results.Hunt
	o      Options
	growth []results.HuntGrowth // the coverage after each run taken
	// written is when hunt.json was last written: between findings and
	// unjudged runs it is rewritten every writeEvery, so that a hunt
	// killed outright says how far it got.
	written time.Time
}

const writeEvery = 5 * time.Second

// newRecord makes the hunt's directory, STORE/hunts/<UTC timestamp>,
// points STORE/hunts/latest at it and writes its first hunt.json and
// page. command is the command line that started the hunt: the record
// keeps it with the hunt's seed, so that it repeats the hunt.
func newRecord(o Options, command []string, start time.Time) (*record, error) {
	dir, err := results.NewRun(o.Base.Store, results.HuntsDir, start)
	if err != nil {
		return nil, err
	}
	r := &record{dir: dir, o: o}
	r.h = results.Hunt{Format: results.HuntFormat, Seed: o.Seed, Command: report.RepeatCommand(command, o.Seed),
		Versions: map[string]string{"chaos": o.Version, "go": runtime.Version()}, Store: o.Base.Store,
		Options: huntOptions(o), Start: start.UTC(), Status: "running",
		Growth: []results.HuntGrowth{}, Findings: []results.HuntFinding{}, Unjudged: []results.HuntRun{}}
	if err := r.write(); err != nil {
		return nil, err
	}
	// hunts/latest, not store/latest: that stays the newest run.
	if err := results.Relink(filepath.Join(o.Base.Store, results.HuntsDir, "latest"), filepath.Base(dir.Dir)); err != nil {
		return nil, err
	}
	return r, nil
}

func huntOptions(o Options) results.HuntOptions {
	h := results.HuntOptions{Runs: o.Runs, Time: results.Duration(o.Time), Parallel: max(o.Parallel, 1), Feedback: o.Feedback,
		KeepGoing: o.KeepGoing, ShrinkRuns: o.ShrinkRuns, DrawConfig: o.Draw.Config,
		Config: results.HuntConfig{Acks: int(o.Base.Acks), MinInsyncReplicas: int(o.Base.Settings.MinInsyncReplicas), Election: o.Base.Settings.Election},
		Bugs:   o.Base.Settings.Bugs, Kinds: o.Draw.kinds()}
	if o.Base.Runtime != runner.RuntimeSim {
		h.Runtime = o.Base.Runtime
	}
	if !o.Shard.Whole() {
		h.Shard = &results.CampaignShard{Index: o.Shard.K, Count: o.Shard.N}
	}
	return h
}

// take records a run as the hunt takes it, and writes the record when
// the run is a finding or unjudged, or when it was last written a while
// ago.
func (r *record) take(p Progress) error {
	r.growth = append(r.growth, results.HuntGrowth{Run: p.Last.Index + 1, Coverage: p.Coverage})
	h := &r.h
	h.Runs, h.Valid, h.Invalid, h.Unknown, h.Errors = p.Run, p.Valid, p.Invalid, p.Unknown, p.Errors
	h.Coverage, h.Corpus, h.Seconds = p.Coverage, p.Corpus, p.Elapsed.Seconds()
	a := p.Last
	switch {
	case a.Err != nil || a.Outcome.Verdict == "":
		h.Unjudged = append(h.Unjudged, r.run(a, p.Elapsed))
	case a.Outcome.Verdict == checker.Invalid:
		f := results.HuntFinding{HuntRun: r.run(a, p.Elapsed)}
		if a.Outcome.Results != nil {
			f.Anomalies = slices.Clone(a.Outcome.Results.Unexpected)
		}
		h.Findings = append(h.Findings, f)
	case a.Outcome.Verdict == checker.Unknown:
		h.Unjudged = append(h.Unjudged, r.run(a, p.Elapsed))
	default:
		if time.Since(r.written) < writeEvery {
			return nil
		}
	}
	return r.write()
}

// run is a run of the hunt, taken elapsed into it, as the record keeps it.
func (r *record) run(a Attempt, elapsed time.Duration) results.HuntRun {
	o := a.Outcome
	hr := results.HuntRun{Run: a.Index + 1, Seed: a.Spec.Seed, Elapsed: results.Duration(elapsed.Round(time.Millisecond)), Scenario: Describe(a.Spec), Replay: r.replay(a.Spec), Dir: r.rel(o.Dir)}
	switch {
	case a.Err != nil:
		hr.Verdict, hr.Reason = "error", a.Err.Error()
	case o.Verdict == "":
		hr.Verdict, hr.Reason = "error", cmp.Or(o.Error, "the run ended without a verdict")
	case o.Verdict == checker.Invalid:
		hr.Verdict = "invalid"
	case o.Verdict == checker.Unknown:
		hr.Verdict, hr.Reason = "unknown", unknownReason(o.Results)
	default:
		hr.Verdict = "valid"
	}
	return hr
}

// unknownReason says why a run's verdict is unknown: the checks that
// could not judge, each with its first detail, else the verdict's notes.
func unknownReason(res *checker.Results) string {
	if res == nil {
		return "no results"
	}
	var parts []string
	for _, x := range res.Results {
		if x.Valid != checker.Unknown || x.Expected || x.Unsupported || x.NotApplicable {
			continue
		}
		part := x.Name
		if len(x.Details) > 0 {
			part += ": " + clip(x.Details[0], 200)
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		parts = res.Notes
	}
	if len(parts) == 0 && len(res.FaultsNotStarted) > 0 {
		parts = []string{"faults asked for never started: " + strings.Join(res.FaultsNotStarted, ", ")}
	}
	if len(parts) == 0 {
		return "unknown, no check says why (see the run's report)"
	}
	return strings.Join(parts, "; ")
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// replay is the shell command that gives spec's scenario again.
func (r *record) replay(spec runner.Spec) string { return r.o.again(spec) }

// rel is a run directory relative to the store, with slashes.
func (r *record) rel(dir string) string {
	if dir == "" {
		return ""
	}
	rel, err := filepath.Rel(r.o.Base.Store, dir)
	if err != nil {
		return filepath.ToSlash(dir)
	}
	return filepath.ToSlash(rel)
}

// shrunk records what shrinking finding i gave (err: why it gave
// nothing), and writes the record.
func (r *record) shrunk(i int, s sim.Shrunk, err error) error {
	hs := &results.HuntShrunk{Runs: s.Runs, Exhausted: s.Exhausted, Interrupted: s.Interrupted,
		Before: huntSize(s.Original, s.OriginalSize), After: huntSize(s.Spec, s.Size)}
	switch {
	case err != nil:
		hs.Error = err.Error()
	case s.Outcome.Dir == "" && s.Interrupted:
		hs.Error = "interrupted before the search kept a run"
	case s.Outcome.Dir == "":
		hs.Error = "the search kept no run"
	default:
		hs.Dir, hs.Replay, hs.Schedule = r.rel(s.Outcome.Dir), r.replay(s.Spec), s.Spec.Windows.String()
		if s.Outcome.Results != nil {
			hs.Anomalies = slices.Clone(s.Outcome.Results.Unexpected)
		}
	}
	r.h.Findings[i].Shrunk = hs
	return r.write()
}

func huntSize(spec runner.Spec, sz sim.Size) results.HuntSize {
	var windows time.Duration
	for _, w := range spec.Schedule() {
		windows += w.End - w.Start
	}
	return results.HuntSize{Windows: sz.Windows, WindowTime: results.Duration(windows), Ops: sz.Ops, TimeLimit: results.Duration(spec.TimeLimit),
		Producers: spec.Concurrency, Consumers: spec.Consumers, Partitions: int(spec.Settings.Partitions), RatePerSec: spec.Rate}
}

// end records the hunt's result and exit code, and writes the record.
func (r *record) end(res Result) error {
	end := time.Now().UTC()
	h := &r.h
	h.End = &end
	h.Status = "complete"
	if res.Interrupted {
		h.Status = "interrupted"
	}
	code := res.ExitCode()
	h.ExitCode = &code
	h.Runs, h.Valid, h.Invalid, h.Unknown, h.Errors = res.Runs, res.Valid, res.Invalid, res.Unknown, res.Errors
	h.Coverage, h.Corpus, h.Seconds = res.Coverage, res.Corpus, res.Elapsed.Seconds()
	return r.write()
}

// write writes hunt.json, atomically, and renders the page from it.
func (r *record) write() error {
	r.written = time.Now()
	r.h.Growth = growthPoints(r.growth)
	if err := r.dir.WriteJSON(results.HuntFile, r.h); err != nil {
		return err
	}
	if err := report.WriteHunt(r.dir.Dir); err != nil {
		return fmt.Errorf("%s: %w", results.HuntPageFile, err)
	}
	return nil
}

// Page is the hunt page's path.
func (r *record) page() string { return r.dir.Path(results.HuntPageFile) }

// growthPoints are the coverage after each run as the points of a step
// line: the first run, each run where it grew, and the last; more than
// results.MaxHuntGrowth of them are thinned to the last of each of that
// many equal stretches of run numbers (and the first run), so that a
// growth is drawn at most a stretch late and a plateau stays flat.
func growthPoints(g []results.HuntGrowth) []results.HuntGrowth {
	out := []results.HuntGrowth{}
	for i, p := range g {
		if i == 0 || p.Coverage != g[i-1].Coverage || i == len(g)-1 {
			out = append(out, p)
		}
	}
	if len(out) <= results.MaxHuntGrowth {
		return out
	}
	n, last := results.MaxHuntGrowth-1, g[len(g)-1].Run
	stretch := func(p results.HuntGrowth) int { return (p.Run - 1) * n / last }
	thin := []results.HuntGrowth{out[0]}
	for i := 1; i < len(out); i++ {
		if i == len(out)-1 || stretch(out[i+1]) != stretch(out[i]) {
			thin = append(thin, out[i])
		}
	}
	return thin
}
