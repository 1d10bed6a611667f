package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckPathErrors: chaos check given no PATH, a store or test
// directory, a campaign directory, or a file that is not a history says
// what PATH is and names runs it could have meant, instead of cobra's
// "accepts 1 arg(s)" or a JSON error about test.json's first line.
func TestCheckPathErrors(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	run := filepath.Join(store, "acks-1_isr2_clean_none", "20260101T000000.000Z")
	camp := filepath.Join(store, "campaigns", "20260101T000100.000Z")
	for _, d := range []string{run, camp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path, data string) {
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(run, "history.jsonl"), `{"history":"chaos","version":1}`+"\n")
	write(filepath.Join(run, "test.json"), `{"name": "acks-1_isr2_clean_none", "cluster": {"replication_factor": 3, "min_insync_replicas": 2}, "workload": {"acks": -1}}`+"\n")
	write(filepath.Join(camp, "campaign.json"), "{\n}\n")
	write(filepath.Join(store, "notes.txt"), "a line\nanother\n")
	for link, target := range map[string]string{
		filepath.Join(store, "latest"):                           filepath.Join("acks-1_isr2_clean_none", "20260101T000000.000Z"),
		filepath.Join(store, "acks-1_isr2_clean_none", "latest"): "20260101T000000.000Z",
	} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	latest := filepath.Join(store, "latest")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"PATH: missing", "a run directory", "e.g. chaos check store/latest"}},
		{[]string{run, run}, []string{"PATH: one at a time, got 2"}},
		{[]string{store}, []string{"PATH: not a run directory (no history.jsonl in it)", "runs found here: " + latest + ", ", "e.g. chaos check " + latest}},
		{[]string{filepath.Dir(run)}, []string{"not a run directory", "runs found here: " + filepath.Join(filepath.Dir(run), "latest") + ", " + run}},
		{[]string{camp}, []string{"a campaign directory, not a run", "e.g. chaos check " + latest}},
		{[]string{filepath.Join(store, "no-such-run")}, []string{"PATH: no such file or directory", "e.g. chaos check " + latest}},
		{[]string{filepath.Join(latest, "test.json")}, []string{"not a history but a run's configuration (test.json)", "pass the run directory: chaos check " + latest}},
		{[]string{filepath.Join(store, "notes.txt")}, []string{"PATH: not a history (history line 1:", "a run directory"}},
	} {
		_, err := execValidate(t, append([]string{"check"}, tc.args...)...)
		if err == nil {
			t.Errorf("chaos check %v: accepted", tc.args)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("chaos check %v:\n  %v\nlacks %q", tc.args, err, w)
			}
		}
	}
	// A real history is still judged: this one holds no operations, so
	// its verdict is unknown (exit 2), not an error about the path.
	var ee *exitError
	if _, err := execValidate(t, "check", latest); !errors.As(err, &ee) || ee.code != exitUnknown {
		t.Errorf("chaos check %s: %v", latest, err)
	}
}
