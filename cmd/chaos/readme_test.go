package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chaos-isr/chaos/cluster"
	"github.com/chaos-isr/chaos/internal/cli"
	"github.com/chaos-isr/chaos/nemesis"
	"github.com/chaos-isr/chaos/results/report"
)

// The README's and the docs' commands are tested, so that they cannot
// drift from the tool: TestReadme reads every command of the ```sh blocks
// of README.md and of every page of docs/ (docPages), page by page, each
// in order, and
//
//   - checks that the CLI accepts every chaos command (flags parse, values
//     validate: the command tree runs in a validation-only context and
//     stops before starting anything; a campaign's every planned run is
//     checked the same way);
//   - runs the quick-start ones for real, in a temporary directory on free
//     127.0.0.1 ports: chaos run (with a short --time-limit), check,
//     report, serve, --version, cluster up with every kcat command against
//     it (including the min.insync.replicas=2 demo with two brokers killed),
//     the faults by hand and a run of the external runtime against it, and
//     the cluster by hand;
//   - checks what cannot run here for parsing only (the docker runtime,
//     docker itself, an external cluster that is not a local cluster up,
//     campaigns, make targets, go install, go run) and lists those;
//   - fails on a command it does not know how to check.
//
// A comment after a command may state what it shows: "# shows: TEXT" (the
// output contains TEXT), "# fails: TEXT" (it exits non-zero within
// seconds, saying TEXT); on a campaign, "N cells", "x N runs", "= N runs"
// and "about N s" / "about N minutes" are checked against its plan.

// readmeCmd is one command line of the README or a docs page.
type readmeCmd struct {
	File    string     // the page, README.md or docs/NAME.md
	Line    int        // the line it starts on
	Text    string     // as written, continuation lines joined
	Env     []string   // VAR=value words before the program
	Stages  [][]string // the pipeline's commands, each its words
	Bg      bool       // it ends in &
	Comment string     // the comment after it, without "#"
}

func (c readmeCmd) String() string { return fmt.Sprintf("%s:%d: %s", c.File, c.Line, c.Text) }

// readmeCommands extracts the commands of every ```sh block of the README.
func readmeCommands(md string) ([]readmeCmd, error) { return pageCommands("README.md", md) }

// pageCommands extracts the commands of every ```sh block of page, whose
// text is md.
func pageCommands(page, md string) ([]readmeCmd, error) {
	var cmds []readmeCmd
	lines := strings.Split(md, "\n")
	in := false
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		switch {
		case !in && strings.TrimSpace(l) == "```sh":
			in = true
			continue
		case in && strings.TrimSpace(l) == "```":
			in = false
			continue
		case !in:
			continue
		}
		start := i
		text := strings.TrimSpace(l)
		for strings.HasSuffix(text, "\\") && i+1 < len(lines) {
			i++
			text = strings.TrimSuffix(text, "\\") + " " + strings.TrimSpace(lines[i])
		}
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		c, err := parseShell(text)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %s: %v", page, start+1, text, err)
		}
		c.File, c.Line = page, start+1
		cmds = append(cmds, c)
	}
	if in {
		return nil, fmt.Errorf("%s: a ```sh block is not closed", page)
	}
	return cmds, nil
}

// pageFile marks the code block after it as a file the page's commands
// read: <!-- file: NAME -->.
var pageFile = regexp.MustCompile(`^<!-- file: ([\w.-]+) -->$`)

// pageFiles are the files page gives, by name: the content of the code
// block right after each <!-- file: NAME --> line.
func pageFiles(page, md string) (map[string]string, error) {
	files := map[string]string{}
	lines := strings.Split(md, "\n")
	for i, l := range lines {
		m := pageFile.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil {
			continue
		}
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
			return nil, fmt.Errorf("%s:%d: %s is not followed by a code block", page, i+1, l)
		}
		end := slices.Index(lines[i+2:], "```")
		if end < 0 {
			return nil, fmt.Errorf("%s:%d: the code block of %s is not closed", page, i+2, m[1])
		}
		if _, dup := files[m[1]]; dup {
			return nil, fmt.Errorf("%s:%d: %s is given twice", page, i+1, m[1])
		}
		files[m[1]] = strings.Join(lines[i+2:i+2+end], "\n") + "\n"
	}
	return files, nil
}

