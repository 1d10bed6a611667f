package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/chaos-isr/chaos/campaign"
	"github.com/chaos-isr/chaos/cluster/external"
	"github.com/chaos-isr/chaos/runner"
)

// The parts of docs/ generated from the code, and the test that fails
// when they are stale: go test ./cmd/chaos -run TestGeneratedDocs -update
// (make docs) rewrites them.
//
//   - docs/commands.md: every command and flag, from the cobra command
//     tree, with the flags in the groups --help prints (help.go);
//   - docs/campaigns.md: the presets, their cells, runs and durations,
//     from package campaign's presets.

var update = flag.Bool("update", false, "rewrite the generated parts of docs/ (the command reference, the preset table) from the code")

// generated are the generated parts of docs/: the page, its markers'
// name and what belongs between them.
var generated = []struct {
	page, marker string
	render       func() string
}{
	{"docs/commands.md", "commands", commandReference},
	{"docs/campaigns.md", "presets", presetTable},
}

// repoRoot is the repository's top directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// TestGeneratedDocs keeps the generated parts of docs/ equal to what the
// code says.
func TestGeneratedDocs(t *testing.T) {
	for _, g := range generated {
		path := filepath.Join(repoRoot(t), g.page)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		doc := string(data)
		begin, end := "<!-- "+g.marker+":begin", "<!-- "+g.marker+":end -->"
		i, j := strings.Index(doc, begin), strings.Index(doc, end)
		if i < 0 || j < i {
			t.Errorf("%s has no %s ... %s markers", g.page, begin, end)
			continue
		}
		i += strings.Index(doc[i:], "\n") + 1
		want := g.render()
		if doc[i:j] == want {
			continue
		}
		if *update {
			if err := os.WriteFile(path, []byte(doc[:i]+want+doc[j:]), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("rewrote the %s part of %s", g.marker, g.page)
			continue
		}
		t.Errorf("the %s part of %s is stale: run make docs (go test ./cmd/chaos -run TestGeneratedDocs -update)\n%s",
			g.marker, g.page, firstDifference(doc[i:j], want))
	}
}

// firstDifference shows the first line where got and want differ.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for k := 0; k < len(g) || k < len(w); k++ {
		var gl, wl string
		if k < len(g) {
			gl = g[k]
		}
		if k < len(w) {
			wl = w[k]
		}
		if gl != wl {
			return fmt.Sprintf("line %d of the part:\n  the page says: %s\n  the code says: %s", k+1, gl, wl)
		}
	}
	return ""
}

// referenceRoot is the command tree as a user's binary has it, cobra's
// help and completion commands included.
func referenceRoot() *cobra.Command {
	root := newRoot()
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	return root
}

// cobrasOwn says whether cmd is one cobra adds (help, completion), which
// the reference lists without their flags and subcommands.
func cobrasOwn(cmd *cobra.Command) bool {
	for c := cmd; c != nil; c = c.Parent() {
		if c.HasParent() && !c.Parent().HasParent() && (c.Name() == "help" || c.Name() == "completion") {
			return true
		}
	}
	return false
}

// referenceCommands are the commands the reference documents, depth
// first in help's order: every available one.
func referenceCommands(root *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		out = append(out, c)
		if cobrasOwn(c) {
			return
		}
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() || sub.Name() == "help" {
				walk(sub)
			}
		}
	}
	walk(root)
	return out
}

