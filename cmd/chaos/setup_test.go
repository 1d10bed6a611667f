package main

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/cluster"
)

// background is a chaos process whose output a test reads line by line.
type background struct {
	t     *testing.T
	cmd   *exec.Cmd
	lines chan string
	out   []string
}

// startChaos starts the chaos binary with args (and extra environment) and
// kills it when the test ends, if it still runs.
func startChaos(t *testing.T, env []string, args ...string) *background {
	t.Helper()
	cmd := exec.Command(chaosBin(t), args...)
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	b := &background{t: t, cmd: cmd, lines: make(chan string, 1000)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			b.lines <- sc.Text()
		}
		close(b.lines)
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return b
}

// waitFor reads lines until one starts with prefix and returns it; it
// fails the test if the process ends or timeout passes first.
func (b *background) waitFor(prefix string, timeout time.Duration) string {
	b.t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case l, ok := <-b.lines:
			if !ok {
				b.t.Fatalf("chaos %v ended before printing %q:\n%s", b.cmd.Args[1:], prefix, b.output())
			}
			b.out = append(b.out, l)
			if strings.HasPrefix(l, prefix) {
				return l
			}
		case <-deadline:
			b.t.Fatalf("chaos %v printed no %q within %s:\n%s", b.cmd.Args[1:], prefix, timeout, b.output())
		}
	}
}

// wait reads the rest of the output and waits for the exit code.
func (b *background) wait() int {
	for l := range b.lines {
		b.out = append(b.out, l)
	}
	_ = b.cmd.Wait()
	return b.cmd.ProcessState.ExitCode()
}

func (b *background) output() string { return strings.Join(b.out, "\n") }

// dataDir is the directory "cluster up" said its data and logs are in.
func dataDir(t *testing.T, line string) string {
	t.Helper()
	rest, ok := strings.CutPrefix(line, "data and node logs: ")
	if !ok {
		t.Fatalf("not a data directory line: %q", line)
	}
	dir, _, _ := strings.Cut(rest, " ")
	return dir
}

// holdPort listens on 127.0.0.1:port for the rest of the test: another
// process on a port a cluster is told to use.
func holdPort(t *testing.T, port int) {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
}

func freeBase(t *testing.T, nodes int) int {
	t.Helper()
	base, err := cluster.FreeBasePort("127.0.0.1", nodes)
	if err != nil {
		t.Fatal(err)
	}
	return base
}

// TestRunBusyPort: a run told to use a port another process holds ends at
// once in an error naming the port and the cause, with no verdict, and
// keeps the node log that says why. (Before, the broker that could not
// bind went unnoticed and the run failed after 30 s to create its topic,
// or, with a cluster on those ports, judged that cluster.)
func TestRunBusyPort(t *testing.T) {
	base := freeBase(t, 3)
	holdPort(t, base+1) // broker-2's
	store := t.TempDir()
	start := time.Now()
	out, code := runChaos(t, "run", "--store", store, "--base-port", strconv.Itoa(base), "--time-limit", "10s", "--quiet")
	took := time.Since(start)
	busy := "127.0.0.1:" + strconv.Itoa(base+1) + " (broker-2) is already in use by another process"
	if code != exitErrorCode || !strings.Contains(out, busy) || strings.Contains(out, "verdict") {
		t.Fatalf("exit %d after %s; want exit %d naming %q and no verdict:\n%s", code, took, exitErrorCode, busy, out)
	}
	if took > 10*time.Second {
		t.Errorf("the busy port was reported after %s; it should be at once", took)
	}
	_, logs, ok := strings.Cut(out, "node logs in ")
	logs, _, _ = strings.Cut(logs, ")")
	if data, err := os.ReadFile(filepath.Join(logs, "broker-2.log")); !ok || err != nil || !strings.Contains(string(data), "address already in use") {
		t.Fatalf("the run does not keep broker-2's log saying why (%v):\n%s", err, out)
	}
}

// TestRunForeignCluster: a run told to use the ports of a chaos cluster
// started separately (another cluster id, min.insync.replicas 1 where the
// run asks for 2) must not test that cluster: its own nodes cannot bind,
// and it ends in an error naming the cause, never a verdict. (Before, it
// drove the other cluster and said VALID.)
func TestRunForeignCluster(t *testing.T) {
	base := freeBase(t, 3)
	foreign := startChaos(t, nil, "cluster", "up", "--base-port", strconv.Itoa(base), "--min-insync-replicas", "1", "--data", t.TempDir())
	foreign.waitFor("ready", 30*time.Second)
	out, code := runChaos(t, "run", "--store", t.TempDir(), "--base-port", strconv.Itoa(base), "--time-limit", "5s", "--quiet")
	if code != exitErrorCode || strings.Contains(out, "verdict") || !strings.Contains(out, "is another cluster on these ports?") {
		t.Fatalf("a run on a foreign cluster's ports exited %d; want %d, the cause and no verdict:\n%s", code, exitErrorCode, out)
	}
	_ = foreign.cmd.Process.Signal(syscall.SIGTERM)
	if code := foreign.wait(); code != 0 {
		t.Errorf("the foreign cluster exited %d:\n%s", code, foreign.output())
	}
}

