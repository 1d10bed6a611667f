package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/chaos-isr/chaos/broker/storage"
	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/nemesis"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/results/report"
	"github.com/chaos-isr/chaos/runner"
)

func readHistory(out io.Writer, path string) ([]history.Op, error) {
	ops, err := history.ReadFile(path)
	var pe *fs.PathError
	if err != nil && len(ops) == 0 && !errors.Is(err, history.ErrTornTail) && !errors.As(err, &pe) {
		return nil, notHistory(path, err)
	}
	if errors.Is(err, history.ErrTornTail) {
		fmt.Fprintf(out, "note: %s ends in a torn line (the tester was killed while writing); judging the %d operations before it\n", path, len(ops))
		err = nil
	}
	return ops, err
}

// printVerdict prints one line per anomaly and the verdict.
func printVerdict(out io.Writer, res *checker.Results) { report.WriteVerdict(out, res) }

// flagsChanged: the user set one of the named flags.
func flagsChanged(fl *pflag.FlagSet, names ...string) bool {
	for _, n := range names {
		if fl.Changed(n) {
			return true
		}
	}
	return false
}

// checkConfigFlags refuses, naming the flag, a configuration no run could
// have; checker.Config.Validate is the same rules without flag names.
func checkConfigFlags(cfg checker.Config) error {
	switch {
	case cfg.ReplicationFactor < 1:
		return flagError("replication-factor", cfg.ReplicationFactor, "below 1", "a topic has at least one replica")
	case cfg.MinInsyncReplicas < 1:
		return flagError("min-insync-replicas", cfg.MinInsyncReplicas, "below 1", "use 1 up to --replication-factor")
	case cfg.MinInsyncReplicas > cfg.ReplicationFactor:
		return flagError("min-insync-replicas", cfg.MinInsyncReplicas, fmt.Sprintf("above the replication factor %d (no acks=-1 write could succeed)", cfg.ReplicationFactor), "use 1 up to --replication-factor")
	case cfg.MaxInFlight < 1:
		return flagError("max-in-flight", cfg.MaxInFlight, "below 1", "a producer has at least one request in flight")
	}
	return cfg.Validate()
}

