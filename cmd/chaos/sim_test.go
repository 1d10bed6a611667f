package main

import (
	"strconv"

	"github.com/spf13/pflag"
)

// sweepSeeds are the seeds of a sweep that f's flags name, nil for one
// run, seedSet saying whether --seed was given: TestSweepShard's view of
// sim.Flags.SweepSeeds.
func (f *simFlags) sweepSeeds(seedSet bool) ([]uint64, error) {
	sf := f.sim(pflag.NewFlagSet("sim", pflag.ContinueOnError))
	if seedSet {
		sf.Given["seed"] = strconv.FormatUint(f.run.seed, 10)
	}
	return sf.SweepSeeds()
}
