package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/history"
	"github.com/chaos-isr/chaos/internal/testbin"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Cleanup()
	os.Exit(code)
}

func chaosBin(t *testing.T) string {
	t.Helper()
	bin, err := testbin.Path()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// runChaos runs the real binary and returns its output and exit code.
func runChaos(t *testing.T, args ...string) (string, int) {
	t.Helper()
	return runChaosIn(t, "", 0, args...)
}

// runChaosIn runs the real binary in dir (the test's own when empty),
// killed after timeout (none when 0), and returns its output and exit
// code: -1, with a note in the output, when it was killed.
func runChaosIn(t *testing.T, dir string, timeout time.Duration, args ...string) (string, int) {
	t.Helper()
	ctx := context.Background()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, chaosBin(t), args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0
	case ctx.Err() != nil:
		return out.String() + fmt.Sprintf("\n(killed after %s)", timeout), -1
	case errors.As(err, &ee):
		return out.String(), ee.ExitCode()
	default:
		t.Fatalf("chaos %v: %v", args, err)
		return "", -1
	}
}

// TestRunHealthyThenTamper is the acceptance in one go: a healthy
// 30 s run is valid with thousands of operations and every acknowledged
// value in the final read; then the stored history, altered by hand in
// three ways, makes "chaos check" exit 1 naming the anomaly.
func TestRunHealthyThenTamper(t *testing.T) {
	store := t.TempDir()
	out, code := runChaos(t, "run", "--store", store, "--time-limit", "30s", "--quiet", "--seed", "7")
	if code != 0 {
		t.Fatalf("healthy run exited %d:\n%s", code, out)
	}
	if !strings.Contains(out, "verdict: VALID") || !strings.Contains(out, "seed 7") {
		t.Fatalf("run output lacks the verdict or the seed:\n%s", out)
	}
	dir, err := filepath.EvalSymlinks(filepath.Join(store, "latest"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"history.jsonl", "test.json", "results.json", "cluster/broker-1.log"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("run directory lacks %s: %v", f, err)
		}
	}
	ops, err := history.ReadFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	acked := map[string]bool{}
	final := map[string]bool{}
	for _, op := range ops {
		switch {
		case op.F == history.Send && op.Type == history.OK:
			acked[op.Value.Value] = true
		case op.F == history.FinalRead && op.Type == history.OK:
			for _, r := range op.Value.Records {
				final[r.Value] = true
			}
		}
	}
	if len(ops) < 2000 || len(acked) < 1000 {
		t.Fatalf("only %d operations, %d acknowledged sends in 30 s", len(ops), len(acked))
	}
	for v := range acked {
		if !final[v] {
			t.Fatalf("acknowledged %s missing from the final read", v)
		}
	}
	t.Logf("%d operations, %d acknowledged sends, all in the final read", len(ops), len(acked))

	for _, tc := range []struct {
		name    string
		anomaly string
		tamper  func(rs []history.Record) []history.Record
	}{
		{"remove an acknowledged record", "lost-write", func(rs []history.Record) []history.Record {
			return append(rs[:3:3], rs[4:]...)
		}},
		{"duplicate a value", "duplicate", func(rs []history.Record) []history.Record {
			return append(rs, history.Record{Offset: rs[len(rs)-1].Offset + 1, Value: rs[2].Value})
		}},
		{"change an offset's value", "inconsistent-offsets", func(rs []history.Record) []history.Record {
			rs[3].Value = rs[3].Value + "-changed"
			return rs
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tdir := t.TempDir()
			data, _ := os.ReadFile(filepath.Join(dir, "test.json"))
			os.WriteFile(filepath.Join(tdir, "test.json"), data, 0o644)
			var lines []string
			done := false
			for _, op := range ops {
				if !done && op.F == history.FinalRead && op.Type == history.OK && len(op.Value.Records) > 5 {
					v := *op.Value
					v.Records = tc.tamper(append([]history.Record(nil), v.Records...))
					op.Value = &v
					done = true
				}
				b, _ := json.Marshal(op)
				lines = append(lines, string(b))
			}
			if !done {
				t.Fatal("no final read long enough to tamper with")
			}
			os.WriteFile(filepath.Join(tdir, "history.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
			out, code := runChaos(t, "check", tdir)
			if code != 1 || !strings.Contains(out, "INVALID") || !strings.Contains(out, tc.anomaly) {
				t.Fatalf("check exited %d, want 1 naming %s:\n%s", code, tc.anomaly, out)
			}
		})
	}
}

func TestRefusesBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--acks", "2"},
		{"run", "--nemesis", "meteor"},
		{"run", "--replication-factor", "5", "--nodes", "3"},
		{"run", "--min-insync-replicas", "4"},
		{"run", "--election", "maybe"},
		{"run", "--no-such-flag"},
		{"check", "/does/not/exist"},
		{"cluster", "up", "--nodes", "0"},
	} {
		out, code := runChaos(t, args...)
		if code == 0 || !strings.Contains(out, "chaos:") {
			t.Errorf("chaos %v exited %d without a reason:\n%s", args, code, out)
		}
	}
}