// anchor is GitHub's anchor for a heading of text.
func anchor(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// mdCell escapes text for a cell of a Markdown table.
func mdCell(s string) string {
	return strings.NewReplacer(`\`, `\\`, "|", `\|`, "<", "&lt;", "*", `\*`, "\n", " ").Replace(s)
}

// flagDefault is a flag's default as the reference shows it: none for an
// empty string or list, or a bool that is off.
func flagDefault(f *pflag.Flag) string {
	switch {
	case f.DefValue == "", f.DefValue == "[]", f.Value.Type() == "bool" && f.DefValue == "false":
		return ""
	}
	return "`" + f.DefValue + "`"
}

// commandReference is docs/commands.md's generated part.
func commandReference() string {
	root := referenceRoot()
	cmds := referenceCommands(root)
	var b strings.Builder
	for _, c := range cmds[1:] {
		fmt.Fprintf(&b, "- [`%s`](#%s): %s\n", c.CommandPath(), anchor(c.CommandPath()), c.Short)
	}
	for _, c := range cmds {
		fmt.Fprintf(&b, "\n## %s\n\n%s\n\n```text\n%s\n", c.CommandPath(), c.Short, c.UseLine())
		if c.HasAvailableSubCommands() {
			fmt.Fprintf(&b, "%s [command]\n", c.CommandPath())
		}
		b.WriteString("```\n")
		if cobrasOwn(c) {
			continue
		}
		if c.Long != "" {
			// The same on every machine: chaos cluster clean names the
			// temporary directory.
			long := strings.ReplaceAll(c.Long, filepath.Join(os.TempDir(), "chaos-cluster-"), "$TMPDIR/chaos-cluster-")
			fmt.Fprintf(&b, "\n```text\n%s\n```\n", strings.TrimRight(long, "\n"))
		}
		for _, s := range flagSections(c) {
			fmt.Fprintf(&b, "\n**%s**\n\n<!-- flags: %s -->\n| Flag | Default | Meaning |\n|---|---|---|\n", s.Title, c.CommandPath())
			s.Flags.VisitAll(func(f *pflag.Flag) {
				if f.Hidden {
					return
				}
				name := "--" + f.Name
				if f.Shorthand != "" {
					name = "-" + f.Shorthand + ", " + name
				}
				varname, usage := pflag.UnquoteUsage(f)
				if varname != "" {
					name += " " + varname
				}
				fmt.Fprintf(&b, "| `%s` | %s | %s |\n", name, flagDefault(f), mdCell(usage))
			})
		}
	}
	return b.String()
}

// presetTable is docs/campaigns.md's table of the presets.
func presetTable() string {
	var b strings.Builder
	b.WriteString("| Preset | What for | Size and duration |\n|---|---|---|\n")
	for _, name := range campaign.PresetNames() {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", name, mdCell(campaign.PresetDoc(name)), mdCell(campaign.PresetSize(name)))
	}
	return b.String()
}

// docText is the text of every page the docs tests read: the README and
// docs/*.md, by name.
func docText(t *testing.T) map[string]string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(repoRoot(t), "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range append(pages, filepath.Join(repoRoot(t), "README.md")) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repoRoot(t), p)
		out[filepath.ToSlash(rel)] = string(data)
	}
	return out
}

// proseLines are md's lines outside code blocks, numbered from 1.
func proseLines(md string) map[int]string {
	out := map[int]string{}
	in := false
	for i, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			in = !in
			continue
		}
		if !in {
			out[i+1] = l
		}
	}
	return out
}

var (
	flagsMarker = regexp.MustCompile(`^<!-- flags: (chaos(?: [a-z]+)*) -->$`)
	// A flag named in a table cell or in prose: `--name` or `--name VALUE`.
	cellFlag = regexp.MustCompile("`(--[a-z][a-z0-9-]*)[^`]*`")
)

