package main

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/chaos-isr/chaos/broker/bug"
	"github.com/chaos-isr/chaos/cluster"
	"github.com/chaos-isr/chaos/internal/cli"
)

// TestBugsCommand: chaos bugs lists every planted bug with its node, and
// --json says the same to a program.
func TestBugsCommand(t *testing.T) {
	out, err := execValidate(t, "bugs")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range bug.All() {
		if !strings.Contains(out, in.Name+" ("+string(in.Node)+")\n") {
			t.Errorf("chaos bugs does not list %s (%s):\n%s", in.Name, in.Node, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if len(line) > 100 {
			t.Errorf("line longer than 100 columns: %q", line)
		}
	}
	out, err = execValidate(t, "bugs", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var list []struct{ Name, Node, Breaks, Mirrors, Why, Scenario string }
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	var names []string
	for _, e := range list {
		names = append(names, e.Name)
		if e.Node == "" || e.Breaks == "" || e.Mirrors == "" || e.Why == "" || e.Scenario == "" {
			t.Errorf("incomplete entry %+v", e)
		}
	}
	if !slices.Equal(names, bug.Names()) {
		t.Fatalf("--json names %v, want %v", names, bug.Names())
	}
}

// TestBugFlag: chaos broker and chaos controller take --bug (repeated, or
// a comma list), refuse an unknown name with the list of known ones, and
// ignore, saying so, a known bug that lives in the other kind of node.
func TestBugFlag(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args    []string
		ignored []string // bugs the node says it ignores
	}{
		{[]string{"broker", "--data", dir, "--bug", "ack-before-replicate", "--bug", "recovery-keeps-torn-tail,offset-reuse"}, nil},
		{[]string{"broker", "--data", dir, "--bug", "unclean-when-clean"}, []string{"unclean-when-clean"}},
		{[]string{"controller", "--data", dir, "--bug", "unclean-when-clean"}, nil},
		{[]string{"controller", "--data", dir, "--bug", "read-past-hw", "--bug", "recovery-keeps-torn-tail"}, []string{"read-past-hw", "recovery-keeps-torn-tail"}},
	} {
		out, err := execValidate(t, tc.args...)
		if !errors.Is(err, cli.ErrValidated) {
			t.Errorf("chaos %s: %v, want it accepted", strings.Join(tc.args, " "), err)
			continue
		}
		var ignored []string
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if _, rest, ok := strings.Cut(line, "ignoring --bug "); ok {
				name, _, _ := strings.Cut(rest, ":")
				ignored = append(ignored, name)
			}
		}
		if !slices.Equal(ignored, tc.ignored) {
			t.Errorf("chaos %s: ignored %v, want %v (output %q)", strings.Join(tc.args, " "), ignored, tc.ignored, out)
		}
	}
	for _, args := range [][]string{
		{"broker", "--data", dir, "--bug", "ack-after-replicate"},
		{"controller", "--data", dir, "--bug", "unclean-when-clean,nope"},
	} {
		_, err := execValidate(t, args...)
		if err == nil || errors.Is(err, cli.ErrValidated) || !strings.HasPrefix(err.Error(), "--bug: not a known bug, got ") ||
			!strings.Contains(err.Error(), "ack-before-replicate, hw-ignores-isr") {
			t.Errorf("chaos %s: %v, want a refusal listing the known bugs", strings.Join(args, " "), err)
		}
	}
}

// TestSettingsBugs: cluster.Settings hands its whole list of bugs to both
// kinds of node, and both accept it.
func TestSettingsBugs(t *testing.T) {
	dir := t.TempDir()
	s := cluster.DefaultSettings()
	if slices.Contains(s.BrokerArgs(), "--bug") || slices.Contains(s.ControllerArgs(), "--bug") {
		t.Fatalf("default settings plant bugs: %v %v", s.BrokerArgs(), s.ControllerArgs())
	}
	s.Bugs = []string{"ack-before-replicate", "unclean-when-clean", "recovery-keeps-torn-tail"}
	for _, args := range [][]string{
		append([]string{"broker", "--data", dir}, s.BrokerArgs()...),
		append([]string{"controller", "--data", dir}, s.ControllerArgs()...),
	} {
		if n := strings.Count(strings.Join(args, " "), "--bug "); n != 3 {
			t.Errorf("%v: %d --bug flags, want 3", args, n)
		}
		if _, err := execValidate(t, args...); !errors.Is(err, cli.ErrValidated) {
			t.Errorf("chaos %s: %v, want it accepted", strings.Join(args, " "), err)
		}
	}
}
