package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

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
				return writeBugsJSON(cmd.OutOrStdout())
			}
			writeBugs(cmd.OutOrStdout())
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the list as JSON (name, node, breaks, mirrors, why, scenario)")
	return cmd
}

// writeBugs prints one block per bug, its fields wrapped to 100 columns.
func writeBugs(w io.Writer) {
	for i, in := range bug.All() {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s (%s)\n", in.Name, in.Node)
		for _, f := range []struct{ label, text string }{
			{"breaks", in.Breaks}, {"mirrors", in.Mirrors}, {"why", in.Why}, {"exposed by", in.Scenario},
		} {
			writeWrapped(w, fmt.Sprintf("  %-12s", f.label+":"), strings.Repeat(" ", 14), f.text, 100)
		}
	}
}

// writeWrapped writes text after first, breaking lines at spaces before
// width and starting each further line with indent.
func writeWrapped(w io.Writer, first, indent, text string, width int) {
	line := first
	n := 0 // words on this line
	for _, word := range strings.Fields(text) {
		if n > 0 && len(line)+1+len(word) > width {
			fmt.Fprintln(w, line)
			line, n = indent, 0
		}
		if n > 0 {
			line += " "
		}
		line += word
		n++
	}
	fmt.Fprintln(w, line)
}

func writeBugsJSON(w io.Writer) error {
	type entry struct {
		Name     string `json:"name"`
		Node     string `json:"node"`
		Breaks   string `json:"breaks"`
		Mirrors  string `json:"mirrors"`
		Why      string `json:"why"`
		Scenario string `json:"scenario"`
	}
	var out []entry
	for _, in := range bug.All() {
		out = append(out, entry{in.Name, string(in.Node), in.Breaks, in.Mirrors, in.Why, in.Scenario})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
