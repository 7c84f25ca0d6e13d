package search

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/embedder"
	"github.com/omnibrain/omnibrain/store"
)

func openTest(t testing.TB) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), filepath.Join(t.TempDir(), store.FileName), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// searchFixture is a small mailbox in Berlin time, searched "now" on
// Wednesday 2026-03-11 at 10:00.
type searchFixture struct {
	st  *store.Store
	vec *Vectors
	s   *Searcher
	now time.Time
	loc *time.Location
}

func newSearchFixture(t *testing.T, items []*store.Item) *searchFixture {
	t.Helper()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	st := openTest(t)
	ctx := context.Background()
	if _, err := st.UpsertItems(ctx, items, store.UpsertOptions{}); err != nil {
		t.Fatal(err)
	}
	vec := NewVectors(st, embedder.NewBuiltin(0), VectorOptions{})
	if err := vec.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	return &searchFixture{st: st, vec: vec, s: New(st, vec, nil), now: time.Date(2026, 3, 11, 10, 0, 0, 0, berlin), loc: berlin}
}

func (f *searchFixture) search(t *testing.T, q Query) []Hit {
	t.Helper()
	q.Now, q.Location = f.now, f.loc
	hits, err := f.s.Search(context.Background(), q)
	if err != nil {
		t.Fatalf("search %+v: %v", q, err)
	}
	return hits
}

func ids(hits []Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Item.ExternalID
	}
	return out
}

func mail(id, thread string, at time.Time, from, title, body string, people ...string) *store.Item {
	return &store.Item{Source: "gmail", ExternalID: id, Kind: "email", Thread: thread, Time: at, Title: title, Body: body,
		Sender: from, People: append([]string{from}, people...), Meta: map[string]any{"message_id": "<" + id + "@example.com>"}}
}

func berlinDay(t *testing.T, y int, m time.Month, d, h int) time.Time {
	t.Helper()
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	return time.Date(y, m, d, h, 0, 0, 0, loc)
}

var allModes = []string{ModeHybrid, ModeFTS, ModeVector}

// Filters (source, period, person) hold in every mode; a hybrid hit that
// ranks through its thread neighbour is filtered like any other.
func TestSearchFilters(t *testing.T) {
	f := newSearchFixture(t, []*store.Item{
		mail("q1", "t1", berlinDay(t, 2026, 3, 2, 9), "anna@example.com", "Pipeline capacity", "What is the pipeline capacity for April?"),
		// The answer shares no word with the query; its question does.
		mail("a1", "t1", berlinDay(t, 2026, 3, 10, 9), "bob@example.com", "Re: Pipeline capacity", "About 300 units, firm."),
		mail("x1", "t2", berlinDay(t, 2026, 3, 10, 11), "carol@example.com", "Lunch", "Pipeline of sandwiches for the lunch."),
		{Source: "calendar", ExternalID: "e1", Kind: "event", Time: berlinDay(t, 2026, 3, 10, 14), Title: "Pipeline capacity review", Body: "Review with Anna"},
	})
	for _, mode := range allModes {
		t.Run(mode, func(t *testing.T) {
			all := f.search(t, Query{Text: "pipeline capacity", Mode: mode})
			if len(all) < 3 {
				t.Fatalf("unfiltered: %v", ids(all))
			}
			for _, tc := range []struct {
				name string
				q    Query
				want func(*store.Item) bool
			}{
				{"source", Query{Sources: []string{"calendar"}}, func(it *store.Item) bool { return it.Source == "calendar" }},
				{"kind", Query{Sources: []string{"email"}}, func(it *store.Item) bool { return it.Kind == "email" }},
				{"since", Query{Since: berlinDay(t, 2026, 3, 10, 0)}, func(it *store.Item) bool { return !it.Time.Before(berlinDay(t, 2026, 3, 10, 0)) }},
				{"until", Query{Until: berlinDay(t, 2026, 3, 10, 0)}, func(it *store.Item) bool { return it.Time.Before(berlinDay(t, 2026, 3, 10, 0)) }},
				{"person by name", Query{People: []string{"Bob"}}, func(it *store.Item) bool { return it.Sender == "bob@example.com" }},
				{"person by address", Query{People: []string{"anna@example.com"}}, func(it *store.Item) bool { return it.Sender == "anna@example.com" }},
				{"date words", Query{Text: "yesterday"}, func(it *store.Item) bool {
					return !it.Time.Before(berlinDay(t, 2026, 3, 10, 0)) && it.Time.Before(berlinDay(t, 2026, 3, 11, 0))
				}},
			} {
				q := tc.q
				q.Text = strings.TrimSpace("pipeline capacity " + q.Text)
				q.Mode = mode
				hits := f.search(t, q)
				if len(hits) == 0 {
					t.Errorf("%s: nothing found", tc.name)
				}
				for _, h := range hits {
					if !tc.want(h.Item) {
						t.Errorf("%s: %s (%s %s) passed the filter", tc.name, h.Item.ExternalID, h.Item.Source, h.Item.Time.In(f.loc))
					}
				}
			}
		})
	}
	// Hybrid finds the answer through its question; a period that holds
	// only the question keeps the answer out.
	if hits := f.search(t, Query{Text: "pipeline capacity", Sources: []string{"gmail"}}); !slices.Contains(ids(hits), "a1") {
		t.Errorf("hybrid did not find the answer through its thread: %v", ids(hits))
	}
	hits := f.search(t, Query{Text: "pipeline capacity", Until: berlinDay(t, 2026, 3, 5, 0)})
	if got := ids(hits); !slices.Equal(got, []string{"q1"}) {
		t.Errorf("until Mar 5: %v, want only q1", got)
	}
}

