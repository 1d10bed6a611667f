package docker_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/chaos-isr/chaos/cluster"
	"github.com/chaos-isr/chaos/cluster/docker"
	"github.com/chaos-isr/chaos/internal/dockertest"
	"github.com/chaos-isr/chaos/internal/testbin"
)

// TestCrashNoticed: a node's container that stops while the tester did
// not stop it (killed here from outside the runtime, as a crash would end
// it) is reported as a crash, with its exit status and the end of its log,
// and listed as crashed until a restart; a kill by the runtime is not a
// crash.
func TestCrashNoticed(t *testing.T) {
	dockertest.Require(t)
	bin, err := testbin.Path()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := docker.Start(ctx, docker.Spec{Nodes: 1, DataDir: t.TempDir(), Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	defer dockertest.NoLeftovers(t)
	defer c.Close()
	got := make(chan cluster.Crash, 4)
	c.WatchCrashes(func(cr cluster.Crash) { got <- cr })

	if err := c.Kill(0); err != nil {
		t.Fatal(err)
	}
	select {
	case cr := <-got:
		t.Fatalf("the runtime's own kill reported as a crash: %+v", cr)
	case <-time.After(2 * time.Second):
	}
	// A kill of a node already down has nothing left to do: the daemon
	// answers 409 Conflict, which is no error.
	if err := c.Kill(0); err != nil {
		t.Fatalf("a second kill: %v", err)
	}
	if err := c.Restart(ctx, 0); err != nil {
		t.Fatal(err)
	}

	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	broker, _ := c.Node(1)
	if _, err := cli.ContainerKill(ctx, broker.Container, client.ContainerKillOptions{Signal: "KILL"}); err != nil {
		t.Fatal(err)
	}
	select {
	case cr := <-got:
		if cr.ID != 1 || cr.Exit != "exit status 137" || !strings.Contains(cr.Log, cluster.ReadyLine) {
			t.Errorf("crash %+v", cr)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a broker's container that stopped on its own was not reported")
	}
	if down := c.Crashed(); !slices.Equal(down, []int{1}) {
		t.Fatalf("crashed %v, want [1]", down)
	}
	if err := c.Restart(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if down := c.Crashed(); len(down) != 0 {
		t.Fatalf("crashed %v after the restart", down)
	}
}
