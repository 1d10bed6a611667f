package bug

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// WriteList writes the registry for people, as chaos bugs prints it: one
// block per bug, its name and node, then its fields wrapped to 100
// columns.
func WriteList(w io.Writer) {
	for i, in := range registry {
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

// WriteJSON writes the registry for programs, as chaos bugs --json prints
// it: a list of its names, nodes and descriptions, in chaos bugs' order.
func WriteJSON(w io.Writer) error {
	type entry struct {
		Name     string `json:"name"`
		Node     string `json:"node"`
		Breaks   string `json:"breaks"`
		Mirrors  string `json:"mirrors"`
		Why      string `json:"why"`
		Scenario string `json:"scenario"`
	}
	var out []entry
	for _, in := range registry {
		out = append(out, entry{in.Name, string(in.Node), in.Breaks, in.Mirrors, in.Why, in.Scenario})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
