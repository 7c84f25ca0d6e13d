package store

import (
	"strings"
	"unicode"

	"github.com/omnibrain/omnibrain/embedder"
)

// snippetWords is how many words a snippet shows.
const snippetWords = 24

// snippet picks the stretch of the item's text with the most query terms
// and marks them «like this» (not [like this], which answers use for
// citations). It works on the item text in Go rather than
// with FTS5's snippet(), so hits found only by vectors get one too.
func snippet(it *Item, terms []queryTerm) string {
	text := it.Body
	if strings.TrimSpace(text) == "" {
		text = it.Title
	}
	spans := tokenSpans(text)
	if len(spans) == 0 {
		return ""
	}
	match := make([]int, len(spans)) // term index + 1, or 0
	for i, sp := range spans {
		match[i] = matchTerm(strings.ToLower(text[sp[0]:sp[1]]), terms)
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
	from := spans[bestStart][0]
	for i := bestStart; i < end; i++ {
		b.WriteString(collapseSpace(text[from:spans[i][0]]))
		w := text[spans[i][0]:spans[i][1]]
		if match[i] > 0 {
			b.WriteString("«" + w + "»")
		} else {
			b.WriteString(w)
		}
		from = spans[i][1]
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
	stem := embedder.Stem(word)
	for i, t := range terms {
		for _, tw := range t.Words {
			if (!t.Phrase && embedder.StopWord(tw) && len(terms) > 1) || tw == "" {
				continue
			}
			if word == tw || stem == embedder.Stem(tw) || (t.Prefix && strings.HasPrefix(word, tw)) {
				return i + 1
			}
		}
	}
	return 0
}

// tokenSpans returns the byte ranges of the words in s.
func tokenSpans(s string) [][2]int {
	var out [][2]int
	start := -1
	for i, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			out = append(out, [2]int{start, i})
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, [2]int{start, len(s)})
	}
	return out
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
