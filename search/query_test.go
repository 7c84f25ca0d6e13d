package search

import (
	"context"
	"testing"
	"time"

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

// FuzzFTSQuery checks that no input can make the FTS5 query fail.
func FuzzFTSQuery(f *testing.F) {
	for _, s := range []string{`a "b c" d*`, `NEAR(a b)`, `col:x`, `"`, `*`, `^a`, `a AND OR NOT`, `(((`, "\x00\"\u00a0", `'; DROP TABLE items; --`, "ｆｕｌｌ　ｗｉｄｔｈ", "اختبار", "日本語のテキスト"} {
		f.Add(s)
	}
	s := openTest(f)
	ctx := context.Background()
	if _, err := s.UpsertItems(ctx, []*store.Item{{Source: "t", ExternalID: "1", Time: time.Unix(1, 0), Title: "a b c", Body: "near col x"}}, store.UpsertOptions{}); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, q string) {
		expr := ftsExpression(parseQueryTerms(q))
		if expr == "" {
			return
		}
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
		if _, err := New(s, nil, nil).Search(ctx, Query{Text: q, Mode: "fts"}); err != nil {
			t.Fatalf("Search(%q): %v", q, err)
		}
	})
}
