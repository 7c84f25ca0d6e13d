package store

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// fourKBDatabase makes a database as SQLite's defaults make them, 4 KB
// pages, in WAL mode, before omnibrain has opened it.
func fourKBDatabase(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), FileName)
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("PRAGMA page_size = 4096; PRAGMA journal_mode = WAL; CREATE TABLE before_omnibrain (x)"); err != nil {
		t.Fatal(err)
	}
	return path
}

// A new database is created with pageSize pages. One created with
// SQLite's default keeps its 4 KB pages (changing them rewrites the whole
// file), and both leave the same bytes of log to RunCheckpoints.
func TestPageSize(t *testing.T) {
	ctx := context.Background()
	old := fourKBDatabase(t)
	tests := []struct {
		name, path string
		want       int
	}{
		{"new", filepath.Join(t.TempDir(), FileName), pageSize},
		{"created with 4 KB pages", old, 4096},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(ctx, tc.path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var size, auto int
			if err := s.DB().QueryRowContext(ctx, "PRAGMA page_size").Scan(&size); err != nil || size != tc.want {
				t.Errorf("page_size = %d, %v; want %d", size, err, tc.want)
			}
			if err := s.DB().QueryRowContext(ctx, "PRAGMA wal_autocheckpoint").Scan(&auto); err != nil || auto != walAutoCheckpoint/tc.want {
				t.Errorf("wal_autocheckpoint = %d pages, %v; want %d", auto, err, walAutoCheckpoint/tc.want)
			}
		})
	}
}

// Connections leave the write-ahead log to RunCheckpoints up to
// walAutoCheckpoint bytes; RunCheckpoints copies it back after commits.
func TestCheckpointsRunBesideTheWriters(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	var auto int
	if err := s.DB().QueryRowContext(ctx, "PRAGMA wal_autocheckpoint").Scan(&auto); err != nil || auto != walAutoCheckpoint/pageSize {
		t.Fatalf("wal_autocheckpoint = %d, %v; want %d", auto, err, walAutoCheckpoint/pageSize)
	}
	if done, err := s.truncateLog(ctx); err != nil || !done {
		t.Fatalf("truncateLog = %v, %v", done, err)
	}
	size := func() int64 {
		t.Helper()
		fi, err := os.Stat(s.path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	before := size()
	at := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	for b := range 5 {
		var items []*Item
		for i := range 200 {
			items = append(items, &Item{Source: "mail", ExternalID: fmt.Sprint(b, "-", i), Time: at, Title: "Quarterly numbers",
				Body: fmt.Sprintf("Mail %d of batch %d: the forecast, the budget and the review before Friday.", i, b)})
		}
		if _, err := s.UpsertItems(ctx, items, UpsertOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if got := size(); got != before {
		t.Fatalf("the database file grew from %d to %d bytes without a checkpoint: SQLite checkpointed in the commit", before, got)
	}

	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- s.RunCheckpoints(runCtx) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(20 * time.Second)
	for size() == before {
		if time.Now().After(deadline) {
			t.Fatal("RunCheckpoints did not copy the log back into the database")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
