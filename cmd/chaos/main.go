// Command chaos is a Jepsen-style correctness tester for Kafka-style ISR
// replication, and the broker and controller it tests.
//
// This file wires the CLI; the work is done by the library packages.
package main

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=..." (make
// build stamps git describe); "dev" means it was not.
var version = "dev"

func fullVersion() string {
	bi, _ := debug.ReadBuildInfo()
	return versionString(version, bi)
}

// versionString is what chaos --version prints: the stamped version, or,
// for a binary built without one (go install, go build), the module
// version the Go toolchain recorded ("v1.2.0" for a release installed with
// go install ...@version, a pseudo-version for a commit), followed by the
// commit when the toolchain recorded one that the version does not
// already name.
func versionString(stamp string, bi *debug.BuildInfo) string {
	v := stamp
	var rev string
	modified := false
	if bi != nil {
		if stamp == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if len(rev) >= 12 && !strings.Contains(v, rev[:7]) {
		v += " (" + rev[:12]
		if modified && !strings.Contains(v, "dirty") {
			v += ", modified"
		}
		v += ")"
	}
	return v
}

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
	root.AddCommand(newRunCmd(), newSimCmd(), newCheckCmd(), newReportCmd(), newServeCmd(), newCampaignCmd(), newBrokerCmd(), newControllerCmd(), newClusterCmd(), newNetfaultCmd())
	root.AddCommand(newBugsCmd())
	return root
}

func main() {
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
