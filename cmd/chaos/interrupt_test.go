package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/history"
)

// startRunUntil starts "chaos run" with args and waits until its history
// holds want; it returns the run and the history's path.
func startRunUntil(t *testing.T, store, want string, args ...string) (*background, string) {
	t.Helper()
	b := startChaos(t, nil, append([]string{"run", "--store", store, "--quiet"}, args...)...)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if dir, err := filepath.EvalSymlinks(filepath.Join(store, "latest")); err == nil {
			hist := filepath.Join(dir, "history.jsonl")
			if data, err := os.ReadFile(hist); err == nil && strings.Contains(string(data), want) {
				return b, hist
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = b.cmd.Process.Kill()
	b.wait()
	t.Fatalf("the run's history has no %s after 60s:\n%s", want, b.output())
	return nil, ""
}

// noProcessesLeft fails t if a process still mentions s a few seconds on.
func noProcessesLeft(t *testing.T, s string) {
	t.Helper()
	var left []string
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if left = processesMentioning(t, s); len(left) == 0 {
			return
		}
	}
	t.Fatalf("processes left behind:\n%s", strings.Join(left, "\n"))
}

// TestRunInterruptWhilePaused: Ctrl-C while a majority of the brokers is
// paused says what it does, stops within a second or two (a paused broker
// used to hold the run for a whole request timeout, 6 s), records the
// fault window's end, and leaves no process behind.
func TestRunInterruptWhilePaused(t *testing.T) {
	store := t.TempDir()
	run, hist := startRunUntil(t, store, `"type":"info","f":"start-pause-majority"`,
		"--time-limit", "60s", "--nemesis", "pause-majority", "--nemesis-interval", "3s")
	time.Sleep(300 * time.Millisecond) // requests are now waiting on the paused brokers
	start := time.Now()
	_ = run.cmd.Process.Signal(syscall.SIGINT)
	code := run.wait()
	took := time.Since(start)
	out := run.output()
	if code != exitInterrupted || !strings.Contains(out, "interrupted: healing faults and stopping the cluster; Ctrl-C again to stop now") {
		t.Fatalf("exit %d; want %d and what the interrupt does:\n%s", code, exitInterrupted, out)
	}
	t.Logf("stopped %s after Ctrl-C", took.Round(10*time.Millisecond))
	if took > 3*time.Second {
		t.Errorf("Ctrl-C took %s to stop the run", took)
	}
	ops, err := history.ReadFile(hist)
	if err != nil {
		t.Fatal(err)
	}
	var nem []history.Op
	for _, op := range ops {
		if op.Process == history.NemesisProcess {
			nem = append(nem, op)
		}
	}
	if len(nem) < 4 || nem[len(nem)-1].F != "stop-pause-majority" || nem[len(nem)-1].Type != history.Info {
		t.Fatalf("the window's end is not in the history: %+v", nem)
	}
	if _, err := history.Pairs(ops); err != nil {
		t.Fatalf("the interrupted history does not pair: %v", err)
	}
	noProcessesLeft(t, store)
}

// TestRunSecondInterrupt: a second Ctrl-C stops the run at once, and its
// brokers with it.
func TestRunSecondInterrupt(t *testing.T) {
	store := t.TempDir()
	run, _ := startRunUntil(t, store, `"type":"ok","f":"send"`, "--time-limit", "60s")
	// A broker stopped behind the run's back does not answer the orderly
	// stop's SIGTERM, so the first Ctrl-C's cleanup waits for it: the
	// second Ctrl-C always lands while there is something to cut short
	// (a fast cleanup finished within 20 ms on a quiet machine).
	stopped := false
	for _, p := range processesMentioning(t, store) {
		if pid, err := strconv.Atoi(p[:strings.Index(p, ":")]); err == nil && strings.Contains(p, " broker ") {
			_ = syscall.Kill(pid, syscall.SIGSTOP)
			stopped = true
			break
		}
	}
	if !stopped {
		t.Fatal("no broker of the run found to stop")
	}
	start := time.Now()
	_ = run.cmd.Process.Signal(syscall.SIGINT)
	time.Sleep(200 * time.Millisecond)
	_ = run.cmd.Process.Signal(syscall.SIGINT)
	code := run.wait()
	if out := run.output(); code != exitInterrupted || !strings.Contains(out, "interrupted again: killing the cluster now") {
		t.Fatalf("exit %d after %s; want %d, stopped by the second interrupt:\n%s", code, time.Since(start), exitInterrupted, out)
	}
	noProcessesLeft(t, store)
}

// TestClusterUpInterrupt: cluster up says what Ctrl-C does and stops (exit
// 0). With a broker that does not answer SIGTERM (stopped by the test
// behind the cluster's back, so the first Ctrl-C waits 2 s for it), a
// second Ctrl-C stops it at once (exit 130). Neither leaves a node behind.
func TestClusterUpInterrupt(t *testing.T) {
	for _, twice := range []bool{false, true} {
		data := t.TempDir()
		up := startChaos(t, nil, "cluster", "up", "--base-port", strconv.Itoa(freeBase(t, 3)), "--data", data)
		broker := up.waitFor("1   broker", 30*time.Second)
		up.waitFor("ready", 30*time.Second)
		want := exitValid
		if twice {
			pid, err := strconv.Atoi(strings.TrimSpace(broker[strings.LastIndex(broker, "pid ")+4:]))
			if err != nil {
				t.Fatalf("no pid in %q", broker)
			}
			_ = syscall.Kill(pid, syscall.SIGSTOP)
			want = exitInterrupted
		}
		_ = up.cmd.Process.Signal(syscall.SIGINT)
		var second time.Time
		if twice {
			time.Sleep(200 * time.Millisecond)
			second = time.Now()
			_ = up.cmd.Process.Signal(syscall.SIGINT)
		}
		code := up.wait()
		out := up.output()
		if code != want || !strings.Contains(out, "interrupted: stopping the cluster; Ctrl-C again to stop now") ||
			twice != strings.Contains(out, "interrupted again: killing the cluster now") {
			t.Fatalf("interrupted twice=%v: exit %d, want %d:\n%s", twice, code, want, out)
		}
		if twice && time.Since(second) > time.Second {
			t.Errorf("the second Ctrl-C took %s to stop cluster up", time.Since(second))
		}
		noProcessesLeft(t, data)
	}
}
