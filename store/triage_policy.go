package store

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// Reads of the notification queue that the notification policy and the
// briefings need: how much was pushed today, and what was held for the
// next briefing.

// PushedSince counts notifications of the levels delivered at or after
// since, leaving out those whose key starts with one of skipPrefixes
// (briefings are asked for, they do not spend the budget).
func (s *Store) PushedSince(ctx context.Context, since time.Time, levels []string, skipPrefixes ...string) (int, error) {
	if len(levels) == 0 {
		return 0, nil
	}
	q := `SELECT COUNT(*) FROM notifications WHERE state = ? AND delivered >= ? AND level IN (` + placeholders(len(levels)) + `)`
	args := []any{NotificationDelivered, ms(since)}
	for _, l := range levels {
		args = append(args, l)
	}
	for _, p := range skipPrefixes {
		q += ` AND COALESCE(key, '') NOT LIKE ? ESCAPE '\'`
		args = append(args, likePrefix(p))
	}
	var n int
	if err := s.db.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("pushed notifications: %w", err)
	}
	return n, nil
}

// HeldSince returns held notifications of the levels with an id above
// afterID, oldest first: what a briefing gathers (the FYIs, and what the
// daily budget held back).
func (s *Store) HeldSince(ctx context.Context, levels []string, afterID int64, limit int) ([]*Notification, error) {
	if limit <= 0 {
		limit = 100
	}
	if len(levels) == 0 {
		return nil, nil
	}
	args := []any{NotificationHeld}
	for _, l := range levels {
		args = append(args, l)
	}
	args = append(args, afterID, limit)
	return s.queryNotifications(ctx, `SELECT `+notificationColumns+` FROM notifications
		WHERE state = ? AND level IN (`+placeholders(len(levels))+`) AND id > ? ORDER BY id LIMIT ?`, args...)
}

// likePrefix escapes a LIKE pattern for "starts with p".
func likePrefix(p string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(p) + "%"
}
