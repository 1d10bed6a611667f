package runner

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/chaos-isr/chaos/nemesis"
)

// TestFlagsDefaults: chaos run without flags runs DefaultSpec, so that a
// default changed in one place and not the other shows here.
func TestFlagsDefaults(t *testing.T) {
	var f Flags
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	f.Register(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	got, err := f.Spec()
	if err != nil {
		t.Fatal(err)
	}
	if got.Command = nil; !reflect.DeepEqual(got, DefaultSpec()) {
		t.Errorf("chaos run's defaults give\n%+v\nDefaultSpec is\n%+v", got, DefaultSpec())
	}
	if fs.Changed("min-insync-replicas") {
		t.Error("the default --min-insync-replicas 2 counts as given")
	}
}

// parseRun parses args as chaos run's flags (with --schedule and the
// external runtime's) and returns the spec they give.
func parseRun(t *testing.T, args ...string) (Spec, error) {
	t.Helper()
	var f Flags
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	f.Register(fs)
	f.RegisterSchedule(fs)
	f.External.RegisterExternal(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return f.Spec()
}

// TestApplySchedule: --schedule replaces the seeded schedule, and is
// refused with the flags it replaces, naming them.
func TestApplySchedule(t *testing.T) {
	s, err := parseRun(t, "--schedule", "kill@5s+4s,kill-leader:leader-change~5ms@10s+3s", "--time-limit", "20s")
	if err != nil || s.Windows.String() != "kill@5s+4s,kill-leader:leader-change~5ms@10s+3s" || s.NemesisInterval != 0 {
		t.Errorf("%v: windows %s, interval %s", err, s.Windows, s.NemesisInterval)
	}
	if !reflect.DeepEqual(s.Normalized().Faults, []string{"kill", "kill-leader:leader-change~5ms"}) {
		t.Errorf("faults %v", s.Normalized().Faults)
	}
	for _, tc := range []struct{ args []string }{
		{[]string{"--schedule", "kill@5s+4s", "--nemesis-interval", "3s"}},
		{[]string{"--schedule", "kill@5s+4s", "--nemesis", "kill"}},
		{[]string{"--schedule", "kill@5s+4s", "--nemesis-overlap", "2"}},
	} {
		want := "--" + tc.args[2][2:] + `: given with --schedule, got "` + tc.args[3] + `"; the schedule names its windows' faults and times: leave ` + tc.args[2] + " out"
		if _, err := parseRun(t, tc.args...); err == nil || err.Error() != want {
			t.Errorf("%v: %v, want %q", tc.args, err, want)
		}
	}
	if _, err := parseRun(t, "--schedule", "kill@50s+4s", "--time-limit", "10s"); err == nil || !strings.Contains(err.Error(), "--schedule:") {
		t.Errorf("a window past --time-limit: %v", err)
	}
	// What --nemesis refuses, --schedule refuses: a kind the external
	// cluster has no command for, lose-unsynced there, and kills that
	// overlap where brokers lose unsynced writes.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--runtime", "external", "--bootstrap", "127.0.0.1:1", "--schedule", "partition@1s+2s", "--time-limit", "5s"}, "partition cannot run on this external cluster"},
		{[]string{"--runtime", "external", "--bootstrap", "127.0.0.1:1", "--node", "a=127.0.0.1:1", "--kill-cmd", "true", "--start-cmd", "true",
			"--schedule", "lose-unsynced@1s+2s", "--time-limit", "5s"}, "only chaos's own brokers keep unsynced writes"},
		{[]string{"--schedule", "partition+kill@1s+2s,lose-unsynced@4s+1s", "--time-limit", "6s"}, "while brokers lose unsynced writes or disks are damaged: not supported"},
	} {
		if _, err := parseRun(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestArgsGiveTheSpec: chaos run's flags for a spec (Args) parse back to
// a spec with the same flags, a given schedule included; for an external
// cluster the brokers' own settings are left out (chaos run refuses them
// there).
func TestArgsGiveTheSpec(t *testing.T) {
	s := DefaultSpec()
	s.Seed, s.Nodes, s.Acks, s.TimeLimit, s.Rate, s.Retries, s.MaxInFlight = 7, 4, 1, 12*time.Second, 80, 3, 2
	s.Settings.Partitions, s.Settings.MinInsyncReplicas, s.Settings.Election = 2, 1, "unclean"
	s.Settings.ReplicaLagTimeMaxMs, s.Settings.SessionTimeoutMs, s.Settings.Bugs = 700, 900, []string{"read-past-hw"}
	w, err := nemesis.ParseSchedule("pause-leader@1s+2s,kill-leader:isr-expand/joined~3ms@5s+1s")
	if err != nil {
		t.Fatal(err)
	}
	s.Windows = w
	args := Args(s)
	got, err := parseRun(t, args...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	if again := Args(got); !slices.Equal(again, args) {
		t.Errorf("args %v\ngive a spec whose args are %v", args, again)
	}
	if got.Settings.SessionTimeoutMs != 900 || got.Windows.String() != w.String() || got.Settings.Bugs[0] != "read-past-hw" {
		t.Errorf("spec %+v", got)
	}
	s.Runtime, s.Settings.Bugs = RuntimeExternal, nil
	ext := strings.Join(Args(s), " ")
	for _, left := range []string{"--session-timeout-ms", "--replica-lag-time-max-ms", "--nodes"} {
		if strings.Contains(ext, left) {
			t.Errorf("external: %s in %s", left, ext)
		}
	}
	if !strings.Contains(ext, "--runtime external") || !strings.Contains(ext, "--min-insync-replicas 1") {
		t.Errorf("external: %s", ext)
	}
}