// TestClusterUpBusyPort: "cluster up" on a port another process holds
// fails at once with the reason, never says ready, and keeps its
// temporary data directory with the node logs, saying where.
func TestClusterUpBusyPort(t *testing.T) {
	base := freeBase(t, 3)
	holdPort(t, base+2) // broker-3's
	tmp := t.TempDir()
	up := startChaos(t, []string{"TMPDIR=" + tmp}, "cluster", "up", "--base-port", strconv.Itoa(base))
	start := time.Now()
	dir := dataDir(t, up.waitFor("data and node logs: ", 10*time.Second))
	code := up.wait()
	took := time.Since(start)
	out := up.output()
	busy := "127.0.0.1:" + strconv.Itoa(base+2) + " (broker-3) is already in use by another process"
	if code != exitErrorCode || !strings.Contains(out, busy) || strings.Contains("\n"+out, "\nready") {
		t.Fatalf("exit %d; want %d naming %q, and no ready:\n%s", code, exitErrorCode, busy, out)
	}
	if took > 5*time.Second {
		t.Errorf("cluster up failed after %s; it should be at once", took)
	}
	if !strings.Contains(out, "node logs kept in "+dir) || !strings.HasPrefix(dir, tmp) {
		t.Errorf("cluster up does not say where it kept the logs (%s):\n%s", dir, out)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "broker-3.log")); err != nil || !strings.Contains(string(data), "address already in use") {
		t.Fatalf("broker-3's log was not kept: %v %q", err, data)
	}
}

// TestClusterCleanRemovesLeftoverDataDirs: "cluster up" killed with
// SIGKILL cannot remove its temporary data directory; "cluster clean"
// does, and never removes the directory of a cluster still up.
func TestClusterCleanRemovesLeftoverDataDirs(t *testing.T) {
	// Its own temporary directory, and no Docker engine for clean: the test
	// sees only its own leftovers, and leaves other testers' alone.
	env := []string{"TMPDIR=" + t.TempDir(), "DOCKER_HOST=unix:///nonexistent/docker.sock"}
	killed := startChaos(t, env, "cluster", "up", "--base-port", strconv.Itoa(freeBase(t, 3)))
	dead := dataDir(t, killed.waitFor("data and node logs: ", 10*time.Second))
	killed.waitFor("ready", 30*time.Second)
	_ = killed.cmd.Process.Kill()
	killed.wait()
	live := startChaos(t, env, "cluster", "up", "--base-port", strconv.Itoa(freeBase(t, 3)))
	alive := dataDir(t, live.waitFor("data and node logs: ", 10*time.Second))
	live.waitFor("ready", 30*time.Second)
	if _, err := os.Stat(dead); err != nil {
		t.Fatalf("the killed cluster's directory is already gone: %v", err)
	}

	cmd := exec.Command(chaosBin(t), "cluster", "clean")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "removed data directory "+dead+" (owner gone)") {
		t.Fatalf("cluster clean (%v) did not remove %s:\n%s", err, dead, out)
	}
	if _, err := os.Stat(dead); err == nil {
		t.Fatalf("%s is still there", dead)
	}
	if _, err := os.Stat(filepath.Join(alive, "broker-1.log")); err != nil {
		t.Fatalf("cluster clean removed a live cluster's directory: %v\n%s", err, out)
	}
	_ = live.cmd.Process.Signal(syscall.SIGINT)
	if code := live.wait(); code != 0 {
		t.Fatalf("cluster up exited %d on SIGINT:\n%s", code, live.output())
	}
	if _, err := os.Stat(alive); err == nil {
		t.Errorf("cluster up left %s after a clean exit", alive)
	}
}

// TestRefusedExternalRunSaysNothingStored: a run refused before it wrote
// anything (no broker at --bootstrap) removes the run directory it
// printed, and says so, rather than leave the user a path that is not
// there.
func TestRefusedExternalRunSaysNothingStored(t *testing.T) {
	port := freeBase(t, 1)
	store := filepath.Join(t.TempDir(), "store")
	out, code := runChaos(t, "run", "--runtime", "external", "--bootstrap", "127.0.0.1:"+strconv.Itoa(port), "--store", store, "--time-limit", "5s")
	if code != exitErrorCode || strings.Contains(out, "verdict") {
		t.Fatalf("exit %d; want %d and no verdict:\n%s", code, exitErrorCode, out)
	}
	_, printed, ok := strings.Cut(out, "run ")
	printed, _, _ = strings.Cut(printed, "\n")
	if !ok || !strings.Contains(out, "nothing stored: "+printed+" is removed") {
		t.Fatalf("the refusal does not say the printed run directory %q is removed:\n%s", printed, out)
	}
	if _, err := os.Stat(printed); !os.IsNotExist(err) {
		t.Errorf("%s: %v; want it removed", printed, err)
	}
}
