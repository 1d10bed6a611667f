// Package statusline prints what a command is doing now: on a terminal
// one line rewritten in place, elsewhere (a log, a pipe, CI) only plain
// lines worth keeping. chaos run's progress and a campaign's runs share
// it: package campaign prints a campaign's own.
package statusline

import (
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
)

// Line is the line a command rewrites on w.
type Line struct {
	w io.Writer
	// TTY: w is a terminal, where a line can be rewritten.
	TTY bool
	// begun is a line begun on a plain writer, which Finish completes.
	begun string
}

// New is the status line on w.
func New(w io.Writer) *Line { return &Line{w: w, TTY: IsTerminal(w)} }

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Show puts s in place of the line on a terminal; elsewhere it prints
// nothing.
func (p *Line) Show(s string) {
	if p.TTY {
		fmt.Fprintf(p.w, "\r%s\x1b[K", s)
	}
}

// Print puts s in place of the line on a terminal, and prints it as a
// line of its own elsewhere.
func (p *Line) Print(s string) {
	if p.TTY {
		p.Show(s)
	} else {
		fmt.Fprintln(p.w, s)
	}
}

// End ends the line shown on a terminal, so that what follows starts on a
// line of its own.
func (p *Line) End() {
	if p.TTY {
		fmt.Fprintln(p.w)
	}
}

// Begin starts a line that Finish completes: shown on a terminal (and
// replaced by Show), written at once elsewhere, so that a log says what
// started before it ends.
func (p *Line) Begin(prefix string) {
	if p.TTY {
		p.Show(prefix)
		return
	}
	p.begun = prefix
	fmt.Fprint(p.w, prefix)
}

// Finish completes the line begun with the whole of s, which starts with
// the prefix begun.
func (p *Line) Finish(s string) {
	if p.TTY {
		fmt.Fprintf(p.w, "\r%s\x1b[K\n", s)
		return
	}
	fmt.Fprintln(p.w, strings.TrimPrefix(s, p.begun))
	p.begun = ""
}
