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
			spec, err := netfault.Decode(args[0])
			if err != nil {
				return err
			}
			res, err := netfault.Apply(spec)
			if err != nil {
				return err
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(res)
		},
	}, &cobra.Command{
		Use:   "probe",
		Short: "Print which delay mechanism this kernel supports, as JSON",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ok, why := netfault.HasNetem()
			p := netfault.Result{Mechanism: netfault.Netem}
			if !ok {
				p = netfault.Result{Mechanism: netfault.HTB, Why: why}
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(p)
		},
	})
	return cmd
}
