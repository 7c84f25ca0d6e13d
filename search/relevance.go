package search

import (
	"slices"
	"strings"

	"github.com/omnibrain/omnibrain/internal/suggest"
	"github.com/omnibrain/omnibrain/internal/tokenize"
	"github.com/omnibrain/omnibrain/store"
)

// minRelativeSim is the share of the best vector hit's similarity that a
// hit found by meaning alone needs in hybrid search, calibrated on
// LoCoMo-dev and the Enron known items (notes of issue 16).
var minRelativeSim = 0.6

// minLoneSim is the similarity that lets a hit found by meaning alone stand
// when no keyword matched anything and it holds no near spelling of a
// query word: far above what the built-in embedder gives unrelated text
// (under 0.1), within reach of a model's embedding of a paraphrase.
const minLoneSim = 0.3

// embedded reports whether the item has its vector yet; true when there
// is no vector index to ask.
func (v *Vectors) embedded(item int64) bool {
	if v == nil {
		return true
	}
	idx := v.idx.Load()
	return idx == nil || idx.has(item)
}

// pruneByMeaning drops the hybrid hits found by meaning alone that are
// far from the best vector hit. A keyword hit whose vector does not exist
// yet (just imported) is marked, so fusion does not rank it below hits
// found both ways for want of it.
func pruneByMeaning(cands map[int64]*candidate, v *Vectors, mode string) {
	var best float64
	for _, c := range cands {
		best = max(best, c.vecSim)
	}
	for id, c := range cands {
		switch {
		case c.ftsRank > 0:
			c.unembedded = c.vecRank == 0 && !v.embedded(id)
		case mode == ModeHybrid && c.vecSim < minRelativeSim*best:
			delete(cands, id)
		}
	}
}

// keepNearSpellings is what a search whose words matched nothing keeps of
// its vector hits: those holding a near spelling of a query word (a typo:
// "californa", "Melanei") or very near in meaning. A query of nonsense
// ("xyzzyqwerty") finds nothing rather than whatever is least far.
func keepNearSpellings(ordered []*candidate, terms []queryTerm) []*candidate {
	var words []string
	for _, t := range terms {
		for _, w := range t.Words {
			if !tokenize.StopWord(w) && len([]rune(w)) >= 3 {
				words = append(words, w)
			}
		}
	}
	out := ordered[:0]
	for _, c := range ordered {
		if c.vecSim >= minLoneSim || holdsNearSpelling(c.item, words) {
			out = append(out, c)
		}
	}
	return out
}

// holdsNearSpelling reports whether the item has a word within a typo or
// two of one of words (suggest.Closest's measure).
func holdsNearSpelling(it *store.Item, words []string) bool {
	seen := map[string]bool{}
	var near []string
	for _, w := range tokenize.Words(it.Title + "\n" + it.Body + "\n" + strings.Join(it.People, "\n")) {
		if !seen[w] {
			seen[w] = true
			near = append(near, w)
		}
	}
	for _, w := range words {
		n := len([]rune(w))
		var same []string
		for _, c := range near {
			if d := len([]rune(c)) - n; d >= -3 && d <= 3 {
				same = append(same, c)
			}
		}
		if suggest.Closest(w, same) != "" {
			return true
		}
	}
	return false
}

// holdsEveryTerm reports whether the item's text holds every query term:
// a word by its stem (as the porter index matches it), a prefix term by
// prefix, a phrase by its words in order, a word in a script without
// spaces as a substring.
func holdsEveryTerm(it *store.Item, terms []queryTerm) bool {
	if len(terms) == 0 {
		return false
	}
	text := it.Title + "\n" + it.Body + "\n" + strings.Join(it.People, "\n")
	words := tokenize.Words(text)
	stems := make([]string, len(words)) // as they are needed
	var lower string
	for _, t := range terms {
		if isUnspacedTerm(t) {
			if lower == "" {
				lower = strings.ToLower(text)
			}
			if !strings.Contains(lower, strings.Join(t.Words, " ")) {
				return false
			}
			continue
		}
		if !holdsTerm(words, stems, t) {
			return false
		}
	}
	return true
}

// holdsTerm reports whether the words hold the term; stems are the
// words' stems, filled in as they are needed.
func holdsTerm(words, stems []string, t queryTerm) bool {
	for i := range words {
		ok := true
		for j := range t.Words {
			k := i + j
			if k >= len(words) {
				return false
			}
			stem := func() string {
				if stems[k] == "" {
					stems[k] = tokenize.Stem(words[k])
				}
				return stems[k]
			}
			if !t.matches(j, words[k], stem) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// keepWholeMatchesFirst moves every hit found by meaning alone below the
// last hit that holds every query term, keeping the order otherwise: a
// mail with all the words asked for is never outranked by one with none.
func keepWholeMatchesFirst(ordered []*candidate, terms []queryTerm) []*candidate {
	// Only the last whole match after the first hit by meaning alone
	// matters: looking from the end, reading few texts.
	first := slices.IndexFunc(ordered, func(c *candidate) bool { return c.ftsRank == 0 })
	if first < 0 {
		return ordered
	}
	last := -1
	for i := len(ordered) - 1; i > first && last < 0; i-- {
		if c := ordered[i]; c.ftsRank > 0 && holdsEveryTerm(c.item, terms) {
			last = i
		}
	}
	if last < 0 {
		return ordered
	}
	out := make([]*candidate, 0, len(ordered))
	var moved []*candidate
	for i, c := range ordered {
		if i < last && c.ftsRank == 0 {
			moved = append(moved, c)
			continue
		}
		out = append(out, c)
		if i == last {
			out = append(out, moved...)
		}
	}
	return slices.Clip(out)
}

// isUnspacedTerm reports whether a term is in a script written without
// spaces, which only the trigram index finds inside a run of text.
func isUnspacedTerm(t queryTerm) bool {
	return tokenize.HasUnspaced(strings.Join(t.Words, " "))
}