// A person filter matches whole names, not letters inside other names
// ("Rick" is not Patrick), whatever the case or accents; an address or a
// part of one as written; a name in a script written without spaces
// inside its run. A filter alone lists what it selects, in every mode.
func TestPersonFilterMatchesNames(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 3, d, 9, 0, 0, 0, time.UTC) }
	f := newSearchFixture(t, []*store.Item{
		mail("rick", "t1", day(1), "rick.buy@enron.com", "Gas desk", "Positions for April.", "Rick Buy"),
		mail("patrick", "t2", day(2), "patrick@example.com", "Lunch", "Sandwiches at noon.", "Patrick Smith"),
		mail("zoe", "t3", day(3), "zoe@example.org", "Konzert", "Karten für Freitag.", "Zoë Ångström"),
		mail("tanaka", "t4", day(4), "tanaka@example.jp", "会議", "明日の会議について。", "田中太郎"),
	})
	for _, tc := range []struct {
		person string
		want   []string
	}{
		{"Rick", []string{"rick"}},
		{"buy, rick", []string{"rick"}},
		{"rick.buy", []string{"rick"}},
		{"rick.buy@enron", []string{"rick"}},
		{"@enron.com", []string{"rick"}},
		{"RICK.BUY@ENRON.COM", []string{"rick"}},
		{"zoe angstrom", []string{"zoe"}},
		{"Zoë", []string{"zoe"}},
		{"田中", []string{"tanaka"}},
		{"example", []string{"tanaka", "zoe", "patrick"}},
		{"nobody atall", nil},
		{"ick", nil},
	} {
		for _, mode := range allModes {
			got := ids(f.search(t, Query{People: []string{tc.person}, Mode: mode}))
			if !slices.Equal(got, tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
				t.Errorf("%s --person %q: %v, want %v", mode, tc.person, got, tc.want)
			}
		}
	}
}

// A search under a person filter starts from the items the person is in
// when they are few (setFilter); whichever way it goes, it finds the same.
func TestPersonFilterWaysAgree(t *testing.T) {
	var items []*store.Item
	people := []string{"Rick Buy", "Anna Smith", "Bob Jones"}
	topics := []string{"gas pipeline capacity", "budget review for April", "lunch on Friday", "pipeline budget"}
	for i := range 60 {
		it := mail(fmt.Sprintf("m%d", i), fmt.Sprintf("t%d", i%7), time.Date(2026, 3, 1+i%9, i%24, 0, 0, 0, time.UTC),
			strings.ToLower(strings.ReplaceAll(people[i%3], " ", "."))+"@example.com", topics[i%4], topics[(i+1)%4]+" and more", people[i%3], people[(i+1)%3])
		if i%5 == 0 {
			it.Source = "outlook"
		}
		items = append(items, it)
	}
	f := newSearchFixture(t, items)
	rows, index := selectRows, selectIndex
	t.Cleanup(func() { selectRows, selectIndex = rows, index })
	ways := []struct {
		name        string
		rows, index int64
	}{{"hits checked", 0, 0}, {"rows first", 1000, 0}, {"index first", 1000, 1000}}
	for _, q := range []Query{
		{People: []string{"Rick Buy"}},
		{Text: "pipeline budget", People: []string{"rick buy"}},
		{Text: "pipeline budget", People: []string{"Anna"}, Sources: []string{"gmail"}},
		{Text: "capacity", People: []string{"anna smith", "Bob Jones"}},
		{Text: "lunch", People: []string{"bob.jones@example.com"}},
		{Text: "budget", People: []string{"Bob"}, Since: time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC)},
		{Text: "budget last week", People: []string{"Rick"}, Fallback: true},
		{Text: "nothing like it", People: []string{"Nobody Here"}},
	} {
		for _, mode := range allModes {
			q.Mode = mode
			var first []string
			for i, w := range ways {
				selectRows, selectIndex = w.rows, w.index
				got := ids(f.search(t, q))
				if i == 0 {
					if first = got; len(got) == 0 && q.People[0] != "Nobody Here" {
						t.Errorf("%s %q %v: nothing found", mode, q.Text, q.People)
					}
					continue
				}
				if !slices.Equal(got, first) {
					t.Errorf("%s %q %v: %s %v, %s %v", mode, q.Text, q.People, ways[0].name, first, w.name, got)
				}
			}
		}
	}
}

