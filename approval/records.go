package approval

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/store"
)

// The gate's persistence: the proposals table and the audit log (the
// schema is in the store's migrations). Only this file knows their
// columns; it reads and writes Proposal itself, on the database or inside
// a store transaction.

// dbtx is *sql.DB or *store.Tx.
type dbtx interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// records is the gate's tables seen through one connection or transaction.
type records struct {
	ctx context.Context
	q   dbtx
	now time.Time
}

// inTx is the gate's tables inside a store transaction.
func inTx(tx *store.Tx) records { return records{ctx: tx.Context(), q: tx, now: tx.Now()} }

// records outside any transaction (reads).
func (g *Gate) records(ctx context.Context) records {
	return records{ctx: ctx, q: g.st.DB(), now: g.now().UTC()}
}

const proposalColumns = `id, kind, state, title, reason, origin, payload, payload_hash, item_id, thread, created, expires,
	decided, decided_by, snooze_until, supersedes, superseded_by, idempotency_key, attempts, remote_id, error,
	warnings, current_event, execute_after`

func scanProposal(row store.Scanner) (*Proposal, error) {
	var p Proposal
	var payload, warnings, current string
	var created, expires, decided, snooze, after int64
	err := row.Scan(&p.ID, &p.Kind, &p.State, &p.Title, &p.Reason, &p.Origin, &payload, &p.PayloadHash, &p.ItemID, &p.Thread,
		&created, &expires, &decided, &p.DecidedBy, &snooze, &p.Supersedes, &p.SupersededBy, &p.IdempotencyKey,
		&p.Attempts, &p.RemoteID, &p.Error, &warnings, &current, &after)
	if err != nil {
		return nil, err
	}
	p.Payload = []byte(payload)
	p.Created, p.Expires, p.Decided, p.SnoozeUntil = store.FromMillis(created), store.FromMillis(expires), store.FromMillis(decided), store.FromMillis(snooze)
	p.ExecuteAfter = store.FromMillis(after)
	// Warnings that do not read back are not dropped silently: the hash
	// check before execution then refuses the proposal.
	if err := json.Unmarshal([]byte(warnings), &p.Warnings); err != nil {
		p.Warnings = []Warning{{Code: "unreadable", Text: "the warnings stored with this proposal cannot be read: " + err.Error()}}
	}
	if p.Warnings == nil {
		p.Warnings = []Warning{}
	}
	if current != "" {
		p.Current = &CalendarPayload{}
		if err := json.Unmarshal([]byte(current), p.Current); err != nil {
			p.Current = nil
		}
	}
	return &p, nil
}

// insert stores a new proposal. Its id must be unused.
func (r records) insert(p *Proposal) error {
	if p.Warnings == nil {
		p.Warnings = []Warning{}
	}
	warnings, err := json.Marshal(p.Warnings)
	if err != nil {
		return fmt.Errorf("insert proposal %s: %w", p.ID, err)
	}
	var current []byte
	if p.Current != nil {
		if current, err = json.Marshal(p.Current); err != nil {
			return fmt.Errorf("insert proposal %s: %w", p.ID, err)
		}
	}
	_, err = r.q.ExecContext(r.ctx, `INSERT INTO proposals (`+proposalColumns+`, updated) VALUES (`+store.Placeholders(25)+`)`,
		p.ID, p.Kind, p.State, p.Title, p.Reason, p.Origin, string(p.Payload), p.PayloadHash, p.ItemID, p.Thread,
		store.Millis(p.Created), store.Millis(p.Expires), store.Millis(p.Decided), p.DecidedBy, store.Millis(p.SnoozeUntil), p.Supersedes, p.SupersededBy,
		p.IdempotencyKey, p.Attempts, p.RemoteID, p.Error, string(warnings), string(current), store.Millis(p.ExecuteAfter), store.Millis(r.now))
	if err != nil {
		return fmt.Errorf("insert proposal %s: %w", p.ID, err)
	}
	return nil
}

