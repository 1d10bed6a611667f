package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/chaos-isr/chaos/runner"
)

// runSpec is the spec chaos run runs: the flags', checked flag by flag
// first so that a refusal names the flag; or, for a campaign's child,
// exactly the one in --spec-file.
func (f runFlags) runSpec(cmd *cobra.Command) (runner.Spec, error) {
	if f.specFile == "" {
		acks, faults, err := f.validate()
		if err != nil {
			return runner.Spec{}, err
		}
		spec := f.spec(acks, faults)
		if err := spec.Validate(); err != nil {
			// Flags the checks above passed but the spec refuses: a
			// combination (e.g. a schedule with no window).
			return runner.Spec{}, flagCombination(err, f)
		}
		return spec, nil
	}
	// Display and protocol flags go with a spec file; a setting would
	// contradict the file or be ignored.
	var others []string
	cmd.Flags().Visit(func(fl *pflag.Flag) {
		if fl.Name != "spec-file" && fl.Name != "outcome-file" && fl.Name != "quiet" {
			others = append(others, "--"+fl.Name)
		}
	})
	if len(others) > 0 {
		return runner.Spec{}, fmt.Errorf("--spec-file: runs exactly the spec in the file, so %s cannot be given with it", strings.Join(others, ", "))
	}
	spec, err := runner.ReadSpecFile(f.specFile)
	if err != nil {
		return runner.Spec{}, fmt.Errorf("--spec-file: %w", err)
	}
	if err := spec.Validate(); err != nil {
		return runner.Spec{}, err
	}
	return spec, nil
}

// writeOutcome writes the outcome to --outcome-file, if one was asked for,
// with runErr as its error, and returns runErr, joined with the reason if
// the file could not be written: a caller that asked for the outcome
// learns the result from nothing else.
func (f runFlags) writeOutcome(o runner.Outcome, runErr error) error {
	if f.outcomeFile == "" {
		return runErr
	}
	if runErr != nil && o.Error == "" {
		o.Error = runErr.Error()
	}
	if err := o.WriteFile(f.outcomeFile); err != nil {
		return errors.Join(runErr, fmt.Errorf("--outcome-file: not written: %w", err))
	}
	return runErr
}
