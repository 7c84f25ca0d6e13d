package store

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// openTest opens a fresh store in a temporary directory.
func openTest(t testing.TB) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), FileName), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestOpenMigratesOnceAndIsPrivate(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sub", FileName)
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	v1, err := s.SchemaVersion(ctx)
	if err != nil || v1 == 0 {
		t.Fatalf("schema version = %d, %v; want > 0", v1, err)
	}
	s.Close()

	s, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	v2, _ := s.SchemaVersion(ctx)
	if v2 != v1 {
		t.Fatalf("schema version changed on reopen: %d -> %d", v1, v2)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("database mode = %o, want 600", fi.Mode().Perm())
	}
	if res, err := s.IntegrityCheck(ctx); err != nil || res != "ok" {
		t.Fatalf("integrity_check = %q, %v", res, err)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), FileName)
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().Exec("PRAGMA user_version = 9999"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := Open(ctx, path, Options{}); err == nil {
		t.Fatal("Open accepted a schema newer than the binary")
	}
}

func ftsMatches(t *testing.T, s *Store, q string) int {
	t.Helper()
	var n int
	if err := s.DB().QueryRow(`SELECT COUNT(*) FROM items_fts WHERE items_fts MATCH ?`, q).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestUpsertIsIdempotentAndKeepsFTSInStep(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	when := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	it := &Item{Source: "mbox", ExternalID: "m1", Kind: "email", Time: when, Title: "Quarterly numbers", Body: "the pipeline forecast", People: []string{"alice@example.com"}}

	tests := []struct {
		name          string
		mutate        func(*Item)
		event         bool
		wantCreated   bool
		wantChanged   bool
		wantForecast  int
		wantRevenue   int
		wantEventRows int
	}{
		{"insert", func(*Item) {}, true, true, false, 1, 0, 1},
		{"same content again", func(*Item) {}, true, false, false, 1, 0, 1},
		{"body changed", func(i *Item) { i.Body = "the revenue numbers" }, true, false, true, 0, 1, 2},
		{"changed without event", func(i *Item) { i.Body = "revenue and forecast" }, false, false, true, 1, 1, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cp := *it
			tc.mutate(&cp)
			*it = cp
			res, err := s.UpsertItems(ctx, []*Item{&cp}, UpsertOptions{Event: tc.event})
			if err != nil {
				t.Fatal(err)
			}
			if res[0].Created != tc.wantCreated || res[0].Changed != tc.wantChanged {
				t.Fatalf("result = %+v, want created=%v changed=%v", res[0], tc.wantCreated, tc.wantChanged)
			}
			if got := ftsMatches(t, s, "forecast"); got != tc.wantForecast {
				t.Errorf("fts forecast matches = %d, want %d", got, tc.wantForecast)
			}
			if got := ftsMatches(t, s, "revenue"); got != tc.wantRevenue {
				t.Errorf("fts revenue matches = %d, want %d", got, tc.wantRevenue)
			}
			var rows, fts, events int
			s.DB().QueryRow(`SELECT COUNT(*) FROM items`).Scan(&rows)
			s.DB().QueryRow(`SELECT COUNT(*) FROM items_fts`).Scan(&fts)
			s.DB().QueryRow(`SELECT COUNT(*) FROM item_events`).Scan(&events)
			if rows != 1 || fts != 1 {
				t.Errorf("items=%d fts rows=%d, want 1 and 1", rows, fts)
			}
			if events != tc.wantEventRows {
				t.Errorf("events = %d, want %d", events, tc.wantEventRows)
			}
		})
	}
	var check string
	if err := s.DB().QueryRow(`INSERT INTO items_fts(items_fts, rank) VALUES('integrity-check', 1)`).Err(); err != nil {
		t.Fatalf("fts integrity-check: %v", err)
	}
	_ = check
}

