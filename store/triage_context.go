package store

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"
)

// Reads the proactive engine makes over items, mail counts and threads:
// context for meeting preps, statistics for briefings, and activity for
// pattern detection.

// ItemsWithPerson returns items of a kind within [since, until) that were
// sent by or involve one of the addresses, newest first.
func (s *Store) ItemsWithPerson(ctx context.Context, kind string, addrs []string, since, until time.Time, limit int) ([]*Item, error) {
	if len(addrs) == 0 {
		return nil, nil
	}
	if limit <= 0 {
		limit = 10
	}
	args := []any{kind, Millis(since), untilMS(until)}
	for _, a := range addrs {
		args = append(args, normAddr(a))
	}
	for _, a := range addrs {
		args = append(args, normAddr(a))
	}
	args = append(args, limit)
	out, err := Collect(ctx, s.db, scanItem, `SELECT `+itemColumns+` FROM items WHERE kind = ? AND time >= ? AND time < ?
		AND (sender IN (`+Placeholders(len(addrs))+`) OR EXISTS (SELECT 1 FROM json_each(items.people) j WHERE lower(j.value) IN (`+Placeholders(len(addrs))+`)))
		ORDER BY time DESC, id DESC LIMIT ?`, args...)
	if err != nil {
		return nil, fmt.Errorf("items with person: %w", err)
	}
	return out, nil
}

// OpenThreadsWith returns threads with one of the addresses as a
// participant that wait for an answer either way, most recent first.
func (s *Store) OpenThreadsWith(ctx context.Context, addrs []string, limit int) ([]*Thread, error) {
	if len(addrs) == 0 {
		return nil, nil
	}
	if limit <= 0 {
		limit = 10
	}
	args := make([]any, 0, len(addrs)+1)
	for _, a := range addrs {
		args = append(args, normAddr(a))
	}
	args = append(args, limit)
	out, err := Collect(ctx, s.db, scanThread, `SELECT `+threadColumns+` FROM threads WHERE (awaiting_reply OR owes_reply)
		AND thread IN (SELECT thread FROM thread_participants WHERE address IN (`+Placeholders(len(addrs))+`))
		ORDER BY last_time DESC LIMIT ?`, args...)
	if err != nil {
		return nil, fmt.Errorf("open threads with: %w", err)
	}
	return out, s.fillParticipants(ctx, out)
}

// MailStats are the owner's mail volumes and reply times over a period.
type MailStats struct {
	Inbound  int `json:"inbound"`
	Outbound int `json:"outbound"`
	Personal int `json:"personal"` // inbound, addressed to the owner, not bulk
	Bulk     int `json:"bulk"`
	// OwnerReplies and OwnerReplyMedian: how often and how fast the owner
	// answered; TheirReplies and TheirReplyMedian: the same for others.
	OwnerReplies     int           `json:"owner_replies"`
	OwnerReplyMedian time.Duration `json:"owner_reply_median"`
	TheirReplies     int           `json:"their_replies"`
	TheirReplyMedian time.Duration `json:"their_reply_median"`
	TopSenders       []SenderCount `json:"top_senders"`
}

// SenderCount is how many mails one sender sent.
type SenderCount struct {
	Sender string `json:"sender"`
	Mails  int    `json:"mails"`
}

