package main

import (
	"slices"
	"strings"

	"github.com/chaos-isr/chaos/runner"
)

// The runtimes a cluster can run in (README, "The docker runtime").
const (
	runtimeLocal  = runner.RuntimeLocal
	runtimeDocker = runner.RuntimeDocker
)

const runtimeUsage = "where the cluster runs: local (child processes on 127.0.0.1) or docker (a container per node; needs a Docker engine)"

func checkRuntime(rt string) error {
	if slices.Contains(runner.Runtimes(), rt) {
		return nil
	}
	return flagError("runtime", rt, "not a runtime", "use "+strings.Join(runner.Runtimes(), " or "))
}
