package main

import (
	"strconv"

	"github.com/spf13/pflag"

	"github.com/chaos-isr/chaos/sim"
)

// sweepSeeds are the seeds of a sweep that f's flags name, nil for one
// run, seedSet saying whether --seed was given: TestSweepShard's view of
// sim.Flags.SweepSeeds.
func sweepSeeds(f sim.Flags, seedSet bool) ([]uint64, error) {
	f = f.Parsed(pflag.NewFlagSet("sim", pflag.ContinueOnError), f.Seed)
	if seedSet {
		f.Given["seed"] = strconv.FormatUint(f.Seed, 10)
	}
	return f.SweepSeeds()
}
