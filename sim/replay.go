package sim

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/chaos-isr/chaos/results/report"
	"github.com/chaos-isr/chaos/runner"
)

// The commands that replay a simulated run: what its test.json records
// and what chaos sim prints, so that a failure found once comes back with
// one pasted line.

// Args are chaos sim's flags for spec, those that differ from their
// defaults: the command that replays a run of it exactly (runner.Args).
func Args(s runner.Spec) []string { return runner.Args(s) }

// ReplayCommand is what a run's test.json records as the command that
// replays it: this program's path, sim, and spec's flags (Args). It is
// the Command of ShrinkOptions and ReproduceOptions for chaos sim.
func ReplayCommand(s runner.Spec) []string {
	return append([]string{os.Args[0], "sim"}, Args(s)...)
}

// ShellCommand is a command to paste into a shell, the program by its
// base name.
func ShellCommand(args []string) string {
	args = slices.Clone(args)
	args[0] = filepath.Base(args[0])
	return report.ShellJoin(args)
}

// sweepFlags are the flags of a sweep that a replay of one of its runs
// leaves out: the flags that take a value, then the others.
var (
	sweepValueFlags = []string{"seeds", "runs", "parallel", "seed", "shard"}
	sweepBoolFlags  = []string{"keep-valid"}
)

// SweepReplay is the command that replays one run of a sweep: the
// sweep's own command line args, without its sweep flags, with the run's
// seed.
func SweepReplay(args []string, seed uint64) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		name, _, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		switch {
		case !strings.HasPrefix(args[i], "--"):
			out = append(out, args[i])
		case slices.Contains(sweepValueFlags, name):
			if !hasValue {
				i++
			}
		case slices.Contains(sweepBoolFlags, name):
		default:
			out = append(out, args[i])
		}
	}
	return append(out, "--seed", strconv.FormatUint(seed, 10))
}
