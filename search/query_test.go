package search

import (
	"context"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/embedder"
	"github.com/omnibrain/omnibrain/store"
)

func TestFTSExpression(t *testing.T) {
	tests := []struct{ in, want string }{
		{"What did Caroline research?", `"caroline" OR "research"`},
		{`budget "quarterly forecast" review`, `"budget" OR "quarterly forecast" OR "review"*`},
		{"pipeli", `"pipeli"*`},
		{"gas pipe* capacity.", `"gas" OR "pipe"* OR "capacity"`},
		{"The Who", `"the" OR "who"`},
		{`title:secret OR body:x AND NOT (y) NEAR(z) "unbalanced`, `"title" OR "secret" OR "body" OR "near" OR "unbalanced"*`},
		{`he said "" and ""`, `"he" OR "said" OR "and"`},
		{"  ", ``},
		{"Jeff's deal, Jeff's deal!", `"jeff" OR "deal"`},
	}
	for _, tc := range tests {
		if got := ftsExpression(parseQueryTerms(tc.in)); got != tc.want {
			t.Errorf("%q: got %s, want %s", tc.in, got, tc.want)
		}
	}
}

// FuzzFTSQuery checks that no input can make the query builder produce a
// query that fails, in the porter index, the trigram index or a search in
// any mode, as words or as a person filter, and that hybrid search keeps its promise: no hit found by
// meaning alone above a hit holding every query word.
func FuzzFTSQuery(f *testing.F) {
	for _, s := range []string{`a "b c" d*`, `NEAR(a b)`, `col:x`, `"`, `*`, `^a`, `a AND OR NOT`, `(((`, "\x00\"\u00a0", `'; DROP TABLE items; --`, "ｆｕｌｌ　ｗｉｄｔｈ", "اختبار", "日本語のテキスト", "東京 near", `"東京"*`, "สวัสดี%_", "a* b"} {
		f.Add(s)
	}
	s := openTest(f)
	ctx := context.Background()
	items := []*store.Item{
		{Source: "t", ExternalID: "1", Time: time.Unix(1, 0), Title: "a b c", Body: "near col x", People: []string{"Anna Smith", "anna.smith@example.org"}},
		{Source: "t", ExternalID: "2", Time: time.Unix(2, 0), Title: "日本語", Body: "東京で会議のテキスト near", People: []string{"田中太郎"}},
		{Source: "t", ExternalID: "3", Time: time.Unix(3, 0), Title: "สวัสดีครับ", Body: "ภาษาไทย test"},
		{Source: "t", ExternalID: "4", Time: time.Unix(4, 0), Title: "Full width", Body: "ｆｕｌｌ ｗｉｄｔｈ text and a nearby column"},
	}
	if _, err := s.UpsertItems(ctx, items, store.UpsertOptions{}); err != nil {
		f.Fatal(err)
	}
	vec := NewVectors(s, embedder.NewBuiltin(0), VectorOptions{})
	if err := vec.Sync(ctx); err != nil {
		f.Fatal(err)
	}
	searcher := New(s, vec, nil)
	f.Fuzz(func(t *testing.T, q string) {
		expr := ftsExpression(parseQueryTerms(q))
		if expr != "" {
			rows, err := s.DB().QueryContext(ctx, `SELECT rowid FROM items_fts WHERE items_fts MATCH ?`, expr)
			if err != nil {
				t.Fatalf("%q -> %s: %v", q, expr, err)
			}
			for rows.Next() {
			}
			if err := rows.Err(); err != nil {
				t.Fatalf("%q -> %s: %v", q, expr, err)
			}
			rows.Close()
		}
		for _, mode := range []string{ModeFTS, ModeHybrid, ModeVector} {
			hits, err := searcher.Search(ctx, Query{Text: q, Mode: mode})
			if err != nil {
				t.Fatalf("Search(%q, %s): %v", q, mode, err)
			}
			// The same text as a person filter, alone and beside another,
			// with words and without.
			for _, people := range [][]string{{q}, {q, "anna smith"}} {
				for _, text := range []string{"", "near"} {
					if _, err := searcher.Search(ctx, Query{Text: text, People: people, Mode: mode}); err != nil {
						t.Fatalf("Search(%q, person %q, %s): %v", text, people, mode, err)
					}
				}
			}
			if mode != ModeHybrid {
				continue
			}
			terms := parseQueryTerms(q)
			meaning := -1
			for i, h := range hits {
				if h.ByMeaning && meaning < 0 {
					meaning = i
				}
				if !h.ByMeaning && meaning >= 0 && holdsEveryTerm(h.Item, terms) {
					t.Fatalf("%q: hit %d holds every word, below hit %d found by meaning alone", q, i+1, meaning+1)
				}
			}
		}
	})
}
