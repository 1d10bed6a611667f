package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

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
				n, err := renderTree(path, func(page string, err error) {
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

// renderTree renders every run and campaign at or below root, calling done
// for each page, and returns how many it found. Symlinks are not followed:
// store/latest is another name for a run already visited.
func renderTree(root string, done func(page string, err error)) (int, error) {
	fi, err := os.Stat(root)
	if err != nil {
		return 0, err
	}
	if !fi.IsDir() {
		return 0, fmt.Errorf("%s is not a directory", root)
	}
	found := 0
	visit := func(dir string) bool {
		page, err := report.WritePage(dir)
		if errors.Is(err, report.ErrNotRunDir) {
			return false
		}
		found++
		if err != nil {
			err = fmt.Errorf("%s: %w", dir, err)
		}
		done(page, err)
		return true
	}
	// The root itself may be a symlink such as store/latest.
	if visit(root) {
		return found, nil
	}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() || path == root {
			return nil
		}
		if visit(path) {
			return filepath.SkipDir
		}
		return nil
	})
	return found, err
}
