package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// Thread is a conversation's state: volumes, timing and whose turn it is.
type Thread struct {
	Thread       string    `json:"thread"` // the items' thread key
	Subject      string    `json:"subject"`
	Participants []string  `json:"participants"`
	Messages     int       `json:"messages"`
	Inbound      int       `json:"inbound"`
	Outbound     int       `json:"outbound"`
	FirstTime    time.Time `json:"first_time"`
	LastTime     time.Time `json:"last_time"`
	LastInbound  time.Time `json:"last_inbound,omitzero"`
	LastOutbound time.Time `json:"last_outbound,omitzero"`
	LastItemID   int64     `json:"last_item_id"`
	LastSender   string    `json:"last_sender"`
	// AwaitingReply: the latest mail is the owner's, the others have not
	// answered. OwesReply: the latest mail is a personal one to the owner
	// (addressed to an owner address or in a thread the owner wrote in, not
	// bulk), which the owner has not answered.
	AwaitingReply bool `json:"awaiting_reply"`
	OwesReply     bool `json:"owes_reply"`
}

var subjectPrefix = regexp.MustCompile(`(?i)^\s*((re|fw|fwd|aw|wg|sv|tr|antw)\s*(\[\d+\])?\s*:\s*|\[[^\]]{1,40}\]\s*)+`)

// CleanSubject strips reply and forward prefixes ("Re:", "FW:", "AW:") and
// list tags from a subject.
func CleanSubject(s string) string {
	return strings.TrimSpace(subjectPrefix.ReplaceAllString(s, ""))
}

// countThreadMail adds a newly stored mail to its thread and recomputes
// the reply times it takes part in: its own (answering the mail before it)
// and that of the mail after it, which imports in any order may have
// stored first.
func (t *Tx) countThreadMail(thread, subject string, m mailRow, participants []string) error {
	var cur Thread
	var personal, bulk, lastOut bool
	err := t.QueryRow(`SELECT t.messages, t.inbound, t.outbound, t.first_time, t.last_time, t.last_inbound, t.last_outbound, t.last_item_id,
			t.last_sender, COALESCE(m.personal, 0), COALESCE(m.bulk, 0), COALESCE(m.outbound, 0), t.subject
		FROM threads t LEFT JOIN mail_messages m ON m.item_id = t.last_item_id WHERE t.thread = ?`, thread).
		Scan(&cur.Messages, &cur.Inbound, &cur.Outbound, (*msTime)(&cur.FirstTime), (*msTime)(&cur.LastTime), (*msTime)(&cur.LastInbound),
			(*msTime)(&cur.LastOutbound), &cur.LastItemID, &cur.LastSender, &personal, &bulk, &lastOut, &cur.Subject)
	exists := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("thread %s: %w", thread, err)
	}
	when := FromMillis(m.time)
	if !exists || when.Before(cur.FirstTime) {
		cur.Subject = CleanSubject(subject)
		cur.FirstTime = when
	}
	cur.Messages++
	if m.outbound {
		cur.Outbound++
		cur.LastOutbound = maxTime(cur.LastOutbound, when)
	} else {
		cur.Inbound++
		cur.LastInbound = maxTime(cur.LastInbound, when)
	}
	if !exists || !when.Before(cur.LastTime) {
		cur.LastTime, cur.LastItemID, cur.LastSender = when, m.itemID, m.sender
		personal, bulk, lastOut = m.personal, m.bulk, m.outbound
	}
	awaiting := lastOut
	owes := !lastOut && !bulk && (personal || cur.Outbound > 0)
	_, err = t.Exec(`INSERT INTO threads (thread, subject, messages, inbound, outbound, first_time, last_time, last_inbound, last_outbound, last_item_id, last_sender, awaiting_reply, owes_reply, updated)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (thread) DO UPDATE SET subject = excluded.subject, messages = excluded.messages, inbound = excluded.inbound,
			outbound = excluded.outbound, first_time = excluded.first_time, last_time = excluded.last_time,
			last_inbound = excluded.last_inbound, last_outbound = excluded.last_outbound, last_item_id = excluded.last_item_id,
			last_sender = excluded.last_sender, awaiting_reply = excluded.awaiting_reply, owes_reply = excluded.owes_reply, updated = excluded.updated`,
		thread, cur.Subject, cur.Messages, cur.Inbound, cur.Outbound, Millis(cur.FirstTime), Millis(cur.LastTime), Millis(cur.LastInbound), Millis(cur.LastOutbound),
		cur.LastItemID, cur.LastSender, awaiting, owes, Millis(t.now))
	if err != nil {
		return fmt.Errorf("thread %s: %w", thread, err)
	}
	args := make([]any, 0, 2*len(participants))
	for _, p := range participants {
		args = append(args, thread, p)
	}
	if err := t.ExecRows(`INSERT OR IGNORE INTO thread_participants (thread, address) VALUES %s`, 2, args); err != nil {
		return fmt.Errorf("thread %s: %w", thread, err)
	}

	if !exists {
		return nil // the thread's first mail answers nothing and nothing answers it yet
	}
	prev, err := t.neighbour(thread, m, false)
	if err != nil {
		return err
	}
	if err := t.setReplyTime(m, prev, true); err != nil {
		return err
	}
	if cur.LastItemID == m.itemID {
		return nil // the latest mail: nothing after it to re-pair
	}
	next, err := t.neighbour(thread, m, true)
	if err != nil || next == nil {
		return err
	}
	return t.setReplyTime(*next, &m, false)
}

