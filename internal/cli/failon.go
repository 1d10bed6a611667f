package cli

import "fmt"

// --fail-on: which verdicts make a command fail. By default (unknown) a
// verdict that is not valid fails: invalid exits 1, unknown 2. A CI job
// that wants to fail only on a broken promise asks for invalid: an
// unknown verdict then exits 0, and says so. An error (exit 3 and up: a
// run that tested nothing) and an interrupt fail whatever the flag: a job
// whose runs never ran must not pass.
const (
	FailOnUnknown = "unknown"
	FailOnInvalid = "invalid"
)

// FailOnUsage is --fail-on's help, the same in every command.
const FailOnUsage = "the least verdict that fails: unknown (exit 1 on invalid, 2 on unknown) or invalid (exit 0 on unknown; only invalid fails); errors always exit 3"

// CheckFailOn refuses a --fail-on that is neither unknown nor invalid.
func CheckFailOn(v string) error {
	if v == FailOnUnknown || v == FailOnInvalid {
		return nil
	}
	return Error("fail-on", v, "not a verdict to fail on", fmt.Sprintf("use %s (the default: fail on an unknown or invalid verdict) or %s (fail only on an invalid one)", FailOnUnknown, FailOnInvalid))
}

// exitUnknown is an unknown verdict's exit code (checker.ExitCode, which
// this package may not import).
const exitUnknown = 2

// FailOnExit is the exit code of a command whose verdict's code is code
// (0 valid, 1 invalid, 2 unknown, 3 and up errors, 130 interrupted),
// under --fail-on failOn: with invalid an unknown verdict exits 0, and
// every other code stays. An empty failOn is the default.
func FailOnExit(failOn string, code int) int {
	if failOn == FailOnInvalid && code == exitUnknown {
		return 0
	}
	return code
}
