// Command agreement tabulates, cell by cell, what two runs of one
// campaign showed in two runtimes: the local runtime's campaign.json and
// the sim runtime's, planned with the same campaign seed (so a cell's run
// N has the same seed in both, and the same fault schedule). It prints a
// Markdown table (docs/sim-agreement.md holds one): each runtime's
// verdict and anomalies for run 1, the simulation's anomalies over all
// its runs, and whether run 1 agrees (the same verdict and the same
// anomalies seen, permitted or not).
//
//	go run ./internal/tools/agreement LOCAL/campaign.json SIM/campaign.json
//
// Cells are matched by name; a cell in one campaign only is an error.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/chaos-isr/chaos/checker"
	"github.com/chaos-isr/chaos/results"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: agreement LOCAL/campaign.json SIM/campaign.json")
		os.Exit(2)
	}
	local, err := results.ReadCampaign(os.Args[1])
	if err == nil {
		var simulated results.Campaign
		if simulated, err = results.ReadCampaign(os.Args[2]); err == nil {
			err = table(os.Stdout, local, simulated)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "agreement:", err)
		os.Exit(1)
	}
}

// table writes the Markdown table of the two campaigns' cells, and a line
// that counts the cells that agree.
func table(w io.Writer, local, simulated results.Campaign) error {
	if local.Seed != simulated.Seed {
		return fmt.Errorf("campaign seeds %d and %d: the runs did not have the same seeds", local.Seed, simulated.Seed)
	}
	if len(local.Cells) != len(simulated.Cells) {
		return fmt.Errorf("%d cells against %d", len(local.Cells), len(simulated.Cells))
	}
	fmt.Fprintln(w, "| cell | model | local, run 1 | sim, run 1 (same seed) | sim, all runs | run 1 agrees |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	agree := 0
	for _, lc := range local.Cells {
		i := slices.IndexFunc(simulated.Cells, func(c *results.CampaignCell) bool { return c.Name == lc.Name })
		if i < 0 {
			return fmt.Errorf("cell %s is not in the simulated campaign", lc.Name)
		}
		sc := simulated.Cells[i]
		if len(lc.Runs) == 0 || len(sc.Runs) == 0 {
			return errors.New("cell " + lc.Name + " has no run")
		}
		l, s := lc.Runs[0], sc.Runs[0]
		if l.Seed != s.Seed {
			return fmt.Errorf("cell %s: run 1 had seed %d locally, %d in simulation", lc.Name, l.Seed, s.Seed)
		}
		verdict := "yes"
		if d := differences(l, s); d != "" {
			verdict = "no: " + d
		} else {
			agree++
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", lc.Label, lc.Prediction, describe(l), describe(s), rates(sc), verdict)
	}
	fmt.Fprintf(w, "\nRun 1 agrees in %d of %d cells.\n", agree, len(local.Cells))
	return nil
}

// seen are the anomalies a run showed, permitted or not, in the
// checkers' order.
func seen(r results.CampaignRun) []string {
	var out []string
	for _, n := range checker.Names() {
		if slices.Contains(r.Expected, n) || slices.Contains(r.Unexpected, n) {
			out = append(out, n)
		}
	}
	return out
}

// describe is a run's verdict and what it showed: anomalies seen
// (forbidden ones marked !), checks left unknown (?).
func describe(r results.CampaignRun) string {
	parts := []string{strings.ToUpper(r.Verdict)}
	for _, n := range seen(r) {
		if slices.Contains(r.Unexpected, n) {
			n += "!"
		}
		parts = append(parts, n)
	}
	for _, n := range r.Unknown {
		parts = append(parts, n+"?")
	}
	return strings.Join(parts, " ")
}

// rates are the anomalies a cell's runs showed, each with in how many.
func rates(c *results.CampaignCell) string {
	var parts []string
	for _, n := range checker.Names() {
		k := c.Summary.ExpectedSeen[n] + c.Summary.Unexpected[n]
		if k > 0 {
			parts = append(parts, fmt.Sprintf("%s %d/%d", n, k, c.Summary.Runs))
		}
	}
	if len(parts) == 0 {
		return fmt.Sprintf("none in %d", c.Summary.Runs)
	}
	return strings.Join(parts, ", ")
}

// differences says how two runs of a cell disagree: verdict, and the
// anomalies one showed and the other did not.
func differences(l, s results.CampaignRun) string {
	var d []string
	if l.Verdict != s.Verdict {
		d = append(d, fmt.Sprintf("%s locally, %s in sim", l.Verdict, s.Verdict))
	}
	ls, ss := seen(l), seen(s)
	var onlyL, onlyS []string
	for _, n := range ls {
		if !slices.Contains(ss, n) {
			onlyL = append(onlyL, n)
		}
	}
	for _, n := range ss {
		if !slices.Contains(ls, n) {
			onlyS = append(onlyS, n)
		}
	}
	if len(onlyL) > 0 {
		d = append(d, "local only: "+strings.Join(onlyL, ", "))
	}
	if len(onlyS) > 0 {
		d = append(d, "sim only: "+strings.Join(onlyS, ", "))
	}
	return strings.Join(d, "; ")
}
