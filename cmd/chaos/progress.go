package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
)

// progressLine prints what a command is doing now, for chaos run's
// progress and a campaign's runs: on a terminal one line rewritten in
// place, elsewhere (a log, a pipe, CI) only plain lines worth keeping.
type progressLine struct {
	w   io.Writer
	tty bool
	// begun is a line begun on a plain writer, which finish completes.
	begun string
}

func newProgressLine(w io.Writer) *progressLine { return &progressLine{w: w, tty: isTerminal(w)} }

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// show puts s in place of the line on a terminal; elsewhere it prints
// nothing.
func (p *progressLine) show(s string) {
	if p.tty {
		fmt.Fprintf(p.w, "\r%s\x1b[K", s)
	}
}

// print puts s in place of the line on a terminal, and prints it as a
// line of its own elsewhere.
func (p *progressLine) print(s string) {
	if p.tty {
		p.show(s)
	} else {
		fmt.Fprintln(p.w, s)
	}
}

// end ends the line shown on a terminal, so that what follows starts on a
// line of its own.
func (p *progressLine) end() {
	if p.tty {
		fmt.Fprintln(p.w)
	}
}

// begin starts a line that finish completes: shown on a terminal (and
// replaced by show), written at once elsewhere, so that a log says what
// started before it ends.
func (p *progressLine) begin(prefix string) {
	if p.tty {
		p.show(prefix)
		return
	}
	p.begun = prefix
	fmt.Fprint(p.w, prefix)
}

// finish completes the line begun with the whole of s, which starts with
// the prefix begun.
func (p *progressLine) finish(s string) {
	if p.tty {
		fmt.Fprintf(p.w, "\r%s\x1b[K\n", s)
		return
	}
	fmt.Fprintln(p.w, strings.TrimPrefix(s, p.begun))
	p.begun = ""
}
