package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Notification states.
const (
	NotificationQueued    = "queued"    // waiting to be delivered (maybe not before NotBefore)
	NotificationSending   = "sending"   // claimed by the dispatcher, being handed to the channel
	NotificationDelivered = "delivered" // reached the owner
	NotificationHeld      = "held"      // recorded, not pushed (silent, or kept for a briefing)
	NotificationBriefed   = "briefed"   // held, then shown in a briefing
	NotificationWithdrawn = "withdrawn" // no longer true before it went out (a cancelled meeting's prep)
	NotificationFailed    = "failed"    // the channel refused it for good; LastError says why
	NotificationRead      = "read"      // read and cleared by the owner while it waited (omnibrain notifications)
	NotificationDropped   = "dropped"   // pushed out of a full queue of waiting ones; LastError says why
)

// Notification is one row of the durable notification queue.
type Notification struct {
	ID         int64     `json:"id"`
	Key        string    `json:"key,omitempty"`
	Level      string    `json:"level"`
	Text       string    `json:"text"`
	ProposalID string    `json:"proposal_id,omitempty"`
	ItemID     int64     `json:"item_id,omitempty"`
	State      string    `json:"state"`
	NotBefore  time.Time `json:"not_before,omitzero"`
	Attempts   int       `json:"attempts,omitempty"`
	LastError  string    `json:"last_error,omitempty"`
	Created    time.Time `json:"created"`
	Delivered  time.Time `json:"delivered,omitzero"`
}

const notificationColumns = `id, COALESCE(key, ''), level, text, proposal_id, item_id, state, not_before, attempts, last_error, created, delivered`

func scanNotification(row Scanner) (*Notification, error) {
	var n Notification
	var notBefore, created, delivered int64
	if err := row.Scan(&n.ID, &n.Key, &n.Level, &n.Text, &n.ProposalID, &n.ItemID, &n.State, &notBefore, &n.Attempts, &n.LastError, &created, &delivered); err != nil {
		return nil, err
	}
	n.NotBefore, n.Created, n.Delivered = FromMillis(notBefore), FromMillis(created), FromMillis(delivered)
	return &n, nil
}

// EnqueueNotification adds n (state queued) unless a notification with
// the same non-empty key exists; it reports whether n was added and sets
// n.ID when it was.
func (s *Store) EnqueueNotification(ctx context.Context, n *Notification) (bool, error) {
	var key any
	if n.Key != "" {
		key = n.Key
	}
	now := s.now()
	res, err := s.db.ExecContext(ctx, `INSERT INTO notifications (key, level, text, proposal_id, item_id, state, not_before, created)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO NOTHING`,
		key, n.Level, n.Text, n.ProposalID, n.ItemID, NotificationQueued, Millis(n.NotBefore), Millis(now))
	if err != nil {
		return false, fmt.Errorf("enqueue notification: %w", err)
	}
	added, err := res.RowsAffected()
	if err != nil || added == 0 {
		return false, err
	}
	if n.ID, err = res.LastInsertId(); err != nil {
		return false, err
	}
	n.State, n.Created = NotificationQueued, now.UTC()
	return true, nil
}

// DueNotifications returns up to limit queued notifications whose time has
// come, oldest first.
func (s *Store) DueNotifications(ctx context.Context, now time.Time, limit int) ([]*Notification, error) {
	return s.queryNotifications(ctx, `SELECT `+notificationColumns+` FROM notifications
		WHERE state = ? AND not_before <= ? ORDER BY id LIMIT ?`, NotificationQueued, Millis(now), limit)
}

// Notifications lists notifications in a state (any state if empty), newest first.
func (s *Store) Notifications(ctx context.Context, state string, limit int) ([]*Notification, error) {
	if state == "" {
		return s.queryNotifications(ctx, `SELECT `+notificationColumns+` FROM notifications ORDER BY id DESC LIMIT ?`, limit)
	}
	return s.queryNotifications(ctx, `SELECT `+notificationColumns+` FROM notifications WHERE state = ? ORDER BY id DESC LIMIT ?`, state, limit)
}

func (s *Store) queryNotifications(ctx context.Context, q string, args ...any) ([]*Notification, error) {
	out, err := Collect(ctx, s.db, scanNotification, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read notifications: %w", err)
	}
	return out, nil
}

