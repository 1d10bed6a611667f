package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/internal/dockertest"
	"github.com/chaos-isr/chaos/results"
)

// TestDockerScenarios runs classic scenarios 1 and 4 of docs/guarantees.md with
// the docker runtime, with the same arguments as TestScenarios: the
// kernel's faults (nftables drops, delays by qdisc) must give the verdicts
// the proxies give. It ends by checking that no image was pulled and that
// nothing is left.
func TestDockerScenarios(t *testing.T) {
	dockertest.Require(t)
	start := time.Now()
	docker := []string{"--runtime", "docker"}
	t.Run("1 acks=1 leader partitioned away loses writes", func(t *testing.T) {
		code, res, out := scenario(t, append(docker, "--time-limit", "25s", "--acks", "1", "--min-insync-replicas", "1",
			"--nemesis", "partition-leader", "--nemesis-interval", "6s", "--seed", "1")...)
		lw := found(res, checker.LostWriteName)
		if code != 0 || lw.Valid != checker.Invalid || !lw.Expected {
			t.Fatalf("exit %d, lost-write %s expected=%v; want a valid run with expected lost writes:\n%s", code, lw.Valid, lw.Expected, out)
		}
	})
	t.Run("4 acks=-1 min.insync=2 clean under F1 has no unexpected anomaly", func(t *testing.T) {
		code, res, out := scenario(t, append(docker, "--time-limit", "30s", "--nemesis", "kill,partition,pause,slow-follower", "--seed", "4")...)
		if code != 0 || len(res.Unexpected) > 0 {
			t.Fatalf("exit %d, unexpected %v:\n%s", code, res.Unexpected, out)
		}
		if len(res.FaultWindows) != 4 || len(res.FaultsNotStarted) > 0 {
			t.Fatalf("fault windows %v, never started %v: want a window of each kind:\n%s", res.FaultWindows, res.FaultsNotStarted, out)
		}
		tc, err := results.ReadTestConfig(strings.TrimSuffix(resultsPath(t, out), "results.json") + "test.json")
		if err != nil {
			t.Fatal(err)
		}
		if tc.Cluster.Runtime != "docker" || tc.Cluster.DelayMechanism == "" || tc.Cluster.DelayMechanism == "proxy" {
			t.Fatalf("test.json says runtime %q, delays by %q", tc.Cluster.Runtime, tc.Cluster.DelayMechanism)
		}
	})
	dockertest.NoLeftovers(t)
	dockertest.NoPulls(t, start)
}

// resultsPath is the results.json path chaos run printed.
func resultsPath(t *testing.T, out string) string {
	for _, l := range strings.Split(out, "\n") {
		if p, ok := strings.CutPrefix(l, "results: "); ok {
			return strings.TrimSpace(p)
		}
	}
	t.Fatalf("chaos run printed no results path:\n%s", out)
	return ""
}

// TestDockerCleanAfterKill: a "cluster up --runtime docker" killed with
// SIGKILL cannot remove its containers; "chaos cluster clean" finds them
// by their labels (their owner is dead) and removes them and the network.
func TestDockerCleanAfterKill(t *testing.T) {
	dockertest.Require(t)
	up := startChaos(t, nil, "cluster", "up", "--runtime", "docker", "--nodes", "2", "--replication-factor", "2",
		"--base-port", strconv.Itoa(freeBase(t, 2)), "--data", t.TempDir())
	up.waitFor("ready", 2*time.Minute)
	// The run's id, from the containers' names: chaos-RUN-controller.
	_, after, ok := strings.Cut(up.output(), "container chaos-")
	if !ok {
		t.Fatalf("cluster up does not name the containers:\n%s", up.output())
	}
	run, _, _ := strings.Cut(after, "-")
	run = "chaos-" + run
	_ = up.cmd.Process.Signal(syscall.SIGKILL)
	up.wait()
	clean, code := runChaos(t, "cluster", "clean")
	if code != 0 {
		t.Fatalf("cluster clean exited %d:\n%s", code, clean)
	}
	// Another test package's docker.Start sweeps the same leftovers; it
	// may have been first, and then clean finds nothing of this run.
	if n := strings.Count(clean, "removed container "+run); n != 3 && n != 0 {
		t.Errorf("cluster clean removed %d of the run's 3 containers:\n%s", n, clean)
	}
	dockertest.NoLeftovers(t)
}

