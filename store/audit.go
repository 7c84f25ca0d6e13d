package store

import (
	"context"
	"fmt"
	"time"
)

// AuditEntry is one line of the append-only audit log: every proposal,
// decision and execution, with who did it and when.
type AuditEntry struct {
	ID          int64     `json:"id"`
	Time        time.Time `json:"time"`
	Actor       string    `json:"actor"`
	Action      string    `json:"action"`
	ProposalID  string    `json:"proposal_id,omitempty"`
	PayloadHash string    `json:"payload_hash,omitempty"`
	Detail      string    `json:"detail,omitempty"`
}

// Audit appends an entry, in the same transaction as the change it records.
// A zero Time is the transaction's clock reading.
func (t *Tx) Audit(e AuditEntry) error {
	if e.Actor == "" || e.Action == "" {
		return fmt.Errorf("audit: actor and action are required (action %q)", e.Action)
	}
	if e.Time.IsZero() {
		e.Time = t.now
	}
	_, err := t.Exec(`INSERT INTO audit_log (time, actor, action, proposal_id, payload_hash, detail) VALUES (?, ?, ?, ?, ?, ?)`,
		ms(e.Time), e.Actor, e.Action, e.ProposalID, e.PayloadHash, e.Detail)
	if err != nil {
		return fmt.Errorf("audit %s: %w", e.Action, err)
	}
	return nil
}

// AuditFilter selects audit entries; zero fields do not filter.
type AuditFilter struct {
	ProposalID string
	Limit      int // default 1000
}

// AuditLog returns entries oldest first.
func (s *Store) AuditLog(ctx context.Context, f AuditFilter) ([]AuditEntry, error) {
	if f.Limit <= 0 {
		f.Limit = 1000
	}
	q := `SELECT id, time, actor, action, proposal_id, payload_hash, detail FROM audit_log`
	var args []any
	if f.ProposalID != "" {
		q += ` WHERE proposal_id = ?`
		args = append(args, f.ProposalID)
	}
	// The newest Limit entries, shown oldest first.
	q = `SELECT * FROM (` + q + ` ORDER BY id DESC LIMIT ?) ORDER BY id`
	args = append(args, f.Limit)
	out, err := Collect(ctx, s.db, func(r Scanner) (e AuditEntry, err error) {
		var t int64
		err = r.Scan(&e.ID, &t, &e.Actor, &e.Action, &e.ProposalID, &e.PayloadHash, &e.Detail)
		e.Time = fromMS(t)
		return e, err
	}, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read audit log: %w", err)
	}
	return out, nil
}