// TestDocFlagTables: every table of flags in the README and docs/ says
// which command it documents (<!-- flags: chaos CMD --> on the line before
// it), every flag a row names is a flag of that command, and a default a
// row states plainly (a number, a duration, true/false, a word) is the
// flag's default. A renamed flag or a changed default fails here.
func TestDocFlagTables(t *testing.T) {
	root := referenceRoot()
	tables := 0
	for page, md := range docText(t) {
		lines := strings.Split(md, "\n")
		prose := proseLines(md)
		for i := 0; i < len(lines); i++ {
			header := lines[i]
			if _, ok := prose[i+1]; !ok || i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "|---") ||
				!regexp.MustCompile(`(?i)^\|[^|]*\bflag\b[^|]*\|`).MatchString(header) {
				continue // not the header of a table whose first column is flags
			}
			var m []string
			if i > 0 {
				m = flagsMarker.FindStringSubmatch(strings.TrimSpace(lines[i-1]))
			}
			if m == nil {
				t.Errorf("%s:%d: a table of flags without <!-- flags: chaos CMD --> on the line before it", page, i+1)
				continue
			}
			cmd, rest, err := root.Find(strings.Fields(m[1])[1:])
			if err != nil || len(rest) > 0 {
				t.Errorf("%s:%d: <!-- flags: %s -->: no such command", page, i, m[1])
				continue
			}
			tables++
			cols := tableCells(header)
			defaultCol := slices.IndexFunc(cols, func(c string) bool { return strings.EqualFold(c, "default") })
			for j := i + 2; j < len(lines) && strings.HasPrefix(lines[j], "|"); j++ {
				cells := tableCells(lines[j])
				var names []string
				for _, f := range cellFlag.FindAllStringSubmatch(cells[0], -1) {
					names = append(names, strings.TrimPrefix(f[1], "--"))
				}
				for _, name := range names {
					if cmd.Flags().Lookup(name) == nil {
						t.Errorf("%s:%d: --%s is not a flag of %s", page, j+1, name, cmd.CommandPath())
					}
				}
				if defaultCol < 0 || defaultCol >= len(cells) || len(names) == 0 {
					continue
				}
				said := strings.Split(cells[defaultCol], ", ")
				if len(said) != len(names) {
					if len(names) > 1 {
						continue // one default said for several flags: prose
					}
					said = []string{cells[defaultCol]}
				}
				for k, name := range names {
					f := cmd.Flags().Lookup(name)
					if f == nil {
						continue
					}
					if ok, plain := sameDefault(strings.Trim(said[k], "` "), f); plain && !ok {
						t.Errorf("%s:%d: the table says --%s of %s defaults to %s; it is %q", page, j+1, name, cmd.CommandPath(), said[k], f.DefValue)
					}
				}
			}
		}
	}
	if tables < 10 {
		t.Errorf("only %d tables of flags found", tables)
	}
}

// tableCells are the cells of a Markdown table row.
func tableCells(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimSuffix(strings.TrimPrefix(row, "|"), "|")
	var cells []string
	for _, c := range regexp.MustCompile(`[^\\]\|`).Split(" "+row, -1) {
		cells = append(cells, strings.TrimSpace(c))
	}
	return cells
}

// sameDefault compares a default a table states with the flag's: plain
// says whether the table's is a plain value that can be compared (a
// number, a duration, true/false/off, or one word); ok whether they agree.
func sameDefault(said string, f *pflag.Flag) (ok, plain bool) {
	def := f.DefValue
	if d, err := time.ParseDuration(said); err == nil {
		fd, ferr := time.ParseDuration(def)
		return ferr == nil && fd == d, true
	}
	if n, err := strconv.ParseFloat(said, 64); err == nil {
		fn, ferr := strconv.ParseFloat(def, 64)
		return ferr == nil && fn == n, true
	}
	switch said {
	case "false", "off":
		return def == "false", true
	case "true", "on":
		return def == "true", true
	case "none":
		// No value, or the word none itself.
		return def == "" || def == "[]" || def == "none", true
	}
	if regexp.MustCompile(`^[a-z][a-z0-9.:-]*$`).MatchString(said) && f.Value.Type() == "string" && def != "" {
		return def == said, true
	}
	return false, false
}

// TestDocFlagNames: every flag the README and docs/ name in backquotes is
// a flag of chaos, of the command the span names when it names one
// (`chaos cluster up --network-faults`), and every `chaos CMD` is a
// command. A flag or command renamed or removed leaves no stale mention.
func TestDocFlagNames(t *testing.T) {
	root := referenceRoot()
	all := map[string]bool{}
	for _, c := range referenceCommands(root) {
		c.InitDefaultHelpFlag()
		c.Flags().VisitAll(func(f *pflag.Flag) { all[f.Name] = true })
	}
	all["version"] = true
	span := regexp.MustCompile("`([^`]+)`")
	for page, md := range docText(t) {
		for n, line := range proseLines(md) {
			for _, m := range span.FindAllStringSubmatch(line, -1) {
				words := strings.Fields(m[1])
				if len(words) == 0 {
					continue
				}
				switch {
				case strings.HasPrefix(words[0], "--") && len(words[0]) > 2:
					name, _, _ := strings.Cut(strings.TrimPrefix(words[0], "--"), "=")
					name = strings.TrimRight(name, ",.;:)")
					if !all[name] && !strings.Contains(name, "*") {
						t.Errorf("%s:%d: `%s`: chaos has no flag --%s", page, n, m[1], name)
					}
				case words[0] == "chaos" || words[0] == "bin/chaos":
					checkChaosSpan(t, root, page, n, words[1:])
				}
			}
		}
	}
}