// parseShell splits one command line in the subset of sh the README may
// use: words, '...' and "..." quotes, backslash escapes, pipes, a final &
// and a comment. Anything else (;, &&, redirections, $, backquotes) is
// refused, so that every README command stays one simple command a test
// can check.
func parseShell(s string) (readmeCmd, error) {
	c := readmeCmd{Text: s}
	var words []string
	var cur strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	endStage := func() error {
		flush()
		if len(words) == 0 {
			return errors.New("an empty command in a pipeline")
		}
		c.Stages = append(c.Stages, words)
		words = nil
		return nil
	}
	r := []rune(s)
	for i := 0; i < len(r); i++ {
		ch := r[i]
		switch {
		case ch == '\'':
			j := slices.Index(r[i+1:], '\'')
			if j < 0 {
				return c, errors.New("an unclosed '")
			}
			cur.WriteString(string(r[i+1 : i+1+j]))
			inWord = true
			i += j + 1
		case ch == '"':
			inWord = true
			for i++; ; i++ {
				if i >= len(r) {
					return c, errors.New(`an unclosed "`)
				}
				if r[i] == '"' {
					break
				}
				if r[i] == '$' || r[i] == '`' {
					return c, fmt.Errorf("%c in double quotes: no expansions in README commands", r[i])
				}
				if r[i] == '\\' && i+1 < len(r) && strings.ContainsRune(`"\`, r[i+1]) {
					i++
				}
				cur.WriteRune(r[i])
			}
		case ch == '\\' && i+1 < len(r):
			i++
			cur.WriteRune(r[i])
			inWord = true
		case ch == ' ' || ch == '\t':
			flush()
		case ch == '#' && !inWord:
			c.Comment = strings.TrimSpace(string(r[i+1:]))
			i = len(r)
		case ch == '|' && !(i+1 < len(r) && r[i+1] == '|'):
			if err := endStage(); err != nil {
				return c, err
			}
		case ch == '&' && !(i+1 < len(r) && r[i+1] == '&'):
			rest := strings.TrimSpace(string(r[i+1:]))
			if rest != "" && !strings.HasPrefix(rest, "#") {
				return c, errors.New("& before the end of the command")
			}
			c.Bg = true
		case strings.ContainsRune(";&|<>$`(){}", ch):
			return c, fmt.Errorf("%q: not in the subset of sh README commands use (one simple command or pipeline)", ch)
		default:
			cur.WriteRune(ch)
			inWord = true
		}
	}
	if err := endStage(); err != nil {
		return c, err
	}
	for len(c.Stages[0]) > 0 && regexp.MustCompile(`^[A-Z_]+=`).MatchString(c.Stages[0][0]) {
		c.Env = append(c.Env, c.Stages[0][0])
		c.Stages[0] = c.Stages[0][1:]
	}
	if len(c.Stages[0]) == 0 {
		return c, errors.New("no program after the variable assignments")
	}
	return c, nil
}

// chaosArgs returns the arguments of a chaos command ("bin/chaos ..." or an
// installed "chaos ..."), or false.
func chaosArgs(words []string) ([]string, bool) {
	if words[0] == "bin/chaos" || words[0] == "chaos" {
		return words[1:], true
	}
	return nil, false
}

// acceptChaos checks that the CLI accepts args as a user would type them:
// the flags parse and the arguments fit, and a command that would start
// something (a run, a cluster, a campaign, a server, a broker) validates
// every value and stops in a validation-only context.
func acceptChaos(args []string) error {
	root := newRoot()
	cmd, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	// cobra adds --help and --version when it executes; so must a parse.
	cmd.InitDefaultHelpFlag()
	cmd.InitDefaultVersionFlag()
	if err := cmd.ParseFlags(rest); err != nil {
		return flagParseError(cmd, err)
	}
	if cmd == root || cmd.Name() == "help" || cmd.Name() == "completion" {
		return nil
	}
	if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
		return err
	}
	switch {
	case cmd.Name() == "check", cmd.Name() == "report", cmd.Name() == "serve",
		cmd.Name() == "sim" && cmd.Flags().Changed("from"):
		// They read a store, which TestReadme's working directory has
		// when it runs them for real: parsing is what can be checked
		// without one.
		return nil
	}
	root = newRoot()
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	root.SetArgs(args)
	err = root.ExecuteContext(cli.ValidateOnly(context.Background()))
	if errors.Is(err, cli.ErrValidated) {
		return nil
	}
	if err == nil {
		return errors.New("finished without reaching its validation-only stop (a command that starts something must call stopIfValidating)")
	}
	return err
}

// TestReadmeCatchesDrift: the README test's checks refuse what the CLI
// does not accept and what they do not know, so a README command that
// stops working fails TestReadme.
func TestReadmeCatchesDrift(t *testing.T) {
	md := "```sh\n" + strings.Join([]string{
		"bin/chaos run --time-limit 30s --bogus-flag   # a flag that does not exist",
		"bin/chaos run --rate -1",
		"bin/chaos run --nemesis meteor",
		"bin/chaos frobnicate",
		"bin/chaos check",
		"bin/chaos campaign --preset nope",
		"bin/chaos cluster up --fsync 100ms",
		"bin/chaos run --time-limit 30s; rm -rf store",
		"bin/chaos run > out.txt",
	}, "\n") + "\n```\n"
	_, err := readmeCommands(md)
	if err == nil || !strings.Contains(err.Error(), "README.md:9:") {
		t.Errorf("a command with ; was not refused: %v", err)
	}
	md = strings.Replace(md, "bin/chaos run --time-limit 30s; rm -rf store\n", "", 1)
	if _, err := readmeCommands(md); err == nil || !strings.Contains(err.Error(), "README.md:9:") {
		t.Errorf("a redirection was not refused: %v", err)
	}
	md = strings.Replace(md, "bin/chaos run > out.txt\n", "", 1)
	cmds, err := readmeCommands(md)
	if err != nil || len(cmds) != 7 {
		t.Fatalf("%d commands, %v", len(cmds), err)
	}
	for _, c := range cmds {
		args, _ := chaosArgs(c.Stages[0])
		if err := acceptChaos(args); err == nil {
			t.Errorf("%s: accepted", c)
		} else {
			t.Logf("%s: refused: %v", c, err)
		}
	}
	// And what the README does say is accepted.
	good, err := readmeCommands("```sh\nbin/chaos run --time-limit 30s \\\n    --nemesis \"kill;x\"   # ok\n```\n")
	if err != nil || len(good) != 1 || good[0].Comment != "ok" || !slices.Equal(good[0].Stages[0], []string{"bin/chaos", "run", "--time-limit", "30s", "--nemesis", "kill;x"}) {
		t.Fatalf("%+v %v", good, err)
	}
	if err := acceptChaos([]string{"run", "--time-limit", "30s", "--acks", "all"}); err != nil {
		t.Errorf("a good command refused: %v", err)
	}
}

// untestedPages are the docs pages whose commands TestReadme leaves to
// another test, and why.
var untestedPages = map[string]string{
	// Its workflow (GitHub Actions, Kubernetes) is shell and YAML beyond
	// what TestReadme runs.
	"docs/sharding.md": "a CI workflow and a Kubernetes Job",
}

// docPages are the pages whose commands TestReadme runs or checks: the
// README first (the later pages' commands may use the store its runs
// leave), then every page of docs/ but the untested ones, by name.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(repoRoot(t), "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md"}
	for _, p := range pages {
		rel := "docs/" + filepath.Base(p)
		if _, skip := untestedPages[rel]; !skip {
			out = append(out, rel)
		}
	}
	return out
}