func TestUpsertRejectsIncompleteItems(t *testing.T) {
	s := openTest(t)
	for _, it := range []*Item{
		{ExternalID: "x", Time: time.Now()},
		{Source: "jsonl", Time: time.Now()},
		{Source: "jsonl", ExternalID: "x"},
	} {
		if _, err := s.UpsertItems(context.Background(), []*Item{it}, UpsertOptions{}); err == nil {
			t.Errorf("upsert of %+v succeeded", it)
		}
	}
}

func TestItemRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	in := &Item{Source: "gmail", ExternalID: "abc", Kind: "email", Thread: "t1", Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Title: "Hello", Body: "body", Quoted: "> old", Sender: "Bob@Example.com", People: []string{"bob@example.com"},
		Meta: map[string]any{"labels": []any{"INBOX"}}}
	if _, err := s.UpsertItems(ctx, []*Item{in}, UpsertOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := s.ItemByExternalID(ctx, "gmail", "abc")
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != in.ID || !got.Time.Equal(in.Time) || got.Sender != "bob@example.com" || got.Quoted != "> old" || got.Meta["labels"] == nil {
		t.Fatalf("round trip mismatch: %+v", got)
	}
	if _, err := s.ItemByExternalID(ctx, "gmail", "nope"); err == nil {
		t.Fatal("missing item found")
	}
	items, err := s.ItemsByID(ctx, []int64{999, in.ID})
	if err != nil || len(items) != 1 || items[0].ExternalID != "abc" {
		t.Fatalf("ItemsByID = %v, %v", items, err)
	}
}

func TestEventsAndCursorsAreDurablePositions(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	for i, id := range []string{"a", "b", "c"} {
		it := &Item{Source: "gmail", ExternalID: id, Time: time.Unix(int64(1000+i), 0)}
		if _, err := s.UpsertItems(ctx, []*Item{it}, UpsertOptions{Event: true}); err != nil {
			t.Fatal(err)
		}
	}
	evs, err := s.PendingEvents(ctx, "triage", 2)
	if err != nil || len(evs) != 2 {
		t.Fatalf("pending = %v, %v", evs, err)
	}
	if err := s.Tx(ctx, func(tx *Tx) error { return tx.AckEvents("triage", evs[1].ID) }); err != nil {
		t.Fatal(err)
	}
	// Acking an older position never moves the consumer back.
	if err := s.Tx(ctx, func(tx *Tx) error { return tx.AckEvents("triage", evs[0].ID) }); err != nil {
		t.Fatal(err)
	}
	rest, _ := s.PendingEvents(ctx, "triage", 10)
	if len(rest) != 1 {
		t.Fatalf("after ack: %d pending, want 1", len(rest))
	}
	other, _ := s.PendingEvents(ctx, "patterns", 10)
	if len(other) != 3 {
		t.Fatalf("independent consumer sees %d, want 3", len(other))
	}

	if c, _ := s.Cursor(ctx, "gmail"); c != "" {
		t.Fatalf("fresh cursor = %q", c)
	}
	if err := s.Tx(ctx, func(tx *Tx) error { return tx.SetCursor("gmail", "42") }); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.Cursor(ctx, "gmail"); c != "42" {
		t.Fatalf("cursor = %q, want 42", c)
	}
}

