package search

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/embedder"
	"github.com/omnibrain/omnibrain/store"
)

// The index holds one vector per item: a changed item replaces its own
// (wherever it now belongs) and a deleted one leaves.
func TestVectorIndexFollowsChangesAndDeletes(t *testing.T) {
	at := berlinDay(t, 2026, 3, 2, 9)
	f := newSearchFixture(t, []*store.Item{
		mail("a", "ta", at, "anna@example.com", "Sailing", "The regatta sails past the lighthouse at dawn."),
		mail("b", "tb", at, "bob@example.com", "Baking", "Sourdough needs a starter fed every morning."),
		mail("c", "tc", at, "carl@example.com", "Chess", "The endgame came down to rook and pawn."),
	})
	ctx := context.Background()
	score := func(q, id string) float64 {
		t.Helper()
		for _, h := range f.search(t, Query{Text: q, Mode: ModeVector, Limit: 5}) {
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
	if _, err := f.st.UpsertItems(ctx, []*store.Item{changed}, store.UpsertOptions{}); err != nil {
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
	items := []*store.Item{mail("long", "t1", at, "anna@example.com", "Weekly report", b.String())}
	for i := range 30 {
		items = append(items, mail(fmt.Sprintf("f%d", i), fmt.Sprintf("f%d", i), at, "bob@example.com",
			"Note", fmt.Sprintf("The outage log %d is attached.", i)))
	}
	st := openTest(t)
	ctx := context.Background()
	if _, err := st.UpsertItems(ctx, items, store.UpsertOptions{}); err != nil {
		t.Fatal(err)
	}
	vec := NewVectors(st, plainEmbedder{embedder.NewBuiltin(0)}, VectorOptions{})
	if err := vec.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if n := vec.Status().Vectors; n != len(items) {
		t.Fatalf("%d vectors in the index, want one per item (%d)", n, len(items))
	}
	hits, err := New(vec.st, vec, nil).Search(ctx, Query{Text: "palo verde outage", Mode: ModeVector, Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) == 0 || hits[0].Item.ExternalID != "long" {
		t.Fatalf("vector search: %v, want the long mail first", ids(hits))
	}
}

// An answer is read in the light of the message it answers, even when the
// answer was stored first (mail imported out of time order): storing the
// question has the answer embedded again.
func TestVectorOfAnAnswerStoredFirstReadsTheQuestion(t *testing.T) {
	at := berlinDay(t, 2026, 3, 2, 9)
	answer := mail("b", "t", at.Add(time.Hour), "bob@example.com", "Re: anniversary", "Five years already, time flies!")
	other := mail("c", "u", at, "carl@example.com", "Chess", "The endgame came down to rook and pawn.")
	f := newSearchFixture(t, []*store.Item{answer, other})
	ctx := context.Background()
	sim := func(q, id string) float64 {
		t.Helper()
		for _, h := range f.search(t, Query{Text: q, Mode: ModeVector, Limit: 5}) {
			if h.Item.ExternalID == id {
				return h.Score
			}
		}
		return 0
	}
	if s := sim("married wedding", "b"); s != 0 {
		t.Fatalf("before the question is stored, the answer scores %.3f for its words", s)
	}
	question := mail("a", "t", at, "anna@example.com", "Anniversary", "How long have you been married? The wedding was in June, right?")
	if _, err := f.st.UpsertItems(ctx, []*store.Item{question}, store.UpsertOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := f.vec.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if s := sim("married wedding", "b"); s < 0.1 {
		t.Errorf("after the question is stored, the answer scores %.3f for its words; want it read with the question", s)
	}
	if n := f.vec.Status().Pending; n != 0 {
		t.Errorf("%d items still queued", n)
	}
}

// The indexer remembers the first chunks it embedded (chunkCache) to mix
// them into the next message of a thread: the vectors must be the ones it
// makes when the previous message is embedded with the next in one batch.
func TestRememberedFirstChunksGiveTheSameVectors(t *testing.T) {
	ctx := context.Background()
	vectorsOf := func(batch int) map[int64]string {
		st := openTest(t)
		if _, err := st.UpsertItems(ctx, newSynthMail(3).items(120), store.UpsertOptions{}); err != nil {
			t.Fatal(err)
		}
		// One item a batch: every previous message comes from the cache;
		// all in one batch: none does.
		v := NewVectors(st, embedder.NewBuiltin(0), VectorOptions{BatchSize: batch})
		if err := v.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if batch == 1 && len(v.firsts.byText) == 0 {
			t.Fatal("nothing remembered")
		}
		out := map[int64]string{}
		err := store.Each(ctx, st.DB(), func(r store.Scanner) error {
			var id int64
			var item, chunks []byte
			if err := r.Scan(&id, &item, &chunks); err != nil {
				return err
			}
			out[id] = string(item) + string(chunks)
			return nil
		}, `SELECT i.item_id, i.vector, (SELECT group_concat(hex(vector)) FROM chunk_vectors c WHERE c.item_id = i.item_id) FROM item_vectors i`)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	one, all := vectorsOf(1), vectorsOf(1000)
	if len(one) != 120 || len(all) != 120 {
		t.Fatalf("%d and %d items embedded", len(one), len(all))
	}
	for id, v := range all {
		if one[id] != v {
			t.Errorf("item %d: vectors differ when its thread's previous message came from the cache", id)
		}
	}
}

func TestChunkCacheForgetsTheOldest(t *testing.T) {
	var c chunkCache
	vec := chunkVec{narrow: []float32{1}}
	for i := range firstChunks + 10 {
		c.put(fmt.Sprint(i), vec)
	}
	if _, ok := c.get("9"); ok {
		t.Error("the 10th oldest text is still remembered")
	}
	if _, ok := c.get("10"); !ok {
		t.Error("the 11th oldest text is forgotten")
	}
	if _, ok := c.get(fmt.Sprint(firstChunks + 9)); !ok {
		t.Error("the newest text is forgotten")
	}
	if len(c.byText) != firstChunks {
		t.Errorf("%d texts remembered, want %d", len(c.byText), firstChunks)
	}
}

// While the indexer works through a backlog the collector runs at
// bulkGCPercent; once the queue drains the process's own setting is back,
// and a single new item is no backlog.
func TestIndexerCollectsLessOnlyDuringABacklog(t *testing.T) {
	var mu sync.Mutex
	cur, history := 37, []int{}
	defer func(old func(int) int) { setGCPercent = old }(setGCPercent)
	setGCPercent = func(p int) int {
		mu.Lock()
		defer mu.Unlock()
		prev := cur
		cur, history = p, append(history, p)
		return prev
	}

	st := openTest(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	at := storeBoats(t, st, 23)
	statuses := make(chan VectorStatus, 100)
	vec := NewVectors(st, embedder.NewBuiltin(0), VectorOptions{BatchSize: 5, Status: func(s VectorStatus) { statuses <- s }})
	st.OnItemsStored(vec.Notify)
	done := make(chan error, 1)
	go func() { done <- vec.Run(ctx) }()
	waitVectors := func(n int) {
		t.Helper()
		for {
			select {
			case s := <-statuses:
				if s.Vectors == n && s.Pending == 0 {
					return
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("the index never held %d vectors", n)
			}
		}
	}
	waitVectors(23)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		restored := cur == 37
		mu.Unlock()
		if restored {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GC percent not restored after the backlog (history %v)", history)
		}
	}
	if _, err := st.UpsertItems(ctx, []*store.Item{mail("late", "tl", at, "bob@example.com", "Chess", "Rook and pawn.")}, store.UpsertOptions{}); err != nil {
		t.Fatal(err)
	}
	waitVectors(24)
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(history, []int{bulkGCPercent, 37}) || cur != 37 {
		t.Fatalf("GC percent set to %v, now %d; want raised once for the backlog, then 37 again", history, cur)
	}
}

// The indexer embeds on every core, but leaves one to a writer that
// stored items within writerActive and has not said it is done.
func TestIndexerLeavesTheWriterACore(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	v := NewVectors(openTest(t), embedder.NewBuiltin(0), VectorOptions{})
	if got := v.cores(); got != 4 {
		t.Errorf("nothing stored: %d cores, want 4", got)
	}
	v.Notify()
	if got := v.cores(); got != 3 {
		t.Errorf("just stored: %d cores, want 3", got)
	}
	v.lastStored.Store(time.Now().Add(-2 * writerActive).UnixNano())
	if got := v.cores(); got != 4 {
		t.Errorf("stored a while ago: %d cores, want 4", got)
	}
	v.Notify()
	v.WritesDone() // the import returned
	if got := v.cores(); got != 4 {
		t.Errorf("just stored, writer done: %d cores, want 4", got)
	}
	runtime.GOMAXPROCS(1)
	v.Notify()
	if got := v.cores(); got != 1 {
		t.Errorf("one core, just stored: %d cores, want 1", got)
	}
}

// The indexer embeds a round while the last one is stored: the rounds
// never share an item, and each is stored before the next is handed over.
func TestIndexerEmbedsTheNextRoundWhileStoringTheLast(t *testing.T) {
	st := openTest(t)
	ctx := context.Background()
	storeBoats(t, st, 10)
	vec := NewVectors(st, embedder.NewBuiltin(0), VectorOptions{BatchSize: 5})
	if err := vec.Load(ctx); err != nil {
		t.Fatal(err)
	}
	var w roundWriter
	defer w.wait()
	next := func() (int, []int64) {
		t.Helper()
		n, err := vec.indexNext(ctx, &w)
		if err != nil {
			t.Fatal(err)
		}
		if w.round == nil {
			return n, nil
		}
		return n, slices.Clone(w.round.ids)
	}
	n1, first := next()
	n2, second := next()
	if n1 != 5 || n2 != 5 || len(first) != 5 || len(second) != 5 {
		t.Fatalf("rounds of %d %v and %d %v, want two of 5", n1, first, n2, second)
	}
	for _, id := range second {
		if slices.Contains(first, id) {
			t.Fatalf("item %d in both rounds: %v, %v", id, first, second)
		}
	}
	if got := vec.Status().Vectors; got != 5 {
		t.Fatalf("%d vectors once the second round was handed over, want the first round's 5", got)
	}
	if n, rest := next(); n != 0 || rest != nil {
		t.Fatalf("a third round of %d %v, want none", n, rest)
	}
	if got, pending := vec.Status().Vectors, vec.Status().Pending; got != 10 || pending != 0 {
		t.Fatalf("%d vectors, %d pending at the end, want 10 and 0", got, pending)
	}
}

// An item changed while its round was being embedded stays queued, and
// gets the vector of its new text.
func TestItemChangedWhileEmbeddedIsEmbeddedAgain(t *testing.T) {
	st := openTest(t)
	ctx := context.Background()
	at := berlinDay(t, 2026, 3, 2, 9)
	before := mail("a", "ta", at, "anna@example.com", "Sailing", "The regatta sails past the lighthouse at dawn.")
	other := mail("b", "tb", at, "bob@example.com", "Baking", "Sourdough needs a starter fed every morning.")
	if _, err := st.UpsertItems(ctx, []*store.Item{before, other}, store.UpsertOptions{}); err != nil {
		t.Fatal(err)
	}
	vec, r := embedOneRound(t, st, 2)
	after := mail("a", "ta", at, "anna@example.com", "Gardening", "Tomatoes ripen slowly in cold weather.")
	if _, err := st.UpsertItems(ctx, []*store.Item{after}, store.UpsertOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := vec.storeRound(ctx, r); err != nil {
		t.Fatal(err)
	}
	if p := vec.Status().Pending; p != 1 {
		t.Fatalf("%d items queued after the round, want the changed one", p)
	}
	if err := vec.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	f := &searchFixture{st: st, vec: vec, s: New(st, vec, nil), now: at, loc: at.Location()}
	if hits := f.search(t, Query{Text: "tomatoes ripen", Mode: ModeVector, Limit: 1}); len(hits) != 1 || hits[0].Item.ExternalID != "a" {
		t.Fatalf("by its new words: %v", ids(hits))
	}
}

// An item deleted while its round was being embedded gets no vector and
// leaves the queue; the round's other items are stored.
func TestItemDeletedWhileEmbeddedGetsNoVector(t *testing.T) {
	st := openTest(t)
	ctx := context.Background()
	storeBoats(t, st, 3)
	vec, r := embedOneRound(t, st, 3)
	if _, err := st.DB().Exec(`DELETE FROM items WHERE external_id = 'b1'`); err != nil {
		t.Fatal(err)
	}
	if err := vec.storeRound(ctx, r); err != nil {
		t.Fatal(err)
	}
	if s := vec.Status(); s.Vectors != 2 || s.Pending != 0 {
		t.Fatalf("%d vectors, %d pending, want the 2 remaining items and nothing queued", s.Vectors, s.Pending)
	}
	var stored int
	if err := st.DB().QueryRow(`SELECT (SELECT COUNT(*) FROM item_vectors) + (SELECT COUNT(DISTINCT item_id) FROM chunk_vectors)`).Scan(&stored); err != nil || stored != 4 {
		t.Fatalf("%d item and chunk vector owners stored (%v), want 2 + 2", stored, err)
	}
}

// A panic while a round is stored comes back from wait as an error, as it
// would have from Run's own goroutine, and leaves the round's items queued.
func TestPanicStoringARoundIsAnError(t *testing.T) {
	st := openTest(t)
	storeBoats(t, st, 1)
	vec := NewVectors(st, embedder.NewBuiltin(0), VectorOptions{})
	var w roundWriter
	w.start(context.Background(), vec, &indexRound{ids: []int64{1}}) // no encoded vectors: out of range
	if err := w.wait(); err == nil || !strings.Contains(err.Error(), "panicked") {
		t.Fatalf("wait = %v, want the panic as an error", err)
	}
	if p, err := vec.pending(context.Background()); err != nil || p != 1 {
		t.Fatalf("%d queued (%v), want the item still queued", p, err)
	}
}

// embedOneRound loads an indexer on st and embeds one round, which must
// hold n items, without storing it.
func embedOneRound(t *testing.T, st *store.Store, n int) (*Vectors, *indexRound) {
	t.Helper()
	ctx := context.Background()
	vec := NewVectors(st, embedder.NewBuiltin(0), VectorOptions{})
	if err := vec.Load(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := vec.embedRound(ctx, nil)
	if err != nil || r == nil || len(r.ids) != n {
		t.Fatalf("round %+v, %v; want one of %d items", r, err, n)
	}
	return vec, r
}

// storeBoats stores n mails, each in a thread of its own, and returns
// their time.
func storeBoats(t *testing.T, st *store.Store, n int) time.Time {
	t.Helper()
	at := berlinDay(t, 2026, 3, 2, 9)
	var items []*store.Item
	for i := range n {
		items = append(items, mail(fmt.Sprint("b", i), fmt.Sprint("t", i), at, "anna@example.com", "Regatta", fmt.Sprintf("Boat %d sails at dawn.", i)))
	}
	if _, err := st.UpsertItems(context.Background(), items, store.UpsertOptions{}); err != nil {
		t.Fatal(err)
	}
	return at
}

// Neighbours are the items just before and after in the same thread of
// the same source, ties in time broken by id.
func TestThreadNeighbours(t *testing.T) {
	at := berlinDay(t, 2026, 3, 2, 9)
	st := openTest(t)
	ctx := context.Background()
	items := []*store.Item{
		mail("a", "t", at, "anna@example.com", "Plan", "First."),
		mail("b", "t", at.Add(time.Hour), "bob@example.com", "Re: Plan", "Second."),
		mail("c", "t", at.Add(time.Hour), "carl@example.com", "Re: Plan", "Third, at the same minute."),
		mail("d", "t", at.Add(2*time.Hour), "anna@example.com", "Re: Plan", "Fourth."),
		mail("e", "u", at.Add(time.Hour), "erin@example.com", "Alone", "Nothing before or after."),
		mail("f", "", at, "fred@example.com", "No thread", "Not in any thread."),
		{Source: "github", ExternalID: "g", Kind: "issue", Thread: "t", Time: at.Add(90 * time.Minute), Title: "Same thread key, other source"},
	}
	if _, err := st.UpsertItems(ctx, items, store.UpsertOptions{}); err != nil {
		t.Fatal(err)
	}
	id := map[string]int64{"": 0}
	err := store.Each(ctx, st.DB(), func(r store.Scanner) error {
		var ext string
		var n int64
		err := r.Scan(&ext, &n)
		id[ext] = n
		return err
	}, `SELECT external_id, id FROM items`)
	if err != nil {
		t.Fatal(err)
	}
	var all []int64
	for _, it := range items {
		all = append(all, id[it.ExternalID])
	}
	got, err := threadNeighbours(ctx, st.DB(), all)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ item, prev, next string }{
		{"a", "", "b"}, {"b", "a", "c"}, {"c", "b", "d"}, {"d", "c", ""}, {"e", "", ""}, {"g", "", ""},
	} {
		if want := [2]int64{id[tc.prev], id[tc.next]}; got[id[tc.item]] != want {
			t.Errorf("%s: neighbours %v, want %v (%q before, %q after)", tc.item, got[id[tc.item]], want, tc.prev, tc.next)
		}
	}
	if nb, ok := got[id["f"]]; ok {
		t.Errorf("f is in no thread, yet has neighbours %v", nb)
	}
}

// Each neighbour is one seek into the thread's index, however long the
// thread: the plan bounds the time, not only the thread.
func TestThreadNeighboursSeekWithinTheThread(t *testing.T) {
	st := openTest(t)
	plan, err := store.Collect(context.Background(), st.DB(), func(r store.Scanner) (string, error) {
		var id, parent, unused int
		var detail string
		return detail, r.Scan(&id, &parent, &unused, &detail)
	}, `EXPLAIN QUERY PLAN `+threadNeighboursQuery(1), 1)
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(plan, "\n")
	for _, seek := range []string{"thread=? AND time<?", "thread=? AND time>?"} {
		if !strings.Contains(all, seek) {
			t.Errorf("no seek %q in the plan:\n%s", seek, all)
		}
	}
}

// BenchmarkThreadNeighbours looks up 100 items of a 5,000-mail thread.
func BenchmarkThreadNeighbours(b *testing.B) {
	st := openTest(b)
	ctx := context.Background()
	at := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	var items []*store.Item
	for i := range 5000 {
		items = append(items, mail(fmt.Sprint("m", i), "long", at.Add(time.Duration(i)*time.Minute), "anna@example.com", "Daily report", fmt.Sprint("Report ", i)))
	}
	if _, err := st.UpsertItems(ctx, items, store.UpsertOptions{}); err != nil {
		b.Fatal(err)
	}
	var ids []int64
	for i := int64(1); i <= 5000; i += 50 {
		ids = append(ids, i)
	}
	b.ResetTimer()
	for b.Loop() {
		nb, err := threadNeighbours(ctx, st.DB(), ids)
		if err != nil || len(nb) != len(ids) {
			b.Fatalf("%d neighbours, %v", len(nb), err)
		}
	}
}