// TestReadme runs or checks every command of README.md and the docs
// pages; see the top of this file.
func TestReadme(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the local runtime needs Linux")
	}
	repo := repoRoot(t)
	r := &readmeRunner{t: t, bin: chaosBin(t), repo: repo, dir: t.TempDir()}
	// The commands checked in this process read the files the pages give
	// (a spec, a cluster file) where the commands run for real do.
	t.Chdir(r.dir)
	r.kcat, _ = exec.LookPath("kcat")
	if r.kcat == "" && os.Getenv("CI") == "true" {
		t.Fatal("kcat is not on PATH, and CI=true requires it: install it (apt-get install kcat)")
	}
	t.Cleanup(r.stopAll)
	start := time.Now()
	total := 0
	only := os.Getenv("CHAOS_README_PAGE") // one page, e.g. docs/hunt.md, while editing it
	for _, page := range docPages(t) {
		if only != "" && page != only {
			continue
		}
		// The page's /tmp/demo is not the last page's.
		r.tmp = filepath.Join(r.dir, "tmp", strings.TrimSuffix(filepath.Base(page), ".md"))
		cmds := readPage(t, repo, page, r.dir)
		if page == "README.md" && len(cmds) < 8 {
			t.Fatalf("only %d commands found in README.md's ```sh blocks", len(cmds))
		}
		for _, c := range cmds {
			t0 := time.Now()
			how := r.do(c)
			t.Logf("%-10s %5.1fs  %s", how, time.Since(t0).Seconds(), c)
		}
		// A page's cluster is its own: the next page starts from none.
		r.stopAll()
		total += len(cmds)
	}
	if total < 60 && only == "" {
		t.Errorf("only %d commands in the README's and the docs' ```sh blocks", total)
	}
	t.Logf("%d commands in %s; checked for parsing only, not run here:", total, time.Since(start).Round(100*time.Millisecond))
	for _, p := range r.parsedOnly {
		t.Logf("  %s", p)
	}
	for page, why := range untestedPages {
		t.Logf("  %s: not read (%s)", page, why)
	}
}

// readPage is the commands of page (README.md or docs/NAME.md) of the
// repository at repo, with the files it gives (a spec, a cluster file)
// written to dir, where its commands read them.
func readPage(t *testing.T, repo, page, dir string) []readmeCmd {
	t.Helper()
	md, err := os.ReadFile(filepath.Join(repo, page))
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := pageCommands(page, string(md))
	if err != nil {
		t.Fatal(err)
	}
	files, err := pageFiles(page, string(md))
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return cmds
}

type readmeRunner struct {
	t          *testing.T
	bin, repo  string
	dir        string // the working directory of real commands
	tmp        string // where the page's /tmp paths go: a directory of its own
	kcat       string // "" when it is not installed
	servers    []*bgProc
	jobs       []*bgProc   // started with &, for kill %n
	base       int         // the base port of the running servers
	pids       map[int]int // broker id -> pid in the running cluster
	parsedOnly []string
	// simRuns are the histories chaos sim commands stored, by command:
	// a command run again must replay its history byte for byte.
	simRuns map[string][]byte
}

// do checks or runs c and says how.
func (r *readmeRunner) do(c readmeCmd) string {
	t := r.t
	w := c.Stages[0]
	if args, ok := chaosArgs(w); ok {
		if len(c.Stages) > 1 {
			t.Errorf("%s: a chaos command in a pipeline is not checked", c)
			return "error"
		}
		if err := acceptChaos(args); err != nil {
			t.Errorf("%s: refused: %v", c, err)
			return "refused"
		}
		return r.chaos(c, args)
	}
	switch w[0] {
	case "make":
		return r.make(c)
	case "go":
		if len(w) > 1 && w[1] == "run" {
			return r.goRun(c)
		}
		return r.goInstall(c)
	case "docker":
		return r.parsed(c, "docker itself: a Docker engine and images that cannot be pulled here")
	case "kill":
		return r.kill(c)
	case "sleep":
		d, err := strconv.ParseFloat(w[len(w)-1], 64)
		if err != nil || len(w) != 2 || d > 30 {
			t.Errorf("%s: want sleep SECONDS (at most 30)", c)
			return "error"
		}
		time.Sleep(time.Duration(d * float64(time.Second)))
		return "ran"
	case "kcat", "printf", "echo":
		return r.kcatCmd(c)
	}
	t.Errorf("%s: TestReadme does not know how to check %q; teach it (cmd/chaos/readme_test.go)", c, w[0])
	return "unknown"
}

func (r *readmeRunner) parsed(c readmeCmd, why string) string {
	r.parsedOnly = append(r.parsedOnly, fmt.Sprintf("%s (%s)", c, why))
	return "parsed"
}

