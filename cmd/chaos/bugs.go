package main

import (
	"github.com/spf13/cobra"

	"github.com/chaos-isr/chaos/broker/bug"
)

func newBugsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "bugs",
		Short: "List the bugs that can be planted in the broker, the controller and the storage (--bug)",
		Long: `List the bugs that can be planted on purpose with --bug NAME: for each, the node it
lives in, the rule it breaks, the real-world incident, JIRA or KIP it mirrors, why it is
worth having, and the configuration and faults expected to expose it. Every bug is off
unless asked for; a run with one measures whether the tester catches it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if asJSON {
				return bug.WriteJSON(cmd.OutOrStdout())
			}
			bug.WriteList(cmd.OutOrStdout())
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the list as JSON (name, node, breaks, mirrors, why, scenario)")
	return cmd
}