// TestRuntimeRefused: an unknown runtime is refused before anything runs,
// with the reason.
func TestRuntimeRefused(t *testing.T) {
	for _, args := range [][]string{
		{"run", "--runtime", "podman", "--store", t.TempDir()},
		{"cluster", "up", "--runtime", "podman"},
		{"campaign", "--runtime", "podman", "--dry-run"},
	} {
		out, code := runChaos(t, args...)
		if code != exitErrorCode || !strings.Contains(out, `--runtime: not a runtime, got "podman"; use local`) {
			t.Errorf("chaos %v: exit %d:\n%s", args, code, out)
		}
	}
	out, code := runChaos(t, "campaign", "--runtime", "docker", "--dry-run", "--seed", "1")
	if code != 0 || !strings.Contains(out, "--runtime docker") {
		t.Errorf("a docker campaign does not pass --runtime to its runs (exit %d):\n%s", code, out)
	}
}

// TestDockerBusyPort: with the docker runtime too, a host port another
// process holds fails "cluster up" and "run" at once, naming it, with no
// "ready" and no verdict, and leaves no container or network.
func TestDockerBusyPort(t *testing.T) {
	dockertest.Require(t)
	base := freeBase(t, 2)
	holdPort(t, base+1) // broker-2's
	busy := "127.0.0.1:" + strconv.Itoa(base+1) + " (broker-2) is already in use by another process"
	start := time.Now()
	out, code := runChaos(t, "cluster", "up", "--runtime", "docker", "--nodes", "2", "--replication-factor", "2",
		"--base-port", strconv.Itoa(base), "--data", t.TempDir())
	if code != exitErrorCode || !strings.Contains(out, busy) || strings.Contains("\n"+out, "\nready") {
		t.Fatalf("cluster up exited %d; want %d naming %q and no ready:\n%s", code, exitErrorCode, busy, out)
	}
	out, code = runChaos(t, "run", "--runtime", "docker", "--store", t.TempDir(), "--nodes", "2", "--replication-factor", "2",
		"--base-port", strconv.Itoa(base), "--time-limit", "5s", "--quiet")
	if code != exitErrorCode || !strings.Contains(out, busy) || strings.Contains(out, "verdict") {
		t.Fatalf("run exited %d; want %d naming %q and no verdict:\n%s", code, exitErrorCode, busy, out)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("both refusals took %s; they should be at once", took)
	}
	dockertest.NoLeftovers(t)
}

// TestDockerRefusesDynamicBinary: a docker run that cannot start (the
// binary is dynamically linked, so the image could not run it) is refused
// before it creates a run directory: the store stays empty.
func TestDockerRefusesDynamicBinary(t *testing.T) {
	dockertest.Require(t)
	dyn := filepath.Join(t.TempDir(), "chaos")
	build := exec.Command("go", "build", "-o", dyn, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=1")
	if out, err := build.CombinedOutput(); err != nil {
		t.Skipf("no cgo build here: %v\n%s", err, out)
	}
	if f, err := elf.Open(dyn); err != nil || !slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP }) {
		t.Skip("a cgo build here is static; nothing to refuse")
	}
	store := t.TempDir()
	cmd := exec.Command(dyn, "run", "--runtime", "docker", "--store", store, "--time-limit", "5s")
	out, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != exitErrorCode || !strings.Contains(string(out), "is dynamically linked") {
		t.Fatalf("exit %d; want %d saying the binary is dynamically linked:\n%s", code, exitErrorCode, out)
	}
	if left, _ := os.ReadDir(store); len(left) > 0 {
		t.Fatalf("the refused run left %v in the store:\n%s", left, out)
	}
}

// TestDockerRunSecondInterrupt: a second Ctrl-C stops a docker run at
// once, and still removes its containers and network.
func TestDockerRunSecondInterrupt(t *testing.T) {
	dockertest.Require(t)
	run, _ := startRunUntil(t, t.TempDir(), `"type":"ok","f":"send"`, "--runtime", "docker", "--nodes", "2", "--replication-factor", "2", "--time-limit", "60s")
	_ = run.cmd.Process.Signal(syscall.SIGINT)
	time.Sleep(20 * time.Millisecond)
	second := time.Now()
	_ = run.cmd.Process.Signal(syscall.SIGINT)
	code := run.wait()
	if out := run.output(); code != exitInterrupted || !strings.Contains(out, "interrupted again: killing the cluster now") {
		t.Fatalf("exit %d; want %d, stopped by the second interrupt:\n%s", code, exitInterrupted, out)
	}
	t.Logf("stopped %s after the second Ctrl-C", time.Since(second).Round(10*time.Millisecond))
	dockertest.NoLeftovers(t)
}