// A period named in the text is a filter. When nothing in it matches, the
// search says so: no hits, or with Fallback hits marked as from outside it.
func TestSearchPeriodIsHonest(t *testing.T) {
	f := newSearchFixture(t, []*store.Item{
		mail("old", "t1", berlinDay(t, 2001, 5, 14, 9), "jeff@enron.com", "California power crisis", "The California power crisis deepens; rolling blackouts again."),
		mail("new", "t2", berlinDay(t, 2026, 3, 10, 9), "anna@example.com", "Budget", "The budget for April."),
	})
	for _, mode := range allModes {
		q := Query{Text: "what did anyone say about the california power crisis last year?", Mode: mode}
		if hits := f.search(t, q); len(hits) != 0 {
			t.Errorf("%s: last year (2025) holds no such mail, got %v", mode, ids(hits))
		}
		q.Fallback = true
		hits := f.search(t, q)
		if len(hits) == 0 || hits[0].Item.ExternalID != "old" {
			t.Fatalf("%s fallback: %v, want the 2001 mail first", mode, ids(hits))
		}
		for _, h := range hits {
			o := h.Outside
			if o == nil || o.Phrase != "last year" || !o.Since.Equal(berlinDay(t, 2025, 1, 1, 0)) || !o.Until.Equal(berlinDay(t, 2026, 1, 1, 0)) {
				t.Errorf("%s fallback hit %s: Outside = %+v, want last year 2025", mode, h.Item.ExternalID, o)
			}
		}
		// A period that has matches is never relaxed, Fallback or not.
		q = Query{Text: "california power crisis in 2001", Mode: mode, Fallback: true}
		hits = f.search(t, q)
		if len(hits) == 0 || hits[0].Item.ExternalID != "old" || hits[0].Outside != nil {
			t.Errorf("%s in 2001: %v (outside %+v)", mode, ids(hits), hits)
		}
		for _, h := range hits {
			if h.Item.Time.Year() != 2001 {
				t.Errorf("%s in 2001: %s from %s", mode, h.Item.ExternalID, h.Item.Time)
			}
		}
	}
	// Only a period: what it holds, newest first.
	hits := f.search(t, Query{Text: "yesterday"})
	if got := ids(hits); !slices.Equal(got, []string{"new"}) {
		t.Errorf("yesterday: %v, want [new]", got)
	}
}

// A period that holds mail, none of it with the words asked for, falls
// back to other times as an empty one does: mail near by meaning alone
// does not count as a match (issue 16: "capital allocation last week").
func TestSearchPeriodWithMailButNoMatchFallsBack(t *testing.T) {
	f := newSearchFixture(t, []*store.Item{
		mail("old", "t1", berlinDay(t, 2001, 5, 14, 9), "jeff@enron.com", "California power crisis", "The California power crisis deepens; rolling blackouts again."),
		mail("near", "t2", berlinDay(t, 2026, 3, 10, 9), "anna@example.com", "Californians", "Californians in crises again."),
		mail("new", "t3", berlinDay(t, 2026, 3, 10, 10), "bob@example.com", "Budget", "The budget for April."),
	})
	for _, mode := range []string{ModeHybrid, ModeFTS} {
		hits := f.search(t, Query{Text: "california power crisis this week", Mode: mode, Fallback: true})
		if len(hits) == 0 || hits[0].Item.ExternalID != "old" {
			t.Fatalf("%s: %v, want the 2001 mail first", mode, ids(hits))
		}
		for _, h := range hits {
			if h.Outside == nil || h.Outside.Phrase != "this week" {
				t.Errorf("%s: hit %s not marked as outside this week: %+v", mode, h.Item.ExternalID, h.Outside)
			}
		}
	}
}

