package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// Scanner is one row being read: a *sql.Row or the current row of *sql.Rows.
type Scanner interface{ Scan(dest ...any) error }

// Querier runs a query: the store's *sql.DB, a *sql.Tx, or a Tx.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// rowQuerier is the pool or one connection, asked for a single row.
type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Each runs query and calls fn for every row, stopping at the first error.
func Each(ctx context.Context, q Querier, fn func(Scanner) error, query string, args ...any) error {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Collect runs query and returns every row as read by scan.
func Collect[T any](ctx context.Context, q Querier, scan func(Scanner) (T, error), query string, args ...any) ([]T, error) {
	var out []T
	err := Each(ctx, q, func(r Scanner) error {
		v, err := scan(r)
		if err == nil {
			out = append(out, v)
		}
		return err
	}, query, args...)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// InTx runs fn in one write transaction on db, committing when fn
// returns nil and rolling back otherwise. Packages that keep their own
// tables on the store's handle (memory, telegram) use it.
func InTx(ctx context.Context, db *sql.DB, fn func(*sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: begin: %w", err)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: commit: %w", err)
	}
	return nil
}

// Value reads a row of one column; Collect(ctx, db, Value[int64], …)
// lists ids.
func Value[T any](r Scanner) (T, error) {
	var v T
	err := r.Scan(&v)
	return v, err
}

// MaxVariables keeps multi-row statements under SQLite's limit on bound
// variables however many rows a caller has.
const MaxVariables = 500

// Placeholders is n comma-separated "?" for an IN (…) list.
func Placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

// Args turns values into query arguments.
func Args[T any](vs []T) []any {
	out := make([]any, len(vs))
	for i, v := range vs {
		out[i] = v
	}
	return out
}
