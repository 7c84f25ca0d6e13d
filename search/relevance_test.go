package search

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/collectors/importer"
	"github.com/omnibrain/omnibrain/embedder"
	"github.com/omnibrain/omnibrain/internal/testutil"
	"github.com/omnibrain/omnibrain/internal/tokenize"
	"github.com/omnibrain/omnibrain/store"
)

// copyMaildir copies the maildir at src to a new directory, leaving out
// the files (paths relative to src) in skip.
func copyMaildir(t *testing.T, src string, skip ...string) string {
	t.Helper()
	dst := t.TempDir()
	left := map[string]bool{}
	for _, s := range skip {
		left[s] = true
	}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil || left[rel] {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(rel)), 0o700); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// enronSearch is the Enron mailboxes imported and embedded, but for the
// files in later, which are imported last and not embedded: mail that
// arrived a moment ago.
func enronSearch(t *testing.T, later ...string) (*store.Store, *Searcher) {
	t.Helper()
	if testing.Short() {
		t.Skip("imports the Enron mailboxes")
	}
	dir := testutil.SharedData(t, "mail/enron/maildir")
	ctx := context.Background()
	st := openTest(t)
	im := importer.New(importer.Options{Store: st})
	if _, err := im.Import(ctx, "maildir", copyMaildir(t, dir, later...), nil); err != nil {
		t.Fatal(err)
	}
	vec := NewVectors(st, embedder.NewBuiltin(0), VectorOptions{})
	if err := vec.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	for _, f := range later {
		one := t.TempDir()
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(one, filepath.Dir(f)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(one, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := im.Import(ctx, "maildir", one, nil); err != nil {
			t.Fatal(err)
		}
	}
	return st, New(st, vec, nil)
}

// Relevance on real mail: a hit found by meaning alone is near the best
// vector hit and never above a hit holding every word; a word that is in
// no mail finds nothing, in every mode (a misspelt one still finds its
// mail: TestSearchMarksHitsFoundByMeaningOnly); a mail imported a moment ago, its vector not made yet, is not
// displaced from the top by older mail that has one.
func TestRelevanceOnEnron(t *testing.T) {
	const fresh = "allen-p/straw/1." // the only mail about wheat
	st, s := enronSearch(t, fresh)
	ctx := context.Background()
	now := time.Date(2002, 7, 1, 9, 0, 0, 0, time.UTC)
	find := func(q Query) []Hit {
		t.Helper()
		q.Now, q.Location = now, time.UTC
		if q.Limit == 0 {
			q.Limit = 10
		}
		hits, err := s.Search(ctx, q)
		if err != nil {
			t.Fatalf("%+v: %v", q, err)
		}
		return hits
	}

	var freshID int64
	if err := st.DB().QueryRow(`SELECT id FROM items WHERE body LIKE '%wheat%'`).Scan(&freshID); err != nil {
		t.Fatal(err)
	}
	if s.vec.embedded(freshID) {
		t.Fatal("the fresh mail has a vector already; the test needs one without")
	}
	for _, q := range []string{"wheat farmer", "someone looking for a wheat farmer near Austin", "wheat"} {
		hits := find(Query{Text: q})
		if len(hits) == 0 || hits[0].Item.ID != freshID {
			t.Errorf("%q: the mail just imported is not first: %v", q, ids(hits))
		}
	}

	for _, mode := range allModes {
		if hits := find(Query{Text: "xyzzyqwerty", Mode: mode}); len(hits) != 0 {
			t.Errorf("%s: xyzzyqwerty found %d items: %v", mode, len(hits), ids(hits))
		}
	}
	for _, q := range []string{"Fiedler", "wheat farmer", "jury duty", "bus passes", "Astros tickets", "Malowney", "Palo Verde maintenance", "fridge"} {
		hits := find(Query{Text: q, Limit: 20})
		terms := parseQueryTerms(q)
		lastWhole, firstMeaning := -1, -1
		for i, h := range hits {
			if !h.ByMeaning && holdsEveryTerm(h.Item, terms) {
				lastWhole = i
			}
			if h.ByMeaning && firstMeaning < 0 {
				firstMeaning = i
			}
		}
		if lastWhole < 0 {
			t.Errorf("%q: no hit holds every word: %v", q, ids(hits))
		}
		if firstMeaning >= 0 && firstMeaning < lastWhole {
			t.Errorf("%q: hit %d found by meaning alone is above hit %d, which holds every word", q, firstMeaning+1, lastWhole+1)
		}
	}
}

// The person filter finds Enron people however their name is written:
// "Buy, Rick" for Rick Buy, "Phillip K Allen" for Phillip Allen, any
// case, with or without the initial, or by the address's local part.
func TestPersonFilterOnEnron(t *testing.T) {
	_, s := enronSearch(t)
	ctx := context.Background()
	count := func(person string) (int, []Hit) {
		t.Helper()
		hits, err := s.Search(ctx, Query{People: []string{person}, Limit: 1000, Mode: ModeFTS, Now: time.Date(2002, 7, 1, 0, 0, 0, 0, time.UTC)})
		if err != nil {
			t.Fatal(err)
		}
		return len(hits), hits
	}
	names := func(it *store.Item) string { return strings.ToLower(it.Sender + " " + strings.Join(it.People, " ")) }
	for _, group := range [][]string{
		{"Rick Buy", "Buy, Rick", "rick buy", "RICK BUY", "rick.buy"},
		{"Phillip Allen", "Phillip K Allen", "Allen, Phillip K.", "phillip allen", "Phíllip Allen"},
	} {
		want, hits := count(group[0])
		if want == 0 {
			t.Fatalf("%q finds nothing", group[0])
		}
		for _, h := range hits {
			n := names(h.Item)
			for _, w := range tokenize.Words(group[0]) {
				if !strings.Contains(n, w) {
					t.Errorf("%q: %q involves %q", group[0], h.Item.Title, n)
				}
			}
		}
		for _, other := range group[1:] {
			if got, _ := count(other); got != want {
				t.Errorf("%q finds %d items, %q %d", other, got, group[0], want)
			}
		}
	}
	if n, _ := count("Rick Allen"); n != 0 {
		if _, hits := count("Rick Allen"); !strings.Contains(names(hits[0].Item), "rick") {
			t.Errorf("Rick Allen finds %d items without a Rick", n)
		}
	}
}