// One message in two mailboxes, or the same text twice, is one hit.
func TestSearchDedupes(t *testing.T) {
	at := berlinDay(t, 2026, 3, 9, 9)
	a := mail("m1", "t1", at, "anna@example.com", "Quarterly forecast", "The quarterly forecast is attached.")
	b := mail("m1-copy", "t1", at, "anna@example.com", "Quarterly forecast", "The quarterly forecast is attached.")
	b.Source, b.Meta = "mbox", map[string]any{"message_id": "<M1@example.com>"} // same Message-ID, other case
	c := &store.Item{Source: "jsonl", ExternalID: "d1", Time: at, Title: "Notes", Body: "Quarterly forecast notes, as typed."}
	d := &store.Item{Source: "jsonl", ExternalID: "d2", Time: at.Add(time.Hour), Title: "Notes", Body: "Quarterly  forecast notes, as TYPED."}
	other := mail("m2", "t2", at, "bob@example.com", "Re: Quarterly forecast", "Thanks, the forecast looks fine.")
	f := newSearchFixture(t, []*store.Item{a, b, c, d, other})
	for _, mode := range allModes {
		hits := f.search(t, Query{Text: "quarterly forecast", Mode: mode})
		got := ids(hits)
		slices.Sort(got)
		mails, notes := 0, 0
		for _, id := range got {
			switch id {
			case "m1", "m1-copy":
				mails++
			case "d1", "d2":
				notes++
			}
		}
		if mails != 1 || notes != 1 || !slices.Contains(got, "m2") {
			t.Errorf("%s: %v, want one of m1/m1-copy, one of d1/d2, and m2", mode, got)
		}
	}
}

// Snippets show the part of the text with the most query words, marked.
func TestSearchSnippets(t *testing.T) {
	long := strings.Repeat("Nothing to see in this part of the mail. ", 20) +
		"The gas pipeline expansion needs FERC approval before June. " + strings.Repeat("Regards and more filler text. ", 20)
	f := newSearchFixture(t, []*store.Item{
		mail("s1", "t1", berlinDay(t, 2026, 3, 9, 9), "anna@example.com", "Expansion", long),
		{Source: "calendar", ExternalID: "e1", Kind: "event", Time: berlinDay(t, 2026, 3, 9, 9), Title: "Pipelines review"},
	})
	for _, mode := range allModes {
		hits := f.search(t, Query{Text: "pipeline approvals", Mode: mode})
		var s1, e1 string
		for _, h := range hits {
			switch h.Item.ExternalID {
			case "s1":
				s1 = h.Snippet
			case "e1":
				e1 = h.Snippet
			}
		}
		if !strings.Contains(s1, "«pipeline»") || !strings.Contains(s1, "«approval»") || !strings.HasPrefix(s1, "…") || !strings.HasSuffix(s1, "…") {
			t.Errorf("%s: snippet %q", mode, s1)
		}
		if e1 != "«Pipelines» review" {
			t.Errorf("%s: title-only snippet %q", mode, e1)
		}
	}
}

// A long mail is embedded chunk by chunk, so words far down its body
// still find it by meaning alone.
func TestVectorSearchFindsTheEndOfLongMail(t *testing.T) {
	var b strings.Builder
	for i := 0; b.Len() < 5000; i++ {
		fmt.Fprintf(&b, "Paragraph %d covers routine scheduling, staffing and the weekly desk report.\n\n", i)
	}
	b.WriteString("Finally: the Palo Verde outage rerouted energy and saved the desk a lot of money.")
	items := []*store.Item{mail("long", "t1", berlinDay(t, 2026, 3, 2, 9), "anna@example.com", "Weekly report", b.String())}
	for i := range 30 {
		items = append(items, mail(fmt.Sprintf("f%d", i), fmt.Sprintf("f%d", i), berlinDay(t, 2026, 3, 3, 9), "bob@example.com",
			"Staffing", "Routine scheduling and staffing for the weekly desk report."))
	}
	f := newSearchFixture(t, items)
	var chunks int
	if err := f.st.DB().QueryRow(`SELECT COUNT(*) FROM chunk_vectors v JOIN items i ON i.id = v.item_id WHERE i.external_id = 'long'`).Scan(&chunks); err != nil {
		t.Fatal(err)
	}
	if chunks < 3 {
		t.Fatalf("a %d-byte mail has %d vectors, want one per chunk", b.Len(), chunks)
	}
	hits := f.search(t, Query{Text: "palo verde outage", Mode: ModeVector, Limit: 3})
	if len(hits) == 0 || hits[0].Item.ExternalID != "long" {
		t.Fatalf("vector search: %v, want the long mail first", ids(hits))
	}
}

