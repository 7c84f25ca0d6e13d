package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ChatMessage is one turn of a chat session.
type ChatMessage struct {
	ID        int64
	Session   string
	Role      string // user, assistant
	Content   string
	RunID     string
	Citations json.RawMessage // the answer's cited items (JSON array), assistant turns
	Created   time.Time
}

// ChatSession is a conversation with the owner.
type ChatSession struct {
	ID      string
	Title   string
	Created time.Time
	Updated time.Time
}

// ChatSessionExists reports whether a session exists.
func (s *Store) ChatSessionExists(ctx context.Context, id string) (bool, error) {
	var one int
	err := s.db.QueryRowContext(ctx, `SELECT 1 FROM chat_sessions WHERE id = ?`, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("store: chat session %s: %w", id, err)
	}
	return true, nil
}

// AppendChatMessages adds turns to a session, creating the session (titled
// by its first message) if it does not exist, in one transaction.
func (s *Store) AppendChatMessages(ctx context.Context, session string, msgs ...ChatMessage) error {
	if session == "" {
		return errors.New("store: chat message without a session")
	}
	return s.Tx(ctx, func(tx *Tx) error {
		now := Millis(tx.now)
		title := ""
		if len(msgs) > 0 {
			title = msgs[0].Content
			if r := []rune(title); len(r) > 80 {
				title = string(r[:80]) + "…"
			}
		}
		if _, err := tx.Exec(`INSERT INTO chat_sessions (id, title, created, updated) VALUES (?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET updated = excluded.updated`, session, title, now, now); err != nil {
			return fmt.Errorf("store: chat session %s: %w", session, err)
		}
		for _, m := range msgs {
			cit := string(m.Citations)
			if cit == "" {
				cit = "[]"
			}
			if _, err := tx.Exec(`INSERT INTO chat_messages (session, role, content, run_id, citations, created) VALUES (?, ?, ?, ?, ?, ?)`,
				session, m.Role, m.Content, m.RunID, cit, now); err != nil {
				return fmt.Errorf("store: chat message: %w", err)
			}
		}
		return nil
	})
}

// ChatHistory returns the last limit messages of a session, oldest first.
func (s *Store) ChatHistory(ctx context.Context, session string, limit int) ([]ChatMessage, error) {
	out, err := Collect(ctx, s.db, func(r Scanner) (m ChatMessage, err error) {
		var cit string
		var created int64
		err = r.Scan(&m.ID, &m.Session, &m.Role, &m.Content, &m.RunID, &cit, &created)
		m.Citations, m.Created = json.RawMessage(cit), FromMillis(created)
		return m, err
	}, `SELECT id, session, role, content, run_id, citations, created FROM
		(SELECT * FROM chat_messages WHERE session = ? ORDER BY id DESC LIMIT ?) ORDER BY id`, session, limit)
	if err != nil {
		return nil, fmt.Errorf("store: chat history %s: %w", session, err)
	}
	return out, nil
}

// ChatSessions lists sessions, most recently used first.
func (s *Store) ChatSessions(ctx context.Context, limit int) ([]ChatSession, error) {
	out, err := Collect(ctx, s.db, func(r Scanner) (c ChatSession, err error) {
		var created, updated int64
		err = r.Scan(&c.ID, &c.Title, &created, &updated)
		c.Created, c.Updated = FromMillis(created), FromMillis(updated)
		return c, err
	}, `SELECT id, title, created, updated FROM chat_sessions ORDER BY updated DESC, id LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("store: chat sessions: %w", err)
	}
	return out, nil
}
