package main

import (
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestClusterControl: faults injected from another process into a running
// "cluster up --network-faults", as a user's second shell or an external
// runtime's fault commands do: a killed broker's port refuses connections
// and accepts again once it is started, pause, resume, partition and heal
// succeed, and an unknown node or a data directory without a cluster exit
// 3 saying so.
func TestClusterControl(t *testing.T) {
	base := freeBase(t, 3)
	data := t.TempDir()
	up := startChaos(t, nil, "cluster", "up", "--network-faults", "--data", data, "--base-port", strconv.Itoa(base))
	up.waitFor("ready", 30*time.Second)
	ctl := up.waitFor("control: ", 5*time.Second)
	if !strings.Contains(ctl, "partition NODE PEER...") || !strings.Contains(ctl, "--data "+data) {
		t.Errorf("the control line does not say how to reach the cluster: %q", ctl)
	}
	broker2 := net.JoinHostPort("127.0.0.1", strconv.Itoa(base+1))
	ctl2 := func(want string, args ...string) {
		t.Helper()
		out, code := runChaos(t, append(append([]string{"cluster"}, args...), "--data", data)...)
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("chaos cluster %s exited %d; want 0 saying %q:\n%s", strings.Join(args, " "), code, want, out)
		}
	}

	ctl2("killed broker-2", "kill", "broker-2")
	if c, err := net.DialTimeout("tcp", broker2, time.Second); err == nil {
		c.Close()
		t.Fatalf("broker-2's port %s accepts connections after kill", broker2)
	}
	up.waitFor("broker 2 (pid ", 5*time.Second)
	ctl2("started broker-2; it listens on "+broker2, "start", "broker-2")
	c, err := net.DialTimeout("tcp", broker2, time.Second)
	if err != nil {
		t.Fatalf("broker-2's port refuses connections after start: %v", err)
	}
	c.Close()
	up.waitFor("broker 2 runs again (pid ", 5*time.Second)

	ctl2("paused broker-1", "pause", "broker-1")
	ctl2("resumed broker-1", "resume", "broker-1")
	ctl2("partitioned broker-1 from broker-2, controller (both ways)", "partition", "broker-1", "broker-2", "controller")
	ctl2("partitioned broker-3 from broker-1, broker-2 (both ways)", "partition", "broker-3", "broker-1,broker-2")
	ctl2("healed every network fault", "heal")

	out, code := runChaos(t, "cluster", "kill", "broker-9", "--data", data)
	if want := `no node "broker-9" in this cluster; its nodes are controller, broker-1, broker-2, broker-3`; code != exitErrorCode || !strings.Contains(out, want) {
		t.Errorf("kill of an unknown node exited %d; want %d saying %q:\n%s", code, exitErrorCode, want, out)
	}
	none := t.TempDir()
	out, code = runChaos(t, "cluster", "stop", "broker-1", "--data", none)
	want := "no chaos cluster up is running with --data " + none + " (no control socket at " + filepath.Join(none, "control.sock") + ")"
	if code != exitErrorCode || !strings.Contains(out, want) {
		t.Errorf("stop without a cluster exited %d; want %d saying %q:\n%s", code, exitErrorCode, want, out)
	}

	// The restarted broker is stopped with the rest, and the socket goes.
	_ = up.cmd.Process.Signal(syscall.SIGTERM)
	if code := up.wait(); code != 0 {
		t.Fatalf("cluster up exited %d on SIGTERM:\n%s", code, up.output())
	}
	if c, err := net.DialTimeout("tcp", broker2, time.Second); err == nil {
		c.Close()
		t.Errorf("the restarted broker-2 outlived cluster up")
	}
	out, code = runChaos(t, "cluster", "heal", "--data", data)
	if code != exitErrorCode || !strings.Contains(out, "no chaos cluster up is running with --data "+data) {
		t.Errorf("heal after cluster up ended exited %d:\n%s", code, out)
	}
}

// TestClusterControlWithoutNetworkFaults: a cluster up without
// --network-faults refuses a partition, saying what to do, and has
// nothing to heal.
func TestClusterControlWithoutNetworkFaults(t *testing.T) {
	data := t.TempDir()
	up := startChaos(t, nil, "cluster", "up", "--data", data, "--base-port", strconv.Itoa(freeBase(t, 3)))
	up.waitFor("ready", 30*time.Second)
	out, code := runChaos(t, "cluster", "partition", "broker-1", "broker-2", "--data", data)
	if want := "start chaos cluster up with --network-faults"; code != exitErrorCode || !strings.Contains(out, want) {
		t.Errorf("partition exited %d; want %d saying %q:\n%s", code, exitErrorCode, want, out)
	}
	out, code = runChaos(t, "cluster", "heal", "--data", data)
	if code != 0 || !strings.Contains(out, "nothing to heal") {
		t.Errorf("heal exited %d:\n%s", code, out)
	}
}
