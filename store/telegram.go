package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Meta keys of the Telegram bot's state.
const (
	metaTelegramOwner      = "telegram.owner_id"
	metaTelegramLastUpdate = "telegram.last_update_id"
	metaTelegramAwaiting   = "telegram.awaiting"
)

// TelegramMessage links a sent Telegram message to the proposal it shows
// and the payload hash it showed.
type TelegramMessage struct {
	ProposalID  string
	ChatID      int64
	MessageID   int64
	PayloadHash string
	Created     time.Time
}

// AddTelegramMessage records that a message shows a proposal.
func (s *Store) AddTelegramMessage(ctx context.Context, m TelegramMessage) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO telegram_messages (proposal_id, chat_id, message_id, payload_hash, created) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (chat_id, message_id) DO UPDATE SET proposal_id = excluded.proposal_id, payload_hash = excluded.payload_hash`,
		m.ProposalID, m.ChatID, m.MessageID, m.PayloadHash, ms(s.now()))
	if err != nil {
		return fmt.Errorf("record telegram message: %w", err)
	}
	return nil
}

// TelegramMessages returns the messages that show a proposal, oldest first.
func (s *Store) TelegramMessages(ctx context.Context, proposalID string) ([]TelegramMessage, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT proposal_id, chat_id, message_id, payload_hash, created FROM telegram_messages
		WHERE proposal_id = ? ORDER BY created, message_id`, proposalID)
	if err != nil {
		return nil, fmt.Errorf("read telegram messages: %w", err)
	}
	defer rows.Close()
	var out []TelegramMessage
	for rows.Next() {
		var m TelegramMessage
		var created int64
		if err := rows.Scan(&m.ProposalID, &m.ChatID, &m.MessageID, &m.PayloadHash, &created); err != nil {
			return nil, err
		}
		m.Created = fromMS(created)
		out = append(out, m)
	}
	return out, rows.Err()
}

// AddPairingCode stores the hash of a one-time pairing code.
func (s *Store) AddPairingCode(ctx context.Context, codeHash string, expires time.Time) error {
	now := s.now()
	return s.Tx(ctx, func(tx *Tx) error {
		if _, err := tx.Exec(`DELETE FROM telegram_pairing WHERE expires <= ?`, ms(now)); err != nil {
			return fmt.Errorf("prune pairing codes: %w", err)
		}
		if _, err := tx.Exec(`INSERT INTO telegram_pairing (code_hash, expires, created) VALUES (?, ?, ?)`, codeHash, ms(expires), ms(now)); err != nil {
			return fmt.Errorf("store pairing code: %w", err)
		}
		return nil
	})
}

// UsePairingCode consumes a code: it reports whether the hash belonged to
// an unexpired code, and, if so, binds ownerID in the same transaction so
// a code pairs exactly one user.
func (s *Store) UsePairingCode(ctx context.Context, codeHash string, ownerID int64) (bool, error) {
	ok := false
	err := s.Tx(ctx, func(tx *Tx) error {
		res, err := tx.Exec(`DELETE FROM telegram_pairing WHERE code_hash = ? AND expires > ?`, codeHash, ms(tx.now))
		if err != nil {
			return fmt.Errorf("use pairing code: %w", err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return nil
		}
		ok = true
		return tx.SetMeta(metaTelegramOwner, strconv.FormatInt(ownerID, 10))
	})
	return ok, err
}

// TelegramOwner returns the paired owner's user id (0 if none).
func (s *Store) TelegramOwner(ctx context.Context) (int64, error) {
	return s.metaInt(ctx, metaTelegramOwner)
}

// TelegramLastUpdate returns the id of the last Telegram update processed
// and when it was recorded (0 and the zero time if none).
func (s *Store) TelegramLastUpdate(ctx context.Context) (int64, time.Time, error) {
	var v string
	var at int64
	err := s.db.QueryRowContext(ctx, `SELECT value, updated FROM meta WHERE key = ?`, metaTelegramLastUpdate).Scan(&v, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, time.Time{}, nil
	}
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("read telegram update id: %w", err)
	}
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("read telegram update id %q: %w", v, err)
	}
	return id, fromMS(at), nil
}

// SetTelegramLastUpdate records the last processed update id. It may move
// backwards: Telegram picks ids at random after a week without updates.
func (s *Store) SetTelegramLastUpdate(ctx context.Context, id int64) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO meta (key, value, updated) VALUES (?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated = excluded.updated`,
		metaTelegramLastUpdate, strconv.FormatInt(id, 10), ms(s.now()))
	if err != nil {
		return fmt.Errorf("save telegram update id: %w", err)
	}
	return nil
}

// TelegramAwaiting returns what the bot waits for from the owner's next
// message (a JSON document the bot owns; "" if nothing).
func (s *Store) TelegramAwaiting(ctx context.Context) (string, error) {
	return s.Meta(ctx, metaTelegramAwaiting)
}

// SetTelegramAwaiting saves (or, with "", clears) what the bot waits for.
func (s *Store) SetTelegramAwaiting(ctx context.Context, v string) error {
	return s.Tx(ctx, func(tx *Tx) error { return tx.SetMeta(metaTelegramAwaiting, v) })
}

func (s *Store) metaInt(ctx context.Context, key string) (int64, error) {
	var v string
	err := s.db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && v == "") {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", key, err)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("read %s: %q is not a number: %w", key, v, err)
	}
	return n, nil
}
