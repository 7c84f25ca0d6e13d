package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/embedder"
)

// A home from before migration 11 held one vector per chunk (narrow and
// wide side by side); opening it drops them and queues every item, and the
// indexer re-embeds everything in the new layout, keyword search working
// meanwhile.
func TestVectorsUpgradeFromTheChunkLayout(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), FileName)
	topics := strings.Fields("apples boats candles dolphins engines forests gardens harbours islands jackets")
	writeChunkLayoutHome(t, path, topics)

	st, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	count := func(query string) int {
		t.Helper()
		var n int
		if err := st.DB().QueryRow(query).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(`SELECT COUNT(*) FROM vector_queue`); n != len(topics) {
		t.Fatalf("%d items queued after the upgrade, want all %d", n, len(topics))
	}
	if n := count(`SELECT COUNT(*) FROM item_vectors`) + count(`SELECT COUNT(*) FROM chunk_vectors`); n != 0 {
		t.Fatalf("%d vectors kept from the old layout", n)
	}

	vec := NewVectors(st, embedder.NewBuiltin(0), VectorOptions{BatchSize: 4})
	if hits, err := vec.Search(ctx, SearchQuery{Text: "harbours"}); err != nil || len(hits) != 1 {
		t.Fatalf("keyword search before re-embedding: %v, %v", hits, err)
	}
	if err := vec.prepare(ctx); err != nil {
		t.Fatal(err)
	}
	if s := vec.Status(); s.State != VectorsReindexing || s.Pending != len(topics) {
		t.Fatalf("status after the upgrade: %+v, want re-indexing %d items", s, len(topics))
	}
	if err := vec.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if s := vec.Status(); s.State != VectorsReady || s.Pending != 0 || s.Vectors != len(topics) {
		t.Fatalf("status after re-embedding: %+v", s)
	}
	if n := count(`SELECT COUNT(*) FROM chunk_vectors WHERE length(vector) = 4 + ` + fmt.Sprint(embedder.WideDimension)); n != len(topics) {
		t.Fatalf("%d chunks with a wide vector, want %d", n, len(topics))
	}
	hits, err := vec.Search(ctx, SearchQuery{Text: "harbour", Mode: ModeVector, Limit: 1})
	if err != nil || len(hits) != 1 || hits[0].Item.ExternalID != "m7" {
		t.Fatalf("vector search after re-embedding: %v, %v", hits, err)
	}
}

// writeChunkLayoutHome writes a database as omnibrain left it at schema
// 10: one item per topic, fully embedded by the first built-in embedder.
func writeChunkLayoutHome(t *testing.T, path string, topics []string) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?_foreign_keys=on")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	exec := func(query string, args ...any) {
		t.Helper()
		if _, err := db.Exec(query, args...); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
	}
	for _, m := range ms {
		if m.version <= 10 {
			exec(m.sql)
		}
	}
	exec(`PRAGMA user_version = 10`)
	at := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	for i, topic := range topics {
		title, body := "Topic "+topic, "Body about "+topic+" and the gas market."
		res, err := db.Exec(`INSERT INTO items (source, external_id, kind, thread, time, title, body, sender, people, content_hash, created, updated)
			VALUES ('gmail', ?, 'email', ?, ?, ?, ?, 'anna@example.com', '["anna@example.com"]', ?, 0, 0)`,
			fmt.Sprintf("m%d", i), fmt.Sprintf("t%d", i), at.Add(time.Duration(i)*time.Hour).UnixMilli(), title, body, fmt.Sprint(i))
		if err != nil {
			t.Fatal(err)
		}
		id, _ := res.LastInsertId()
		exec(`INSERT INTO items_fts (rowid, title, body, people) VALUES (?, ?, ?, '["anna@example.com"]')`, id, title, body)
		exec(`INSERT INTO item_vectors (item_id, chunk, vector, wide) VALUES (?, 0, zeroblob(768), zeroblob(2052))`, id)
	}
	exec(`DELETE FROM vector_queue`) // the old indexer was done
	exec(`INSERT INTO meta (key, value, updated) VALUES ('vectors.embedder', 'builtin/hash-v1/d192', 0)`)
}

