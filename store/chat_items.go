package store

import (
	"context"
	"fmt"
	"time"
)

// Item queries the agent's tools need (a thread, a calendar range). They
// read the items table only.

// ThreadOf returns the items of one thread of a source, oldest first.
func (s *Store) ThreadOf(ctx context.Context, source, thread string, limit int) ([]*Item, error) {
	out, err := Collect(ctx, s.db, scanItem, `SELECT `+itemColumns+` FROM items WHERE source = ? AND thread = ? ORDER BY time, id LIMIT ?`, source, thread, limit)
	if err != nil {
		return nil, fmt.Errorf("store: thread %s/%s: %w", source, thread, err)
	}
	return out, nil
}

// ItemsBetween returns items of the given kinds (any kind if none) with
// from <= time < to, in time order.
func (s *Store) ItemsBetween(ctx context.Context, kinds []string, from, to time.Time, limit int) ([]*Item, error) {
	args := []any{Millis(from), Millis(to)}
	where := ""
	if len(kinds) > 0 {
		where = ` AND kind IN (` + Placeholders(len(kinds)) + `)`
		args = append(args, Args(kinds)...)
	}
	args = append(args, limit)
	out, err := Collect(ctx, s.db, scanItem, `SELECT `+itemColumns+` FROM items WHERE time >= ? AND time < ?`+where+`
		ORDER BY time, id LIMIT ?`, args...)
	if err != nil {
		return nil, fmt.Errorf("store: items between: %w", err)
	}
	return out, nil
}