// A deleted item's id is never given to another: notifications, proposals
// and evidence that name it must not come to name a different item. The
// delete takes the item's search rows along and reports a missing item.
func TestDeletedItemIDsAreNeverReused(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	at := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	add := func(id string) int64 {
		t.Helper()
		res, err := s.UpsertItems(ctx, []*Item{{Source: "gmail", ExternalID: id, Kind: "email", Time: at, Title: "Subject " + id, Body: "body of " + id}}, UpsertOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return res[0].ID
	}
	del := func(id string) bool {
		t.Helper()
		var ok bool
		if err := s.Tx(ctx, func(tx *Tx) (err error) { ok, err = tx.DeleteItem("gmail", id); return err }); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	a, b := add("a"), add("b")
	if !del("b") || del("b") {
		t.Fatal("deleting b: want true once, then false")
	}
	if c := add("c"); c <= b {
		t.Errorf("new item got id %d after %d was deleted; ids must not be reused", c, b)
	}
	if !del("c") || !del("a") {
		t.Fatal("deleting c and a")
	}
	if d := add("d"); d <= b+1 || d == a {
		t.Errorf("new item got id %d in an emptied store; the ids before it were %d..%d", d, a, b+1)
	}
	var fts int
	if err := s.DB().QueryRow(`SELECT COUNT(*) FROM items_fts WHERE items_fts MATCH 'subject'`).Scan(&fts); err != nil || fts != 1 {
		t.Errorf("%d search rows for the one item left, %v", fts, err)
	}
}

// A path with the characters a URI gives meaning to opens that file.
func TestOpenPathWithURICharacters(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, name := range []string{"a#1", "a?b", "a%23"} {
		s, err := Open(ctx, filepath.Join(dir, name, FileName), Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.UpsertItems(ctx, []*Item{{Source: "t", ExternalID: name, Time: time.Unix(1, 0)}}, UpsertOptions{})
		s.Close()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, name, FileName)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); err == nil {
		t.Error(`the database went to "a"`)
	}
}

// Once commits stop, RunCheckpoints moves the write-ahead log into the
// database and leaves it empty; a reader still in the log only delays that.
func TestLogEmptiedOnceWritesStop(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	write := func(from int) {
		t.Helper()
		var items []*Item
		for i := from; i < from+250; i++ {
			items = append(items, &Item{Source: "jsonl", ExternalID: fmt.Sprint(i), Time: time.Unix(int64(i), 0), Title: "note", Body: strings.Repeat("words of a note ", 50)})
		}
		if _, err := s.UpsertItems(ctx, items, UpsertOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	walSize := func() int64 {
		t.Helper()
		fi, err := os.Stat(s.Path() + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	write(0)
	// A reader that began before the next writes holds the log: a query
	// read only halfway keeps its snapshot.
	reader, err := s.DB().QueryContext(ctx, "SELECT id FROM items")
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	if !reader.Next() {
		t.Fatalf("reader: no row: %v", reader.Err())
	}
	write(250)
	if n := walSize(); n < 100_000 {
		t.Fatalf("the log holds %d bytes after 500 items; want the writes in it", n)
	}

	attempts := make(chan bool, 16)
	s.afterTruncate = func(done bool) {
		select {
		case attempts <- done:
		default: // the test has stopped listening
		}
	}
	runCtx, cancel := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- s.RunCheckpoints(runCtx) }()
	defer func() { cancel(); <-stopped }()
	timeout := time.After(20 * time.Second)
	select {
	case done := <-attempts:
		if done {
			t.Fatal("the log was emptied while a reader was in it")
		}
	case <-timeout:
		t.Fatal("RunCheckpoints did not try to empty the log once the writes stopped")
	}
	if n := walSize(); n == 0 {
		t.Fatal("the log is empty while a reader is in it")
	}
	if err := reader.Close(); err != nil {
		t.Fatal(err)
	}
	for done := false; !done; {
		select {
		case done = <-attempts:
		case <-timeout:
			t.Fatal("RunCheckpoints did not empty the log after the reader ended")
		}
	}
	if n := walSize(); n != 0 {
		t.Errorf("the log holds %d bytes after RunCheckpoints emptied it, want 0", n)
	}
	if got, err := s.CountItems(ctx); err != nil || len(got) != 1 || got[0].Items != 500 {
		t.Errorf("after the checkpoint: %v, %v", got, err)
	}
}

// The full-text index merges segments eight at a time (migration 0024).
func TestFullTextIndexMergesEightSegments(t *testing.T) {
	s := openTest(t)
	var v int
	if err := s.DB().QueryRow(`SELECT v FROM items_fts_config WHERE k = 'automerge'`).Scan(&v); err != nil || v != 8 {
		t.Fatalf("automerge = %d, %v; want 8", v, err)
	}
}
