package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chaos-isr/chaos/internal/cli"
)

// execValidate executes the chaos command tree in process on args, in a
// validation-only context: a command that accepts its flags and arguments
// returns cli.ErrValidated instead of starting anything.
func execValidate(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.ExecuteContext(cli.ValidateOnly(context.Background()))
	return out.String(), err
}

// TestFlagErrors: every command refuses a bad flag value before starting
// anything, in one style that names the flag, the value and what is
// accepted: "--NAME: WHAT IS WRONG, got VALUE; WHAT IS ACCEPTED".
func TestFlagErrors(t *testing.T) {
	dir := t.TempDir()
	hist := filepath.Join(dir, "history.jsonl")
	if err := os.WriteFile(hist, []byte(`{"history":"chaos","version":1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		flag string // the flag the error must name
		// loose: the error names the flag but predates the style
		// (chaos check's configuration flags, judge.go).
		loose bool
	}{
		{[]string{"run", "--acks", "2"}, "acks", false},
		{[]string{"run", "--rate", "-1"}, "rate", false},
		{[]string{"run", "--rate", "NaN"}, "rate", false},
		{[]string{"run", "--rate", "fast"}, "rate", false},
		{[]string{"run", "--election", "x"}, "election", false},
		{[]string{"run", "--nodes", "0"}, "nodes", false},
		{[]string{"run", "--nodes", "many"}, "nodes", false},
		{[]string{"run", "--replication-factor", "5"}, "replication-factor", false},
		{[]string{"run", "--replication-factor", "0"}, "replication-factor", false},
		{[]string{"run", "--min-insync-replicas", "4"}, "min-insync-replicas", false},
		{[]string{"run", "--min-insync-replicas", "0"}, "min-insync-replicas", false},
		{[]string{"run", "--partitions", "0"}, "partitions", false},
		{[]string{"run", "--concurrency", "0"}, "concurrency", false},
		{[]string{"run", "--max-in-flight", "0"}, "max-in-flight", false},
		{[]string{"sim", "--max-in-flight", "6", "--idempotent"}, "max-in-flight", false},
		{[]string{"run", "--consumers", "-2"}, "consumers", false},
		{[]string{"run", "--time-limit", "0s"}, "time-limit", false},
		{[]string{"run", "--time-limit", "20"}, "time-limit", false},
		{[]string{"run", "--nemesis", "meteor"}, "nemesis", false},
		{[]string{"run", "--nemesis", "kill,meteor"}, "nemesis", false},
		{[]string{"run", "--nemesis", "kill", "--nemesis-interval", "0s"}, "nemesis-interval", false},
		{[]string{"run", "--request-timeout", "0s"}, "request-timeout", false},
		{[]string{"run", "--converge-timeout", "-1s"}, "converge-timeout", false},
		{[]string{"run", "--monitor-interval", "-1s"}, "monitor-interval", false},
		{[]string{"run", "--runtime", "podman"}, "runtime", false},
		{[]string{"run", "--base-port", "1"}, "base-port", false},
		{[]string{"run", "--base-port", "65535"}, "base-port", false},
		{[]string{"run", "--seed", "-1"}, "seed", false},
		{[]string{"run", "--quiet=maybe"}, "quiet", false},
		{[]string{"run", "--bug", "hw-ignores-isr,nope"}, "bug", false},
		{[]string{"sim", "--bug", "nope"}, "bug", false},
		{[]string{"cluster", "up", "--bug", "nope"}, "bug", false},
		{[]string{"run", "--fsync", "sometimes"}, "fsync", false},
		{[]string{"run", "--fsync", "100ms"}, "fsync", false},
		{[]string{"run", "--fsync", "interval:0ms"}, "fsync", false},
		{[]string{"run", "--fsync", "interval:soon"}, "fsync", false},
		{[]string{"run", "--replica-lag-time-max-ms", "0"}, "replica-lag-time-max-ms", false},
		{[]string{"run", "--replica-lag-max-messages", "-1"}, "replica-lag-max-messages", false},
		{[]string{"run", "--replica-fetch-wait-max-ms", "20000"}, "replica-fetch-wait-max-ms", false},
		{[]string{"run", "--replica-fetch-wait-max-ms", "-1"}, "replica-fetch-wait-max-ms", false},
		{[]string{"run", "--heartbeat-interval-ms", "0"}, "heartbeat-interval-ms", false},
		{[]string{"run", "--session-timeout-ms", "0"}, "session-timeout-ms", false},

		{[]string{"campaign", "--acks", "1,2"}, "acks", false},
		{[]string{"campaign", "--min-insync-replicas", "1,x"}, "min-insync-replicas", false},
		{[]string{"campaign", "--min-insync-replicas", "0"}, "min-insync-replicas", false},
		{[]string{"campaign", "--election", "clean,maybe"}, "election", false},
		{[]string{"campaign", "--nemesis", "kill;meteor"}, "nemesis", false},
		{[]string{"campaign", "--nemesis", ";"}, "nemesis", false},
		{[]string{"campaign", "--runs", "0"}, "runs", false},
		{[]string{"campaign", "--time-limit", "0s"}, "time-limit", false},
		{[]string{"campaign", "--nemesis-interval", "-5s"}, "nemesis-interval", false},
		{[]string{"campaign", "--preset", "nope"}, "preset", false},
		{[]string{"campaign", "--spec", filepath.Join(dir, "no-such-spec.json")}, "spec", false},
		{[]string{"campaign", "--spec", hist}, "spec", false},
		{[]string{"campaign", "--runtime", "podman"}, "runtime", false},
		{[]string{"campaign", "--seed", "x"}, "seed", false},
		{[]string{"campaign", "--", "--rate", "x"}, "rate", false},
		{[]string{"campaign", "--fail-on", "never"}, "fail-on", false},
		{[]string{"campaign", "merge", "--fail-on", "never", dir}, "fail-on", false},
		{[]string{"run", "--fail-on", "error"}, "fail-on", false},
		{[]string{"check", hist, "--fail-on", "warning"}, "fail-on", false},

		{[]string{"cluster", "up", "--nodes", "0"}, "nodes", false},
		{[]string{"cluster", "up", "--base-port", "0"}, "base-port", false},
		{[]string{"cluster", "up", "--controller-port", "70000"}, "controller-port", false},
		{[]string{"cluster", "up", "--runtime", "docker", "--controller-port", "9000"}, "controller-port", false},
		{[]string{"cluster", "up", "--runtime", "podman"}, "runtime", false},
		{[]string{"cluster", "up", "--replication-factor", "4"}, "replication-factor", false},
		{[]string{"cluster", "up", "--min-insync-replicas", "4"}, "min-insync-replicas", false},
		{[]string{"cluster", "up", "--election", "x"}, "election", false},
		{[]string{"cluster", "up", "--fsync", "sometimes"}, "fsync", false},
		{[]string{"cluster", "up", "--heartbeat-interval-ms", "0"}, "heartbeat-interval-ms", false},

		{[]string{"broker"}, "data", false},
		{[]string{"broker", "--data", dir, "--id", "-1"}, "id", false},
		{[]string{"broker", "--data", dir, "--listen", "9092"}, "listen", false},
		{[]string{"broker", "--data", dir, "--listen", "127.0.0.1:99999"}, "listen", false},
		{[]string{"broker", "--data", dir, "--advertise", "host"}, "advertise", false},
		{[]string{"broker", "--data", dir, "--controller", "host"}, "controller", false},
		{[]string{"broker", "--data", dir, "--peer-addr", "x=127.0.0.1:1"}, "peer-addr", false},
		{[]string{"broker", "--data", dir, "--peer-addr", "2=nowhere"}, "peer-addr", false},
		{[]string{"broker", "--data", dir, "--peer-addr", "2"}, "peer-addr", false},
		{[]string{"broker", "--data", dir, "--fsync", "sometimes"}, "fsync", false},
		{[]string{"broker", "--data", dir, "--replica-lag-time-max-ms", "0"}, "replica-lag-time-max-ms", false},

		{[]string{"controller"}, "data", false},
		{[]string{"controller", "--data", dir, "--listen", "x"}, "listen", false},
		{[]string{"controller", "--data", dir, "--election", "x"}, "election", false},
		{[]string{"controller", "--data", dir, "--partitions", "0"}, "partitions", false},
		{[]string{"controller", "--data", dir, "--session-timeout-ms", "0"}, "session-timeout-ms", false},
		{[]string{"controller", "--data", dir, "--replication-factor", "1", "--min-insync-replicas", "2"}, "min-insync-replicas", false},

		{[]string{"check", hist, "--acks", "2"}, "acks", false},
		{[]string{"check", hist, "--max-in-flight", "x"}, "max-in-flight", false},
		{[]string{"check", hist, "--linearizable-timeout", "x"}, "linearizable-timeout", false},
		{[]string{"check", hist, "--election", "x"}, "election", false},
		{[]string{"check", hist, "--faults", "kil"}, "faults", false},
		{[]string{"check", hist, "--fsync", "sometimes"}, "fsync", false},
		{[]string{"check", hist, "--min-insync-replicas", "0"}, "min-insync-replicas", false},
		{[]string{"check", hist, "--min-insync-replicas", "5", "--replication-factor", "3"}, "min-insync-replicas", false},
		{[]string{"check", hist, "--replication-factor", "0"}, "replication-factor", false},
		{[]string{"check", hist, "--max-in-flight", "0"}, "max-in-flight", false},

		{[]string{"sim", "--schedule", "kill@5s"}, "schedule", false},
		{[]string{"sim", "--schedule", "nap@3s+4s"}, "schedule", false},
		{[]string{"sim", "--schedule", "kill@3s+40s", "--time-limit", "20s"}, "schedule", false},
		{[]string{"sim", "--schedule", "kill@3s+4s", "--nemesis", "kill"}, "nemesis", false},
		{[]string{"sim", "--shrink"}, "seed", false},
		{[]string{"sim", "--shrink", "--seed", "0"}, "seed", false},
		{[]string{"sim", "--shrink", "--seed", "3", "--seeds", "1-3"}, "seeds", false},
		{[]string{"sim", "--shrink", "--seed", "3", "--runs", "3"}, "runs", false},
		{[]string{"sim", "--shrink", "--seed", "3", "--shrink-runs", "0"}, "shrink-runs", false},
		{[]string{"sim", "--seed", "3", "--shrink-runs", "5"}, "shrink-runs", false},
		{[]string{"sim", "--from", dir}, "from", false},
		{[]string{"sim", "--from", dir, "--acks", "1"}, "from", false},

		{[]string{"report", "store", "--bogus"}, "bogus", false},
		{[]string{"cluster", "clean", "--all=maybe"}, "all", false},

		{[]string{"serve", "--addr", "8080"}, "addr", false},
		{[]string{"serve", "--addr", "0.0.0.0:8080"}, "addr", false},
		{[]string{"serve", "--addr", "127.0.0.1:99999"}, "addr", false},
		{[]string{"serve", "--store", filepath.Join(dir, "no-such-store")}, "store", false},
		{[]string{"serve", "--store", hist}, "store", false},
	}
	leak := regexp.MustCompile(`strconv\.|storage:|\btime: |invalid argument`)
	for _, tc := range tests {
		_, err := execValidate(t, tc.args...)
		if err == nil || errors.Is(err, cli.ErrValidated) {
			t.Errorf("chaos %s: accepted (%v), want a refusal naming --%s", strings.Join(tc.args, " "), err, tc.flag)
			continue
		}
		msg := err.Error()
		t.Logf("chaos %s\n    %s", strings.Join(tc.args, " "), msg)
		// "--NAME: WHAT, got VALUE; ACCEPTED", "--NAME: missing; ..." for
		// a required flag or "--NAME: no such flag for ...", possibly
		// after a campaign's "flags for chaos run: ".
		style := regexp.MustCompile(`(^|: )--` + regexp.QuoteMeta(tc.flag) + `: (missing|no such flag for .+|.+, got .+); .+`)
		if tc.loose {
			style = regexp.MustCompile(`--` + regexp.QuoteMeta(tc.flag) + `\b`)
		}
		if !style.MatchString(msg) {
			t.Errorf("chaos %s:\n  %s\nwant it to name --%s in the style --NAME: WHAT IS WRONG, got VALUE; WHAT IS ACCEPTED", strings.Join(tc.args, " "), msg, tc.flag)
		}
		if leak.MatchString(msg) {
			t.Errorf("chaos %s: %s\nleaks an internal package's wording", strings.Join(tc.args, " "), msg)
		}
	}
}

// TestFlagErrorsAcceptGoodValues: the same validation path accepts what the
// README and the help document, so TestFlagErrors's refusals are not
// refusals of everything.
func TestFlagErrorsAcceptGoodValues(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"run", "--acks", "all", "--rate", "0", "--fsync", "interval:100ms", "--nemesis", "kill,pause", "--nemesis-interval", "5s"},
		{"run", "--fsync", "interval", "--monitor-interval", "0", "--nodes", "5", "--replication-factor", "5", "--min-insync-replicas", "3"},
		{"run", "--fsync", "always", "--base-port", "20000", "--election", "unclean"},
		{"campaign", "--acks", "0,1,all", "--min-insync-replicas", "1,2", "--election", "clean,unclean", "--nemesis", "kill-leader;pause,slow-follower"},
		{"cluster", "up", "--fsync", "never", "--nodes", "1", "--replication-factor", "1"},
		{"broker", "--data", dir, "--peer-addr", "2=127.0.0.1:9093", "--advertise", "localhost:9092"},
		{"controller", "--data", dir, "--election", "unclean"},
		{"serve", "--store", dir, "--addr", "localhost:0"},
		{"cluster", "clean"},
		{"sim", "--schedule", "kill@5s+4s,partition@12s+5s", "--time-limit", "30s", "--store", dir},
		{"sim", "--nemesis", "kill", "--seed", "3", "--shrink", "--shrink-runs", "10", "--store", dir},
		{"sim", "--retries", "5", "--idempotent", "--max-in-flight", "5", "--store", dir},
		{"run", "--max-in-flight", "8", "--store", dir},
		{"run", "--fail-on", "invalid", "--store", dir},
		{"campaign", "--preset", "smoke", "--fail-on", "invalid"},
	} {
		if _, err := execValidate(t, args...); !errors.Is(err, cli.ErrValidated) {
			t.Errorf("chaos %s: %v, want it accepted", strings.Join(args, " "), err)
		}
	}
}