// NextNotificationTime is the earliest not_before of a queued notification
// that is not due yet at now; zero if there is none.
func (s *Store) NextNotificationTime(ctx context.Context, now time.Time) (time.Time, error) {
	var v sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT MIN(not_before) FROM notifications WHERE state = ? AND not_before > ?`, NotificationQueued, Millis(now)).Scan(&v)
	if err != nil {
		return time.Time{}, fmt.Errorf("next notification time: %w", err)
	}
	return nullMS(v), nil
}

// NotificationUpdate is what delivery learned about a notification.
type NotificationUpdate struct {
	// From is the state the notification must be in for the update to
	// apply: queued (the default), or sending for the dispatcher that
	// claimed it.
	From         string
	State        string
	NotBefore    time.Time // for queued: retry or defer until then
	Error        string
	CountAttempt bool
}

// UpdateNotification records a delivery outcome. Only a notification in
// u.From changes, so one delivered once is never put back, and one the
// dispatcher is sending is not also marked delivered by someone else.
func (s *Store) UpdateNotification(ctx context.Context, id int64, u NotificationUpdate) error {
	if u.From == "" {
		u.From = NotificationQueued
	}
	now := s.now()
	var delivered int64
	if u.State == NotificationDelivered {
		delivered = Millis(now)
	}
	attempts := 0
	if u.CountAttempt {
		attempts = 1
	}
	res, err := s.db.ExecContext(ctx, `UPDATE notifications SET state = ?, not_before = ?, last_error = ?, attempts = attempts + ?, delivered = ?
		WHERE id = ? AND state = ?`, u.State, Millis(u.NotBefore), u.Error, attempts, delivered, id, u.From)
	if err != nil {
		return fmt.Errorf("update notification %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("update notification %d: not %s: %w", id, u.From, ErrNotFound)
	}
	return nil
}

// ClaimNotification moves a queued notification to sending, for the one
// dispatcher about to hand it to the channel; false if it is no longer
// queued (delivered another way meanwhile).
func (s *Store) ClaimNotification(ctx context.Context, id int64) (bool, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE notifications SET state = ? WHERE id = ? AND state = ?`, NotificationSending, id, NotificationQueued)
	if err != nil {
		return false, fmt.Errorf("claim notification %d: %w", id, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// RequeueSending puts back notifications a dispatcher claimed but never
// settled (the daemon stopped mid-send) and returns how many. The channel
// may have shown them already: at least once is all a chat API allows.
func (s *Store) RequeueSending(ctx context.Context) (int64, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE notifications SET state = ? WHERE state = ?`, NotificationQueued, NotificationSending)
	if err != nil {
		return 0, fmt.Errorf("requeue notifications: %w", err)
	}
	return res.RowsAffected()
}

// CountNotifications returns the number of notifications in each state.
func (s *Store) CountNotifications(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	err := Each(ctx, s.db, func(r Scanner) error {
		var st string
		var n int64
		err := r.Scan(&st, &n)
		out[st] = n
		return err
	}, `SELECT state, COUNT(*) FROM notifications GROUP BY state`)
	if err != nil {
		return nil, fmt.Errorf("count notifications: %w", err)
	}
	return out, nil
}

// NotificationByKey returns the notification with key.
func (s *Store) NotificationByKey(ctx context.Context, key string) (*Notification, error) {
	n, err := scanNotification(s.db.QueryRowContext(ctx, `SELECT `+notificationColumns+` FROM notifications WHERE key = ?`, key))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("notification %q: %w", key, ErrNotFound)
	}
	return n, err
}

// ReleaseNotifications makes queued notifications deferred to a time in
// (after, through] due at after instead: the end of a quiet time came
// earlier than planned. Whatever still has to wait is deferred again by
// the policy when they come up. It returns how many it moved.
func (t *Tx) ReleaseNotifications(after, through time.Time) (int64, error) {
	res, err := t.Exec(`UPDATE notifications SET not_before = ? WHERE state = ? AND not_before > ? AND not_before <= ?`,
		Millis(after), NotificationQueued, Millis(after), Millis(through))
	if err != nil {
		return 0, fmt.Errorf("release notifications: %w", err)
	}
	return res.RowsAffected()
}

// MarkNotificationsRead marks waiting (queued) notifications read: those
// with ids, or every one when ids is empty. It returns how many it
// marked; one delivered meanwhile is left as it is.
func (s *Store) MarkNotificationsRead(ctx context.Context, ids []int64) (int64, error) {
	q := `UPDATE notifications SET state = ?, delivered = ? WHERE state = ?`
	args := []any{NotificationRead, Millis(s.now()), NotificationQueued}
	if len(ids) > 0 {
		q += ` AND id IN (` + Placeholders(len(ids)) + `)`
		args = append(args, Args(ids)...)
	}
	res, err := s.db.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, fmt.Errorf("mark notifications read: %w", err)
	}
	return res.RowsAffected()
}

// CapWaitingNotifications drops the oldest waiting (queued) notifications
// past the newest max, critical ones last, recording why, and returns how
// many it dropped.
func (s *Store) CapWaitingNotifications(ctx context.Context, max int, why string) (int64, error) {
	res, err := s.db.ExecContext(ctx, `UPDATE notifications SET state = ?, last_error = ? WHERE id IN (
		SELECT id FROM notifications WHERE state = ? ORDER BY level = 'critical' DESC, id DESC LIMIT -1 OFFSET ?)`,
		NotificationDropped, why, NotificationQueued, max)
	if err != nil {
		return 0, fmt.Errorf("cap notifications: %w", err)
	}
	return res.RowsAffected()
}