func (r *readmeRunner) chaos(c readmeCmd, args []string) string {
	t := r.t
	fl := newRoot()
	sub, _, _ := fl.Find(args)
	path := strings.TrimPrefix(sub.CommandPath(), "chaos ")
	docker := slices.Contains(args, "docker") && slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--runtime") })
	switch {
	case sub == fl:
		out, code := r.run(90*time.Second, args...)
		if code != 0 || (slices.Contains(args, "--version") && !strings.HasPrefix(out, "chaos version ")) {
			t.Errorf("%s: exit %d:\n%s", c, code, out)
		}
		return "ran"
	case docker || path == "cluster clean":
		return r.parsed(c, "the docker runtime")
	case path == "campaign":
		return r.campaign(c, args)
	case path == "campaign merge":
		if err := acceptChaos(args); err != nil {
			t.Errorf("%s: %v", c, err)
		}
		return r.parsed(c, "needs the shards' stores")
	case path == "run":
		if runsExternal(args) && !r.local(args) {
			// The accepting was the check: the cluster is not here.
			return r.parsed(c, "an external cluster that is not a local cluster up")
		}
		if runsExternal(args) {
			// A test of the cluster up the page started before
			// it, its fault commands pointed at that cluster.
			if len(r.servers) == 0 {
				t.Errorf("%s: no cluster is up for it (the page must start one before)", c)
				return "error"
			}
			args = r.externalArgs(args)
		}
		// The tutorial's run, shortened: a real cluster, workload, final
		// reads and checkers, and the table the README explains.
		short := []string{"--time-limit", "5s"}
		if slices.Contains(args, "--schedule") {
			// The windows are given: the page's own time limit holds
			// them.
			short = nil
		} else if i := slices.Index(args, "--nemesis"); i >= 0 && i+1 < len(args) && args[i+1] != "none" {
			// A nemesis needs room for a window of each kind: chaos run
			// refuses a schedule without.
			limit := max(6*time.Second, nemesis.CoverTimeLimit(len(strings.Split(args[i+1], ",")), 2*time.Second))
			short = []string{"--nemesis-interval", "2s", "--time-limit", limit.String()}
		}
		out, code := r.run(3*time.Minute, append(slices.Clone(args), short...)...)
		if code != 0 {
			t.Errorf("%s (with %s): exit %d:\n%s", c, strings.Join(short, " "), code, out)
		}
		for _, want := range []string{"guarantees judged for acks=", "ANOMALY  ", "RESULT  ", "COUNT  ", "PERMITTED  ", "EXAMPLE OPS", "verdict: VALID", "report: "} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: the output lacks %q, which the README explains:\n%s", c, want, out)
			}
		}
		if len(short) == 0 {
			return "ran its schedule"
		}
		return "ran " + short[len(short)-1]
	case path == "check" || path == "report":
		out, code := r.run(2*time.Minute, args...)
		if code != 0 {
			t.Errorf("%s: exit %d:\n%s", c, code, out)
		}
		return "ran"
	case path == "serve":
		return r.serve(c, args)
	case path == "sim":
		return r.sim(c, args)
	case path == "hunt":
		return r.hunt(c, args)
	case path == "cluster up":
		return r.clusterUp(c, args)
	case slices.Contains([]string{"cluster kill", "cluster stop", "cluster start", "cluster pause", "cluster resume", "cluster partition", "cluster heal"}, path):
		return r.clusterControl(c, args)
	case path == "controller" || path == "broker":
		if !c.Bg {
			return r.parsed(c, "runs in the foreground")
		}
		return r.byHand(c, path, args)
	}
	t.Errorf("%s: TestReadme does not know how to run chaos %s; teach it", c, path)
	return "unknown"
}

// hunt runs a chaos hunt command for real, cut to at most 40 runs: with a
// planted bug (--bug) it must find it, exit 1 and print its replay
// command; on the correct broker it must find nothing and exit 0. Either
// way it must write its hunt page.
func (r *readmeRunner) hunt(c readmeCmd, args []string) string {
	t := r.t
	if i := slices.Index(args, "--runtime"); i >= 0 && i+1 < len(args) && args[i+1] != "sim" {
		return r.realHunt(c, args, args[i+1])
	}
	cut := append(withoutBudget(args), "--runs", "40", "--shrink-runs", "20")
	out, code := r.run(5*time.Minute, cut...)
	wantCode, want := 0, []string{"hunt seed ", "0 invalid", "hunt page: "}
	if slices.Contains(args, "--bug") {
		wantCode, want = 1, []string{"FOUND at run ", "replay: ", "hunt page: "}
	}
	if code != wantCode {
		t.Errorf("%s (cut to 40 runs): exit %d, want %d:\n%s", c, code, wantCode, out)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("%s: the output lacks %q:\n%s", c, w, out)
		}
	}
	return "ran 40 runs"
}

// withoutBudget is a hunt's args without its --runs and --time.
func withoutBudget(args []string) []string {
	var cut []string
	for i := 0; i < len(args); i++ {
		if (args[i] == "--runs" || args[i] == "--time") && i+1 < len(args) {
			i++
			continue
		}
		cut = append(cut, args[i])
	}
	return cut
}

// realHunt runs a hunt of the local runtime for real, cut to one run (a
// real run takes half a minute), which must reach a verdict and be recorded, and
// whose finding, if any, must print the chaos run command that runs it
// again; a hunt of another runtime is checked for parsing only (the
// docker runtime and the reader's own cluster are not here).
func (r *readmeRunner) realHunt(c readmeCmd, args []string, runtime string) string {
	t := r.t
	if runtime != "local" {
		return r.parsed(c, "a hunt of the "+runtime+" runtime")
	}
	cut := append(withoutBudget(args), "--runs", "1")
	out, code := r.run(3*time.Minute, cut...)
	if code != 0 && code != 1 && code != 2 {
		// Valid, invalid or unknown (a drawn scenario may leave a check
		// without evidence): a verdict, not an error.
		t.Errorf("%s (cut to 1 run): exit %d, want a verdict (0, 1 or 2):\n%s", c, code, out)
	}
	for _, w := range []string{"in real time on the local runtime", "hunt: 1 runs", "hunt page: "} {
		if !strings.Contains(out, w) {
			t.Errorf("%s: the output lacks %q:\n%s", c, w, out)
		}
	}
	if code == 1 && !strings.Contains(out, "run again: chaos run ") {
		t.Errorf("%s: a finding without its chaos run command:\n%s", c, out)
	}
	return "ran 1 run"
}