// MailStatsBetween sums the mail counted into contacts and threads with
// time in [since, until).
func (s *Store) MailStatsBetween(ctx context.Context, since, until time.Time) (*MailStats, error) {
	var st MailStats
	err := s.db.QueryRowContext(ctx, `SELECT COALESCE(SUM(NOT outbound), 0), COALESCE(SUM(outbound), 0), COALESCE(SUM(personal), 0), COALESCE(SUM(bulk AND NOT outbound), 0)
		FROM mail_messages WHERE time >= ? AND time < ?`, Millis(since), untilMS(until)).Scan(&st.Inbound, &st.Outbound, &st.Personal, &st.Bulk)
	if err != nil {
		return nil, fmt.Errorf("mail stats: %w", err)
	}
	var own, theirs []int64
	err = Each(ctx, s.db, func(r Scanner) error {
		var dir string
		var v int64
		if err := r.Scan(&dir, &v); err != nil {
			return err
		}
		if dir == "owner" {
			own = append(own, v)
		} else {
			theirs = append(theirs, v)
		}
		return nil
	}, `SELECT r.direction, r.ms FROM reply_times r JOIN mail_messages m ON m.item_id = r.item_id
		WHERE m.time >= ? AND m.time < ?`, Millis(since), untilMS(until))
	if err != nil {
		return nil, fmt.Errorf("mail stats: %w", err)
	}
	st.OwnerReplies, st.OwnerReplyMedian = len(own), median(own)
	st.TheirReplies, st.TheirReplyMedian = len(theirs), median(theirs)
	st.TopSenders, err = Collect(ctx, s.db, func(r Scanner) (sc SenderCount, err error) {
		return sc, r.Scan(&sc.Sender, &sc.Mails)
	}, `SELECT sender, COUNT(*) FROM mail_messages WHERE NOT outbound AND time >= ? AND time < ? AND sender != ''
		GROUP BY sender ORDER BY COUNT(*) DESC, sender LIMIT 5`, Millis(since), untilMS(until))
	if err != nil {
		return nil, fmt.Errorf("mail stats: %w", err)
	}
	return &st, nil
}

// MailActivity is one counted mail as pattern detection sees it.
type MailActivity struct {
	ItemID   int64
	Sender   string
	Subject  string
	Time     time.Time
	Outbound bool
	Bulk     bool
	Labels   []string
	Thread   string
}

// MailActivitySince returns the counted mail with time at or after since,
// oldest first, at most limit rows.
func (s *Store) MailActivitySince(ctx context.Context, since time.Time, limit int) ([]MailActivity, error) {
	out, err := Collect(ctx, s.db, func(r Scanner) (a MailActivity, err error) {
		var t int64
		var labels string
		if err := r.Scan(&a.ItemID, &a.Sender, &a.Subject, &t, &a.Outbound, &a.Bulk, &labels, &a.Thread); err != nil {
			return a, err
		}
		a.Time = FromMillis(t)
		if err := json.Unmarshal([]byte(labels), &a.Labels); err != nil {
			a.Labels = nil // a label list that is not a list says nothing
		}
		return a, nil
	}, `SELECT m.item_id, m.sender, i.title, m.time, m.outbound, m.bulk, COALESCE(json_extract(i.meta, '$.labels'), '[]'), m.thread
		FROM mail_messages m JOIN items i ON i.id = m.item_id WHERE m.time >= ? ORDER BY m.time, m.item_id LIMIT ?`, Millis(since), limit)
	if err != nil {
		return nil, fmt.Errorf("mail activity: %w", err)
	}
	return out, nil
}

// NotificationsForItem lists the notifications about an item, oldest first.
func (s *Store) NotificationsForItem(ctx context.Context, itemID int64) ([]*Notification, error) {
	return s.queryNotifications(ctx, `SELECT `+notificationColumns+` FROM notifications WHERE item_id = ? ORDER BY id`, itemID)
}

// ReplySample is one reply: the replying mail and how long it took.
type ReplySample struct {
	ItemID int64
	Took   time.Duration
}

// ReplyTimesByContact returns the replies in one direction ("owner": the
// owner answering a contact; "contact": a contact answering the owner) by
// contact, for contacts with at least min of them, fastest first.
func (s *Store) ReplyTimesByContact(ctx context.Context, direction string, min int) (map[string][]ReplySample, error) {
	out := map[string][]ReplySample{}
	err := Each(ctx, s.db, func(row Scanner) error {
		var c string
		var r ReplySample
		var v int64
		if err := row.Scan(&c, &r.ItemID, &v); err != nil {
			return err
		}
		r.Took = time.Duration(v) * time.Millisecond
		out[c] = append(out[c], r)
		return nil
	}, `SELECT contact, item_id, ms FROM reply_times WHERE direction = ? ORDER BY contact, item_id`, direction)
	if err != nil {
		return nil, fmt.Errorf("reply times: %w", err)
	}
	for c, v := range out {
		if len(v) < min {
			delete(out, c)
			continue
		}
		sort.Slice(v, func(i, j int) bool { return v[i].Took < v[j].Took })
	}
	return out, nil
}
