package search

import (
	"strings"
)

// askingDiscount scores down, for a query asked as a question, a
// candidate that mostly asks one itself: it holds no answer, the reply
// after it does (and the keyword half and the item vectors already read a
// message with the one before it, so the reply carries the question's
// words). Chosen on LoCoMo-dev among 0.02–0.3, which all helped (notes of
// issue 16, "Round 3 (multihop)").
const askingDiscount = 0.3

// discountAsking applies askingDiscount to the candidates (items loaded)
// of a query that is a question.
func discountAsking(cands []*candidate, query string) {
	if !isQuestion(query) {
		return
	}
	for _, c := range cands {
		if mostlyAsks(c.item.Body) {
			if c.score < 0 {
				c.score /= 1 - askingDiscount // lower is worse
			} else {
				c.score *= 1 - askingDiscount
			}
		}
	}
}

// isQuestion reports whether a query is asked as a question: it ends with
// a question mark or opens with a question word.
func isQuestion(query string) bool {
	q := strings.TrimSpace(query)
	if strings.HasSuffix(q, "?") {
		return true
	}
	first, _, _ := strings.Cut(strings.ToLower(q), " ")
	switch first {
	case "who", "whom", "whose", "what", "when", "where", "why", "how", "which",
		"did", "does", "do", "is", "are", "was", "were", "has", "have", "can", "could", "would", "will", "should":
		return true
	}
	return false
}

// mostlyAsks reports whether at least half of a text's words are in
// sentences that end with a question mark. Only the first KiB is read, a
// byte at a time, since a search pays for this on each candidate: a
// message that mostly asks is short, and a long one is judged by how it
// opens.
func mostlyAsks(text string) bool {
	text = text[:min(len(text), 1024)]
	if strings.IndexByte(text, '?') < 0 {
		return false
	}
	asked, all, words := 0, 0, 0
	space := true
	for i := 0; i < len(text); i++ {
		c := text[i]
		if c == ' ' || c == '\n' || c == '\t' {
			space = true
		} else if space {
			words, space = words+1, false
		}
		switch c {
		case '?':
			asked += words
			fallthrough
		case '.', '!', '\n':
			all, words = all+words, 0
		}
	}
	all += words
	return 2*asked >= all
}
