package main

import (
	"io"

	"github.com/chaos-isr/chaos/internal/statusline"
)

// progressLine is chaos run's progress line (package statusline, which a
// campaign prints with too).
type progressLine struct{ *statusline.Line }

func newProgressLine(w io.Writer) progressLine { return progressLine{statusline.New(w)} }

func (p progressLine) show(s string)  { p.Show(s) }
func (p progressLine) print(s string) { p.Print(s) }
func (p progressLine) end()           { p.End() }
