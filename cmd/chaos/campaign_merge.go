package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/chaos-isr/chaos/campaign"
	"github.com/chaos-isr/chaos/internal/cli"
)

func newCampaignMergeCmd() *cobra.Command {
	var store, junit, failOn string
	cmd := &cobra.Command{
		Use:   "merge [flags] DIR...",
		Short: "Combine the shards of a campaign into one campaign.json and index page",
		Long: `Combine the shards of one campaign (each run with "chaos campaign --shard K/N" and the
same spec and --seed, on as many machines) into one campaign: STORE/campaigns/<timestamp>/
with the merged campaign.json, its index page and every shard's logs, and each shard's run
directories copied into STORE. Each DIR is a shard's campaign directory or its store (its
campaigns/latest); all shards must be on this machine.

It refuses, naming the shards, what is not every shard of one campaign: a campaign run
whole, a shard that did not finish, different specs, seeds, shard counts, cells or chaos
versions, a shard given twice or missing. Prints the merged table as chaos campaign does,
and exits as the whole campaign would: 1 if any run was invalid, else 3 if any ended in an
error, else 2 if any was unknown (0 with --fail-on invalid), else 0; 130 if a shard was
interrupted; 3 when refused.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New("no shards to merge: name each shard's campaign directory or store")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, dirs []string) error {
			return exitWith(mergeCampaign(cmd, store, junit, failOn, dirs))
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&store, "store", "store", "the result store the merged campaign and the shards' runs go to")
	fl.StringVar(&junit, "junit", "", "also write the merged campaign's JUnit XML report to this file")
	fl.StringVar(&failOn, "fail-on", cli.FailOnUnknown, cli.FailOnUsage+" (the record and the JUnit report keep every verdict)")
	return cmd
}

func mergeCampaign(cmd *cobra.Command, store, junit, failOn string, dirs []string) (int, error) {
	if err := cli.CheckFailOn(failOn); err != nil {
		return 0, err
	}
	if err := cli.StopIfValidating(cmd.Context()); err != nil {
		return 0, err
	}
	out := cmd.OutOrStdout()
	rec, dir, err := campaign.Merge(store, dirs)
	if rec == nil {
		return 0, err
	}
	if err != nil {
		// The record is written; only its page is not.
		fmt.Fprintf(cmd.ErrOrStderr(), "chaos: campaign index not written: %v\n", err)
	}
	fmt.Fprintf(out, "campaign %s\nmerged from %d shards\n", dir, len(dirs))
	campaign.WriteSummary(out, rec, dir, failOn)
	if junit != "" {
		if err := campaign.WriteJUnit(junit, rec); err != nil {
			return 0, err
		}
	}
	return cli.FailOnExit(failOn, *rec.ExitCode), nil
}
