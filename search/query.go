package search

import (
	"strings"

	"github.com/omnibrain/omnibrain/internal/tokenize"
)

// queryTerm is one thing to look for: a word or a quoted phrase.
type queryTerm struct {
	Words  []string // lower-case; one word unless Phrase
	Phrase bool
	Prefix bool // also match words starting with the word
	// Unfinished: Prefix only because the word ends the query.
	Unfinished bool
	// Per word, worked out once for matching texts (see matches).
	stems    []string
	unspaced []bool
}

// newTerm is a term of words (one unless phrase) with what matching
// texts needs of them.
func newTerm(words []string, phrase, prefix bool) queryTerm {
	t := queryTerm{Words: words, Phrase: phrase, Prefix: prefix}
	for _, w := range words {
		t.stems = append(t.stems, tokenize.Stem(w))
		t.unspaced = append(t.unspaced, tokenize.HasUnspaced(w))
	}
	return t
}

// matches reports whether a word of a text matches the term's j-th word
// as the indexes match it: by stem, by prefix for a prefix term, as a
// substring in a script written without spaces. stem gives the text
// word's stem, asked for only when nothing cheaper decides.
func (t queryTerm) matches(j int, word string, stem func() string) bool {
	tw := t.Words[j]
	switch {
	case word == tw, t.Prefix && strings.HasPrefix(word, tw):
		return true
	case j < len(t.unspaced) && t.unspaced[j], j >= len(t.unspaced) && tokenize.HasUnspaced(tw):
		return strings.Contains(word, tw)
	case j < len(t.stems):
		return stem() == t.stems[j]
	}
	return stem() == tokenize.Stem(tw)
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
				ws := tokenize.Words(text[i+1 : i+1+end])
				switch {
				case len(ws) > 1:
					add(newTerm(ws, true, false), false)
				case len(ws) == 1:
					add(newTerm(ws, false, false), false)
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
		for _, w := range tokenize.Spans(segment) {
			next := byte(0)
			if w.End < len(segment) {
				next = segment[w.End]
			}
			// The last word of a query without a closing space or
			// punctuation may be unfinished.
			unfinished := next != '*' && atEnd && w.End == len(segment) && len([]rune(w.Word)) >= 3 && !tokenize.StopWord(w.Word)
			prefix := next == '*' || unfinished
			t := newTerm([]string{w.Word}, false, prefix)
			t.Unfinished = unfinished
			add(t, tokenize.StopWord(w.Word) && !prefix)
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

// ftsExpression builds the FTS5 MATCH expression: the OR of every term.
func ftsExpression(terms []queryTerm) string { return joinTerms(terms, " OR ") }

// ftsAllExpression is the AND of every term.
func ftsAllExpression(terms []queryTerm) string { return joinTerms(terms, " AND ") }

// joinTerms joins the terms' FTS5 phrases with op.
// Every word is wrapped in double quotes and holds only letters and digits
// (tokenize.Words), so no input can produce FTS5 syntax: operators, column
// filters, parentheses and stray quotes all become plain text or vanish.
func joinTerms(terms []queryTerm, op string) string {
	var parts []string
	for _, t := range terms {
		p := `"` + strings.Join(t.Words, " ") + `"`
		if t.Prefix {
			p += "*"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, op)
}
