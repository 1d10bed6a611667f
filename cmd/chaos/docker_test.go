package main

import (
	"bufio"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/cluster"
	"github.com/chaos-isr/chaos/internal/dockertest"
	"github.com/chaos-isr/chaos/results"
)

// TestDockerScenarios runs classic scenarios 1 and 4 of GUARANTEES.md with
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
		code, res, out := scenario(t, append(docker, "--time-limit", "30s", "--nemesis", "kill,partition,pause,slow-follower",
			"--nemesis-interval", "5s", "--seed", "4")...)
		if code != 0 || len(res.Unexpected) > 0 {
			t.Fatalf("exit %d, unexpected %v:\n%s", code, res.Unexpected, out)
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
	base, err := cluster.FreeBasePort("127.0.0.1", 2)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(chaosBin(t), "cluster", "up", "--runtime", "docker", "--nodes", "2", "--replication-factor", "2",
		"--base-port", strconv.Itoa(base), "--data", t.TempDir())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var out []string
	timeout := time.After(2 * time.Minute)
wait:
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("cluster up ended before it was ready:\n%s", strings.Join(out, "\n"))
			}
			out = append(out, l)
			if strings.HasPrefix(l, "ready") {
				break wait
			}
		case <-timeout:
			_ = cmd.Process.Kill()
			t.Fatalf("cluster up not ready after 2m:\n%s", strings.Join(out, "\n"))
		}
	}
	// The run's id, from the containers' names: chaos-RUN-controller.
	_, after, ok := strings.Cut(strings.Join(out, "\n"), "container chaos-")
	if !ok {
		t.Fatalf("cluster up does not name the containers:\n%s", strings.Join(out, "\n"))
	}
	run, _, _ := strings.Cut(after, "-")
	run = "chaos-" + run
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	for range lines {
	}
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
		if code != exitErrorCode || !strings.Contains(out, `--runtime: not a runtime, got "podman"; use local or docker`) {
			t.Errorf("chaos %v: exit %d:\n%s", args, code, out)
		}
	}
	out, code := runChaos(t, "campaign", "--runtime", "docker", "--dry-run", "--seed", "1")
	if code != 0 || !strings.Contains(out, "--runtime docker") {
		t.Errorf("a docker campaign does not pass --runtime to its runs (exit %d):\n%s", code, out)
	}
}
