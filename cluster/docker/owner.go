package docker

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/moby/moby/client"

	"github.com/chaos-isr/chaos/cluster"
)

// Labels on everything the runtime creates.
const (
	labelRun   = "chaos.run"   // the run's id
	labelOwner = "chaos.owner" // "PID:START": the tester process that owns it
	labelHost  = "chaos.host"  // the tester's host name: pids mean nothing elsewhere
	labelNode  = "chaos.node"  // controller, broker-N
	labelImage = "chaos.image" // on the image: the binary's sha256
)

func hostname() string {
	h, _ := os.Hostname()
	return h
}

// OwnerAlive reports whether the process named by an owner label still
// runs. An owner from another host is taken to be alive: it cannot be
// checked from here.
func OwnerAlive(labels map[string]string) bool {
	if labels[labelHost] != hostname() {
		return true
	}
	return cluster.OwnerAlive(labels[labelOwner])
}

// Leftover is a container or network a sweep found.
type Leftover struct {
	Kind, Name, Run string
	Alive           bool // its owner still runs
}

// Sweep removes the containers and networks of runs whose tester is gone
// (all of them with all set) and returns what it removed. It is run at
// every Start, so a tester killed with SIGKILL leaves nothing behind for
// long; "chaos cluster clean" runs it by hand.
func Sweep(ctx context.Context, all bool) ([]Leftover, error) {
	cli, err := newClient(ctx)
	if err != nil {
		return nil, err
	}
	defer cli.Close()
	unlock, err := lockImage()
	if err != nil {
		return nil, err
	}
	defer unlock()
	return sweep(ctx, cli, all)
}

// sweep is Sweep; the caller holds lockImage.
func sweep(ctx context.Context, cli client.APIClient, all bool) ([]Leftover, error) {
	var removed []Leftover
	cs, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", labelRun)})
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", err)
	}
	var firstErr error
	for _, c := range cs.Items {
		alive := OwnerAlive(c.Labels)
		if alive && !all {
			continue
		}
		if _, err := cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("removing container %s: %w", c.ID[:12], err)
		}
		name := c.ID[:12]
		if len(c.Names) > 0 {
			name = strings.TrimPrefix(c.Names[0], "/")
		}
		removed = append(removed, Leftover{Kind: "container", Name: name, Run: c.Labels[labelRun], Alive: alive})
	}
	ns, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: make(client.Filters).Add("label", labelRun)})
	if err != nil {
		return removed, fmt.Errorf("listing networks: %w", err)
	}
	for _, n := range ns.Items {
		alive := OwnerAlive(n.Labels)
		if alive && !all {
			continue
		}
		if _, err := cli.NetworkRemove(ctx, n.ID, client.NetworkRemoveOptions{}); err != nil && firstErr == nil {
			firstErr = fmt.Errorf("removing network %s: %w", n.Name, err)
		}
		removed = append(removed, Leftover{Kind: "network", Name: n.Name, Run: n.Labels[labelRun], Alive: alive})
	}
	removed = append(removed, removeOldImages(ctx, cli)...)
	return removed, firstErr
}

// removeOldImages removes builds of the image that lost their tag to a
// newer binary while a run still used them, once nothing uses them. The
// caller holds lockImage.
func removeOldImages(ctx context.Context, cli client.APIClient) []Leftover {
	imgs, err := cli.ImageList(ctx, client.ImageListOptions{Filters: make(client.Filters).Add("dangling", "true").Add("label", labelImage)})
	if err != nil {
		return nil
	}
	var removed []Leftover
	for _, im := range imgs.Items {
		// Refused while a container uses it: a later sweep gets it.
		if _, err := cli.ImageRemove(ctx, im.ID, client.ImageRemoveOptions{PruneChildren: true}); err == nil {
			removed = append(removed, Leftover{Kind: "image", Name: im.ID})
		}
	}
	return removed
}
