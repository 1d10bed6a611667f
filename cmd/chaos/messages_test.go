package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaos-isr/chaos/internal/cli"
)

// TestMessagesSayWhatToDo: a refusal names what the user can type
// instead: every runtime the command takes, the flag (not a field of the
// spec), the nearest of the names it knows for a misspelt flag, runtime,
// fault or bug, and for a path that is not there, what the command reads.
func TestMessagesSayWhatToDo(t *testing.T) {
	tests := []struct {
		args []string
		want []string // each must appear
		not  []string // none may
	}{
		{[]string{"run", "--runtime", "extrnal"}, []string{"--runtime: not a runtime", "external", "did you mean external?"}, nil},
		{[]string{"run", "--runtime", "dokcer"}, []string{"did you mean docker?"}, nil},
		{[]string{"cluster", "up", "--runtime", "lcoal"}, []string{"did you mean local?"}, []string{"external"}},
		{[]string{"sim", "--runtime", "local"}, []string{"chaos run", "external"}, []string{"runs local and docker"}},
		{[]string{"sim", "--nemesis-overlap", "5"}, []string{"--nemesis-overlap: out of range, got 5"}, []string{"nemesis_overlap"}},
		{[]string{"run", "--nemesis-overlap", "-1"}, []string{"--nemesis-overlap"}, []string{"nemesis_overlap"}},
		{[]string{"run", "--time-limt", "5s"}, []string{"--time-limt: no such flag for chaos run (did you mean --time-limit?)"}, nil},
		{[]string{"sim", "--nemsis", "kill"}, []string{"(did you mean --nemesis?)"}, nil},
		{[]string{"campaign", "--presett", "seed"}, []string{"(did you mean --preset?)"}, nil},
		{[]string{"run", "--zzzz"}, []string{"no such flag for chaos run;"}, []string{"did you mean"}},
		{[]string{"run", "--nemesis", "partition-leadr"}, []string{"did you mean partition-leader?"}, nil},
		{[]string{"sim", "--bug", "read-past-h"}, []string{"did you mean read-past-hw?"}, nil},
		{[]string{"run", "--runtime", "external", "--bootstrap", "127.0.0.1:1", "--nemesis", "kill", "--kill-cmd", "true", "--start-cmd", "true"},
			[]string{"needs the brokers named"}, []string{"need its"}},
		{[]string{"hunt", "--runtime", "lcoal"}, []string{"--runtime: not a runtime", "sim: the simulation", "external", "did you mean local?"}, nil},
		{[]string{"hunt", "--runtime", "local", "--time", "1m", "--shrink-runs", "5"}, []string{"--shrink-runs: with --runtime local", "does not replay"}, nil},
		{[]string{"hunt", "--runtime", "external"}, []string{"--bootstrap: missing"}, nil},
		{[]string{"hunt", "--runtime", "external", "--bootstrap", "127.0.0.1:1", "--time", "1m"}, []string{"no fault kind can be applied", "--node NAME=HOST:PORT"}, nil},
		{[]string{"hunt", "--runtime", "external", "--bootstrap", "127.0.0.1:1", "--time", "1m", "--topic", "t"}, []string{"--topic: given to a hunt"}, nil},
		{[]string{"hunt", "--bootstrap", "127.0.0.1:1"}, []string{"not external, but the external runtime's flags were given"}, nil},
		{[]string{"run", "--schedule", "kill@1s+1s", "--nemesis", "kill"}, []string{"--nemesis: given with --schedule"}, nil},
		{[]string{"hunt", "--runtime", "local"}, []string{"--time: missing with --runtime local", "--time 10m"}, nil},
		{[]string{"hunt", "--runtime", "external", "--bootstrap", "127.0.0.1:1", "--node", "a=127.0.0.1:1", "--kill-cmd", "true", "--start-cmd", "true", "--nemesis", "kill,partition", "--time", "1m"},
			[]string{"--nemesis: cannot be drawn on this cluster", "partition", "--partition-cmd"}, nil},
	}
	for _, tc := range tests {
		_, err := execValidate(t, tc.args...)
		if err == nil || errors.Is(err, cli.ErrValidated) {
			t.Errorf("chaos %s: accepted (%v), want a refusal", strings.Join(tc.args, " "), err)
			continue
		}
		msg := err.Error()
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("chaos %s:\n  %s\nwant %q in it", strings.Join(tc.args, " "), msg, w)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(msg, n) {
				t.Errorf("chaos %s:\n  %s\nwant no %q in it", strings.Join(tc.args, " "), msg, n)
			}
		}
	}
}

// TestReportMissingPath: chaos report of a path that is not there says
// what it reads and which runs there are, not a bare stat error.
func TestReportMissingPath(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "store", "t", "20260101T000000.000Z")
	if err := os.MkdirAll(run, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"test.json", "history.jsonl"} {
		if err := os.WriteFile(filepath.Join(run, f), []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := execValidate(t, "report", filepath.Join(dir, "store", "nope"))
	if err == nil {
		t.Fatal("chaos report of a missing path: no error")
	}
	msg := err.Error()
	for _, w := range []string{"PATH: no such file or directory", "run, campaign or hunt directories"} {
		if !strings.Contains(msg, w) {
			t.Errorf("chaos report: %s\nwant %q in it", msg, w)
		}
	}
	if strings.HasPrefix(msg, "stat ") {
		t.Errorf("chaos report: %s: a bare stat error", msg)
	}
}