// The index holds one vector per item: a changed item replaces its own
// (wherever it now belongs) and a deleted one leaves.
func TestVectorIndexFollowsChangesAndDeletes(t *testing.T) {
	at := berlinDay(t, 2026, 3, 2, 9)
	f := newSearchFixture(t, []*Item{
		mail("a", "ta", at, "anna@example.com", "Sailing", "The regatta sails past the lighthouse at dawn."),
		mail("b", "tb", at, "bob@example.com", "Baking", "Sourdough needs a starter fed every morning."),
		mail("c", "tc", at, "carl@example.com", "Chess", "The endgame came down to rook and pawn."),
	})
	ctx := context.Background()
	score := func(q, id string) float64 {
		t.Helper()
		for _, h := range f.search(t, SearchQuery{Text: q, Mode: ModeVector, Limit: 5}) {
			if h.Item.ExternalID == id {
				return h.Score
			}
		}
		return 0
	}
	if s := score("regatta lighthouse", "a"); s < 0.2 {
		t.Fatalf("before the change: a scores %.3f for its own words", s)
	}
	changed := mail("a", "ta", at, "anna@example.com", "Gardening", "Tomatoes ripen slowly in cold weather.")
	if _, err := f.st.UpsertItems(ctx, []*Item{changed}, UpsertOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.DB().Exec(`DELETE FROM items WHERE external_id = 'c'`); err != nil {
		t.Fatal(err)
	}
	if err := f.vec.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if n := f.vec.Status().Vectors; n != 2 {
		t.Fatalf("%d vectors in the index, want one per remaining item (2)", n)
	}
	if s := score("tomatoes ripen", "a"); s < 0.2 {
		t.Errorf("after the change: a scores %.3f for its new words", s)
	}
	if s := score("regatta lighthouse", "a"); s > 0.05 {
		t.Errorf("after the change: a still scores %.3f for its old words", s)
	}
}

// plainEmbedder is the built-in embedder seen as any other: one vector per
// text, no wide vectors, no word weights.
type plainEmbedder struct{ b *embedder.Builtin }

func (p plainEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return p.b.Embed(ctx, texts)
}
func (p plainEmbedder) Dimension() int   { return p.b.Dimension() }
func (p plainEmbedder) Identity() string { return "plain/" + p.b.Identity() }

// With an embedder that has no wide vectors, the candidates are re-ranked
// by their chunks' own stored vectors: a long mail whose one relevant
// paragraph is diluted in its item vector still beats short mails that
// share a word with the query.
func TestVectorSearchRanksByChunksForOtherEmbedders(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < 6000; i++ {
		fmt.Fprintf(&b, "Paragraph %d covers routine scheduling, staffing and the weekly desk report.\n\n", i)
	}
	for range 8 {
		b.WriteString("The Palo Verde outage rerouted energy west. ")
	}
	at := berlinDay(t, 2026, 3, 2, 9)
	items := []*Item{mail("long", "t1", at, "anna@example.com", "Weekly report", b.String())}
	for i := range 30 {
		items = append(items, mail(fmt.Sprintf("f%d", i), fmt.Sprintf("f%d", i), at, "bob@example.com",
			"Note", fmt.Sprintf("The outage log %d is attached.", i)))
	}
	st := openTest(t)
	ctx := context.Background()
	if _, err := st.UpsertItems(ctx, items, UpsertOptions{}); err != nil {
		t.Fatal(err)
	}
	vec := NewVectors(st, plainEmbedder{embedder.NewBuiltin(0)}, VectorOptions{})
	if err := vec.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if n := vec.Status().Vectors; n != len(items) {
		t.Fatalf("%d vectors in the index, want one per item (%d)", n, len(items))
	}
	hits, err := vec.Search(ctx, SearchQuery{Text: "palo verde outage", Mode: ModeVector, Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) == 0 || hits[0].Item.ExternalID != "long" {
		t.Fatalf("vector search: %v, want the long mail first", ids(hits))
	}
}