// neighbour returns the counted mail just before (or after) m in its thread.
func (t *Tx) neighbour(thread string, m mailRow, after bool) (*mailRow, error) {
	q := `SELECT item_id, time, outbound, sender, recipients, personal, bulk FROM mail_messages
		WHERE thread = ? AND item_id != ? AND (time < ? OR (time = ? AND item_id < ?)) ORDER BY time DESC, item_id DESC LIMIT 1`
	if after {
		q = `SELECT item_id, time, outbound, sender, recipients, personal, bulk FROM mail_messages
		WHERE thread = ? AND item_id != ? AND (time > ? OR (time = ? AND item_id > ?)) ORDER BY time, item_id LIMIT 1`
	}
	var r mailRow
	err := t.QueryRow(q, thread, m.itemID, m.time, m.time, m.itemID).Scan(&r.itemID, &r.time, &r.outbound, &r.sender, &r.recipients, &r.personal, &r.bulk)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("thread %s: %w", thread, err)
	}
	return &r, nil
}

// setReplyTime records how long reply took to answer prev, or removes the
// record (unless reply is fresh: just stored) when reply does not answer it: no predecessor, the same
// direction, bulk mail on either side, too long after, or not between the
// same two people (a forward of a contact's mail to someone else is not an
// answer to the contact).
func (t *Tx) setReplyTime(reply mailRow, prev *mailRow, fresh bool) error {
	var contact, dir string
	switch {
	case prev == nil || prev.outbound == reply.outbound || prev.bulk || reply.bulk ||
		time.Duration(reply.time-prev.time)*time.Millisecond > maxReplyGap:
	case reply.outbound && reply.addressed(prev.sender):
		contact, dir = prev.sender, "owner" // the owner answered them
	case !reply.outbound && prev.addressed(reply.sender):
		contact, dir = reply.sender, "contact" // they answered the owner
	}
	if contact == "" {
		if fresh {
			return nil // a new mail has no record to remove
		}
		_, err := t.Exec(`DELETE FROM reply_times WHERE item_id = ?`, reply.itemID)
		return err
	}
	_, err := t.Exec(`INSERT INTO reply_times (item_id, contact, direction, ms) VALUES (?, ?, ?, ?)
		ON CONFLICT (item_id) DO UPDATE SET contact = excluded.contact, direction = excluded.direction, ms = excluded.ms`,
		reply.itemID, contact, dir, reply.time-prev.time)
	return err
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// msTime scans a unix-milliseconds column into a time.Time.
type msTime time.Time

func (m *msTime) Scan(v any) error {
	n, ok := v.(int64)
	if !ok {
		return fmt.Errorf("time column holds %T", v)
	}
	*m = msTime(FromMillis(n))
	return nil
}

const threadColumns = `thread, subject, messages, inbound, outbound, first_time, last_time, last_inbound, last_outbound, last_item_id, last_sender, awaiting_reply, owes_reply`

func scanThread(row Scanner) (*Thread, error) {
	var th Thread
	err := row.Scan(&th.Thread, &th.Subject, &th.Messages, &th.Inbound, &th.Outbound, (*msTime)(&th.FirstTime), (*msTime)(&th.LastTime),
		(*msTime)(&th.LastInbound), (*msTime)(&th.LastOutbound), &th.LastItemID, &th.LastSender, &th.AwaitingReply, &th.OwesReply)
	if err != nil {
		return nil, err
	}
	return &th, nil
}

// Thread returns one thread with its participants.
func (s *Store) Thread(ctx context.Context, thread string) (*Thread, error) {
	th, err := scanThread(s.db.QueryRowContext(ctx, `SELECT `+threadColumns+` FROM threads WHERE thread = ?`, thread))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("thread %s: %w", thread, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("thread %s: %w", thread, err)
	}
	if err := s.fillParticipants(ctx, []*Thread{th}); err != nil {
		return nil, err
	}
	return th, nil
}

// ThreadsAwaitingReply returns threads whose latest mail is the owner's and
// was sent before the cutoff (now minus N days): the owner is waiting for
// an answer. Oldest first.
func (s *Store) ThreadsAwaitingReply(ctx context.Context, before time.Time, limit int) ([]*Thread, error) {
	return s.threadsWhere(ctx, `awaiting_reply = 1 AND last_time < ?`, Millis(before), limit)
}

// ThreadsOwingReply returns threads whose latest mail is a personal one to
// the owner, received before the cutoff and not answered. Oldest first.
func (s *Store) ThreadsOwingReply(ctx context.Context, before time.Time, limit int) ([]*Thread, error) {
	return s.threadsWhere(ctx, `owes_reply = 1 AND last_time < ?`, Millis(before), limit)
}

func (s *Store) threadsWhere(ctx context.Context, where string, arg any, limit int) ([]*Thread, error) {
	if limit <= 0 {
		limit = 50
	}
	out, err := Collect(ctx, s.db, scanThread, `SELECT `+threadColumns+` FROM threads WHERE `+where+` ORDER BY last_time, thread LIMIT ?`, arg, limit)
	if err != nil {
		return nil, fmt.Errorf("threads: %w", err)
	}
	if err := s.fillParticipants(ctx, out); err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Store) fillParticipants(ctx context.Context, ths []*Thread) error {
	if len(ths) == 0 {
		return nil
	}
	byKey := make(map[string]*Thread, len(ths))
	args := make([]any, len(ths))
	for i, th := range ths {
		byKey[th.Thread] = th
		th.Participants = []string{}
		args[i] = th.Thread
	}
	err := Each(ctx, s.db, func(r Scanner) error {
		var thread, addr string
		if err := r.Scan(&thread, &addr); err != nil {
			return err
		}
		byKey[thread].Participants = append(byKey[thread].Participants, addr)
		return nil
	}, `SELECT thread, address FROM thread_participants WHERE thread IN (`+Placeholders(len(ths))+`) ORDER BY thread, address`, args...)
	if err != nil {
		return fmt.Errorf("thread participants: %w", err)
	}
	return nil
}
