package mailparse

import (
	"regexp"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// HTMLToText renders an HTML mail body as readable plain text: block
// elements become line breaks, list items get "- ", table cells are
// separated by spaces, scripts, styles and the head are dropped, entities
// are decoded, and blockquotes are prefixed with "> " so that quoted
// replies in HTML mail are recognised like those in plain text.
func HTMLToText(s string) string {
	doc, err := html.Parse(strings.NewReader(s))
	if err != nil { // html.Parse only fails on reader errors
		return ""
	}
	w := &textWriter{}
	w.walk(doc)
	return tidyText(w.b.String())
}

type textWriter struct {
	b        strings.Builder
	quote    int  // blockquote depth
	pre      int  // inside <pre>
	newlines int  // newlines owed before the next text
	atStart  bool // nothing written on the current line yet
	space    bool // a space is owed before the next word
	wrote    bool // anything written at all
}

var blockElems = map[atom.Atom]bool{
	atom.P: true, atom.Div: true, atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true,
	atom.H5: true, atom.H6: true, atom.Ul: true, atom.Ol: true, atom.Table: true, atom.Tr: true,
	atom.Blockquote: true, atom.Pre: true, atom.Hr: true, atom.Section: true, atom.Article: true,
	atom.Header: true, atom.Footer: true, atom.Form: true, atom.Center: true, atom.Address: true,
	atom.Dl: true, atom.Dt: true, atom.Dd: true, atom.Li: true, atom.Tbody: true, atom.Thead: true,
	atom.Tfoot: true, atom.Caption: true, atom.Fieldset: true, atom.Main: true, atom.Nav: true,
	atom.Aside: true, atom.Figure: true, atom.Body: true, atom.Html: true,
}

var paragraphElems = map[atom.Atom]bool{
	atom.P: true, atom.H1: true, atom.H2: true, atom.H3: true, atom.H4: true, atom.H5: true,
	atom.H6: true, atom.Blockquote: true, atom.Table: true, atom.Ul: true, atom.Ol: true, atom.Pre: true,
}

var skippedElems = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Head: true, atom.Title: true, atom.Template: true,
	atom.Noscript: true, atom.Svg: true, atom.Object: true, atom.Iframe: true, atom.Select: true,
}

func (w *textWriter) breakLine(n int) {
	if w.wrote {
		w.newlines = max(w.newlines, n)
	}
	w.space = false
}

func (w *textWriter) walk(n *html.Node) {
	switch n.Type {
	case html.TextNode:
		w.text(n.Data)
		return
	case html.CommentNode, html.DoctypeNode:
		return
	case html.ElementNode:
		if skippedElems[n.DataAtom] {
			return
		}
	}
	block := n.Type == html.ElementNode && blockElems[n.DataAtom]
	para := n.Type == html.ElementNode && paragraphElems[n.DataAtom]
	if block {
		if para {
			w.breakLine(2)
		} else {
			w.breakLine(1)
		}
	}
	if n.Type == html.ElementNode {
		switch n.DataAtom {
		case atom.Br:
			if w.wrote {
				w.newlines++
			}
			w.space = false
		case atom.Li:
			w.text("- ")
		case atom.Td, atom.Th:
			w.space = true
		case atom.Blockquote:
			w.quote++
		case atom.Pre:
			w.pre++
		case atom.Img:
			if alt := attr(n, "alt"); alt != "" {
				w.text(alt)
			}
		}
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		w.walk(c)
	}
	if n.Type == html.ElementNode {
		switch n.DataAtom {
		case atom.Blockquote:
			w.quote--
		case atom.Pre:
			w.pre--
		case atom.Td, atom.Th:
			w.space = true
		}
	}
	if block {
		if para {
			w.breakLine(2)
		} else {
			w.breakLine(1)
		}
	}
}

func (w *textWriter) prefix() string { return strings.Repeat("> ", w.quote) }

func (w *textWriter) flushBreaks() {
	if w.newlines > 0 && w.wrote {
		for i := 0; i < w.newlines; i++ {
			w.b.WriteByte('\n')
		}
		w.atStart = true
	}
	w.newlines = 0
}

func (w *textWriter) text(s string) {
	if w.pre > 0 {
		for i, line := range strings.Split(s, "\n") {
			if i > 0 {
				w.newlines++
			}
			if line == "" {
				continue
			}
			w.emit(line)
		}
		return
	}
	words := strings.Fields(s)
	if len(words) == 0 {
		if s != "" {
			w.space = true
		}
		return
	}
	if isSpace(s[0]) {
		w.space = true
	}
	for i, word := range words {
		if i > 0 {
			w.space = true
		}
		w.emit(word)
	}
	if isSpace(s[len(s)-1]) {
		w.space = true
	}
}

func (w *textWriter) emit(s string) {
	w.flushBreaks()
	if !w.wrote {
		w.atStart = true
	}
	if w.atStart {
		w.b.WriteString(w.prefix())
		w.atStart = false
	} else if w.space {
		w.b.WriteByte(' ')
	}
	w.space = false
	w.b.WriteString(s)
	w.wrote = true
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' }

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

var blankRuns = regexp.MustCompile(`\n{3,}`)

// tidyText trims trailing spaces, drops invisible characters and collapses
// runs of blank lines.
func tidyText(s string) string {
	s = strings.ReplaceAll(s, "\u00a0", " ")
	s = strings.ReplaceAll(s, "\u200b", "")
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	s = strings.Join(lines, "\n")
	return strings.TrimSpace(blankRuns.ReplaceAllString(s, "\n\n"))
}
