package store

import (
	"strings"
	"unicode"

	"github.com/omnibrain/omnibrain/embedder"
)

// queryTerm is one thing to look for: a word or a quoted phrase.
type queryTerm struct {
	Words  []string // lower-case; one word unless Phrase
	Phrase bool
	Prefix bool // also match words starting with the word
}

// maxQueryTerms bounds the FTS expression a long pasted text can produce.
const maxQueryTerms = 32

// parseQueryTerms turns what a person typed into search terms: quoted
// phrases stay phrases, stop words go (unless nothing else is left), a
// word followed by * or still being typed at the end is a prefix.
func parseQueryTerms(text string) []queryTerm {
	var terms, stop []queryTerm
	seen := map[string]bool{}
	add := func(t queryTerm, isStop bool) {
		key := strings.Join(t.Words, " ")
		if t.Prefix {
			key += "*"
		}
		if seen[key] {
			return
		}
		seen[key] = true
		if isStop {
			stop = append(stop, t)
		} else {
			terms = append(terms, t)
		}
	}
	for i := 0; i < len(text); {
		if text[i] == '"' {
			end := strings.IndexByte(text[i+1:], '"')
			if end == 0 { // "": nothing quoted
				i += 2
				continue
			}
			if end > 0 {
				ws := embedder.Words(text[i+1 : i+1+end])
				switch {
				case len(ws) > 1:
					add(queryTerm{Words: ws, Phrase: true}, false)
				case len(ws) == 1:
					add(queryTerm{Words: ws}, false)
				}
				i += end + 2
				continue
			}
			i++ // an unbalanced quote is just punctuation
			continue
		}
		// One run of non-quote text up to the next quote.
		j := strings.IndexByte(text[i:], '"')
		if j < 0 {
			j = len(text) - i
		}
		segment := text[i : i+j]
		atEnd := i+j == len(text)
		for _, w := range wordSpans(segment) {
			t := queryTerm{Words: []string{w.word}}
			next := byte(0)
			if w.end < len(segment) {
				next = segment[w.end]
			}
			switch {
			case next == '*':
				t.Prefix = true
			case atEnd && w.end == len(segment) && len([]rune(w.word)) >= 3 && !embedder.StopWord(w.word):
				// The last word of a query without a closing space or
				// punctuation may be unfinished.
				t.Prefix = true
			}
			add(t, embedder.StopWord(w.word) && !t.Prefix)
		}
		i += j
	}
	if len(terms) == 0 {
		terms = stop // "The Who": stop words are all there is to find
	}
	if len(terms) > maxQueryTerms {
		terms = terms[:maxQueryTerms]
	}
	return terms
}

type wordSpan struct {
	word string
	end  int // byte offset after the word in the segment
}

// wordSpans is embedder.Words with positions.
func wordSpans(s string) []wordSpan {
	var out []wordSpan
	start := -1
	for i, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			out = append(out, wordSpan{strings.ToLower(s[start:i]), i})
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, wordSpan{strings.ToLower(s[start:]), len(s)})
	}
	return out
}

// ftsExpression builds the FTS5 MATCH expression: the OR of every term.
// Every word is wrapped in double quotes and holds only letters and digits
// (embedder.Words), so no input can produce FTS5 syntax: operators, column
// filters, parentheses and stray quotes all become plain text or vanish.
func ftsExpression(terms []queryTerm) string {
	var parts []string
	for _, t := range terms {
		p := `"` + strings.Join(t.Words, " ") + `"`
		if t.Prefix {
			p += "*"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " OR ")
}
