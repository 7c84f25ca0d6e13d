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

// ExecRows writes every row once, however many statements the limit on
// variables splits them into.
func TestExecRows(t *testing.T) {
	s := openTest(t)
	ctx := context.Background()
	// Rows of one value are an IN list ("?, ?"), read here from seq.
	if _, err := s.DB().ExecContext(ctx, `CREATE TABLE r (a INTEGER, b INTEGER, c INTEGER);
		CREATE TABLE seq (v INTEGER PRIMARY KEY);
		WITH RECURSIVE n(v) AS (SELECT 0 UNION ALL SELECT v + 1 FROM n WHERE v < 10000) INSERT INTO seq SELECT v FROM n`); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ width, rows int }{
		{1, 0}, {1, 1}, {1, MaxVariables}, {1, MaxVariables + 1},
		{2, MaxVariables/2 - 1}, {2, MaxVariables / 2}, {2, MaxVariables/2 + 1},
		{3, 3*(MaxVariables/3) + 7},
	} {
		if _, err := s.DB().ExecContext(ctx, `DELETE FROM r`); err != nil {
			t.Fatal(err)
		}
		query := []string{
			`INSERT INTO r (a) SELECT v FROM seq WHERE v IN (%s)`,
			`INSERT INTO r (a, b) VALUES %s`,
			`INSERT INTO r (a, b, c) VALUES %s`,
		}[tc.width-1]
		var args []any
		for i := range tc.rows {
			for j := range tc.width {
				args = append(args, i*10+j)
			}
		}
		err := s.Tx(ctx, func(tx *Tx) error {
			return tx.ExecRows(query, tc.width, args)
		})
		if err != nil {
			t.Fatalf("%d rows of %d: %v", tc.rows, tc.width, err)
		}
		var n, distinct, sum int
		if err := s.DB().QueryRowContext(ctx, `SELECT COUNT(*), COUNT(DISTINCT a), COALESCE(SUM(a + COALESCE(b, 0) + COALESCE(c, 0)), 0) FROM r`).Scan(&n, &distinct, &sum); err != nil {
			t.Fatal(err)
		}
		want := 0
		for _, v := range args {
			want += v.(int)
		}
		if n != tc.rows || distinct != tc.rows || sum != want {
			t.Errorf("%d rows of %d values: stored %d rows (%d distinct), sum %d; want %d rows, sum %d", tc.rows, tc.width, n, distinct, sum, tc.rows, want)
		}
	}
}
