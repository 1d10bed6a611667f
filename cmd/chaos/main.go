// Command chaos is a Jepsen-style correctness tester for Kafka-style ISR
// replication, and the broker and controller it tests.
//
// This file wires the CLI; the work is done by the library packages.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/chaos-isr/chaos/internal/cli"
)

// version is set at build time with -ldflags "-X main.version=..." (make
// build stamps git describe); "dev" means it was not.
var version = "dev"

// fullVersion is what chaos --version prints and test.json records.
func fullVersion() string { return cli.Version(version) }

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func (e *exitError) Unwrap() error { return e.err }

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "chaos",
		Short: "A Jepsen-style correctness tester for Kafka-style ISR replication",
		Long: `chaos tests what acks=0/1/-1, min.insync.replicas and clean/unclean leader election
really guarantee when things break. It ships its own minimal Kafka-protocol broker
(the system under test), which real clients such as kcat, franz-go and sarama can use.`,
		Version:       fullVersion(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	// Bad flag values are refused in one style, by every command.
	root.SetFlagErrorFunc(flagParseError)
	// Commands with many flags print them in groups (help.go).
	root.SetUsageTemplate(groupedUsage(root.UsageTemplate()))
	root.AddCommand(newRunCmd(), newSimCmd(), newCheckCmd(), newReportCmd(), newServeCmd(), newCampaignCmd(), newBrokerCmd(), newControllerCmd(), newClusterCmd(), newNetfaultCmd())
	root.AddCommand(newBugsCmd(), newHuntCmd())
	return root
}

// flagParseError is cobra's FlagErrorFunc: the flag parser's errors in
// the style of every refusal (package cli).
func flagParseError(cmd *cobra.Command, err error) error {
	return cli.ParseError(cmd.CommandPath(), cmd.Flags(), err)
}

func main() {
	cli.SurviveClosedOutput()
	if err := newRoot().Execute(); err != nil {
		var ee *exitError
		if !errors.As(err, &ee) || ee.err != errSilent {
			fmt.Fprintln(os.Stderr, "chaos:", err)
		}
		if ee != nil {
			os.Exit(ee.code)
		}
		os.Exit(exitErrorCode)
	}
}
