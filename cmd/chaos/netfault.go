package main

import (
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/chaos-isr/chaos/netfault"
)

// newNetfaultCmd is the hidden helper the docker runtime runs inside a
// node's container (docker exec, as root with CAP_NET_ADMIN) to install
// that node's network faults: the image has no shell, no nft and no tc,
// only this binary.
func newNetfaultCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:    "netfault",
		Short:  "Apply network faults in this network namespace (used inside docker runtime containers)",
		Hidden: true,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "apply SPEC",
		Short: "Replace this namespace's faults with SPEC (JSON) and print what was done as JSON",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return netfault.ApplyJSON(cmd.OutOrStdout(), args[0])
		},
	}, &cobra.Command{
		Use:   "probe",
		Short: "Print which delay mechanism this kernel supports, as JSON",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return json.NewEncoder(cmd.OutOrStdout()).Encode(netfault.Probe())
		},
	})
	return cmd
}
