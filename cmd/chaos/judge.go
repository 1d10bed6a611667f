package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/results"
)

// judgeRun reads the run's history back and judges it: what is stored is
// what is checked, so "chaos check" on the run gives the same verdict.
func judgeRun(out io.Writer, run *results.Run, tc results.TestConfig) (int, error) {
	ops, err := readHistory(out, run.Path("history.jsonl"))
	if err != nil {
		// A report without a verdict still shows the readable prefix and
		// says what is damaged.
		writeRunReport(out, run)
		return 0, err
	}
	res := checker.Check(ops, tc.CheckerConfig(), checker.Options{VisualizationPath: run.Path("linearizability.html")})
	if err := run.WriteJSON("results.json", res); err != nil {
		writeRunReport(out, run)
		return 0, err
	}
	printVerdict(out, res)
	fmt.Fprintf(out, "results: %s\n", run.Path("results.json"))
	sayReport(out, run, results.WriteJudgedReport(run.Dir, tc, res, ops))
	return res.ExitCode(), nil
}

// writeRunReport renders the report of a run that has no verdict, from
// what its directory holds.
func writeRunReport(out io.Writer, run *results.Run) {
	sayReport(out, run, results.WriteReport(run.Dir))
}

// sayReport says where the report is. A report that cannot be written is
// said but does not change the verdict: the results are stored.
func sayReport(out io.Writer, run *results.Run, err error) {
	if err != nil {
		fmt.Fprintf(out, "report: not written: %v\n", err)
		return
	}
	fmt.Fprintf(out, "report: %s\n", run.Path(results.ReportFile))
}

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
func printVerdict(out io.Writer, res *checker.Results) {
	cfg := res.Config
	fmt.Fprintf(out, "\nguarantees judged for acks=%d min.insync.replicas=%d %s election, faults %s\n",
		cfg.Acks, cfg.MinInsyncReplicas, orDefault(cfg.Election, "clean"), res.FaultClass)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ANOMALY\tRESULT\tCOUNT\tPERMITTED\tEXAMPLE OPS")
	for _, r := range res.Results {
		result := map[checker.Validity]string{checker.Valid: "none", checker.Invalid: "FOUND", checker.Unknown: "unknown"}[r.Valid]
		permitted := "no"
		if r.Expected {
			permitted = "yes"
		}
		var ex []string
		for _, e := range r.Examples {
			ex = append(ex, fmt.Sprint(e))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", r.Name, result, r.Count, permitted, strings.Join(ex, " "))
	}
	tw.Flush()
	for _, r := range res.Results {
		if r.Valid == checker.Valid || len(r.Details) == 0 {
			continue
		}
		tag := "unexpected"
		if r.Expected {
			tag = "expected"
		}
		if r.Valid == checker.Unknown {
			tag = "unknown"
		}
		fmt.Fprintf(out, "%s (%s):\n", r.Name, tag)
		for _, d := range r.Details[:min(3, len(r.Details))] {
			fmt.Fprintf(out, "  %s\n", d)
		}
		for _, a := range r.Artifacts {
			fmt.Fprintf(out, "  see %s\n", a)
		}
	}
	for _, p := range res.Problems[:min(3, len(res.Problems))] {
		fmt.Fprintf(out, "history problem: %s\n", p)
	}
	switch res.Valid {
	case checker.Valid:
		fmt.Fprintf(out, "verdict: VALID")
	case checker.Invalid:
		fmt.Fprintf(out, "verdict: INVALID: %s", strings.Join(res.Unexpected, ", "))
	default:
		fmt.Fprintf(out, "verdict: UNKNOWN")
	}
	if len(res.Expected) > 0 {
		fmt.Fprintf(out, " (permitted anomalies seen: %s)", strings.Join(res.Expected, ", "))
	}
	fmt.Fprintln(out)
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func newCheckCmd() *cobra.Command {
	var (
		acks, election, outPath string
		minISR, rf, inFlight    int
		faults                  []string
		retries, noLin          bool
		linTimeout              time.Duration
	)
	cmd := &cobra.Command{
		Use:   "check PATH",
		Short: "Judge a stored history again (a run directory or a history.jsonl file)",
		Long: `Judge a history again. PATH is a run directory (store/<test>/<time>, or store/latest)
or a history file in the format of docs/history.md, which any tool may write. The
configuration the guarantee model assumes comes from the run's test.json when there is one;
flags override it. Without test.json the defaults are the strictest promise:
acks=-1, min.insync.replicas=2, clean election, no faults.
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
				if election != "clean" && election != "unclean" {
					return &exitError{code: exitErrorCode, err: fmt.Errorf("--election must be clean or unclean, got %q", election)}
				}
				cfg.Election = election
			}
			if fl.Changed("replication-factor") {
				cfg.ReplicationFactor = rf
			}
			if fl.Changed("faults") {
				cfg.Faults = faults
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
			opts := checker.Options{LinearizableTimeout: linTimeout, SkipLinearizability: noLin}
			if dir != "" {
				opts.VisualizationPath = filepath.Join(dir, "linearizability.html")
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
	fl.StringSliceVar(&faults, "faults", nil, "fault kinds the test injected (comma list, e.g. kill,partition,lose-unsynced)")
	fl.BoolVar(&retries, "client-retries", false, "producers retried sends without idempotence (permits duplicates)")
	fl.IntVar(&inFlight, "max-in-flight", 1, "produce requests a producer had in flight (above 1 permits reordering)")
	fl.DurationVar(&linTimeout, "linearizable-timeout", 0, "bound on the linearizability search; past it that check is unknown (default: the checker's)")
	fl.BoolVar(&noLin, "skip-linearizability", false, "skip the porcupine search (its checks report unknown)")
	fl.StringVar(&outPath, "out", "", "also write the results as JSON to this file")
	return cmd
}
