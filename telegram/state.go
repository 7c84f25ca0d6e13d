package telegram

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/store"
)

// state is the bot's own persistent state in the omnibrain database (the
// schema is in the store's migrations): one-time pairing codes, the paired
// owner, the last update processed, what the bot waits for from the
// owner's next message, and which messages show which proposal.
type state struct {
	db  *sql.DB
	now func() time.Time
}

// Keys of the bot's state in the meta table.
const (
	metaOwner      = "telegram.owner_id"
	metaLastUpdate = "telegram.last_update_id"
	metaAwaiting   = "telegram.awaiting"
)

// shownMessage links a sent Telegram message to the proposal it shows and
// the payload hash it showed.
type shownMessage struct {
	ProposalID  string
	ChatID      int64
	MessageID   int64
	PayloadHash string
}

// addMessage records that a message shows a proposal.
func (s state) addMessage(ctx context.Context, m shownMessage) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO telegram_messages (proposal_id, chat_id, message_id, payload_hash, created) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (chat_id, message_id) DO UPDATE SET proposal_id = excluded.proposal_id, payload_hash = excluded.payload_hash`,
		m.ProposalID, m.ChatID, m.MessageID, m.PayloadHash, store.Millis(s.now()))
	if err != nil {
		return fmt.Errorf("record telegram message: %w", err)
	}
	return nil
}

// messages returns the messages that show a proposal, oldest first.
func (s state) messages(ctx context.Context, proposalID string) ([]shownMessage, error) {
	out, err := store.Collect(ctx, s.db, func(r store.Scanner) (shownMessage, error) {
		var m shownMessage
		err := r.Scan(&m.ProposalID, &m.ChatID, &m.MessageID, &m.PayloadHash)
		return m, err
	}, `SELECT proposal_id, chat_id, message_id, payload_hash FROM telegram_messages
		WHERE proposal_id = ? ORDER BY created, message_id`, proposalID)
	if err != nil {
		return nil, fmt.Errorf("read telegram messages: %w", err)
	}
	return out, nil
}

// addPairingCode stores the hash of a one-time pairing code, pruning
// expired ones.
func (s state) addPairingCode(ctx context.Context, codeHash string, expires time.Time) error {
	now := s.now()
	return store.InTx(ctx, s.db, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM telegram_pairing WHERE expires <= ?`, store.Millis(now)); err != nil {
			return fmt.Errorf("prune pairing codes: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO telegram_pairing (code_hash, expires, created) VALUES (?, ?, ?)`, codeHash, store.Millis(expires), store.Millis(now)); err != nil {
			return fmt.Errorf("store pairing code: %w", err)
		}
		return nil
	})
}

// usePairingCode consumes a code: it reports whether the hash belonged to
// an unexpired code, and, if so, binds ownerID in the same transaction so
// a code pairs exactly one user.
func (s state) usePairingCode(ctx context.Context, codeHash string, ownerID int64) (bool, error) {
	ok := false
	err := store.InTx(ctx, s.db, func(tx *sql.Tx) error {
		now := s.now()
		res, err := tx.ExecContext(ctx, `DELETE FROM telegram_pairing WHERE code_hash = ? AND expires > ?`, codeHash, store.Millis(now))
		if err != nil {
			return fmt.Errorf("use pairing code: %w", err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return nil
		}
		ok = true
		return setMeta(ctx, tx, metaOwner, strconv.FormatInt(ownerID, 10), now)
	})
	return ok, err
}

// owner returns the paired owner's user id (0 if none).
func (s state) owner(ctx context.Context) (int64, error) {
	v, _, err := s.meta(ctx, metaOwner)
	if err != nil || v == "" {
		return 0, err
	}
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("read %s: %q is not a number: %w", metaOwner, v, err)
	}
	return id, nil
}

// lastUpdate returns the id of the last update processed and when it was
// recorded (0 and the zero time if none).
func (s state) lastUpdate(ctx context.Context) (int64, time.Time, error) {
	v, at, err := s.meta(ctx, metaLastUpdate)
	if err != nil || v == "" {
		return 0, time.Time{}, err
	}
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("read telegram update id %q: %w", v, err)
	}
	return id, at, nil
}

// setLastUpdate records the last processed update id. It may move
// backwards: Telegram picks ids at random after a week without updates.
func (s state) setLastUpdate(ctx context.Context, id int64) error {
	return setMeta(ctx, s.db, metaLastUpdate, strconv.FormatInt(id, 10), s.now())
}

// awaiting returns what the bot waits for from the owner's next message
// (JSON the bot owns; "" if nothing).
func (s state) awaiting(ctx context.Context) (string, error) {
	v, _, err := s.meta(ctx, metaAwaiting)
	return v, err
}

// setAwaiting saves (or, with "", clears) what the bot waits for.
func (s state) setAwaiting(ctx context.Context, v string) error {
	return setMeta(ctx, s.db, metaAwaiting, v, s.now())
}

func (s state) meta(ctx context.Context, key string) (string, time.Time, error) {
	var v string
	var at int64
	err := s.db.QueryRowContext(ctx, `SELECT value, updated FROM meta WHERE key = ?`, key).Scan(&v, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return "", time.Time{}, nil
	}
	if err != nil {
		return "", time.Time{}, fmt.Errorf("read %s: %w", key, err)
	}
	return v, store.FromMillis(at), nil
}

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func setMeta(ctx context.Context, db execer, key, value string, now time.Time) error {
	_, err := db.ExecContext(ctx, `INSERT INTO meta (key, value, updated) VALUES (?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated = excluded.updated`, key, value, store.Millis(now))
	if err != nil {
		return fmt.Errorf("save %s: %w", key, err)
	}
	return nil
}

// NewPairingCode makes a one-time code for `/start CODE`, valid for ttl;
// only its hash is stored, in db (the omnibrain database).
func NewPairingCode(ctx context.Context, db *sql.DB, now time.Time, ttl time.Duration) (string, time.Time, error) {
	raw := make([]byte, 10)
	rand.Read(raw)
	const alphabet = "abcdefghijkmnpqrstuvwxyz23456789"
	for i := range raw {
		raw[i] = alphabet[int(raw[i])%len(alphabet)]
	}
	code := string(raw)
	expires := now.Add(ttl)
	s := state{db: db, now: func() time.Time { return now }}
	if err := s.addPairingCode(ctx, hashCode(code), expires); err != nil {
		return "", time.Time{}, fmt.Errorf("telegram: %w", err)
	}
	return code, expires, nil
}

func hashCode(code string) string {
	sum := sha256.Sum256([]byte("omnibrain-pairing\x00" + strings.ToLower(strings.TrimSpace(code))))
	return hex.EncodeToString(sum[:])
}