// TestKilledRunLeavesPrefixAndNoOrphans: SIGKILL of "chaos run" mid-test
// leaves a readable history prefix and no broker or controller behind.
func TestKilledRunLeavesPrefixAndNoOrphans(t *testing.T) {
	store := t.TempDir()
	cmd := exec.Command(chaosBin(t), "run", "--store", store, "--time-limit", "60s", "--quiet")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	hist := ""
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if dir, err := filepath.EvalSymlinks(filepath.Join(store, "latest")); err == nil {
			if fi, err := os.Stat(filepath.Join(dir, "history.jsonl")); err == nil && fi.Size() > 50_000 {
				hist = filepath.Join(dir, "history.jsonl")
				break
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if hist == "" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the run wrote no history within 30s")
	}
	cmd.Process.Kill()
	cmd.Wait()
	// The children die with their parent (PR_SET_PDEATHSIG); give the
	// kernel a moment to deliver it.
	var left []string
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		left = processesMentioning(t, store)
		if len(left) == 0 {
			break
		}
	}
	if len(left) > 0 {
		t.Fatalf("processes left behind after the tester was killed:\n%s", strings.Join(left, "\n"))
	}
	ops, err := history.ReadFile(hist)
	if err != nil && !errors.Is(err, history.ErrTornTail) {
		t.Fatalf("history prefix unreadable: %v", err)
	}
	if len(ops) < 100 {
		t.Fatalf("only %d operations in the prefix", len(ops))
	}
}

// processesMentioning lists the command lines of live processes that
// contain s.
func processesMentioning(t *testing.T, s string) []string {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(data) == 0 {
			continue
		}
		line := strings.ReplaceAll(string(data), "\x00", " ")
		if strings.Contains(line, s) {
			out = append(out, e.Name()+": "+line)
		}
	}
	return out
}

// TestCheckRefusesWhatRunRefuses: chaos check applies chaos run's rules to
// the configuration it is told, so a configuration no run could have is
// refused with the reason, not judged (issue 17: --faults kil was classed
// F1, min.insync.replicas 5 of 3 was accepted). A run whose nemesis could
// never fire is refused before it starts, and an empty history is unknown.
func TestCheckRefusesWhatRunRefuses(t *testing.T) {
	dir := t.TempDir()
	hist := filepath.Join(dir, "h.jsonl")
	w, err := history.Create(hist)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []history.Op{
		{Process: 0, Type: history.Invoke, F: history.Send, Value: &history.Value{Topic: "t", Value: "a"}},
		{Process: 0, Type: history.OK, F: history.Send, Value: &history.Value{Topic: "t", Value: "a", Offset: history.Int64(0)}},
	} {
		if _, err := w.Append(op); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"check", hist, "--faults", "kil"}, `--faults: not a fault list, got "kil"`},
		{[]string{"check", hist, "--min-insync-replicas", "5", "--replication-factor", "3"}, "--min-insync-replicas: above the replication factor 3"},
		{[]string{"check", hist, "--acks", "2"}, "--acks"},
		{[]string{"check", hist, "--fsync", "sometimes"}, "--fsync"},
		{[]string{"run", "--min-insync-replicas", "5"}, "5"},
		{[]string{"run", "--nemesis", "kill", "--nemesis-interval", "10s", "--time-limit", "5s", "--store", dir}, "no fault window fits"},
		{[]string{"run", "--nemesis", "kill,pause", "--nemesis-interval", "10s", "--time-limit", "30s", "--store", dir}, "--time-limit 55s or more"},
		{[]string{"run", "--nemesis", "kill,pause", "--time-limit", "3s", "--store", dir}, "--time-limit 5.5s or more"},
	} {
		out, code := runChaos(t, c.args...)
		if code != exitErrorCode || !strings.Contains(out, c.want) {
			t.Errorf("chaos %v exited %d, want %d naming %q:\n%s", c.args, code, exitErrorCode, c.want, out)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("a refused run left files in the store: %v", entries)
	}
	empty := filepath.Join(dir, "empty.jsonl")
	if err := os.WriteFile(empty, []byte(`{"history":"chaos","version":1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := runChaos(t, "check", empty)
	if code != exitUnknown || !strings.Contains(out, "holds no operations") || !strings.Contains(out, "verdict: UNKNOWN") {
		t.Errorf("an empty history exited %d:\n%s", code, out)
	}
}

// TestClosedStdoutKeepsResults: chaos run piped into head, whose reader is
// gone after the first line, still writes results.json and the report and
// exits with its verdict's code (before, SIGPIPE killed it at the next
// line it printed).
func TestClosedStdoutKeepsResults(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	script := fmt.Sprintf(`%q run --store %q --time-limit 5s --seed 7 --nemesis kill --nemesis-interval 2s | head -n 1; echo "chaos exit ${PIPESTATUS[0]}"`, chaosBin(t), store)
	out, err := exec.Command("bash", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if !strings.Contains(string(out), "chaos exit 0") {
		t.Errorf("chaos run | head: %s\nwant exit 0 (a valid run)", out)
	}
	for _, f := range []string{"results.json", "report.html"} {
		if _, err := os.Stat(filepath.Join(store, "latest", f)); err != nil {
			t.Errorf("chaos run | head: %v", err)
		}
	}
}