func newCheckCmd() *cobra.Command {
	var (
		acks, election, outPath, fsync string
		minISR, rf, inFlight           int
		faults                         []string
		retries, noLin, lose           bool
		linTimeout                     time.Duration
	)
	cmd := &cobra.Command{
		Use:   "check PATH",
		Short: "Judge a stored history again (a run directory or a history.jsonl file)",
		Long: `Judge a history again. PATH is a run directory (store/<test>/<time>, or store/latest)
or a history file in the format of docs/history.md, which any tool may write. The
configuration the guarantee model assumes comes from the run's test.json when there is one;
flags override it. Without test.json the defaults are the strictest promise:
acks=-1, min.insync.replicas=2, clean election, no faults. The faults are judged by the
fault windows the history records (the kinds that started); a history that records none
is judged by --faults as given.
Exit code: 0 valid, 1 invalid, 2 unknown, 3 error.`,
		Args: checkArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			path, dir, err := checkPath(args[0])
			if err != nil {
				return &exitError{code: exitErrorCode, err: err}
			}
			cfg := checker.Config{Acks: -1, MinInsyncReplicas: 2, Election: "clean", ReplicationFactor: 3, MaxInFlight: 1}
			var pe *fs.PathError
			if tc, err := results.ReadTestConfig(filepath.Join(dir, results.TestFile)); err == nil {
				cfg = tc.CheckerConfig()
			} else if !errors.As(err, &pe) {
				return &exitError{code: exitErrorCode, err: err}
			}
			fl := cmd.Flags()
			if fl.Changed("acks") {
				a, err := parseAcks(acks)
				if err != nil {
					return &exitError{code: exitErrorCode, err: err}
				}
				cfg.Acks = int(a)
			}
			if fl.Changed("min-insync-replicas") {
				cfg.MinInsyncReplicas = minISR
			}
			if fl.Changed("election") {
				if err := checkElection(election); err != nil {
					return &exitError{code: exitErrorCode, err: err}
				}
				cfg.Election = election
			}
			if fl.Changed("replication-factor") {
				cfg.ReplicationFactor = rf
			}
			if fl.Changed("faults") {
				parsed, err := nemesis.Parse(strings.Join(faults, ","))
				if err != nil {
					return &exitError{code: exitErrorCode, err: flagError("faults", strings.Join(faults, ","), "not a fault list", "use a comma list of: "+strings.Join(nemesis.Names(), ", "))}
				}
				cfg.Faults = parsed
				// A history that records no windows is judged by these,
				// as the registry says each acts; one that needs brokers
				// losing unsynced writes implies them.
				cfg.Declared = runner.DeclaredFaults(parsed, cfg.ReplicationFactor)
				if nemesis.LosesUnsynced(parsed) && !fl.Changed("lose-unsynced") {
					cfg.LoseUnsynced = true
				}
			}
			if fl.Changed("lose-unsynced") {
				cfg.LoseUnsynced = lose
			}
			if fl.Changed("fsync") {
				p, ms, err := parseFsyncFlag(fsync)
				if err != nil {
					return &exitError{code: exitErrorCode, err: err}
				}
				cfg.Fsync = storage.FormatFsync(p, ms)
			}
			if fl.Changed("client-retries") {
				cfg.ClientRetries = retries
			}
			if fl.Changed("max-in-flight") {
				cfg.MaxInFlight = inFlight
			}
			ops, err := readHistory(out, path)
			if err != nil {
				return &exitError{code: exitErrorCode, err: err}
			}
			// The rules chaos run applies to its flags: a configuration
			// no run could have is refused, not judged.
			if err := checkConfigFlags(cfg); err != nil {
				if !flagsChanged(fl, "acks", "min-insync-replicas", "election", "replication-factor", "max-in-flight") {
					err = fmt.Errorf("%s: %w", filepath.Join(dir, results.TestFile), cfg.Validate())
				}
				return &exitError{code: exitErrorCode, err: err}
			}
			opts := checker.Options{LinearizableTimeout: linTimeout, SkipLinearizability: noLin}
			if dir != "" {
				opts.VisualizationPath = filepath.Join(dir, "linearizability.html")
			}
			if len(ops) == 0 {
				fmt.Fprintf(out, "%s holds no operations: there is nothing to judge\n", path)
			}
			res := checker.Check(ops, cfg, opts)
			printVerdict(out, res)
			if outPath != "" {
				data, _ := json.MarshalIndent(res, "", "  ")
				if err := results.WriteFileAtomic(outPath, append(data, '\n')); err != nil {
					return &exitError{code: exitErrorCode, err: err}
				}
			}
			if code := res.ExitCode(); code != 0 {
				return &exitError{code: code, err: errSilent}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&acks, "acks", "-1", "producer acks the history was written with: 0, 1, -1 or all")
	fl.IntVar(&minISR, "min-insync-replicas", 2, "the topic's min.insync.replicas")
	fl.StringVar(&election, "election", "clean", "the topic's election policy: clean or unclean")
	fl.IntVar(&rf, "replication-factor", 3, "the topic's replication factor")
	fl.StringSliceVar(&faults, "faults", nil, "fault kinds the test was asked to inject (comma list of chaos run's --nemesis names, e.g. kill,partition,lose-unsynced); a history that records its fault windows is judged by those that started")
	fl.BoolVar(&lose, "lose-unsynced", false, "brokers lost their unsynced writes when killed (chaos broker --lose-unsynced, or a power loss): every kill then counts as losing data")
	fl.StringVar(&fsync, "fsync", "", "the brokers' fsync policy: never, always or interval:DURATION; under always no fault loses unsynced writes")
	fl.BoolVar(&retries, "client-retries", false, "producers retried sends without idempotence (permits duplicates)")
	fl.IntVar(&inFlight, "max-in-flight", 1, "produce requests a producer had in flight (above 1 permits reordering)")
	fl.DurationVar(&linTimeout, "linearizable-timeout", 0, "bound on the linearizability search; past it that check is unknown (default: the checker's)")
	fl.BoolVar(&noLin, "skip-linearizability", false, "skip the porcupine search (its checks report unknown)")
	fl.StringVar(&outPath, "out", "", "also write the results as JSON to this file")
	return cmd
}