// checkChaosSpan checks a `chaos CMD --flag ...` span: CMD is a command,
// and each --flag one of its flags.
func checkChaosSpan(t *testing.T, root *cobra.Command, page string, line int, words []string) {
	t.Helper()
	var path []string
	for _, w := range words {
		if !regexp.MustCompile(`^[a-z]+$`).MatchString(w) {
			break
		}
		path = append(path, w)
	}
	cmd := root
	for _, w := range path {
		next := (*cobra.Command)(nil)
		for _, sub := range cmd.Commands() {
			if sub.Name() == w {
				next = sub
			}
		}
		if next == nil {
			break // an argument, or prose after the command: "chaos run runs ..."
		}
		cmd = next
	}
	// `chaos version v0.1.0` is what chaos --version prints.
	if cmd == root && len(path) > 0 && !slices.Contains([]string{"help", "completion", "version"}, path[0]) {
		t.Errorf("%s:%d: `chaos %s`: no such command", page, line, strings.Join(words, " "))
		return
	}
	cmd.InitDefaultHelpFlag()
	cmd.InitDefaultVersionFlag()
	for _, w := range words {
		if !strings.HasPrefix(w, "--") || len(w) == 2 {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(w, "--"), "=")
		name = strings.TrimRight(name, ",.;:)")
		if cmd.Flags().Lookup(name) == nil && !strings.Contains(name, "*") {
			t.Errorf("%s:%d: `chaos %s`: --%s is not a flag of %s", page, line, strings.Join(words, " "), name, cmd.CommandPath())
		}
	}
}

// paragraph is the paragraph of md that starts with start.
func paragraph(t *testing.T, page, md, start string) string {
	t.Helper()
	i := strings.Index(md, start)
	if i < 0 {
		t.Fatalf("%s has no paragraph starting %q", page, start)
	}
	p, _, _ := strings.Cut(md[i:], "\n\n")
	return p
}

// TestExternalDocRefusals: docs/external.md names every flag chaos run
// refuses with --runtime external because it sets up chaos's own brokers,
// and each is refused; the topic's flags it names as the new topic's are
// accepted.
func TestExternalDocRefusals(t *testing.T) {
	md := docText(t)["docs/external.md"]
	p := paragraph(t, "docs/external.md", md, "**Flags for chaos's own brokers are refused.**")
	named := map[string]bool{}
	for _, m := range cellFlag.FindAllStringSubmatch(p, -1) {
		named[strings.TrimPrefix(m[1], "--")] = true
	}
	run := newRunCmd()
	base := []string{"run", "--runtime", "external", "--bootstrap", "127.0.0.1:1"}
	for _, name := range append(slices.Clone(brokerOnlyFlags), "bug", "lose-unsynced", "base-port") {
		if !named[name] {
			t.Errorf("docs/external.md does not name --%s among the flags refused with --runtime external", name)
		}
		f := run.Flags().Lookup(name)
		value := map[string]string{"bug": "ack-before-replicate", "base-port": "9092"}[name]
		switch {
		case value != "":
		case f.Value.Type() == "bool":
			value = "true"
		default:
			value = f.DefValue
		}
		err := acceptChaos(append(slices.Clone(base), "--"+name+"="+value))
		if err == nil || !strings.Contains(err.Error(), "not with --runtime external") {
			t.Errorf("chaos run --runtime external --%s %s: %v, but docs/external.md says it is refused", name, value, err)
		}
	}
	for _, name := range []string{"partitions", "replication-factor", "min-insync-replicas", "election"} {
		if !named[name] {
			t.Errorf("docs/external.md does not say --%s is the new topic's", name)
		}
		if err := acceptChaos(append(slices.Clone(base), "--"+name, run.Flags().Lookup(name).DefValue)); err != nil {
			t.Errorf("chaos run --runtime external --%s: %v, but docs/external.md says it sets the new topic", name, err)
		}
	}
}