// sim runs a chaos sim command for real: a simulated run takes about a
// second, and a sweep is cut to two seeds. A run must reach a verdict
// (valid, as the README's examples are, but for one whose comment shows
// "verdict: INVALID...", which must exit 1 and print it); the same command
// run again must store the same history, byte for byte, as the README says
// it does.
func (r *readmeRunner) sim(c readmeCmd, args []string) string {
	t := r.t
	args = slices.Clone(args)
	if slices.Contains(args, "--shrink") || slices.Contains(args, "--from") {
		return r.simSearch(c, args)
	}
	sweep := false
	for i, a := range args {
		if (a == "--seeds" || a == "--runs") && i+1 < len(args) {
			args[i+1], sweep = map[string]string{"--seeds": "1-2", "--runs": "2"}[a], true
		}
	}
	out, code := r.run(3*time.Minute, args...)
	wantCode, want := 0, []string{"simulated ", "verdict: VALID", "report: "}
	if shown, ok := strings.CutPrefix(c.Comment, "shows:"); ok && strings.Contains(shown, "verdict: INVALID") {
		wantCode, want = 1, []string{"simulated ", strings.TrimSpace(shown), "report: "}
	}
	if code != wantCode {
		t.Errorf("%s: exit %d, want %d:\n%s", c, code, wantCode, out)
	}
	if sweep {
		want = []string{"VERDICT  ", "valid    2"}
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("%s: the output lacks %q:\n%s", c, w, out)
		}
	}
	if sweep {
		return "ran 2 seeds"
	}
	store := "store"
	if i := slices.Index(args, "--store"); i >= 0 && i+1 < len(args) {
		store = args[i+1]
	}
	h, err := os.ReadFile(filepath.Join(r.dir, store, "latest", "history.jsonl"))
	if err != nil {
		t.Errorf("%s: %v", c, err)
		return "ran"
	}
	if r.simRuns == nil {
		r.simRuns = map[string][]byte{}
	}
	key := strings.Join(args, " ")
	if prev, ok := r.simRuns[key]; ok {
		if !bytes.Equal(prev, h) {
			t.Errorf("%s: run again, it stored another history (%d bytes, then %d)", c, len(prev), len(h))
		}
		return "replayed"
	}
	r.simRuns[key] = h
	return "ran"
}

// simSearch runs a chaos sim --shrink or --from command for real, its
// budget cut to a few runs. The simulated broker fails on no seed we know
// of, so the README's searches start from valid runs: they must say so,
// or, should a run fail, end in what a search prints.
func (r *readmeRunner) simSearch(c readmeCmd, args []string) string {
	t := r.t
	for i, a := range args {
		if (a == "--runs" || a == "--shrink-runs") && i+1 < len(args) {
			args[i+1] = "3"
		}
	}
	out, code := r.run(3*time.Minute, args...)
	ok := map[int]string{exitErrorCode: "nothing to shrink", exitValid: "shrunk in ", exitInvalid: "shrunk in ", exitUnknown: "shrunk in "}
	if slices.Contains(args, "--from") {
		ok = map[int]string{exitErrorCode: "nothing to reproduce", exitInvalid: "reproduced by seed ", exitUnknown: "not reproduced: "}
	}
	if want, known := ok[code]; !known || !strings.Contains(out, want) {
		t.Errorf("%s: exit %d:\n%s", c, code, out)
	}
	return fmt.Sprintf("ran, exit %d", code)
}

// run runs the chaos binary in the working directory.
func (r *readmeRunner) run(timeout time.Duration, args ...string) (string, int) {
	return runChaosIn(r.t, r.dir, timeout, args...)
}

var (
	dryRunPlan  = regexp.MustCompile(`(?m)^(\d+) cells x (\d+) runs, each (\S+)$`)
	dryRunShard = regexp.MustCompile(`(?m)^shard \d+/\d+: (\d+) of the (\d+) runs$`)
	dryRunCmd   = regexp.MustCompile(`(?m)^\[\d+/\d+\] .* seed \d+: chaos ((?:run|sim) .*)$`)
)

