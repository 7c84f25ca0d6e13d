package store

import (
	"context"
	"database/sql"
	"errors"
	"testing"
)

// InTx commits what fn did when it returns nil and keeps none of it when
// it fails.
func TestInTxCommitsOrRollsBack(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	db := s.DB()
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (v TEXT)`); err != nil {
		t.Fatal(err)
	}
	insert := func(v string) func(*sql.Tx) error {
		return func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO t (v) VALUES (?)`, v)
			return err
		}
	}
	if err := InTx(ctx, db, insert("kept")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := InTx(ctx, db, func(tx *sql.Tx) error {
		if err := insert("lost")(tx); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("InTx = %v, want fn's error", err)
	}
	got, err := Collect(ctx, db, Value[string], `SELECT v FROM t ORDER BY rowid`)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != "kept" {
		t.Fatalf("rows = %q, want only the committed one", got)
	}
}
