package main

import (
	"os"
	"regexp"
	"strings"

	"golang.org/x/term"
)

// A style is an ANSI SGR code for text on a terminal.
type style string

const (
	bold   style = "1"
	dim    style = "2"
	red    style = "31"
	green  style = "32"
	yellow style = "33"
)

// style wraps s in st when stdout is a terminal that wants colour: not
// under --json, not with NO_COLOR set (https://no-color.org), not on a
// dumb terminal.
func (e *env) style(st style, s string) string {
	if !e.colourful() || s == "" {
		return s
	}
	return "\x1b[" + string(st) + "m" + s + "\x1b[0m"
}

func (e *env) colourful() bool {
	if e.colour == nil {
		f, ok := e.stdout.(*os.File)
		on := ok && term.IsTerminal(int(f.Fd())) && !e.json &&
			e.getenv("NO_COLOR") == "" && e.getenv("TERM") != "dumb"
		e.colour = &on
	}
	return *e.colour
}

// searchMark is a query match as search marks it in a snippet: «word».
var searchMark = regexp.MustCompile(`«([^«»\s]+)»`)

// highlight shows the words search marked «like this» in bold where
// stdout gets colour, and unmarked elsewhere: the marks are for this
// layer to render, not for the owner to read.
func (e *env) highlight(snippet string) string {
	return searchMark.ReplaceAllStringFunc(snippet, func(m string) string {
		return e.style(bold, strings.TrimSuffix(strings.TrimPrefix(m, "«"), "»"))
	})
}
