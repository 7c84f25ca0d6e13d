package store

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"
)

// A database from before event ids were AUTOINCREMENT, in the state that
// bug left behind: the consumer acknowledged event 3, whose item was then
// deleted. After the upgrade the next event gets id 4, which the consumer
// still reads, not a reused 3.
func TestUpgradeNeverReusesAcknowledgedEventIDs(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), FileName)
	db, err := sql.Open("sqlite3", "file:"+path+"?_foreign_keys=on")
	if err != nil {
		t.Fatal(err)
	}
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.version <= 11 {
			if _, err := db.Exec(m.sql); err != nil {
				t.Fatalf("%s: %v", m.name, err)
			}
		}
	}
	for _, q := range []string{
		`PRAGMA user_version = 11`,
		`INSERT INTO items (source, external_id, kind, time, title, body, content_hash, created, updated) VALUES ('gmail', 'a', 'email', 0, 'a', '', 'a', 0, 0)`,
		`INSERT INTO item_events (id, item_id, kind, created) VALUES (1, 1, 'new', 0), (2, 1, 'updated', 0)`,
		`INSERT INTO consumers (name, last_event_id, updated) VALUES ('triage', 3, 0)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()

	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.Tx(ctx, func(tx *Tx) error {
		_, err := tx.UpsertItem(&Item{Source: "gmail", ExternalID: "b", Kind: "email", Time: time.Unix(1, 0), Title: "b"}, UpsertOptions{Event: true})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := s.PendingEvents(ctx, "triage", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || evs[0].ID != 4 {
		t.Fatalf("pending events after the upgrade: %+v; want the new mail's event, id 4", evs)
	}
}
