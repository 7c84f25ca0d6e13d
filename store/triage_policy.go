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
	q := `SELECT COUNT(*) FROM notifications WHERE state = ? AND delivered >= ? AND level IN (` + Placeholders(len(levels)) + `)`
	args := []any{NotificationDelivered, Millis(since)}
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

// HeldForBriefing returns held notifications of the levels that no
// briefing has shown yet, oldest first: what a briefing gathers (the FYIs,
// and what the daily budget held back, whenever that happened).
func (s *Store) HeldForBriefing(ctx context.Context, levels []string, limit int) ([]*Notification, error) {
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
	args = append(args, limit)
	return s.queryNotifications(ctx, `SELECT `+notificationColumns+` FROM notifications
		WHERE state = ? AND level IN (`+Placeholders(len(levels))+`) ORDER BY id LIMIT ?`, args...)
}

// MarkBriefed records that a briefing showed these held notifications, so
// the next one does not show them again.
func (t *Tx) MarkBriefed(ids []int64) error {
	for _, id := range ids {
		if _, err := t.Exec(`UPDATE notifications SET state = ? WHERE id = ? AND state = ?`, NotificationBriefed, id, NotificationHeld); err != nil {
			return fmt.Errorf("mark notification %d briefed: %w", id, err)
		}
	}
	return nil
}

// WithdrawQueued withdraws the notifications still waiting to be sent
// whose key starts with prefix, except the one keyed keep: what they say
// stopped being true before they went out. It returns how many.
func (s *Store) WithdrawQueued(ctx context.Context, prefix, keep string) (int64, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE notifications SET state = ? WHERE state = ? AND key LIKE ? ESCAPE '\' AND key != ?`,
		NotificationWithdrawn, NotificationQueued, likePrefix(prefix), keep)
	if err != nil {
		return 0, fmt.Errorf("withdraw notifications %s: %w", prefix, err)
	}
	return res.RowsAffected()
}

// likePrefix escapes a LIKE pattern for "starts with p".
func likePrefix(p string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(p) + "%"
}
