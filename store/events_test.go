package store

import (
	"context"
	"database/sql"
	"fmt"
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
	s := upgradeFrom(t, 11,
		`INSERT INTO items (source, external_id, kind, time, title, body, content_hash, created, updated) VALUES ('gmail', 'a', 'email', 0, 'a', '', 'a', 0, 0)`,
		`INSERT INTO item_events (id, item_id, kind, created) VALUES (1, 1, 'new', 0), (2, 1, 'updated', 0)`,
		`INSERT INTO consumers (name, last_event_id, updated) VALUES ('triage', 3, 0)`,
	)
	err := s.Tx(ctx, func(tx *Tx) error {
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

// upgradeFrom creates a database as an omnibrain at schema version left
// it, with the rows seed inserts, and opens it with this one (which
// migrates it). The store is closed with the test.
func upgradeFrom(t testing.TB, version int, seed ...string) *Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), FileName)
	db, err := sql.Open("sqlite3", "file:"+path+"?_foreign_keys=on")
	if err != nil {
		t.Fatal(err)
	}
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	var stmts []string
	for _, m := range ms {
		if m.version <= version {
			stmts = append(stmts, m.sql)
		}
	}
	stmts = append(stmts, fmt.Sprintf("PRAGMA user_version = %d", version))
	for _, q := range append(stmts, seed...) {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%.80s: %v", q, err)
		}
	}
	db.Close()
	s, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// A database from before the briefed state: held notifications up to the
// old high-water mark were shown and become briefed; a later one and a
// silent one stay held.
func TestUpgradeMarksShownNotificationsBriefed(t *testing.T) {
	ctx := context.Background()
	s := upgradeFrom(t, 12,
		`INSERT INTO notifications (id, key, level, state, created) VALUES (1, 'a', 'fyi', 'held', 0), (2, 'b', 'silent', 'held', 0), (3, 'c', 'fyi', 'held', 0)`,
		`INSERT INTO meta (key, value, updated) VALUES ('proactive.fyi_through', '2', 0)`,
	)
	want := map[string]string{"a": NotificationBriefed, "b": NotificationHeld, "c": NotificationHeld}
	for key, state := range want {
		n, err := s.NotificationByKey(ctx, key)
		if err != nil || n.State != state {
			t.Errorf("notification %s after the upgrade: %+v, %v; want %s", key, n, err, state)
		}
	}
	if v, _ := s.Meta(ctx, "proactive.fyi_through"); v != "" {
		t.Errorf("the old mark is still set: %q", v)
	}
}
