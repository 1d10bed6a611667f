package hunt

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/chaos-isr/chaos/broker/node"
	"github.com/chaos-isr/chaos/internal/cli"
	"github.com/chaos-isr/chaos/nemesis"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/runner"
	"github.com/chaos-isr/chaos/shard"
	"github.com/chaos-isr/chaos/sim"
)

// Flags are chaos hunt's flags: the budget, the search, and the
// configuration under judgement (everything else is drawn).
type Flags struct {
	Runs, Parallel, ShrinkRuns, MinInsyncReplicas int
	Time                                          time.Duration
	Seed                                          uint64
	Shard, Acks, Election, Nemesis, Store         string
	// Workload and SubVia are every scenario's workload, as chaos run
	// takes them.
	Workload, SubVia                         string
	KeepGoing, NoFeedback, DrawConfig, Quiet bool
	Bugs                                     []string
	// Runtime is where the scenarios run: the simulation, or in real time
	// on a real runtime; External the external runtime's flags.
	Runtime  string
	External runner.ExternalFlags
	// given says whether a flag was on the command line; externalArgs
	// are the external runtime's flags as given, for the chaos run
	// command of a finding (Register sets both).
	given        func(name string) bool
	externalArgs func() []string
}

// DefaultRuns is a hunt's budget when it is given none.
const DefaultRuns = 2000

// Register defines chaos hunt's flags on fs.
func (f *Flags) Register(fs *pflag.FlagSet) {
	fs.IntVar(&f.Runs, "runs", 0, fmt.Sprintf("stop after this many runs (default %d when --time is not given either)", DefaultRuns))
	fs.DurationVar(&f.Time, "time", 0, "stop after this long (the run going on ends first)")
	fs.IntVar(&f.Parallel, "parallel", 2, "runs at once (default 1 with --runtime local, docker or external: real clusters one at a time)")
	fs.Uint64Var(&f.Seed, "seed", 0, "the hunt's seed: every run's scenario and every choice of the search follow from it (default: random, printed)")
	fs.StringVar(&f.Shard, "shard", "", "run only the K-th of N slices of the hunt's runs, e.g. 2/4 (give every shard the same --seed)")
	fs.BoolVar(&f.KeepGoing, "keep-going", false, "go on after the first finding (else the hunt stops there)")
	fs.BoolVar(&f.NoFeedback, "no-feedback", false, "draw every scenario afresh instead of mutating those that reached new coverage (pure swarm)")
	fs.IntVar(&f.ShrinkRuns, "shrink-runs", sim.DefaultShrinkRuns, "shrink the first finding in at most this many runs (0: do not shrink)")
	fs.BoolVar(&f.DrawConfig, "draw-config", false, "draw acks, min.insync.replicas and election too, instead of judging the configuration the flags give")
	fs.StringVar(&f.Acks, "acks", "-1", "producer acks of every scenario: 0, 1, or -1 (also 'all')")
	fs.IntVar(&f.MinInsyncReplicas, "min-insync-replicas", 2, "min.insync.replicas of every scenario")
	fs.StringVar(&f.Election, "election", "clean", "leader election policy of every scenario: clean, unclean or elr")
	fs.StringVar(&f.Workload, "workload", runner.DefaultWorkload, "every scenario's workload: "+runner.WorkloadDocs())
	fs.StringVar(&f.SubVia, "sub-via", results.SubViaAssign, "how every scenario's consumers read: assign, or subscribe (as one consumer group; the group's faults, crash-consumer, pause-consumer and partition-coordinator, are then drawn too)")
	fs.StringVar(&f.Nemesis, "nemesis", "", "the fault kinds windows are drawn from, a comma list (default: every kind but the clock and disk faults, those of a consumer group or transactional sessions the workload does not have, and stop-followers-kill-leader unless the election may be elr): "+strings.Join(nemesis.Names(), ", "))
	fs.StringVar(&f.Store, "store", "store", "the result store directory (a hunt keeps only the runs that were not valid, and its record and page under STORE/hunts)")
	fs.BoolVar(&f.Quiet, "quiet", false, "no progress display")
	runner.BugFlag(fs, &f.Bugs)
	fs.StringVar(&f.Runtime, "runtime", runner.RuntimeSim, "where the scenarios run: sim (the simulation, thousands of runs a minute, each replayable), or one after another in real time: local (child processes on 127.0.0.1), docker (a container per node) or external (a cluster you run, at --bootstrap, faulted by your --*-cmd commands)")
	f.External.RegisterExternal(fs)
	external := pflag.NewFlagSet("external", pflag.ContinueOnError)
	(&runner.ExternalFlags{}).RegisterExternal(external)
	f.given = fs.Changed
	f.externalArgs = func() []string {
		var args []string
		fs.Visit(func(fl *pflag.Flag) {
			if external.Lookup(fl.Name) == nil {
				return
			}
			values := []string{fl.Value.String()}
			if sv, ok := fl.Value.(pflag.SliceValue); ok {
				values = sv.GetSlice()
			}
			if fl.Value.Type() == "bool" {
				if fl.Value.String() == "true" {
					args = append(args, "--"+fl.Name)
				}
				return
			}
			for _, v := range values {
				args = append(args, "--"+fl.Name, v)
			}
		})
		return args
	}
}

