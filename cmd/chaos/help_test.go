package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// manyFlags is how many flags (--help aside) a command may have before
// its help must print them in groups.
const manyFlags = 10

// visibleFlags are cmd's own flags that help shows, --help aside.
func visibleFlags(cmd *cobra.Command) []*pflag.Flag {
	var out []*pflag.Flag
	cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && f.Name != "help" {
			out = append(out, f)
		}
	})
	return out
}

// TestFlagGroups: a command with many flags prints them in groups, and
// every flag of a grouped command is in one: a flag added without a group
// fails here, naming where to add it.
func TestFlagGroups(t *testing.T) {
	grouped := 0
	for _, cmd := range referenceCommands(referenceRoot()) {
		flags := visibleFlags(cmd)
		_, hasGroups := cmd.Annotations[helpGroupsKey]
		if !hasGroups {
			if len(flags) > manyFlags {
				t.Errorf("%s has %d flags and no help groups: give it groups (groupFlags, cmd/chaos/help.go)", cmd.CommandPath(), len(flags))
			}
			continue
		}
		grouped++
		// As a user asks for it.
		root := referenceRoot()
		var help bytes.Buffer
		root.SetOut(&help)
		root.SetArgs(append(strings.Fields(strings.TrimPrefix(cmd.CommandPath(), "chaos ")), "--help"))
		if err := root.Execute(); err != nil {
			t.Fatal(err)
		}
		// The flags' blocks, after the description.
		usage := help.String()[strings.LastIndex(help.String(), "\nUsage:\n"):]
		for _, f := range flags {
			if len(f.Annotations[helpGroupKey]) == 0 {
				t.Errorf("%s --%s is in no help group: add it to one of %s's groups in cmd/chaos/help.go", cmd.CommandPath(), f.Name, cmd.CommandPath())
				continue
			}
			// Once, in its group's block.
			re := regexp.MustCompile(`(?m)^\s+(-\w, )?--` + regexp.QuoteMeta(f.Name) + `(\s|$)`)
			if n := len(re.FindAllString(usage, -1)); n != 1 {
				t.Errorf("%s --help lists --%s %d times, want once", cmd.CommandPath(), f.Name, n)
			}
			title := f.Annotations[helpGroupKey][0]
			at := strings.Index(usage, "\n"+title+":\n")
			if at < 0 {
				t.Errorf("%s --help has no block %q:\n%s", cmd.CommandPath(), title, usage)
				continue
			}
			block, _, _ := strings.Cut(usage[at+1:], "\n\n")
			if !re.MatchString(block) {
				t.Errorf("%s --help does not list --%s under %q:\n%s", cmd.CommandPath(), f.Name, title, help.String())
			}
		}
		if !strings.HasSuffix(strings.TrimRight(usage, "\n"), "\nFlags:\n  -h, --help   help for "+cmd.Name()) &&
			!strings.Contains(usage, "\nFlags:\n  -h, --help   help for "+cmd.Name()+"\n\nUse ") {
			t.Errorf("%s --help: --help is not in the last block, Flags:\n%s", cmd.CommandPath(), help.String())
		}
	}
	if grouped < 7 {
		t.Errorf("only %d commands have grouped help; run, sim, campaign, cluster up, broker, check and hunt should", grouped)
	}
}

// TestFlagGroupsRefuseMistakes: a group that names a flag the command
// does not have, or a flag in two groups, panics when the command is
// built, and a cobra whose template has no flags block to replace panics
// too, so that none of them passes silently.
func TestFlagGroupsRefuseMistakes(t *testing.T) {
	mustPanic := func(what string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: no panic", what)
			}
		}()
		f()
	}
	newCmd := func() *cobra.Command {
		c := &cobra.Command{Use: "x"}
		c.Flags().Int("a", 0, "")
		c.Flags().Int("b", 0, "")
		return c
	}
	mustPanic("a flag that does not exist", func() { groupFlags(newCmd(), []flagGroup{group("G flags", "a", "nope")}) })
	mustPanic("a flag in two groups", func() { groupFlags(newCmd(), []flagGroup{group("G flags", "a"), group("H flags", "a")}) })
	mustPanic("a template without the flags block", func() { groupedUsage("Usage: {{.UseLine}}") })

	c := newCmd()
	groupFlags(c, []flagGroup{group("G flags", "b")})
	var titles []string
	for _, s := range flagSections(c) {
		titles = append(titles, s.Title)
	}
	if strings.Join(titles, ",") != "G flags,Flags" {
		t.Errorf("sections %v, want G flags, then the ungrouped Flags", titles)
	}
}
