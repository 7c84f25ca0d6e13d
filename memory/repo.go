package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/omnibrain/omnibrain/store"
)

// repo is the memory tables (store migration 0014) over the store's handle.
type repo struct{ db *sql.DB }

const factColumns = `id, text, category, state, source, source_ref, source_text, pinned, created, updated, expires, COALESCE(superseded_by, 0), note`

func scanFact(sc store.Scanner) (*Fact, error) {
	var f Fact
	var cat, state string
	var pinned int
	var created, updated, expires int64
	if err := sc.Scan(&f.ID, &f.Text, &cat, &state, &f.Source, &f.SourceRef, &f.SourceText, &pinned, &created, &updated, &expires, &f.SupersededBy, &f.Note); err != nil {
		return nil, err
	}
	f.Category, f.State, f.Pinned = Category(cat), State(state), pinned != 0
	f.Created, f.Updated, f.Expires = store.FromMillis(created), store.FromMillis(updated), store.FromMillis(expires)
	return &f, nil
}

func (r repo) facts(ctx context.Context, states ...State) ([]*Fact, error) {
	q := `SELECT ` + factColumns + ` FROM memory_facts`
	args := []any{}
	if len(states) > 0 {
		q += ` WHERE state IN (` + store.Placeholders(len(states)) + `)`
		for _, s := range states {
			args = append(args, string(s))
		}
	}
	out, err := store.Collect(ctx, r.db, scanFact, q+` ORDER BY id`, args...)
	if err != nil {
		return nil, fmt.Errorf("memory: list facts: %w", err)
	}
	return out, nil
}

func (r repo) fact(ctx context.Context, id int64) (*Fact, error) {
	f, err := scanFact(r.db.QueryRowContext(ctx, `SELECT `+factColumns+` FROM memory_facts WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, Ref(id))
	}
	if err != nil {
		return nil, fmt.Errorf("memory: read %s: %w", Ref(id), err)
	}
	return f, nil
}

// execer is a transaction or the handle.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func insertFact(ctx context.Context, x execer, f *Fact) error {
	pinned := 0
	if f.Pinned {
		pinned = 1
	}
	q := `INSERT INTO memory_facts (text, category, state, source, source_ref, source_text, pinned, created, updated, expires, note) VALUES (?,?,?,?,?,?,?,?,?,?,?)`
	args := []any{f.Text, string(f.Category), string(f.State), f.Source, f.SourceRef, f.SourceText, pinned, store.Millis(f.Created), store.Millis(f.Updated), store.Millis(f.Expires), f.Note}
	if f.ID != 0 { // restoring a line of MEMORY.md whose fact the database lost
		q = `INSERT INTO memory_facts (id, text, category, state, source, source_ref, source_text, pinned, created, updated, expires, note) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)`
		args = append([]any{f.ID}, args...)
	}
	res, err := x.ExecContext(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("memory: add fact: %w", err)
	}
	if f.ID == 0 {
		f.ID, err = res.LastInsertId()
	}
	return err
}

// updateFact writes every mutable column of f.
func updateFact(ctx context.Context, x execer, f *Fact) error {
	pinned := 0
	if f.Pinned {
		pinned = 1
	}
	var sup any
	if f.SupersededBy != 0 {
		sup = f.SupersededBy
	}
	_, err := x.ExecContext(ctx, `UPDATE memory_facts SET text = ?, category = ?, state = ?, source = ?, source_ref = ?, source_text = ?, pinned = ?, updated = ?, expires = ?, superseded_by = ?, note = ? WHERE id = ?`,
		f.Text, string(f.Category), string(f.State), f.Source, f.SourceRef, f.SourceText, pinned, store.Millis(f.Updated), store.Millis(f.Expires), sup, f.Note, f.ID)
	if err != nil {
		return fmt.Errorf("memory: update %s: %w", f.Ref(), err)
	}
	return nil
}

// message is an owner's chat message waiting for extraction.
type message struct {
	ID      int64
	Session string
	Text    string
}

func (r repo) addMessage(ctx context.Context, session, text string, now time.Time) (pending int, err error) {
	if _, err := r.db.ExecContext(ctx, `INSERT INTO memory_messages (session, text, created) VALUES (?,?,?)`, session, text, store.Millis(now)); err != nil {
		return 0, fmt.Errorf("memory: record message: %w", err)
	}
	err = r.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM memory_messages`).Scan(&pending)
	return pending, err
}

func (r repo) pendingMessages(ctx context.Context, limit int) ([]message, error) {
	out, err := store.Collect(ctx, r.db, func(sc store.Scanner) (message, error) {
		var m message
		return m, sc.Scan(&m.ID, &m.Session, &m.Text)
	}, `SELECT id, session, text FROM memory_messages ORDER BY id LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("memory: messages: %w", err)
	}
	return out, nil
}

// markExtracted deletes the messages up to id: a message waits for
// extraction as long as its row exists, and its text is not kept past
// extraction (the chat session has it).
func markExtracted(ctx context.Context, x execer, through int64) error {
	_, err := x.ExecContext(ctx, `DELETE FROM memory_messages WHERE id <= ?`, through)
	if err != nil {
		return fmt.Errorf("memory: mark messages extracted: %w", err)
	}
	return nil
}