func (f Flags) isGiven(name string) bool { return f.given != nil && f.given(name) }

// Options checks every flag, naming a bad one, and returns the hunt they
// ask for.
func (f Flags) Options() (Options, error) {
	var o Options
	acks, err := runner.ParseAcks(f.Acks)
	if err != nil {
		return o, err
	}
	if err := node.CheckElection(f.Election); err != nil {
		return o, err
	}
	switch {
	case f.Runs < 0:
		return o, cli.Error("runs", f.Runs, "negative", "a number of runs, e.g. 2000")
	case f.Time < 0:
		return o, cli.Error("time", f.Time, "negative", "a duration such as 5m")
	case f.Parallel < 1:
		return o, cli.Error("parallel", f.Parallel, "below 1", "the runs at once, e.g. 2")
	case f.ShrinkRuns < 0:
		return o, cli.Error("shrink-runs", f.ShrinkRuns, "negative", "a number of runs, or 0 not to shrink")
	case f.MinInsyncReplicas < 1 || f.MinInsyncReplicas > 3:
		return o, cli.Error("min-insync-replicas", f.MinInsyncReplicas, "not 1 to 3", "a hunt's topics have three replicas")
	}
	sh, err := shard.Parse(f.Shard)
	if err != nil {
		return o, cli.Error("shard", f.Shard, err.Error(), "e.g. 2/4, the second of four slices of the runs")
	}
	if !sh.Whole() && f.Seed == 0 {
		return o, cli.Error("shard", f.Shard, "given without --seed", "every shard must hunt with the same --seed")
	}
	if err := runner.CheckHuntRuntime(f.Runtime); err != nil {
		return o, err
	}
	real := f.Runtime != runner.RuntimeSim
	if f.Nemesis != "" {
		kinds, err := runner.ParseFaults(f.Nemesis)
		if err != nil {
			return o, err
		}
		for _, k := range kinds {
			if err := sim.Simulated(k); err != nil && !real {
				return o, cli.Error("nemesis", f.Nemesis, err.Error(), "kinds the simulation models")
			}
			if nemesis.NeedsGroup([]string{k}) && f.SubVia != results.SubViaSubscribe {
				return o, cli.Error("nemesis", f.Nemesis, k+" acts on a consumer group, which the scenarios' consumers form only with --sub-via subscribe", "--sub-via subscribe, or kinds of the cluster")
			}
			if nemesis.NeedsTxn([]string{k}) && f.Workload != results.WorkloadTxn {
				return o, cli.Error("nemesis", f.Nemesis, k+" acts on the transactional sessions, which only --workload txn runs", "--workload txn, or kinds of the cluster")
			}
		}
		o.Draw.Faults = kinds
	}
	base := runner.DefaultSpec()
	base.Runtime, base.Store, base.Acks = f.Runtime, f.Store, acks
	base.Settings.MinInsyncReplicas, base.Settings.Election = int32(f.MinInsyncReplicas), f.Election
	base.Settings.Bugs = f.Bugs
	if f.Workload != runner.DefaultWorkload {
		base.Workload = f.Workload
	}
	if f.SubVia != results.SubViaAssign {
		base.SubVia = f.SubVia
	}
	o.Draw.Group = base.SubVia == results.SubViaSubscribe
	o.Draw.Txn = base.Workload == results.WorkloadTxn
	o.Draw.ELR = base.Settings.Election == "elr"
	if err := f.External.Apply(&base); err != nil {
		return o, err
	}
	if err := f.real(&o, &base); err != nil {
		return o, err
	}
	if err := base.Validate(); err != nil {
		return o, err
	}
	o.Base, o.Draw.Config, o.Seed, o.Shard = base, f.DrawConfig, f.Seed, sh
	o.Runs, o.Time, o.Parallel = f.Runs, f.Time, f.Parallel
	if o.Runs == 0 && o.Time == 0 {
		o.Runs = DefaultRuns
	}
	o.Feedback, o.KeepGoing, o.ShrinkRuns = !f.NoFeedback, f.KeepGoing, f.ShrinkRuns
	o.Command = sim.ReplayCommand
	if real {
		o.ShrinkRuns, o.Execute = 0, runner.Run
		if !f.isGiven("parallel") {
			o.Parallel = 1
		}
		var external []string
		if f.externalArgs != nil {
			external = f.externalArgs()
		}
		o.Command = func(s runner.Spec) []string { return append(runner.RunCommand(s), external...) }
	}
	return o, nil
}

