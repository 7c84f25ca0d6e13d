package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Follow-up kinds.
const (
	FollowupAwaitingReply = "awaiting_reply" // the owner wrote last and waits
	FollowupOwesReply     = "owes_reply"     // an important person waits for the owner
	FollowupGoneQuiet     = "gone_quiet"     // a regular contact stopped writing
)

// Followup is something the owner should follow up on.
type Followup struct {
	Kind       string    `json:"kind"`
	Key        string    `json:"key"` // thread key or contact address
	Thread     string    `json:"thread,omitempty"`
	Contact    string    `json:"contact,omitempty"`
	Subject    string    `json:"subject,omitempty"`
	ItemID     int64     `json:"item_id,omitempty"`
	Since      time.Time `json:"since"`
	State      string    `json:"state"` // open, closed
	Detail     string    `json:"detail,omitempty"`
	ProposalID string    `json:"proposal_id,omitempty"`
	Detected   time.Time `json:"detected"`
}

// SyncFollowups makes the open follow-ups of kind exactly found: new ones
// are opened (a follow-up is identified by kind, key and since, so a new
// wait in the same thread is a new follow-up), ones still found keep
// their detection time and proposal, and the rest are closed. It returns
// the follow-ups opened now.
func (s *Store) SyncFollowups(ctx context.Context, kind string, found []*Followup) ([]*Followup, error) {
	var opened []*Followup
	err := s.Tx(ctx, func(tx *Tx) error {
		opened = nil
		now := Millis(tx.now)
		keep := map[string]bool{}
		for _, f := range found {
			var detected int64
			var prop string
			err := tx.QueryRow(`SELECT detected, proposal_id FROM followups WHERE kind = ? AND key = ? AND since = ?`, kind, f.Key, Millis(f.Since)).Scan(&detected, &prop)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				detected = now
				if _, err := tx.Exec(`INSERT INTO followups (kind, key, thread, contact, subject, item_id, since, state, detail, detected, updated)
					VALUES (?, ?, ?, ?, ?, ?, ?, 'open', ?, ?, ?)`,
					kind, f.Key, f.Thread, f.Contact, f.Subject, f.ItemID, Millis(f.Since), f.Detail, now, now); err != nil {
					return err
				}
				opened = append(opened, f)
			case err != nil:
				return err
			default:
				if _, err := tx.Exec(`UPDATE followups SET subject = ?, item_id = ?, detail = ?, state = 'open', updated = ?
					WHERE kind = ? AND key = ? AND since = ?`, f.Subject, f.ItemID, f.Detail, now, kind, f.Key, Millis(f.Since)); err != nil {
					return err
				}
			}
			f.Kind, f.State, f.Detected, f.ProposalID = kind, "open", FromMillis(detected), prop
			keep[fmt.Sprintf("%s\x00%d", f.Key, Millis(f.Since))] = true
		}
		var stale [][2]any
		err := Each(tx.ctx, tx.tx, func(r Scanner) error {
			var key string
			var since int64
			if err := r.Scan(&key, &since); err != nil {
				return err
			}
			if !keep[fmt.Sprintf("%s\x00%d", key, since)] {
				stale = append(stale, [2]any{key, since})
			}
			return nil
		}, `SELECT key, since FROM followups WHERE kind = ? AND state = 'open'`, kind)
		if err != nil {
			return err
		}
		for _, k := range stale {
			if _, err := tx.Exec(`UPDATE followups SET state = 'closed', updated = ? WHERE kind = ? AND key = ? AND since = ?`, now, kind, k[0], k[1]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sync %s follow-ups: %w", kind, err)
	}
	return opened, nil
}

// SetFollowupProposal records the nudge proposed for a follow-up.
func (s *Store) SetFollowupProposal(ctx context.Context, f *Followup, proposalID string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE followups SET proposal_id = ?, updated = ? WHERE kind = ? AND key = ? AND since = ?`,
		proposalID, Millis(s.now()), f.Kind, f.Key, Millis(f.Since))
	if err != nil {
		return fmt.Errorf("set follow-up proposal: %w", err)
	}
	return nil
}

// OpenFollowups lists open follow-ups, longest waiting first.
func (s *Store) OpenFollowups(ctx context.Context, limit int) ([]*Followup, error) {
	if limit <= 0 {
		limit = 50
	}
	out, err := Collect(ctx, s.db, func(r Scanner) (*Followup, error) {
		var f Followup
		var since, detected int64
		err := r.Scan(&f.Kind, &f.Key, &f.Thread, &f.Contact, &f.Subject, &f.ItemID, &since, &f.State, &f.Detail, &f.ProposalID, &detected)
		f.Since, f.Detected = FromMillis(since), FromMillis(detected)
		return &f, err
	}, `SELECT kind, key, thread, contact, subject, item_id, since, state, detail, proposal_id, detected
		FROM followups WHERE state = 'open' ORDER BY since, kind, key LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("open follow-ups: %w", err)
	}
	return out, nil
}

// QuietContact is a contact who used to write regularly and stopped.
type QuietContact struct {
	Address     string    `json:"address"`
	Name        string    `json:"name,omitempty"`
	Inbound     int       `json:"inbound"`
	Outbound    int       `json:"outbound"`
	LastInbound time.Time `json:"last_inbound"`
	LastSeen    time.Time `json:"last_seen"`
	VIP         bool      `json:"vip"`
}

// QuietContacts returns contacts the owner has a two-way relationship
// with (at least minInbound mails from them and one to them, or VIPs),
// not counting bulk senders, whose last mail is older than quietSince but
// who wrote within activeSince: regulars who went quiet.
func (s *Store) QuietContacts(ctx context.Context, quietSince, activeSince time.Time, minInbound, limit int) ([]*QuietContact, error) {
	if limit <= 0 {
		limit = 20
	}
	out, err := Collect(ctx, s.db, func(r Scanner) (*QuietContact, error) {
		var q QuietContact
		var lastIn, last int64
		err := r.Scan(&q.Address, &q.Name, &q.Inbound, &q.Outbound, &lastIn, &last, &q.VIP)
		q.LastInbound, q.LastSeen = FromMillis(lastIn), FromMillis(last)
		return &q, err
	}, `SELECT c.address, c.name, c.inbound, c.outbound, c.last_inbound, c.last_seen, c.vip FROM contacts c
		WHERE c.last_seen < ? AND c.last_seen >= ? AND ((c.inbound >= ? AND c.outbound > 0) OR (c.vip AND c.inbound + c.outbound > 0))
		AND NOT EXISTS (SELECT 1 FROM mail_messages m WHERE m.sender = c.address AND m.bulk)
		ORDER BY c.vip DESC, c.inbound + c.outbound DESC, c.address LIMIT ?`, Millis(quietSince), Millis(activeSince), minInbound, limit)
	if err != nil {
		return nil, fmt.Errorf("quiet contacts: %w", err)
	}
	return out, nil
}
