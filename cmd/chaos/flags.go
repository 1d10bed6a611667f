package main

import (
	"github.com/spf13/cobra"

	"github.com/chaos-isr/chaos/broker/node"
	"github.com/chaos-isr/chaos/internal/cli"
	"github.com/chaos-isr/chaos/results"
	"github.com/chaos-isr/chaos/results/report"
	"github.com/chaos-isr/chaos/runner"
)

// Every command refuses a bad flag value before it starts anything, in
// one style that names the flag, the value and what is accepted (package
// cli). The checks live with what they check: the nodes' settings in
// broker/node, a run's, a cluster's and chaos check's in runner.
var (
	flagError            = cli.Error
	parseAcks            = runner.ParseAcks
	checkElection        = node.CheckElection
	parseNemesisFlag     = runner.ParseFaults
	checkRuntime         = runner.CheckRuntime
	checkCampaignRuntime = runner.CheckCampaignRuntime
	checkConfigFlags     = runner.CheckConfigFlags
	readHistory          = runner.ReadHistory
	printVerdict         = report.WriteVerdict
	runsHint             = results.RunsHint
	nearestDir           = results.NearestDir
	interruptContext     = cli.InterruptContext
	signalContext        = cli.SignalContext
	validateOnly         = cli.ValidateOnly
	errValidated         = cli.ErrValidated
)

// flagParseError is cobra's FlagErrorFunc: the flag parser's errors in
// the same style.
func flagParseError(cmd *cobra.Command, err error) error {
	return cli.ParseError(cmd.CommandPath(), err)
}

// stopIfValidating returns errValidated in a validation-only context: the
// last thing a command does before it starts anything.
func stopIfValidating(cmd *cobra.Command) error { return cli.StopIfValidating(cmd.Context()) }

// validate checks every flag of chaos run and returns the acks and the
// faults they name.
func (f *runFlags) validate() (int16, []string, error) {
	acks, err := parseAcks(f.acks)
	if err != nil {
		return 0, nil, err
	}
	faults, err := parseNemesisFlag(f.nemesis)
	if err != nil {
		return 0, nil, err
	}
	return acks, faults, f.spec(acks, faults).CheckFlags(node.Replication(f.rf), node.Topics(f.tf), f.bugs)
}

// --runtime: where the cluster runs (README, "The docker runtime").
const (
	runtimeLocal = runner.RuntimeLocal
	runtimeUsage = "where the cluster runs: local (child processes on 127.0.0.1) or docker (a container per node; needs a Docker engine)"
)
