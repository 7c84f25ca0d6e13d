package search

import (
	"context"
	"fmt"
	"math"
	"strings"
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
	add(5, "maintenance", "the pipeline is in this body only")
	add(20, "quarterly", "quarterly numbers, nothing else of interest here")
	add(100, "lunch", "unrelated mail about lunch")
	f := newSearchFixture(t, items)
	ctx := context.Background()

	search := func(text string, budget, read int64) ([]Hit, plan) {
		t.Helper()
		restore := []func(){setVar(&commonMinItems, 1), setVar(&commonShare, 1), setVar(&scoreBudget, budget), setVar(&readBudget, read)}
		defer func() {
			for _, r := range restore {
				r()
			}
		}()
		var p plan
		f.s.keywordPlan(ctx, &p, parseQueryTerms(text))
		return f.search(t, Query{Text: text, Mode: ModeFTS, Limit: 50}), p
	}
	titles := func(hits []Hit) map[string]int {
		out := map[string]int{}
		for _, h := range hits {
			out[h.Item.Title]++
		}
		return out
	}
	const query = "quarterly pipeline "
	exact, p := search(query, math.MaxInt64, math.MaxInt64)
	if p.rare != "" || p.whole != "" {
		t.Fatalf("within the budget the plan is %+v, want the OR alone", p)
	}
	budgeted, p := search(query, 21, math.MaxInt64)
	if p.whole != `"quarterly" AND "pipeline"` || p.rare != `"pipeline"` {
		t.Fatalf("over the budget: whole %q, rare %q; want every word, then the rarer one", p.whole, p.rare)
	}
	if got := titles(budgeted); len(budgeted) != 3+12+5 || got["quarterly"] != 0 {
		t.Fatalf("got %d hits %v, want the 3 with both words and the 17 with the rarer one", len(budgeted), got)
	}
	for i, h := range budgeted[:3] {
		if h.Item.ExternalID != exact[i].Item.ExternalID || h.Score != exact[i].Score {
			t.Errorf("hit %d: %s score %v, want %s score %v as the OR of the words ranks it",
				i, h.Item.ExternalID, h.Score, exact[i].Item.ExternalID, exact[i].Score)
		}
	}
	for _, h := range budgeted[3:] {
		if h.Item.Title == "quarterly pipeline" {
			t.Errorf("%s holds both words but comes after the items holding only one", h.Item.ExternalID)
		}
	}

	// Too many to read, or one word alone over the budget: the rarest
	// word in a subject or among the people.
	for _, tc := range []struct {
		text         string
		budget, read int64
	}{{query, 10, 30}, {"pipeline ", 10, math.MaxInt64}} {
		hits, p := search(tc.text, tc.budget, tc.read)
		if p.whole != "" || p.rare != `{title people} : ("pipeline")` {
			t.Fatalf("%q, budgets %d/%d: whole %q, rare %q; want the rarest word in subjects and people",
				tc.text, tc.budget, tc.read, p.whole, p.rare)
		}
		if got := titles(hits); len(hits) != 3+12 || got["maintenance"] != 0 {
			t.Errorf("%q: got %d hits %v, want the 15 with the word in their subject", tc.text, len(hits), got)
		}
	}
}

// setVar sets *v to x and returns what puts it back.
func setVar[T any](v *T, x T) func() {
	old := *v
	*v = x
	return func() { *v = old }
}

// In a large store a word is counted among the newest ids and scaled to
// the store; a rare word is counted exactly, and so is every word in a
// store under sampleFrom items.
func TestTermCountsSampledInALargeStore(t *testing.T) {
	at := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	var items []*store.Item
	want := map[string]int64{}
	for i := range 3000 {
		body := "unrelated words"
		switch {
		case i%500 == 1:
			body = "a rare zeppelin"
		case i < 1500 && i%3 == 0, i >= 1500 && i%2 == 0: // twice as common in the newer half
			body = "common pipeline words"
		}
		for _, w := range []string{"zeppelin", "pipeline"} {
			if strings.Contains(body, w) {
				want[w]++
			}
		}
		items = append(items, mail(fmt.Sprintf("m%d", i), fmt.Sprintf("t%d", i), at.Add(time.Duration(i)*time.Minute),
			"a@example.com", "note", body))
	}
	f := newSearchFixture(t, items)
	ctx := context.Background()
	count := func(word string) int64 {
		t.Helper()
		f.s.terms = termCache{} // counted afresh under the limits set now
		df, n, ok := f.s.termFreq(ctx, `"`+word+`"`)
		if !ok || n != 3000 {
			t.Fatalf("termFreq(%q): ok %v, %d items, want 3000", word, ok, n)
		}
		return df
	}
	if got := count("pipeline"); got != want["pipeline"] {
		t.Fatalf("below sampleFrom: pipeline counted %d, want exactly %d", got, want["pipeline"])
	}
	defer setVar(&sampleFrom, 1000)()
	defer setVar(&sampleSpan, 600)()
	defer setVar(&exactBelow, 20)()
	// The newest 600 ids hold 300 pipelines: scaled to 3,000 ids, 1,500.
	if got := count("pipeline"); got != 1500 {
		t.Errorf("sampled: pipeline counted %d, want 1500 (the newest 600 ids' 300, scaled; %d exactly)", got, want["pipeline"])
	}
	if got := count("zeppelin"); got != want["zeppelin"] {
		t.Errorf("sampled: the rare zeppelin counted %d, want exactly %d", got, want["zeppelin"])
	}
	if got := count("absent"); got != 0 {
		t.Errorf("sampled: a word in no item counted %d", got)
	}
}

// In a large store a last word the index holds as it is counts as typed to
// the end, not as a prefix: a prefix reads every longer word's matches.
func TestLastWordHeldAsItIsIsNoPrefixAtScale(t *testing.T) {
	at := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	items := []*store.Item{
		mail("m1", "t1", at, "a@example.com", "budget", "the budget for march"),
		mail("m2", "t2", at.Add(time.Hour), "a@example.com", "budgetary", "budgetary questions"),
	}
	f := newSearchFixture(t, items)
	ctx := context.Background()
	plan := func(text string) string {
		t.Helper()
		f.s.terms = termCache{}
		var p plan
		f.s.keywordPlan(ctx, &p, parseQueryTerms(text))
		return p.fts
	}
	if got := plan("march budget"); got != `"march" OR "budget"*` {
		t.Errorf("small store: %q, want the last word as a prefix", got)
	}
	defer setVar(&commonMinItems, 1)()
	defer setVar(&commonShare, 1)()
	for text, want := range map[string]string{
		"march budget":  `"march" OR "budget"`,  // held as it is
		"march budg":    `"march" OR "budg"*`,   // unfinished
		"march budget*": `"march" OR "budget"*`, // asked for
	} {
		if got := plan(text); got != want {
			t.Errorf("large store, %q: %q, want %q", text, got, want)
		}
	}
}