// Words naming someone on a mail lift it above an otherwise equal one.
func TestSearchPersonBoost(t *testing.T) {
	at := berlinDay(t, 2026, 3, 9, 9)
	f := newSearchFixture(t, []*store.Item{
		mail("p1", "t1", at, "carla.hoffman@enron.com", "Deal corrections", "Deal corrections for today."),
		mail("p2", "t2", at, "mark.guzman@enron.com", "Deal corrections", "Deal corrections for today.", "Sean Crandall"),
	})
	for _, mode := range allModes {
		for who, want := range map[string]string{"carla": "p1", "guzman": "p2", "crandall": "p2"} {
			hits := f.search(t, Query{Text: "deal corrections " + who, Mode: mode})
			if len(hits) == 0 || hits[0].Item.ExternalID != want {
				t.Errorf("%s %q: %v, want %s first", mode, who, ids(hits), want)
			}
		}
	}
}

// Changing the embedder drops the old vectors and embeds everything again;
// search works throughout (keywords while the index is empty).
func TestVectorsReembedWhenTheEmbedderChanges(t *testing.T) {
	ctx := context.Background()
	st := openTest(t)
	var items []*store.Item
	topics := strings.Fields("apples boats candles dolphins engines forests gardens harbours islands jackets kettles lanterns meadows novels oranges pianos quarries rivers saddles tunnels")
	for i, topic := range topics {
		items = append(items, mail(fmt.Sprintf("m%d", i), fmt.Sprintf("t%d", i), berlinDay(t, 2026, 3, 2, 9).Add(time.Duration(i)*time.Hour),
			"anna@example.com", "Topic "+topic, "Body about "+topic+" and the gas market."))
	}
	if _, err := st.UpsertItems(ctx, items, store.UpsertOptions{}); err != nil {
		t.Fatal(err)
	}
	dims := func() map[int]int {
		rows, err := st.DB().Query(`SELECT length(vector) - 4, COUNT(*) FROM item_vectors GROUP BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[int]int{}
		for rows.Next() {
			var d, n int
			if err := rows.Scan(&d, &n); err != nil {
				t.Fatal(err)
			}
			out[d] = n
		}
		return out
	}
	first := NewVectors(st, embedder.NewBuiltin(0), VectorOptions{})
	if err := first.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if d := dims(); d[embedder.DefaultDimension] != 20 || len(d) != 1 {
		t.Fatalf("vectors after the first embedding: %v", d)
	}

	second := NewVectors(st, embedder.NewBuiltin(64), VectorOptions{BatchSize: 8})
	// Before it loads, search answers by keywords.
	if hits, err := New(st, second, nil).Search(ctx, Query{Text: "harbours"}); err != nil || len(hits) == 0 {
		t.Fatalf("search while loading: %v, %v", hits, err)
	}
	if err := second.prepare(ctx); err != nil {
		t.Fatal(err)
	}
	if st := second.Status(); st.State != VectorsReindexing || st.Pending != 20 || st.Vectors != 0 {
		t.Fatalf("status after the switch: %+v", st)
	}
	if d := dims(); len(d) != 0 {
		t.Fatalf("old vectors kept after the switch: %v", d)
	}
	if err := second.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if st := second.Status(); st.State != VectorsReady || st.Pending != 0 || st.Vectors != 20 {
		t.Fatalf("status after re-embedding: %+v", st)
	}
	if d := dims(); d[64] != 20 || len(d) != 1 {
		t.Fatalf("vectors after re-embedding: %v", d)
	}
	hits, err := New(st, second, nil).Search(ctx, Query{Text: "harbour", Mode: ModeVector, Limit: 1})
	if err != nil || len(hits) != 1 || hits[0].Item.ExternalID != "m7" { // harbours
		t.Fatalf("vector search after re-embedding: %v, %v", hits, err)
	}
	// The same embedder again changes nothing.
	third := NewVectors(st, embedder.NewBuiltin(64), VectorOptions{})
	if err := third.prepare(ctx); err != nil {
		t.Fatal(err)
	}
	if st := third.Status(); st.State != VectorsReady || st.Pending != 0 || st.Vectors != 20 {
		t.Fatalf("reopening with the same embedder: %+v", st)
	}
}

// Int8 vectors keep every dimension within half a step.
func TestEncodeWideRoundTrip(t *testing.T) {
	v := make([]float32, embedder.WideDimension)
	for i := range v {
		v[i] = float32(math.Sin(float64(i)*1.7)) * float32(i%7)
	}
	embedder.Normalize(v)
	b := encodeInt8(v)
	scale := math.Float32frombits(binary.LittleEndian.Uint32(b))
	for i, x := range v {
		if got := float32(int8(b[4+i])) * scale; math.Abs(float64(got-x)) > float64(scale)/2*1.0001 {
			t.Fatalf("dimension %d: %v stored as %v (step %v)", i, x, got, scale)
		}
	}
	if d, ok := dotInt8(v, b); !ok || math.Abs(float64(d)-1) > 0.01 {
		t.Fatalf("self dot = %v, %v", d, ok)
	}
}

// Int4 chunk vectors keep every dimension within half a step, odd
// lengths included, and read back as the int8 ones stored before them.
func TestEncodeInt4RoundTrip(t *testing.T) {
	for _, n := range []int{embedder.WideDimension, 129} {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(math.Sin(float64(i)*1.7)) * float32(i%7)
		}
		embedder.Normalize(v)
		b := encodeInt4(v)
		if len(b) != 4+(n+1)/2 {
			t.Fatalf("%d dimensions stored in %d bytes", n, len(b))
		}
		scale := math.Float32frombits(binary.LittleEndian.Uint32(b))
		for i, x := range v {
			one := make([]float32, n)
			one[i] = 1
			got, ok := dotChunk(one, b)
			if !ok || math.Abs(float64(got-x)) > float64(scale)/2*1.0001 {
				t.Fatalf("%d dimensions: dimension %d: %v stored as %v (step %v)", n, i, x, got, scale)
			}
		}
		if d, ok := dotChunk(v, b); !ok || math.Abs(float64(d)-1) > 0.05 {
			t.Fatalf("%d dimensions: self dot = %v, %v", n, d, ok)
		}
		if d, ok := dotChunk(v, encodeInt8(v)); !ok || math.Abs(float64(d)-1) > 0.01 {
			t.Fatalf("%d dimensions: self dot of the int8 form = %v, %v", n, d, ok)
		}
	}
}

// A hybrid hit found only by meaning says so; one that holds a word of
// the query does not; a query with no words to look for marks nothing.
func TestSearchMarksHitsFoundByMeaningOnly(t *testing.T) {
	at := berlinDay(t, 2026, 3, 9, 9)
	f := newSearchFixture(t, []*store.Item{
		mail("blackout", "t1", at, "anna@example.com", "Grid", "Rolling blackouts again across California tonight."),
		mail("lunch", "t2", at, "bob@example.com", "Lunch", "Lunch with Anna about the budget on Friday."),
	})
	// Misspelt: no word matches, the character n-grams still do.
	hits := f.search(t, Query{Text: "blackoutz californa", Mode: ModeHybrid})
	if len(hits) == 0 || hits[0].Item.ExternalID != "blackout" || !hits[0].ByMeaning {
		t.Fatalf("misspelt query: %v (by meaning %v), want the blackout mail found by meaning", ids(hits), len(hits) > 0 && hits[0].ByMeaning)
	}
	hits = f.search(t, Query{Text: "blackouts in californa", Mode: ModeHybrid})
	if len(hits) == 0 || hits[0].Item.ExternalID != "blackout" || hits[0].ByMeaning {
		t.Fatalf("a query with one right word: %v, want the blackout mail marked as a word match", ids(hits))
	}
	for _, h := range f.search(t, Query{Text: "what about it", Mode: ModeHybrid}) {
		if h.ByMeaning {
			t.Errorf("%s marked by meaning for a query of stop words only", h.Item.ExternalID)
		}
	}
}