// campaign checks a campaign command against its plan: every planned run
// is accepted by chaos run, and the comment's counts and duration match.
func (r *readmeRunner) campaign(c readmeCmd, args []string) string {
	t := r.t
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	dry := slices.Clone(args)
	if i := slices.Index(dry, "--"); i >= 0 {
		dry = slices.Insert(dry, i, "--dry-run")
	} else {
		dry = append(dry, "--dry-run")
	}
	root.SetArgs(dry)
	if err := root.Execute(); err != nil {
		t.Errorf("%s --dry-run: %v\n%s", c, err, out.String())
		return "refused"
	}
	m := dryRunPlan.FindStringSubmatch(out.String())
	if m == nil {
		t.Errorf("%s --dry-run: no plan line:\n%s", c, out.String())
		return "error"
	}
	cells, _ := strconv.Atoi(m[1])
	runs, _ := strconv.Atoi(m[2])
	limit, _ := time.ParseDuration(m[3])
	planned := dryRunCmd.FindAllStringSubmatch(out.String(), -1)
	want := cells * runs
	if m := dryRunShard.FindStringSubmatch(out.String()); m != nil {
		// A shard lists its slice of the whole plan's runs.
		n, _ := strconv.Atoi(m[1])
		if all, _ := strconv.Atoi(m[2]); all != want || n > want {
			t.Errorf("%s: %q, but the plan has %d x %d runs", c, m[0], cells, runs)
		}
		want = n
	}
	if len(planned) != want {
		t.Errorf("%s: the plan lists %d runs, want %d", c, len(planned), want)
	}
	for _, p := range planned {
		pc, err := parseShell(p[1])
		if err == nil {
			err = acceptChaos(pc.Stages[0])
		}
		if err != nil {
			t.Errorf("%s: planned run %q refused: %v", c, p[1], err)
		}
	}
	// The comment's claims, against the plan and the measured per-run
	// time (its limit plus about 1.5 s).
	total := cells * runs
	for _, claim := range []struct {
		re   string
		want int
	}{{`(\d+) cells`, cells}, {`x (\d+) runs`, runs}, {`= (\d+) runs`, total}} {
		if m := regexp.MustCompile(claim.re).FindStringSubmatch(c.Comment); m != nil && m[1] != strconv.Itoa(claim.want) {
			t.Errorf("%s: the comment says %q, the plan has %d", c, m[0], claim.want)
		}
	}
	expect := time.Duration(total) * (limit + 1500*time.Millisecond)
	if m := regexp.MustCompile(`about (\d+) (s|minutes)\b`).FindStringSubmatch(c.Comment); m != nil {
		n, _ := strconv.Atoi(m[1])
		said := time.Duration(n) * time.Second
		if m[2] == "minutes" {
			said = time.Duration(n) * time.Minute
		}
		if said < expect*3/4 || said > expect*5/4 {
			t.Errorf("%s: the comment says %q; %d runs of %s take about %s", c, m[0], total, limit, expect.Round(time.Second))
		}
	}
	return r.parsed(c, fmt.Sprintf("a campaign: %d cells x %d runs of %s, each planned run accepted", cells, runs, limit))
}

func (r *readmeRunner) make(c readmeCmd) string {
	t := r.t
	w := c.Stages[0]
	if _, err := exec.LookPath("make"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Errorf("%s: make is not installed (.ci/run installs it)", c)
		}
		return r.parsed(c, "make is not installed here")
	}
	if len(w) != 2 {
		t.Errorf("%s: want make TARGET", c)
		return "error"
	}
	cmd := exec.Command("make", "-n", w[1])
	cmd.Dir = r.repo
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Errorf("%s: make -n %s: %v\n%s", c, w[1], err, out)
		return "error"
	}
	// The chaos commands the target runs must be accepted too.
	for _, l := range strings.Split(string(out), "\n") {
		if pc, err := parseShell(strings.TrimSpace(l)); err == nil && len(pc.Stages[0]) > 0 {
			if args, ok := chaosArgs(pc.Stages[0]); ok {
				if err := acceptChaos(args); err != nil {
					t.Errorf("%s: its recipe's %q is refused: %v", c, l, err)
				}
			}
		}
	}
	return r.parsed(c, "a make target: make -n accepts it and its chaos commands are accepted")
}

