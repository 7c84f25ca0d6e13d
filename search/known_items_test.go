package search

import (
	"context"
	"math/rand/v2"
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

// TestVectorKnownItemsAtScale asks for real mails by a few of their own
// words, in a mailbox big enough that the index proposes candidates (the
// small test mailboxes have every item re-ranked). Vector search must find
// at least 90% of what an exact brute-force scan finds: every item scored
// by its chunks' stored vectors, as the re-ranking scores candidates. The
// index's one narrow vector per item would lose what the re-ranking never
// gets to see.
func TestVectorKnownItemsAtScale(t *testing.T) {
	if testing.Short() {
		t.Skip("imports 8k mails")
	}
	enron := testutil.SharedData(t, "mail/enron/maildir")
	spam := testutil.SharedData(t, "mail/spamassassin/data")
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), store.FileName), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	dirs := []string{enron}
	boxes, err := os.ReadDir(spam)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range boxes {
		if b.IsDir() {
			dirs = append(dirs, filepath.Join(spam, b.Name()))
		}
	}
	im := importer.New(importer.Options{Store: st})
	for _, dir := range dirs {
		if _, err := im.Import(ctx, "maildir", dir, nil); err != nil {
			t.Fatal(err)
		}
	}
	var items int
	if err := st.DB().QueryRow(`SELECT COUNT(*) FROM items`).Scan(&items); err != nil {
		t.Fatal(err)
	}
	vec := NewVectors(st, embedder.NewBuiltin(0), VectorOptions{})
	if err := vec.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := vec.Load(ctx); err != nil { // as at a daemon's start
		t.Fatal(err)
	}
	searcher := New(st, vec, nil)

	type known struct {
		id    int64
		query string
	}
	var asks []known
	rows, err := st.DB().Query(`SELECT id, body FROM items ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 3))
	for rows.Next() {
		var id int64
		var body string
		if err := rows.Scan(&id, &body); err != nil {
			t.Fatal(err)
		}
		if rng.IntN(10) != 0 {
			continue
		}
		// Four words of the mail that a person might remember: words,
		// not numbers or codes.
		var words []string
		for _, w := range tokenize.ContentWords(body) {
			if len(w) >= 5 && len(w) < 15 && !strings.ContainsAny(w, "0123456789") {
				words = append(words, w)
			}
		}
		if len(words) < 20 {
			continue
		}
		var q []string
		for range 4 {
			q = append(q, words[rng.IntN(len(words))])
		}
		asks = append(asks, known{id, strings.Join(q, " ")})
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if len(asks) < 400 {
		t.Fatalf("only %d known-item queries from %d mails", len(asks), items)
	}

	found := func(mode string, k int) float64 {
		n := 0
		for _, a := range asks {
			hits, err := searcher.Search(ctx, Query{Text: a.query, Mode: mode, Limit: k, Now: time.Now(), Location: time.UTC})
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range hits {
				if h.Item.ID == a.id {
					n++
					break
				}
			}
		}
		return 100 * float64(n) / float64(len(asks))
	}
	vector, hybrid := found(ModeVector, 25), found(ModeHybrid, 10)

	// The brute-force scan, over every item's chunk vectors held here.
	chunks := map[int64][][]byte{}
	err = store.Each(ctx, st.DB(), func(r store.Scanner) error {
		var id int64
		var v []byte
		err := r.Scan(&id, &v)
		chunks[id] = append(chunks[id], v)
		return err
	}, `SELECT item_id, vector FROM chunk_vectors`)
	if err != nil {
		t.Fatal(err)
	}
	exact := 0
	for _, a := range asks {
		qv, err := vec.embedQuery(ctx, a.query, func(w string) float64 { return searcher.idf(ctx, w) })
		if err != nil {
			t.Fatal(err)
		}
		best := map[int64]float32{}
		for id, cs := range chunks {
			for _, c := range cs {
				if s, ok := dotChunk(qv.wide, c); ok && (s > best[id] || best[id] == 0) {
					best[id] = s
				}
			}
		}
		for _, h := range topHits(best, 25) {
			if h.item == a.id {
				exact++
				break
			}
		}
	}
	brute := 100 * float64(exact) / float64(len(asks))
	t.Logf("%d mails, %d known-item queries: vector top-25 %.1f%% (brute-force scan %.1f%%), hybrid top-10 %.1f%%",
		items, len(asks), vector, brute, hybrid)
	if vector < 0.9*brute {
		t.Errorf("vector search found %.1f%% of known mails in its top 25, under 90%% of the brute-force scan's %.1f%%", vector, brute)
	}
	// A floor a few points under today's number (90.7).
	if hybrid < 87 {
		t.Errorf("hybrid search found %.1f%% of known mails in its top 10, want at least 87%%", hybrid)
	}
}
