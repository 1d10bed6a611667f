package external

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"
)

// CheckCommands tries the commands of actions before a run, so that a
// broken one is found before the workload rather than in its first fault
// window. The heal command, which is harmless on a healthy cluster, is run
// on every node as a heal at the end of a window runs it. Every other
// command (start included: some refuse a node that runs, as "chaos cluster
// start" does) is probed without running it: for every node (the
// controller node too), the command as it would run there, placeholders
// filled in with every other node as peers and the delay, must parse (sh -n), and its program, the first
// word, must be one sh finds (command -v). The first command that fails
// either is returned as a *CommandError; the commands run go to the nodes'
// logs only. It returns what it did, for the run to say.
func (c *Cluster) CheckCommands(ctx context.Context, actions []string, delay time.Duration) (string, error) {
	var ran, probed []string
	given := func(a string) bool { return slices.Contains(actions, a) && c.spec.Commands.Of(a) != "" }
	nodes := c.nodes()
	// The heal first, so that a run refused for another command has
	// still tried it.
	if given(Heal) {
		for _, n := range nodes {
			if err := c.run(ctx, Heal, n, c.others(n)); err != nil {
				c.TakeCommands()
				return "", err
			}
		}
		c.mu.Lock()
		c.cut = false
		c.mu.Unlock()
		ran = append(ran, fmt.Sprintf("%s on %d nodes", Heal, len(nodes)))
	}
	for _, a := range Actions() {
		if a == Heal || !given(a) {
			continue
		}
		for _, n := range nodes {
			if err := c.probe(ctx, a, n, c.others(n), delay); err != nil {
				c.TakeCommands()
				return "", err
			}
		}
		probed = append(probed, a)
	}
	// They were no fault's: the first window's record must not carry
	// them.
	c.TakeCommands()
	var parts []string
	if len(ran) > 0 {
		parts = append(parts, "ran "+strings.Join(ran, ", "))
	}
	if len(probed) > 0 {
		parts = append(parts, fmt.Sprintf("probed %s for each of %d nodes (sh -n, command -v; not run)", strings.Join(probed, ", "), len(nodes)))
	}
	if len(parts) == 0 {
		return "no fault command to check", nil
	}
	return strings.Join(parts, "; "), nil
}

// probe checks, without running it, that action's command for n parses
// and names a program sh finds.
func (c *Cluster) probe(ctx context.Context, action string, n Node, peers []Node, delay time.Duration) error {
	line := Expand(c.spec.Commands.Of(action), n, peers, delay)
	fail := func(why string) error {
		msg := fmt.Sprintf("%s command for %s: %s: %s", action, n.Name, why, line)
		c.logLine(n.Name, fmt.Sprintf("%s probe of %s: sh -c %q\n-- %s", time.Now().UTC().Format(time.RFC3339Nano), action, line, why))
		return &CommandError{Action: action, Node: n.Name, Cmd: line, Exit: -1, msg: msg}
	}
	if out, err := shell(ctx, c.spec.Timeout, "sh", "-n", "-c", line); err != nil {
		return fail("sh cannot parse it (" + strings.TrimSpace(strings.TrimPrefix(out, "sh: ")) + ")")
	}
	prog := program(line)
	if prog == "" {
		return nil
	}
	if _, err := shell(ctx, c.spec.Timeout, "sh", "-c", `command -v -- "$1"`, "sh", prog); err != nil {
		return fail(fmt.Sprintf("no program %s (command -v finds none on PATH or at that path)", prog))
	}
	return nil
}

// program is the first word of a shell command when it plainly names a
// program (no quotes, expansions or assignments in it), else "".
func program(line string) string {
	line = strings.TrimSpace(line)
	end := strings.IndexAny(line, " \t\n;|&<>()")
	if end < 0 {
		end = len(line)
	}
	w := line[:end]
	if w == "" || strings.ContainsAny(w, "'\"$`\\={}*?[~") {
		return ""
	}
	return w
}

// shell runs a check's command (never a fault command) under timeout and
// returns its output.
func shell(ctx context.Context, timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}
