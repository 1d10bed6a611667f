package main

import (
	"encoding/json"
	"os"

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
	}, newRelayCmd())
	return cmd
}

// newRelayCmd is the docker runtime's container command on kernels
// without netem: the broker runs under a relay that delays its links.
func newRelayCmd() *cobra.Command {
	var links []string
	cmd := &cobra.Command{
		Use:   "relay --link TO=LISTEN=TARGET... -- BROKER ARGS",
		Short: "Run chaos with ARGS, its connections to peers going through delay lines controlled by netfault apply",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var ls []netfault.RelayLink
			for _, s := range links {
				l, err := netfault.ParseRelayLink(s)
				if err != nil {
					return err
				}
				ls = append(ls, l)
			}
			code, err := netfault.RunRelayed(ls, args)
			if err != nil {
				return err
			}
			// The container's exit code is the node's.
			os.Exit(code)
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&links, "link", nil, "a link: the peer's name, the loopback address the node dials, the peer's address")
	return cmd
}
