package main

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/chaos-isr/chaos/internal/cli"
)

// --fail-on for chaos run and chaos check: a CI job that fails only on a
// broken promise (invalid) passes an unknown verdict, and says so under
// the verdict, which stays what the checkers found.

// registerFailOn defines --fail-on on fs.
func registerFailOn(fs *pflag.FlagSet, failOn *string) {
	fs.StringVar(failOn, "fail-on", cli.FailOnUnknown, cli.FailOnUsage)
}

// failOnExit is the exit code of a verdict's code under --fail-on, said
// on out when the flag changed it.
func failOnExit(out io.Writer, failOn string, code int) int {
	exit := cli.FailOnExit(failOn, code)
	if exit != code {
		fmt.Fprintf(out, "exit %d: --fail-on %s (the verdict would exit %d)\n", exit, failOn, code)
	}
	return exit
}
