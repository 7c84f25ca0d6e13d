package search

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/store"
)

// Above the score budget the keyword half scores the items holding every
// word, then those holding the rarest: an item with every word keeps the
// score the OR of the words gives it (BM25 adds up per word), and every
// hit still holds a query word.
func TestKeywordHalfWithinScoreBudget(t *testing.T) {
	at := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	var items []*store.Item
	add := func(n int, title, body string) {
		for range n {
			i := len(items)
			items = append(items, mail(fmt.Sprintf("m%d", i), fmt.Sprintf("t%d", i), at.Add(time.Duration(i)*time.Hour),
				"a@example.com", title, body))
		}
	}
	add(3, "quarterly pipeline", "the pipeline capacity for the quarterly review")
	add(12, "pipeline", "pipeline maintenance notes and more words")
	add(20, "quarterly", "quarterly numbers, nothing else of interest here")
	add(100, "lunch", "unrelated mail about lunch")
	f := newSearchFixture(t, items)
	ctx := context.Background()

	search := func(budget int64) ([]Hit, plan) {
		t.Helper()
		restore := []func(){setVar(&commonMinItems, 1), setVar(&commonShare, 1), setVar(&scoreBudget, budget)}
		defer func() {
			for _, r := range restore {
				r()
			}
		}()
		var p plan
		f.s.keywordPlan(ctx, &p, parseQueryTerms("quarterly pipeline "))
		return f.search(t, Query{Text: "quarterly pipeline ", Mode: ModeFTS, Limit: 50}), p
	}
	exact, p := search(math.MaxInt64)
	if p.whole != "" {
		t.Fatalf("within the budget the plan is %+v, want the OR alone", p)
	}
	budgeted, p := search(10)
	if p.whole != `"quarterly" AND "pipeline"` || p.rare != `"pipeline"` {
		t.Fatalf("over the budget: whole %q, rare %q; want every word, then the rarer one", p.whole, p.rare)
	}
	if len(budgeted) != 3+12 {
		t.Fatalf("got %d hits, want the 3 with both words and the 12 with the rarer one: %v", len(budgeted), ids(budgeted))
	}
	for i, h := range budgeted[:3] {
		if h.Item.ExternalID != exact[i].Item.ExternalID || h.Score != exact[i].Score {
			t.Errorf("hit %d: %s score %v, want %s score %v as the OR of the words ranks it",
				i, h.Item.ExternalID, h.Score, exact[i].Item.ExternalID, exact[i].Score)
		}
	}
	for _, h := range budgeted[3:] {
		if h.Item.Title != "pipeline" {
			t.Errorf("%s (%q) after the whole matches, want the items with the rarer word", h.Item.ExternalID, h.Item.Title)
		}
	}
}

// setVar sets *v to x and returns what puts it back.
func setVar[T any](v *T, x T) func() {
	old := *v
	*v = x
	return func() { *v = old }
}
