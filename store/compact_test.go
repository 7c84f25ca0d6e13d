package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// oldHome makes a database as omnibrain made them before it chose its
// page size (4 KB pages), with items of which three in four are then
// deleted.
func oldHome(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	path := fourKBDatabase(t)
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	var items []*Item
	for i := range 1200 {
		items = append(items, &Item{Source: "mail", ExternalID: fmt.Sprint("m", i), Time: at.Add(time.Duration(i) * time.Minute),
			Title: fmt.Sprint("Quarterly numbers ", i), Body: strings.Repeat(fmt.Sprintf("Mail %d: the forecast, the budget and the review before Friday. ", i), 150)})
	}
	if _, err := s.UpsertItems(ctx, items, UpsertOptions{}); err != nil {
		t.Fatal(err)
	}
	err = s.Tx(ctx, func(tx *Tx) error {
		for i := range 1200 {
			if i%4 == 0 {
				continue
			}
			if _, err := tx.DeleteItem("mail", fmt.Sprint("m", i)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// contents is what a compaction must keep: every item's id and text, and
// what the full-text index finds.
func contents(t *testing.T, s *Store) []string {
	t.Helper()
	ctx := context.Background()
	rows, err := Collect(ctx, s.DB(), func(r Scanner) (string, error) {
		var id, title, body string
		err := r.Scan(&id, &title, &body)
		return id + "|" + title + "|" + body, err
	}, "SELECT external_id, title, body FROM items ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	found, err := Collect(ctx, s.DB(), Value[int64], "SELECT rowid FROM items_fts WHERE items_fts MATCH 'forecast' ORDER BY rowid")
	if err != nil {
		t.Fatal(err)
	}
	return append(rows, fmt.Sprint("fts:", found))
}

// inWAL reads from the file's header whether the database is in WAL mode,
// without opening it (Open would switch it to WAL).
func inWAL(t *testing.T, path string) bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	header := make([]byte, 20)
	if _, err := f.ReadAt(header, 0); err != nil {
		t.Fatal(err)
	}
	return header[18] == 2 && header[19] == 2 // file format 2: WAL
}

func pragma(t *testing.T, s *Store, name string) string {
	t.Helper()
	var v string
	if err := s.DB().QueryRow("PRAGMA " + name).Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestCompactGivesBackFreePagesAndTheNewPageSize(t *testing.T) {
	ctx := context.Background()
	path := oldHome(t)
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	before := contents(t, s)
	s.Close()
	if len(before) != 301 {
		t.Fatalf("the old home holds %d items, want 300", len(before)-1)
	}

	c, err := Compact(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if c.PageBefore != 4096 || c.PageAfter != pageSize {
		t.Errorf("page size %d -> %d, want 4096 -> %d", c.PageBefore, c.PageAfter, pageSize)
	}
	if c.FreeBefore == 0 || c.BytesAfter >= c.BytesBefore {
		t.Errorf("compaction of a home with deleted items: %d bytes free before, %d -> %d bytes", c.FreeBefore, c.BytesBefore, c.BytesAfter)
	}
	if !inWAL(t, path) {
		t.Error("the compacted database is not in WAL mode")
	}

	s, err = Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if after := contents(t, s); !slices.Equal(after, before) {
		t.Errorf("the compacted database holds other items or finds other ones (%d rows, was %d)", len(after), len(before))
	}
	for name, want := range map[string]string{"page_size": fmt.Sprint(pageSize), "quick_check": "ok", "freelist_count": "0"} {
		if got := pragma(t, s, name); got != want {
			t.Errorf("PRAGMA %s = %s after compacting, want %s", name, got, want)
		}
	}
	if _, err := s.DB().Exec("INSERT INTO items_fts (items_fts) VALUES ('integrity-check')"); err != nil {
		t.Errorf("full-text index after compacting: %v", err)
	}
}

// A database another connection has open is left as it was.
func TestCompactRefusesADatabaseInUse(t *testing.T) {
	ctx := context.Background()
	path := oldHome(t)
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	before := contents(t, s) // leaves the store's connection open

	_, err = Compact(ctx, path)
	if !errors.Is(err, ErrInUse) {
		t.Fatalf("Compact of a database in use = %v, want ErrInUse", err)
	}
	if got := pragma(t, s, "page_size"); got != "4096" {
		t.Errorf("page size %s after a refused compaction", got)
	}
	if got := pragma(t, s, "journal_mode"); got != "wal" {
		t.Errorf("journal mode %s after a refused compaction", got)
	}
	if after := contents(t, s); !slices.Equal(after, before) {
		t.Error("a refused compaction changed the items")
	}
}

func TestWorthCompacting(t *testing.T) {
	const mb = 1 << 20
	tests := []struct {
		name string
		sp   Space
		want bool
	}{
		{"new and full", Space{PageSize: pageSize, Pages: 4096 * mb / pageSize}, false},
		{"a quarter free", Space{PageSize: pageSize, Pages: 400 * mb / pageSize, FreePages: 100 * mb / pageSize}, true},
		{"a tenth free", Space{PageSize: pageSize, Pages: 1000 * mb / pageSize, FreePages: 100 * mb / pageSize}, false},
		{"half of a small file free", Space{PageSize: pageSize, Pages: 40 * mb / pageSize, FreePages: 20 * mb / pageSize}, false},
		{"old pages, large", Space{PageSize: 4096, Pages: 500 * mb / 4096}, true},
		{"old pages, small", Space{PageSize: 4096, Pages: 10 * mb / 4096}, false},
	}
	for _, tc := range tests {
		if got := tc.sp.WorthCompacting(); (got != "") != tc.want {
			t.Errorf("%s: WorthCompacting() = %q, want a reason: %v", tc.name, got, tc.want)
		}
	}
}

// A compaction cancelled at any point leaves either the old database or
// the compacted one, whole and in WAL mode.
func TestCompactCancelledLeavesAWholeDatabase(t *testing.T) {
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	tests := []struct {
		name string
		// at reports, when polled, whether the moment to cancel has come.
		at func(path string) func() bool
	}{
		{"leaving WAL mode", func(path string) func() bool {
			// The log appears when Compact opens the database and goes
			// when it leaves WAL mode, just before the VACUUM.
			seen := false
			return func() bool {
				if exists(path + "-wal") {
					seen = true
					return false
				}
				return seen
			}
		}},
		{"a rollback journal appears", func(path string) func() bool {
			// While leaving WAL mode, and when VACUUM writes its copy back.
			return func() bool { return exists(path + "-journal") }
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := oldHome(t)
			s, err := Open(context.Background(), path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			before := contents(t, s)
			s.Close()

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			polled := make(chan struct{})
			go func() {
				defer close(polled)
				now := tc.at(path)
				for ctx.Err() == nil {
					if now() {
						cancel()
						return
					}
					runtime.Gosched()
				}
			}()
			c, err := Compact(ctx, path)
			cancel()
			<-polled
			want := pageSize
			if err != nil {
				if !errors.Is(err, context.Canceled) {
					t.Fatalf("Compact: %v", err)
				}
				want = 4096
			}
			t.Logf("cancelled compaction: took %v, %v", c.Took, err)

			if !inWAL(t, path) {
				t.Error("a cancelled compaction left the database out of WAL mode")
			}
			s, err = Open(context.Background(), path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for name, v := range map[string]string{"page_size": fmt.Sprint(want), "quick_check": "ok"} {
				if got := pragma(t, s, name); got != v {
					t.Errorf("PRAGMA %s = %s after a cancelled compaction, want %s", name, got, v)
				}
			}
			if after := contents(t, s); !slices.Equal(after, before) {
				t.Error("a cancelled compaction changed the items")
			}
		})
	}
}
