// Package campaign runs a matrix of configurations x nemeses x runs and
// compares, per cell, what the guarantee model predicts with what the runs
// showed: Jepsen's test matrix as a library over runner.Spec.
//
// A campaign is written as a Spec: the spec file format (ParseSpec, with
// acks as a number or "all", explicit cells' required fields, unknown
// fields refused), which the presets (Preset) and chaos campaign's flags
// are too. Its Record is what campaign.json keeps. Flags.Resolve makes
// chaos campaign's command line (a preset, a spec file or the matrix
// flags, the settings that override them, chaos run's flags after "--")
// one Spec, refusing a bad value by its flag's name; chaos run's flag
// set, which only the command has, reads the run args (RunFlags).
//
// A Plan is made from a campaign's resolved spec (results.CampaignSpec:
// the matrix lists or explicit cells, runs, time limit, nemesis interval,
// runtime) and a Base, which makes the settings every run shares (chaos
// campaign reads them from chaos run's flags given after "--") and, for a
// cell with chaos run flags of its own (CellSpec.RunArgs), that cell's.
// NewPlan varies the base per cell (acks, min.insync.replicas, election,
// faults, planted bugs, time limit, nemesis interval, runtime, name) and
// refuses every impossible cell at once, before anything runs. Each run of a cell adds
// its seed, derived from the campaign seed, the cell's name and the run's
// number (RunSeed), so one campaign seed replays every run.
//
// Run executes the plan through an Executor, one run at a time or, for
// runs that cannot disturb each other (simulated ones), several at once,
// recording them in the plan's order whatever the parallelism: InProcess
// calls runner.Run in this process (or another function of its kind:
// sim.Run runs a campaign in simulation); Child starts "chaos run
// --spec-file F --outcome-file O" in its own process group, which gets
// the Spec as JSON and writes its runner.Outcome as JSON. Both write each
// run's output to a log file beside campaign.json. Run keeps the
// campaign's record, results.Campaign (campaign.json, whose schema
// package results owns), and its index page, rewritten after every run,
// so a campaign in progress can be watched and one killed outright still
// shows what finished. Summarize, WorstVerdict, ExitCode and WriteJUnit
// are the rules that turn the runs into a cell's summary, the campaign's
// exit code and a JUnit report. For people, chaos campaign's text is
// here too: WriteDryRun lists a plan, Options.Show prints each run as it
// ends (one line rewritten while it goes, on a terminal), WriteSummary
// the tables and the verdict line; Interrupts turns the first SIGINT or
// SIGTERM into Run's stop in order and the second into Options.Kill.
//
// A campaign whose cells plant bugs (CellSpec.Bugs) measures detection:
// a run catches its cell's bugs when it finds an anomaly the
// configuration forbids (the guarantee model knows nothing of bugs), and
// Detection sums up per cell the runs that did, the anomalies that caught
// them and the medians of their first detections (checker.FirstDetection,
// which the campaign finds in each invalid run's history); a cell that
// plants none is a control, whose every such run is a false alarm.
// campaign.json keeps it as its detection matrix.
//
// A plan with a Shard runs only its slice of the runs (package shard: a
// stable assignment by RunKey, the cell's name and the run's number), so
// that N machines can each run one slice of the same campaign; Merge
// combines their records (and copies their runs into one store) into
// the record of the whole campaign, refusing shards of different
// campaigns or an incomplete set.
package campaign
