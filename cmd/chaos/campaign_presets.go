package main

import "time"

// shortTimings make faults bite within a short run: with Kafka's defaults
// (replica.lag.time.max.ms 10 s, a 3 s session timeout) a follower cut off
// for a 5 s fault window never leaves the ISR, so a 20-30 s run would test
// almost nothing.
var shortTimings = []string{"--replica-lag-time-max-ms", "2000", "--session-timeout-ms", "2000"}

// presets are the campaigns the issue names. They are specs like any
// other, so "chaos campaign --preset NAME --dry-run" shows one in the spec
// file format as a starting point.
var presets = map[string]campaignSpec{
	// smoke is for CI: one cell that must be valid and one that must show
	// its teeth, about 45 s in all on a 2-core machine.
	"smoke": {
		Cells: []cellSpec{
			// The headline guarantee: no acknowledged write lost under
			// crashes and pauses.
			{Acks: -1, MinInsyncReplicas: 2, Election: "clean", Nemesis: "kill,pause"},
			// docs/guarantees.md scenario 1: lost writes are permitted, and
			// usually seen.
			{Acks: 1, MinInsyncReplicas: 1, Election: "clean", Nemesis: "partition-leader"},
		},
		Runs:            1,
		TimeLimit:       duration(20 * time.Second),
		NemesisInterval: duration(5 * time.Second),
		RunArgs:         shortTimings,
	},
	// seed is the seed's whole question as one matrix: 36 cells, about
	// 19 minutes (36 runs of about 31.5 s).
	"seed": {
		Acks:              []acksValue{0, 1, -1},
		Election:          []string{"clean", "unclean"},
		MinInsyncReplicas: []int{1, 2},
		Nemesis:           []string{"kill-leader", "partition-leader", "slow-follower"},
		Runs:              1,
		TimeLimit:         duration(30 * time.Second),
		NemesisInterval:   duration(5 * time.Second),
		RunArgs:           shortTimings,
	},
}
