package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Proposal is one row of the proposals table. The approval package owns
// its meaning; the store keeps it and moves it between states only by
// compare-and-set.
type Proposal struct {
	ID             string
	Kind           string
	State          string
	Title          string
	Reason         string
	Origin         string
	Payload        []byte // canonical JSON, stored and returned byte for byte
	PayloadHash    string
	ItemID         int64
	Thread         string
	Created        time.Time
	Expires        time.Time
	Decided        time.Time
	DecidedBy      string
	SnoozeUntil    time.Time
	Supersedes     string
	SupersededBy   string
	IdempotencyKey string
	Attempts       int
	RemoteID       string
	Error          string
	Updated        time.Time
}

const proposalColumns = `id, kind, state, title, reason, origin, payload, payload_hash, item_id, thread, created, expires,
	decided, decided_by, snooze_until, supersedes, superseded_by, idempotency_key, attempts, remote_id, error, updated`

func scanProposal(row Scanner) (*Proposal, error) {
	var p Proposal
	var payload string
	var created, expires, decided, snooze, updated int64
	err := row.Scan(&p.ID, &p.Kind, &p.State, &p.Title, &p.Reason, &p.Origin, &payload, &p.PayloadHash, &p.ItemID, &p.Thread,
		&created, &expires, &decided, &p.DecidedBy, &snooze, &p.Supersedes, &p.SupersededBy, &p.IdempotencyKey,
		&p.Attempts, &p.RemoteID, &p.Error, &updated)
	if err != nil {
		return nil, err
	}
	p.Payload = []byte(payload)
	p.Created, p.Expires, p.Decided, p.SnoozeUntil, p.Updated = fromMS(created), fromMS(expires), fromMS(decided), fromMS(snooze), fromMS(updated)
	return &p, nil
}

// InsertProposal stores a new proposal. Its id must be unused.
func (t *Tx) InsertProposal(p *Proposal) error {
	p.Updated = t.now
	_, err := t.Exec(`INSERT INTO proposals (`+proposalColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		p.ID, p.Kind, p.State, p.Title, p.Reason, p.Origin, string(p.Payload), p.PayloadHash, p.ItemID, p.Thread,
		ms(p.Created), ms(p.Expires), ms(p.Decided), p.DecidedBy, ms(p.SnoozeUntil), p.Supersedes, p.SupersededBy,
		p.IdempotencyKey, p.Attempts, p.RemoteID, p.Error, ms(p.Updated))
	if err != nil {
		return fmt.Errorf("insert proposal %s: %w", p.ID, err)
	}
	return nil
}

// Proposal returns the proposal with id, read inside the transaction.
func (t *Tx) Proposal(id string) (*Proposal, error) {
	p, err := scanProposal(t.QueryRow(`SELECT `+proposalColumns+` FROM proposals WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("proposal %s: %w", id, ErrNotFound)
	}
	return p, err
}

// Proposal returns the proposal with id.
func (s *Store) Proposal(ctx context.Context, id string) (*Proposal, error) {
	p, err := scanProposal(s.db.QueryRowContext(ctx, `SELECT `+proposalColumns+` FROM proposals WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("proposal %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read proposal %s: %w", id, err)
	}
	return p, nil
}

// ProposalFilter selects proposals; zero fields do not filter.
type ProposalFilter struct {
	States        []string
	Thread        string
	Kind          string
	PayloadHash   string
	ExpiresBefore time.Time // expires <= this
	SnoozedBefore time.Time // snooze_until != 0 and <= this
	Limit         int       // default 500
	Oldest        bool      // oldest first (default newest first)
}

// Proposals lists proposals.
func (s *Store) Proposals(ctx context.Context, f ProposalFilter) ([]*Proposal, error) {
	return queryProposals(ctx, s.db, f)
}

// Proposals lists proposals inside the transaction.
func (t *Tx) Proposals(f ProposalFilter) ([]*Proposal, error) {
	return queryProposals(t.ctx, t.tx, f)
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func queryProposals(ctx context.Context, db querier, f ProposalFilter) ([]*Proposal, error) {
	var where []string
	var args []any
	if len(f.States) > 0 {
		where = append(where, `state IN (`+Placeholders(len(f.States))+`)`)
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
		args = append(args, ms(f.ExpiresBefore))
	}
	if !f.SnoozedBefore.IsZero() {
		where = append(where, `snooze_until != 0 AND snooze_until <= ?`)
		args = append(args, ms(f.SnoozedBefore))
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
	out, err := Collect(ctx, db, scanProposal, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list proposals: %w", err)
	}
	return out, nil
}

// ProposalChange is a compare-and-set transition: it applies only while the
// proposal is in one of From with PayloadHash, and (if UnexpiredAt is set)
// expires after UnexpiredAt.
type ProposalChange struct {
	ID          string
	From        []string
	PayloadHash string
	UnexpiredAt time.Time

	To             string
	Decided        time.Time // set when not zero
	DecidedBy      string    // set when not empty
	SnoozeUntil    *time.Time
	SupersededBy   string
	IdempotencyKey string
	CountAttempt   bool
	RemoteID       string
	Error          *string
}

// TransitionProposal applies the change if its conditions hold and reports
// whether it did. A false answer with a nil error means another decision
// came first: nothing was changed.
func (t *Tx) TransitionProposal(c ProposalChange) (bool, error) {
	if c.ID == "" || c.To == "" || len(c.From) == 0 || c.PayloadHash == "" {
		return false, errors.New("transition proposal: id, from, to and payload hash are required")
	}
	set := []string{`state = ?`, `updated = ?`}
	args := []any{c.To, ms(t.now)}
	if !c.Decided.IsZero() {
		set = append(set, `decided = ?`)
		args = append(args, ms(c.Decided))
	}
	if c.DecidedBy != "" {
		set = append(set, `decided_by = ?`)
		args = append(args, c.DecidedBy)
	}
	if c.SnoozeUntil != nil {
		set = append(set, `snooze_until = ?`)
		args = append(args, ms(*c.SnoozeUntil))
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
	q := `UPDATE proposals SET ` + strings.Join(set, ", ") + ` WHERE id = ? AND payload_hash = ? AND state IN (` + Placeholders(len(c.From)) + `)`
	args = append(args, c.ID, c.PayloadHash)
	for _, f := range c.From {
		args = append(args, f)
	}
	if !c.UnexpiredAt.IsZero() {
		q += ` AND expires > ?`
		args = append(args, ms(c.UnexpiredAt))
	}
	res, err := t.Exec(q, args...)
	if err != nil {
		return false, fmt.Errorf("transition proposal %s to %s: %w", c.ID, c.To, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("transition proposal %s: %w", c.ID, err)
	}
	return n == 1, nil
}
