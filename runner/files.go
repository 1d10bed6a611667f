package runner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/chaos-isr/chaos/results"
)

// A campaign's child process gets its Spec as a JSON file and answers with
// its Outcome as another ("chaos run --spec-file F --outcome-file O"):
// nobody reads a result off a run's printed output.

// WriteFile writes the spec as JSON, atomically.
func (s Spec) WriteFile(path string) error { return writeJSON(path, s) }

// ReadSpecFile reads a spec that WriteFile wrote. Unknown fields are
// refused: a misspelt one would otherwise run a default silently.
func ReadSpecFile(path string) (Spec, error) { return readJSON[Spec](path, "a run spec") }

// WriteFile writes the outcome as JSON, atomically, so that a reader finds
// the previous outcome or this one, never a part (a run writes it when it
// starts and again when it ends).
func (o Outcome) WriteFile(path string) error { return writeJSON(path, o) }

// ReadChildSpec reads the spec a campaign's child runs (chaos run
// --spec-file): exactly the one in the file at path, so that flags, the
// run flags given beside it, are refused: a setting would contradict the
// file or be ignored.
func ReadChildSpec(path string, flags []string) (Spec, error) {
	if len(flags) > 0 {
		return Spec{}, fmt.Errorf("--spec-file: runs exactly the spec in the file, so %s cannot be given with it", strings.Join(flags, ", "))
	}
	spec, err := ReadSpecFile(path)
	if err != nil {
		return Spec{}, fmt.Errorf("--spec-file: %w", err)
	}
	if err := spec.Validate(); err != nil {
		return Spec{}, err
	}
	return spec, nil
}

// WriteOutcome writes o to the outcome file at path (none when path is
// empty) with runErr as its error, and returns runErr, joined with the
// reason if the file could not be written: the campaign that asked for the
// outcome learns the result from nothing else.
func WriteOutcome(path string, o Outcome, runErr error) error {
	if path == "" {
		return runErr
	}
	if runErr != nil && o.Error == "" {
		o.Error = runErr.Error()
	}
	if err := o.WriteFile(path); err != nil {
		return errors.Join(runErr, fmt.Errorf("--outcome-file: not written: %w", err))
	}
	return runErr
}

// ReadOutcomeFile reads an outcome that WriteFile wrote.
func ReadOutcomeFile(path string) (Outcome, error) { return readJSON[Outcome](path, "a run outcome") }

// readJSON reads a file of one JSON value, refusing fields T lacks.
func readJSON[T any](path, what string) (T, error) {
	var v T
	data, err := os.ReadFile(path)
	if err != nil {
		return v, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return v, fmt.Errorf("%s: not %s: %w", path, what, err)
	}
	return v, nil
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return results.WriteFileAtomic(path, append(data, '\n'))
}
