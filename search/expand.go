package search

import (
	"context"
	"regexp"
	"slices"
	"strings"
)

// askingDiscount scores down, for a query asked as a question, a
// candidate that mostly asks one itself: it holds no answer, the reply
// after it does. Chosen on LoCoMo-dev among 0.02–0.3, which all helped
// (notes of issue 16, "Round 3 (multihop)").
const askingDiscount = 0.3

// preferAnswers orders the candidates (items loaded) of a query asked as
// a question for answers: the reply to a candidate that mostly asks (the
// next message in its thread) gets at least the score the asking one had,
// joining the candidates if it was not one (as found like its question),
// and the asking one is scored down by askingDiscount. On LoCoMo the turn
// asking "What made you pick it?" ranked first, the answer third.
// Keyword queries are left alone.
func (s *Searcher) preferAnswers(ctx context.Context, p *plan, cands []*candidate) ([]*candidate, error) {
	if !isQuestion(p.q.Text) {
		return cands, nil
	}
	var asking []*candidate
	for _, c := range cands {
		if mostlyAsks(c.item.Body) {
			asking = append(asking, c)
		}
	}
	if len(asking) == 0 {
		return cands, nil
	}
	ids := make([]int64, len(asking))
	for i, c := range asking {
		ids[i] = c.id
	}
	nb, err := threadNeighbours(ctx, s.db, ids)
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]*candidate, len(cands))
	for _, c := range cands {
		byID[c.id] = c
	}
	var missing []int64
	for _, c := range asking {
		if next := nb[c.id][1]; next != 0 && byID[next] == nil {
			missing = append(missing, next)
		}
	}
	pass, err := s.passing(ctx, p, missing) // a reply outside the period is not one
	if err != nil {
		return nil, err
	}
	missing = slices.DeleteFunc(missing, func(id int64) bool { return !pass[id] })
	replies, err := s.st.ItemsByID(ctx, missing)
	if err != nil {
		return nil, err
	}
	for _, it := range replies {
		c := &candidate{id: it.ID, item: it}
		byID[it.ID] = c
		cands = append(cands, c)
	}
	for _, c := range asking {
		reply := byID[nb[c.id][1]]
		if reply == nil || reply.score >= c.score {
			continue
		}
		if reply.ftsRank == 0 && reply.vecRank == 0 {
			reply.ftsRank, reply.vecRank = c.ftsRank, c.vecRank // found through its question
		}
		reply.score = c.score
	}
	for _, c := range asking {
		if c.score < 0 {
			c.score /= 1 - askingDiscount // lower is worse
		} else {
			c.score *= 1 - askingDiscount
		}
	}
	return cands, nil
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

// questionFrame is the frame of a question that names a kind of thing
// ("what kind of art", "which types of pottery"): the frame's noun
// matches any "kind words" and "type of music" elsewhere, not the thing.
var questionFrame = regexp.MustCompile(`(?i)\b(what|which)\s+(kinds?|types?|sorts?)\s+of\b`)

// questionFocus drops the frame of a question about a kind of thing,
// keeping the question word.
func questionFocus(text string) string {
	return questionFrame.ReplaceAllString(text, "$1")
}