// get returns the proposal with id, or an error wrapping ErrNotFound.
func (r records) get(id string) (*Proposal, error) {
	p, err := scanProposal(r.q.QueryRowContext(r.ctx, `SELECT `+proposalColumns+` FROM proposals WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("proposal %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read proposal %s: %w", id, err)
	}
	return p, nil
}

// filter selects proposals; zero fields do not filter.
type filter struct {
	States        []State
	Thread        string
	Kind          Kind
	PayloadHash   string
	ExpiresBefore time.Time // expires <= this
	DueBy         time.Time // execute_after <= this (approved ones whose send delay is over)
	SnoozedBefore time.Time // snooze_until != 0 and <= this
	Limit         int       // default 500
	Oldest        bool      // oldest first (default newest first)
}

// list returns the proposals f selects.
func (r records) list(f filter) ([]*Proposal, error) {
	var where []string
	var args []any
	if len(f.States) > 0 {
		where = append(where, `state IN (`+store.Placeholders(len(f.States))+`)`)
		for _, st := range f.States {
			args = append(args, st)
		}
	}
	if f.Thread != "" {
		where = append(where, `thread = ?`)
		args = append(args, f.Thread)
	}
	if f.Kind != "" {
		where = append(where, `kind = ?`)
		args = append(args, f.Kind)
	}
	if f.PayloadHash != "" {
		where = append(where, `payload_hash = ?`)
		args = append(args, f.PayloadHash)
	}
	if !f.ExpiresBefore.IsZero() {
		where = append(where, `expires <= ?`)
		args = append(args, store.Millis(f.ExpiresBefore))
	}
	if !f.DueBy.IsZero() {
		where = append(where, `execute_after <= ?`)
		args = append(args, store.Millis(f.DueBy))
	}
	if !f.SnoozedBefore.IsZero() {
		where = append(where, `snooze_until != 0 AND snooze_until <= ?`)
		args = append(args, store.Millis(f.SnoozedBefore))
	}
	q := `SELECT ` + proposalColumns + ` FROM proposals`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, ` AND `)
	}
	if f.Oldest {
		q += ` ORDER BY created, id`
	} else {
		q += ` ORDER BY created DESC, id DESC`
	}
	if f.Limit <= 0 {
		f.Limit = 500
	}
	q += ` LIMIT ?`
	args = append(args, f.Limit)
	out, err := store.Collect(r.ctx, r.q, scanProposal, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list proposals: %w", err)
	}
	return out, nil
}

// change is a compare-and-set transition: it applies only while the
// proposal is in one of From with PayloadHash, and (if UnexpiredAt is set)
// expires after UnexpiredAt.
type change struct {
	ID          string
	From        []State
	PayloadHash string
	UnexpiredAt time.Time

	To           State
	Decided      time.Time // set when not zero
	DecidedBy    string    // set when not empty
	ExecuteAfter time.Time // set when not zero
	// Undecide clears the decision (an undone approval): decided,
	// decided_by and execute_after.
	Undecide       bool
	SnoozeUntil    *time.Time
	SupersededBy   string
	IdempotencyKey string
	CountAttempt   bool
	RemoteID       string
	Error          *string
}

// transition applies the change if its conditions hold and reports
// whether it did. A false answer with a nil error means another decision
// came first: nothing was changed.
func (r records) transition(c change) (bool, error) {
	if c.ID == "" || c.To == "" || len(c.From) == 0 || c.PayloadHash == "" {
		return false, errors.New("transition proposal: id, from, to and payload hash are required")
	}
	set := []string{`state = ?`, `updated = ?`}
	args := []any{c.To, store.Millis(r.now)}
	if !c.Decided.IsZero() {
		set = append(set, `decided = ?`)
		args = append(args, store.Millis(c.Decided))
	}
	if c.DecidedBy != "" {
		set = append(set, `decided_by = ?`)
		args = append(args, c.DecidedBy)
	}
	if !c.ExecuteAfter.IsZero() {
		set = append(set, `execute_after = ?`)
		args = append(args, store.Millis(c.ExecuteAfter))
	}
	if c.Undecide {
		set = append(set, `decided = 0`, `decided_by = ''`, `execute_after = 0`)
	}
	if c.SnoozeUntil != nil {
		set = append(set, `snooze_until = ?`)
		args = append(args, store.Millis(*c.SnoozeUntil))
	}
	if c.SupersededBy != "" {
		set = append(set, `superseded_by = ?`)
		args = append(args, c.SupersededBy)
	}
	if c.IdempotencyKey != "" {
		set = append(set, `idempotency_key = ?`)
		args = append(args, c.IdempotencyKey)
	}
	if c.CountAttempt {
		set = append(set, `attempts = attempts + 1`)
	}
	if c.RemoteID != "" {
		set = append(set, `remote_id = ?`)
		args = append(args, c.RemoteID)
	}
	if c.Error != nil {
		set = append(set, `error = ?`)
		args = append(args, *c.Error)
	}
	q := `UPDATE proposals SET ` + strings.Join(set, ", ") + ` WHERE id = ? AND payload_hash = ? AND state IN (` + store.Placeholders(len(c.From)) + `)`
	args = append(args, c.ID, c.PayloadHash)
	for _, f := range c.From {
		args = append(args, f)
	}
	if !c.UnexpiredAt.IsZero() {
		q += ` AND expires > ?`
		args = append(args, store.Millis(c.UnexpiredAt))
	}
	res, err := r.q.ExecContext(r.ctx, q, args...)
	if err != nil {
		return false, fmt.Errorf("transition proposal %s to %s: %w", c.ID, c.To, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("transition proposal %s: %w", c.ID, err)
	}
	return n == 1, nil
}

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

// audit appends an entry, in the same transaction as the change it
// records. A zero Time is the transaction's clock reading.
func (r records) audit(e AuditEntry) error {
	if e.Actor == "" || e.Action == "" {
		return fmt.Errorf("audit: actor and action are required (action %q)", e.Action)
	}
	if e.Time.IsZero() {
		e.Time = r.now
	}
	_, err := r.q.ExecContext(r.ctx, `INSERT INTO audit_log (time, actor, action, proposal_id, payload_hash, detail) VALUES (?, ?, ?, ?, ?, ?)`,
		store.Millis(e.Time), e.Actor, e.Action, e.ProposalID, e.PayloadHash, e.Detail)
	if err != nil {
		return fmt.Errorf("audit %s: %w", e.Action, err)
	}
	return nil
}

// auditLog returns the newest limit entries (of one proposal if id is
// not empty; default 1000), oldest first.
func (r records) auditLog(id string, limit int) ([]AuditEntry, error) {
	if limit <= 0 {
		limit = 1000
	}
	q := `SELECT id, time, actor, action, proposal_id, payload_hash, detail FROM audit_log`
	var args []any
	if id != "" {
		q += ` WHERE proposal_id = ?`
		args = append(args, id)
	}
	q = `SELECT * FROM (` + q + ` ORDER BY id DESC LIMIT ?) ORDER BY id`
	args = append(args, limit)
	out, err := store.Collect(r.ctx, r.q, func(row store.Scanner) (AuditEntry, error) {
		var e AuditEntry
		var t int64
		err := row.Scan(&e.ID, &t, &e.Actor, &e.Action, &e.ProposalID, &e.PayloadHash, &e.Detail)
		e.Time = store.FromMillis(t)
		return e, err
	}, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read audit log: %w", err)
	}
	return out, nil
}