func (r *readmeRunner) goInstall(c readmeCmd) string {
	t := r.t
	w := c.Stages[0]
	mod, err := os.ReadFile(filepath.Join(r.repo, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	module := strings.TrimSpace(strings.TrimPrefix(strings.SplitN(string(mod), "\n", 2)[0], "module"))
	pkg, version, _ := strings.Cut(w[len(w)-1], "@")
	rel, ok := strings.CutPrefix(pkg, module+"/")
	main, _ := os.ReadFile(filepath.Join(r.repo, filepath.FromSlash(rel), "main.go"))
	switch {
	case len(w) != 3 || w[1] != "install" || version == "":
		t.Errorf("%s: want go install PACKAGE@VERSION", c)
	case !ok || !bytes.Contains(main, []byte("\npackage main\n")):
		t.Errorf("%s: %s is not a main package of module %s", c, pkg, module)
	case !slices.Contains(c.Env, "CGO_ENABLED=0"):
		t.Errorf("%s: without CGO_ENABLED=0 the binary is dynamic and the docker runtime refuses it", c)
	}
	return r.parsed(c, "go install: "+pkg+" is this module's main package; installing needs a published module")
}

// goRun checks "go run ./PKG ARGS...": PKG is a main package of this
// module (its arguments need files a page's other commands write where
// they cannot run here).
func (r *readmeRunner) goRun(c readmeCmd) string {
	t := r.t
	w := c.Stages[0]
	if len(w) < 3 || !strings.HasPrefix(w[2], "./") {
		t.Errorf("%s: want go run ./PACKAGE ...", c)
		return "error"
	}
	main, err := os.ReadFile(filepath.Join(r.repo, filepath.FromSlash(w[2]), "main.go"))
	if err != nil || !bytes.Contains(main, []byte("\npackage main\n")) {
		t.Errorf("%s: %s is not a main package of this module: %v", c, w[2], err)
	}
	return r.parsed(c, "go run: "+w[2]+" is this module's main package")
}

// kill -9 PIDn ...: the README's placeholders for the pids that cluster
// up printed; kill %n ...: the shell's jobs, the nodes started with &,
// which must stop cleanly.
func (r *readmeRunner) kill(c readmeCmd) string {
	t := r.t
	w := c.Stages[0]
	if len(w) >= 2 && strings.HasPrefix(w[1], "%") {
		for _, j := range w[1:] {
			n, err := strconv.Atoi(strings.TrimPrefix(j, "%"))
			if err != nil || n < 1 || n > len(r.jobs) {
				t.Errorf("%s: %s is not one of the %d jobs started with &", c, j, len(r.jobs))
				continue
			}
			p := r.jobs[n-1]
			if err := p.stop(); err != nil {
				t.Errorf("%s: %v:\n%s", c, err, p.output())
			}
		}
		return "ran"
	}
	if len(w) < 3 || w[1] != "-9" {
		t.Errorf("%s: want kill -9 PID<broker id> ... or kill %%<job> ...", c)
		return "error"
	}
	for _, p := range w[2:] {
		id, err := strconv.Atoi(strings.TrimPrefix(p, "PID"))
		pid, ok := r.pids[id]
		if !strings.HasPrefix(p, "PID") || err != nil || !ok {
			t.Errorf("%s: %s names no broker of the running cluster (pids %v)", c, p, r.pids)
			continue
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Errorf("%s: %v", c, err)
		}
	}
	return "ran"
}

// readmePorts are the README's default addresses: controller 9091,
// brokers from 9092.
var readmePorts = regexp.MustCompile(`127\.0\.0\.1:(909[1-9])\b`)

// kcatCmd runs a kcat command (or printf/echo piped into kcat) against the
// running servers, with the README's ports mapped to theirs.
func (r *readmeRunner) kcatCmd(c readmeCmd) string {
	t := r.t
	last := c.Stages[len(c.Stages)-1]
	if last[0] != "kcat" || len(c.Stages) > 2 || (len(c.Stages) == 2 && c.Stages[0][0] != "printf" && c.Stages[0][0] != "echo") {
		t.Errorf("%s: want kcat ..., or printf/echo piped into kcat", c)
		return "error"
	}
	if r.kcat == "" {
		return r.parsed(c, "kcat is not installed here")
	}
	if len(r.servers) == 0 {
		t.Errorf("%s: no cluster is up for it (the README must start one before)", c)
		return "error"
	}
	var stages []string
	for _, s := range c.Stages {
		s = slices.Clone(s)
		for i, a := range s {
			s[i] = readmePorts.ReplaceAllStringFunc(a, func(m string) string {
				p, _ := strconv.Atoi(m[len("127.0.0.1:"):])
				return fmt.Sprintf("127.0.0.1:%d", r.base+p-9092)
			})
		}
		stages = append(stages, report.ShellJoin(s))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", strings.Join(stages, " | "))
	cmd.Dir = r.dir
	// On timeout, the whole pipeline goes, not just bash: a kcat left
	// behind would hold the output open for its 300 s.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start)
	switch want, fails := strings.CutPrefix(c.Comment, "fails:"); {
	case ctx.Err() != nil:
		t.Errorf("%s: still running after 20 s (a kcat that retries?):\n%s", c, out)
	case fails && err == nil:
		t.Errorf("%s: succeeded, the README says it fails:\n%s", c, out)
	case fails && !strings.Contains(string(out), strings.TrimSpace(want)):
		t.Errorf("%s: failed without saying %q:\n%s", c, strings.TrimSpace(want), out)
	case fails && took > 10*time.Second:
		t.Errorf("%s: took %s to fail", c, took.Round(time.Millisecond))
	case !fails && err != nil:
		t.Errorf("%s: %v:\n%s", c, err, out)
	}
	// "shows: isrs: 1" must not match "isrs: 1,2,3".
	if want, ok := strings.CutPrefix(c.Comment, "shows:"); ok &&
		!regexp.MustCompile(`(?m)`+regexp.QuoteMeta(strings.TrimSpace(want))+`($|[^\d,])`).Match(out) {
		t.Errorf("%s: the output lacks %q:\n%s", c, strings.TrimSpace(want), out)
	}
	return "ran"
}

// bgProc is a chaos process running in the background, its output
// collected.
type bgProc struct {
	name string
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
}

func (r *readmeRunner) start(name string, args ...string) (*bgProc, error) {
	p := &bgProc{name: name, done: make(chan struct{})}
	p.cmd = exec.Command(r.bin, args...)
	p.cmd.Dir = r.dir
	pr, pw := io.Pipe()
	p.cmd.Stdout, p.cmd.Stderr = pw, pw
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			p.mu.Lock()
			p.out.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
		}
	}()
	go func() {
		_ = p.cmd.Wait()
		pw.Close()
		close(p.done)
	}()
	r.servers = append(r.servers, p)
	return p, nil
}

func (p *bgProc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// waitFor waits until the output matches re, the process exits, or the
// timeout passes.
func (p *bgProc) waitFor(re *regexp.Regexp, timeout time.Duration) []string {
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if m := re.FindStringSubmatch(p.output()); m != nil {
			return m
		}
		select {
		case <-p.done:
			return re.FindStringSubmatch(p.output())
		default:
		}
	}
	return nil
}

// stop sends SIGTERM, as Ctrl-C would, and reports how the process ended.
func (p *bgProc) stop() error {
	select {
	case <-p.done:
	default:
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
			return fmt.Errorf("%s did not stop within 15 s of SIGTERM", p.name)
		}
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		return fmt.Errorf("%s exited %d", p.name, code)
	}
	return nil
}

// stopServers stops the running cluster or by-hand nodes; their exit must
// be clean.
func (r *readmeRunner) stopServers() {
	for _, p := range r.servers {
		if err := p.stop(); err != nil {
			r.t.Errorf("%v:\n%s", err, p.output())
		}
	}
	r.servers, r.pids, r.jobs = nil, nil, nil
}

func (r *readmeRunner) stopAll() { r.stopServers() }

// newServers stops whatever is running and picks free ports for the next
// cluster.
func (r *readmeRunner) newServers(nodes int) {
	r.stopServers()
	base, err := cluster.FreeBasePort("127.0.0.1", nodes)
	if err != nil {
		r.t.Fatal(err)
	}
	r.base, r.pids = base, map[int]int{}
}

var clusterNode = regexp.MustCompile(`(?m)^(\d+)\s+broker\s+\S+\s+pid (\d+)$`)