// TestExternalDocClusterFile: docs/external.md lists every field of the
// cluster file and every command it takes (one per --*-cmd).
func TestExternalDocClusterFile(t *testing.T) {
	md := docText(t)["docs/external.md"]
	p := paragraph(t, "docs/external.md", md, "The fields are ")
	ty := reflect.TypeOf(runner.ClusterFile{})
	for i := range ty.NumField() {
		name, _, _ := strings.Cut(ty.Field(i).Tag.Get("json"), ",")
		if !strings.Contains(p, "`"+name+"`") {
			t.Errorf("docs/external.md's cluster file fields leave out %q", name)
		}
	}
	for _, a := range external.Actions() {
		if !strings.Contains(p, "`"+a+"`") {
			t.Errorf("docs/external.md's cluster file commands leave out %q (--%s-cmd)", a, a)
		}
	}
}

// TestCampaignHelpSizes: chaos campaign --help says each preset's size as
// the preset plans it: its cells (counted in the plan, not in the help's
// own arithmetic), runs per cell and time limit.
func TestCampaignHelpSizes(t *testing.T) {
	root := newRoot()
	var help strings.Builder
	root.SetOut(&help)
	root.SetArgs([]string{"campaign", "--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, name := range campaign.PresetNames() {
		spec, _ := campaign.Preset(name)
		plan, err := planCampaign(spec, t.TempDir())
		if err != nil {
			t.Fatalf("preset %s: %v", name, err)
		}
		want := fmt.Sprintf("%d cells x %d ", len(plan.Cells), spec.Runs)
		line := regexp.MustCompile(`(?m)^  ` + name + `\s.*\n\s+(.*)$`).FindStringSubmatch(help.String())
		if line == nil || !strings.HasPrefix(line[1], want) {
			t.Errorf("chaos campaign --help on preset %s: %q, want it to start %q (the plan's size)", name, line, want)
		}
	}
}

// TestDocsSayWhatSimTests: the README, docs/simulation.md and chaos sim
// --help say plainly that chaos sim tests chaos's own broker, not Apache
// Kafka.
func TestDocsSayWhatSimTests(t *testing.T) {
	text := docText(t)
	root := newRoot()
	var help strings.Builder
	root.SetOut(&help)
	root.SetArgs([]string{"sim", "--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	for where, s := range map[string]string{"README.md": text["README.md"], "docs/simulation.md": text["docs/simulation.md"], "chaos sim --help": help.String()} {
		s = strings.Join(strings.Fields(s), " ")
		if !regexp.MustCompile(`(?i)tests:? chaos's own broker[^.]*, not Apache Kafka`).MatchString(s) {
			t.Errorf("%s does not say that chaos sim tests chaos's own broker, not Apache Kafka", where)
		}
	}
}

// TestDocLinks: every link of the README and docs/ to a file of the
// repository leads to one that exists, to a heading it has when it names
// one, and never outside the repository: the docs document themselves.
func TestDocLinks(t *testing.T) {
	text := docText(t)
	anchors := map[string]map[string]bool{}
	for page, md := range text {
		anchors[page] = map[string]bool{}
		seen := map[string]int{}
		for _, l := range proseLines(md) {
			if m := regexp.MustCompile(`^#+ (.*)$`).FindStringSubmatch(l); m != nil {
				a := anchor(m[1])
				if n := seen[a]; n > 0 {
					anchors[page][fmt.Sprintf("%s-%d", a, n)] = true
				} else {
					anchors[page][a] = true
				}
				seen[a]++
			}
		}
	}
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for page, md := range text {
		for n, l := range proseLines(md) {
			for _, m := range link.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if regexp.MustCompile(`^[a-z]+:`).MatchString(target) {
					continue // http:, https:, mailto:
				}
				file, frag, _ := strings.Cut(target, "#")
				dest := page
				if file != "" {
					dest = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(page), file)))
				}
				if strings.HasPrefix(dest, "../") || strings.Contains(target, "shared/") {
					t.Errorf("%s:%d: (%s) leads outside the repository", page, n, target)
					continue
				}
				if _, err := os.Stat(filepath.Join(repoRoot(t), dest)); err != nil {
					t.Errorf("%s:%d: (%s): no such file", page, n, target)
					continue
				}
				if frag != "" && anchors[dest] != nil && !anchors[dest][frag] {
					t.Errorf("%s:%d: (%s): %s has no heading #%s", page, n, target, dest, frag)
				}
			}
		}
	}
}
