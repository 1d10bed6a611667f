// Package dockertest holds what tests of the docker runtime share: the
// rule that they fail without Docker in CI (CI=true) and skip elsewhere,
// and the checks that a test pulled no image and left nothing behind.
package dockertest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/chaos-isr/chaos/cluster/docker"
)

// Require skips t without a Docker engine, or fails it when CI=true: a CI
// run must not pass by skipping the docker runtime.
func Require(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := docker.Available(ctx); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and no Docker engine: %v", err)
		}
		t.Skipf("no Docker engine: %v", err)
	}
}

// NoLeftovers fails t if a container or network of the docker runtime is
// left, of any run: call it after the test's clusters are closed. Other
// test packages may be running docker tests at the same time, so it
// ignores objects whose owner is still alive and is not this process.
func NoLeftovers(t testing.TB) {
	t.Helper()
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx := context.Background()
	mine := fmt.Sprintf("%d:", os.Getpid())
	var left []string
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", "chaos.run")})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs.Items {
		if strings.HasPrefix(c.Labels["chaos.owner"], mine) || !docker.OwnerAlive(c.Labels) {
			left = append(left, "container "+strings.Join(c.Names, ","))
		}
	}
	ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: make(client.Filters).Add("label", "chaos.run")})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range ns.Items {
		if strings.HasPrefix(n.Labels["chaos.owner"], mine) || !docker.OwnerAlive(n.Labels) {
			left = append(left, "network "+n.Name)
		}
	}
	if len(left) > 0 {
		t.Errorf("left behind: %s", strings.Join(left, "; "))
	}
}

// NoPulls fails t if the engine saw an image pull since start, or holds an
// image other than the runtime's: there is no registry to pull from, and
// the runtime must not try.
func NoPulls(t testing.TB, since time.Time) {
	t.Helper()
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res := cli.Events(ctx, client.EventsListOptions{
		Since:   fmt.Sprint(since.Add(-time.Second).Unix()),
		Until:   fmt.Sprint(time.Now().Add(time.Second).Unix()),
		Filters: make(client.Filters).Add("type", "image"),
	})
	var actions []string
	for done := false; !done; {
		select {
		case m, ok := <-res.Messages:
			if !ok {
				done = true
				break
			}
			actions = append(actions, string(m.Action)+" "+m.Actor.Attributes["name"])
			if m.Action == "pull" {
				t.Errorf("an image pull was attempted: %s", m.Actor.ID)
			}
		case err := <-res.Err:
			if err != nil && !strings.Contains(err.Error(), "EOF") {
				t.Fatalf("docker events: %v", err)
			}
			done = true
		}
	}
	t.Logf("image events since %s: %v", since.Format(time.RFC3339), actions)
	imgs, err := cli.ImageList(ctx, client.ImageListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range imgs.Items {
		ours := im.Labels["chaos.image"] != ""
		for _, tag := range im.RepoTags {
			if tag != docker.Image {
				ours = false
			}
		}
		if !ours {
			t.Errorf("an image that is not the runtime's: %s %v", im.ID, im.RepoTags)
		}
	}
}