// runnable refuses a kind named in --nemesis that the external cluster
// cannot be faulted with, saying why as chaos run would (its Validate):
// left out silently, the hunt would test fewer kinds than it names.
func runnable(base *runner.Spec, kinds []string) error {
	x := base.External
	for _, k := range kinds {
		if slices.Contains(x.Runnable([]string{k}), k) {
			continue
		}
		s := *base
		s.Faults = []string{k}
		why := "the external runtime cannot apply it as documented"
		if err := s.Validate(); err != nil {
			why = strings.ReplaceAll(err.Error(), "\n", "; ")
		}
		return cli.Error("nemesis", k, "cannot be drawn on this cluster", why)
	}
	return nil
}

// real checks a hunt of a real runtime and sets what differs from one in
// simulation: runs one after another in real time, nothing to shrink
// (a real run does not replay), and for an external cluster its own
// brokers and settings, one cluster for one run at a time, a new topic
// per run, and only the fault kinds its commands can apply.
func (f Flags) real(o *Options, base *runner.Spec) error {
	if f.Runtime == runner.RuntimeSim {
		return nil
	}
	if f.Runs == 0 && f.Time == 0 {
		return cli.Error("time", nil, "missing with --runtime "+f.Runtime, "a real run takes 15 to 40 s, so give the hunt a budget in wall time, e.g. --time 10m (or --runs N)")
	}
	if f.isGiven("shrink-runs") && f.ShrinkRuns > 0 {
		return cli.Error("shrink-runs", f.ShrinkRuns, "with --runtime "+f.Runtime, "a real run does not replay, so a finding cannot be shrunk: leave --shrink-runs out (its chaos run command runs the scenario again)")
	}
	if f.Runtime != runner.RuntimeExternal {
		return nil
	}
	if f.Parallel > 1 && f.isGiven("parallel") {
		return cli.Error("parallel", f.Parallel, "above 1 with --runtime external", "one cluster takes one run at a time: leave --parallel out")
	}
	if base.External.Topic != "" {
		return cli.Error("topic", base.External.Topic, "given to a hunt (as --topic or in the cluster file)", "every run of a hunt makes a new topic, chaos-RANDOM, and leaves it on the cluster (an existing one would not be empty after the first run): leave the topic out")
	}
	if len(base.Settings.Bugs) > 0 {
		return cli.Error("bug", strings.Join(base.Settings.Bugs, ","), "with --runtime external", "bugs are planted in chaos's own brokers, which the external runtime does not start")
	}
	kinds := o.Draw.Faults
	if len(kinds) == 0 {
		kinds = o.Draw.kinds()
	} else if err := runnable(base, kinds); err != nil {
		return err
	}
	o.Draw.Faults = base.External.Runnable(kinds)
	if len(o.Draw.Faults) == 0 {
		return cli.Error("runtime", f.Runtime, "no fault kind can be applied to this cluster", "name its brokers (--node NAME=HOST:PORT for each) and give the commands of the faults to draw (--kill-cmd and --start-cmd, --partition-cmd and --heal-cmd, ...; docs/external.md)")
	}
	o.Draw.OwnCluster = true
	return nil
}
