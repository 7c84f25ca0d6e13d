package search

import (
	"strings"
	"unicode"

	"github.com/omnibrain/omnibrain/internal/tokenize"
	"github.com/omnibrain/omnibrain/store"
)

// snippetWords is how many words a snippet shows.
const snippetWords = 24

// snippet picks the stretch of the item's text with the most query terms
// and marks them «like this» (not [like this], which answers use for
// citations). It works on the item text in Go rather than
// with FTS5's snippet(), so hits found only by vectors get one too.
func snippet(it *store.Item, terms []queryTerm) string {
	text := it.Body
	if strings.TrimSpace(text) == "" {
		text = it.Title
	}
	spans := tokenize.Spans(text)
	if len(spans) == 0 {
		return ""
	}
	match := make([]int, len(spans)) // term index + 1, or 0
	for i, sp := range spans {
		match[i] = matchTerm(sp.Word, terms)
	}
	// The window with the most distinct terms, earliest on ties.
	bestStart, bestScore := 0, -1
	for start := 0; start < len(spans); start++ {
		if start > 0 && match[start] == 0 {
			continue // windows start at a match (or at the beginning)
		}
		seen := map[int]bool{}
		for i := start; i < min(len(spans), start+snippetWords); i++ {
			if match[i] > 0 {
				seen[match[i]] = true
			}
		}
		if len(seen) > bestScore {
			bestStart, bestScore = start, len(seen)
		}
	}
	// Show a little context before the first match.
	if bestStart > 0 {
		bestStart = max(0, bestStart-3)
	}
	end := min(len(spans), bestStart+snippetWords)
	var b strings.Builder
	if bestStart > 0 {
		b.WriteString("…")
	}
	from := spans[bestStart].Start
	for i := bestStart; i < end; i++ {
		b.WriteString(collapseSpace(text[from:spans[i].Start]))
		w := text[spans[i].Start:spans[i].End]
		if match[i] > 0 {
			b.WriteString("«" + w + "»")
		} else {
			b.WriteString(w)
		}
		from = spans[i].End
	}
	if end < len(spans) {
		b.WriteString("…")
	} else {
		b.WriteString(collapseSpace(text[from:]))
	}
	return strings.TrimSpace(b.String())
}

// matchTerm returns 1 + the index of the term the word belongs to, or 0.
// Words match by stem, prefix terms by prefix; phrases by their words.
func matchTerm(word string, terms []queryTerm) int {
	var stemmed string
	stem := func() string {
		if stemmed == "" {
			stemmed = tokenize.Stem(word)
		}
		return stemmed
	}
	for i, t := range terms {
		for j, tw := range t.Words {
			if (!t.Phrase && tokenize.StopWord(tw) && len(terms) > 1) || tw == "" {
				continue
			}
			if t.matches(j, word, stem) {
				return i + 1
			}
		}
	}
	return 0
}

func collapseSpace(s string) string {
	if s == "" {
		return ""
	}
	f := strings.Fields(s)
	lead := unicode.IsSpace(rune(s[0]))
	trail := unicode.IsSpace(rune(s[len(s)-1]))
	out := strings.Join(f, " ")
	if lead && out != "" {
		out = " " + out
	}
	if trail || (out == "" && len(s) > 0) {
		out += " "
	}
	return out
}