func (r *readmeRunner) clusterUp(c readmeCmd, args []string) string {
	t := r.t
	r.newServers(5)
	args = append(r.tmpPaths(args), "--base-port", strconv.Itoa(r.base))
	p, err := r.start("cluster up", args...)
	if err != nil {
		t.Fatal(err)
	}
	if p.waitFor(regexp.MustCompile(`(?m)^ready; Ctrl-C stops the cluster$`), 30*time.Second) == nil {
		t.Fatalf("%s: not ready within 30 s:\n%s", c, p.output())
	}
	for _, m := range clusterNode.FindAllStringSubmatch(p.output(), -1) {
		id, _ := strconv.Atoi(m[1])
		pid, _ := strconv.Atoi(m[2])
		r.pids[id] = pid
	}
	if len(r.pids) == 0 {
		t.Errorf("%s: no broker pids in its output:\n%s", c, p.output())
	}
	return "ran, up"
}

// local says whether an external run's --bootstrap is the README's
// addresses, those of a chaos cluster up on this machine.
func (r *readmeRunner) local(args []string) bool {
	for i, a := range args {
		v, ok := strings.CutPrefix(a, "--bootstrap=")
		if a == "--bootstrap" && i+1 < len(args) {
			v, ok = args[i+1], true
		}
		if ok {
			return readmePorts.MatchString(v)
		}
	}
	return false
}

// runsExternal says whether a chaos run's args ask for the external
// runtime.
func runsExternal(args []string) bool {
	for i, a := range args {
		if a == "--runtime=external" || (a == "--runtime" && i+1 < len(args) && args[i+1] == "external") {
			return true
		}
	}
	return false
}

// externalArgs points an external run's args at the running cluster up:
// the README's addresses become its ports, its /tmp paths the test's
// directory and bin/chaos the binary under test, in the fault commands
// too.
func (r *readmeRunner) externalArgs(args []string) []string {
	paths := strings.NewReplacer("/tmp/", r.tmp+"/", "bin/chaos ", r.bin+" ")
	out := make([]string, 0, len(args))
	for _, a := range args {
		a = readmePorts.ReplaceAllStringFunc(a, func(m string) string {
			p, _ := strconv.Atoi(m[len("127.0.0.1:"):])
			return fmt.Sprintf("127.0.0.1:%d", r.base+p-9092)
		})
		out = append(out, paths.Replace(a))
	}
	return out
}

// tmpPaths maps the README's /tmp paths into the test's directory.
func (r *readmeRunner) tmpPaths(args []string) []string {
	args = slices.Clone(args)
	for i, a := range args {
		if strings.HasPrefix(a, "/tmp/") {
			args[i] = filepath.Join(r.tmp, strings.TrimPrefix(a, "/tmp/"))
		}
	}
	return args
}

// clusterControl runs a fault command against the cluster up the README
// started before it (its --data mapped as that one's was): it must
// succeed, or fail at once as its "fails:" comment says, and show what its
// "shows:" comment says.
func (r *readmeRunner) clusterControl(c readmeCmd, args []string) string {
	t := r.t
	out, code := r.run(time.Minute, r.tmpPaths(args)...)
	want, fails := strings.CutPrefix(c.Comment, "fails:")
	switch {
	case fails && (code != exitErrorCode || !strings.Contains(out, strings.TrimSpace(want))):
		t.Errorf("%s: exit %d; the README says it fails (exit %d) saying %q:\n%s", c, code, exitErrorCode, strings.TrimSpace(want), out)
	case !fails && code != 0:
		t.Errorf("%s: exit %d:\n%s", c, code, out)
	}
	if want, ok := strings.CutPrefix(c.Comment, "shows:"); ok && !strings.Contains(out, strings.TrimSpace(want)) {
		t.Errorf("%s: the output lacks %q:\n%s", c, strings.TrimSpace(want), out)
	}
	return "ran"
}

// byHand starts "chaos controller ... &" or "chaos broker ... &" with the
// README's ports mapped to free ones and its /tmp paths into the test's
// directory. A controller starts a new set of servers.
func (r *readmeRunner) byHand(c readmeCmd, role string, args []string) string {
	if role == "controller" {
		r.newServers(2)
	}
	args = slices.Clone(args)
	for i, a := range args {
		if strings.HasPrefix(a, "/tmp/") {
			args[i] = filepath.Join(r.tmp, strings.TrimPrefix(a, "/tmp/"))
		}
	}
	ctrl := fmt.Sprintf("127.0.0.1:%d", r.base-1)
	if role == "controller" {
		args = append(args, "--listen", ctrl)
	} else {
		id := 1
		if i := slices.Index(args, "--id"); i >= 0 && i+1 < len(args) {
			id, _ = strconv.Atoi(args[i+1])
		}
		args = append(args, "--listen", fmt.Sprintf("127.0.0.1:%d", r.base+id-1), "--controller", ctrl)
	}
	p, err := r.start(role, args...)
	if err != nil {
		r.t.Fatal(err)
	}
	r.jobs = append(r.jobs, p)
	return "ran, bg"
}

// serve starts chaos serve on a free port, fetches the front page and
// stops it.
func (r *readmeRunner) serve(c readmeCmd, args []string) string {
	t := r.t
	p, err := r.start("serve", append(slices.Clone(args), "--addr", "127.0.0.1:0")...)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		r.servers = slices.DeleteFunc(r.servers, func(q *bgProc) bool { return q == p })
		if err := p.stop(); err != nil {
			t.Errorf("%s: %v", c, err)
		}
	}()
	m := p.waitFor(regexp.MustCompile(`at (http://127\.0\.0\.1:\d+/)`), 10*time.Second)
	if m == nil {
		t.Errorf("%s: no address printed:\n%s", c, p.output())
		return "error"
	}
	resp, err := http.Get(m[1])
	if err != nil {
		t.Errorf("%s: %v", c, err)
		return "error"
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Contains(page, []byte("acks")) {
		t.Errorf("%s: GET %s: %s\n%.500s", c, m[1], resp.Status, page)
	}
	return "ran"
}
