package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/chaos-isr/chaos/results/report"
)

func newReportCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "report PATH...",
		Short: "Render report.html for runs, and index.html for campaigns, again",
		Long: `Render the HTML pages again from what is stored. PATH is a run directory
(store/<test>/<time>, or store/latest), a campaign directory (store/campaigns/<time>), or any
directory above them, e.g. the whole store: every run and campaign below it is rendered.
A run's report.html is built from its test.json, history.jsonl and results.json (an
interrupted run without results.json still gets a report, saying so); a campaign's
index.html from its campaign.json. Each page written is printed.
Exit code: 0 all rendered, 3 something could not be.`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return errors.New("PATH: missing; chaos report takes run directories, campaign directories or a directory above them, e.g. chaos report store/latest, or chaos report store for everything")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			out, errOut := cmd.OutOrStdout(), cmd.ErrOrStderr()
			failed := 0
			for _, path := range args {
				n, err := report.WriteTree(path, func(page string, err error) {
					if err != nil {
						failed++
						fmt.Fprintf(errOut, "chaos: %v\n", err)
						return
					}
					fmt.Fprintln(out, page)
				})
				if err != nil {
					return &exitError{code: exitErrorCode, err: err}
				}
				if n == 0 {
					return &exitError{code: exitErrorCode, err: fmt.Errorf("%s holds no run (test.json) or campaign (campaign.json)", path)}
				}
			}
			if failed > 0 {
				return &exitError{code: exitErrorCode, err: fmt.Errorf("%d page(s) could not be rendered", failed)}
			}
			return nil
		},
	}
}
