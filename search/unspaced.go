package search

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/omnibrain/omnibrain/store"
)

// keywords reports whether the plan has words to look up in an index.
func (p *plan) keywords() bool { return p.fts != "" || len(p.unspaced) > 0 }

// unspacedScore is the score of a match of a word shorter than a trigram,
// found by LIKE (no BM25 for it): about what BM25 gives one rare word.
const unspacedScore = 5.0

// unspacedSearch is the keyword search of a query with words in scripts
// written without spaces: those are found as substrings in the trigram
// index (store migration 0019), the other words in the porter index, and
// an item's scores from both add up. The trigram index holds only the
// items in such scripts, so reading all its matches is cheap.
func (s *Searcher) unspacedSearch(ctx context.Context, p *plan, n int) ([]ftsRow, error) {
	score := map[int64]float64{} // higher is better
	add := func(query string, args ...any) error {
		return store.Each(ctx, s.db, func(r store.Scanner) error {
			var id int64
			var bm25 float64
			if err := r.Scan(&id, &bm25); err != nil {
				return err
			}
			score[id] -= bm25
			return nil
		}, query, args...)
	}
	if p.fts != "" {
		err := add(fmt.Sprintf(`SELECT rowid, bm25(items_fts, %g, %g, %g) AS score FROM items_fts WHERE items_fts MATCH ? ORDER BY score LIMIT %d`,
			bm25Title, bm25Body, bm25People, maxSearchHits), p.fts)
		if err != nil {
			return nil, fmt.Errorf("search: full text: %w", err)
		}
	}
	for _, w := range p.unspaced {
		var err error
		if len([]rune(w)) >= 3 {
			err = add(fmt.Sprintf(`SELECT rowid, bm25(items_unspaced, %g, %g, %g) FROM items_unspaced WHERE items_unspaced MATCH ?`,
				bm25Title, bm25Body, bm25People), `"`+w+`"`)
		} else {
			// A trigram index cannot look up one or two letters: they are
			// matched by scanning its (few) items.
			like := "%" + w + "%"
			err = add(`SELECT rowid, -`+strconv.FormatFloat(unspacedScore, 'f', -1, 64)+
				` * ((title LIKE ?1) * `+strconv.FormatFloat(bm25Title, 'f', -1, 64)+` + (body LIKE ?1) + (people LIKE ?1))
				FROM items_unspaced WHERE title LIKE ?1 OR body LIKE ?1 OR people LIKE ?1`, like)
		}
		if err != nil {
			return nil, fmt.Errorf("search: full text: %w", err)
		}
	}
	ids := slices.Collect(maps.Keys(score))
	pass, err := s.passing(ctx, p, ids)
	if err != nil {
		return nil, err
	}
	out := make([]ftsRow, 0, len(ids))
	for _, id := range ids {
		if pass[id] {
			out = append(out, ftsRow{id: id, bm25: -score[id]})
		}
	}
	slices.SortFunc(out, func(a, b ftsRow) int {
		if c := cmp.Compare(a.bm25, b.bm25); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	return out[:min(n, len(out))], nil
}
