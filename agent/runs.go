package agent

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/omnibrain/omnibrain/store"
)

// Run statuses. A run that is running when the daemon starts was
// interrupted by a stop or a crash.
const (
	RunRunning   = "running"
	RunDone      = "done"
	RunAbandoned = "abandoned" // nobody waits for it any more: never resumed
	// Background runs only: ended without doing their job (a cap, a
	// model error), dropped after being interrupted too often, or paused
	// because no model could take them (none, or the budget spent).
	RunFailed  = "failed"
	RunDropped = "dropped"
	RunPaused  = "paused"
)

// Checkpoint is a saved run: its serialised state while it runs, its
// answer once done.
type Checkpoint struct {
	ID          string
	Session     string
	Route       string
	Objective   string
	Status      string // RunRunning, RunDone or RunAbandoned
	Interactive bool
	Iteration   int
	State       json.RawMessage
	Answer      json.RawMessage // nil until done
	Created     time.Time
	Updated     time.Time

	Kind, Subject string // a background run's job; "" for chat
	Attempts      int    // starts and resumes
	LastError     string
	Tokens        int // input and output tokens used so far
}

// Runs is the agent's repository of checkpoints, in the store's database
// (table agent_runs). It is safe for concurrent use.
type Runs struct {
	db  *sql.DB
	now func() time.Time
}

// NewRuns returns the repository over st's database and clock.
func NewRuns(st *store.Store) *Runs { return &Runs{db: st.DB(), now: st.Now} }

// Save inserts or replaces a run's checkpoint.
func (r *Runs) Save(ctx context.Context, c *Checkpoint) error {
	if c.ID == "" || c.Status == "" || len(c.State) == 0 {
		return errors.New("agent: save run: id, status and state are required")
	}
	now := r.now().UnixMilli()
	var answer any
	if len(c.Answer) > 0 {
		answer = string(c.Answer)
	}
	attempts := c.Attempts
	if c.Kind != "" {
		attempts = max(attempts, 1) // a background run's first save is its first attempt
	}
	_, err := r.db.ExecContext(ctx, `INSERT INTO agent_runs (id, session, route, objective, status, interactive, iteration, state, answer, created, updated, kind, subject, tokens, attempts)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET status = excluded.status, iteration = excluded.iteration,
			state = excluded.state, answer = excluded.answer, updated = excluded.updated, tokens = excluded.tokens`,
		c.ID, c.Session, c.Route, c.Objective, c.Status, c.Interactive, c.Iteration, string(c.State), answer, now, now, c.Kind, c.Subject, c.Tokens, attempts)
	if err != nil {
		return fmt.Errorf("agent: save run %s: %w", c.ID, err)
	}
	return nil
}

const runColumns = `id, session, route, objective, status, interactive, iteration, state, answer, created, updated, kind, subject, attempts, last_error, tokens`

func scanRun(row store.Scanner) (*Checkpoint, error) {
	var c Checkpoint
	var state string
	var answer sql.NullString
	var created, updated int64
	if err := row.Scan(&c.ID, &c.Session, &c.Route, &c.Objective, &c.Status, &c.Interactive, &c.Iteration, &state, &answer, &created, &updated,
		&c.Kind, &c.Subject, &c.Attempts, &c.LastError, &c.Tokens); err != nil {
		return nil, err
	}
	c.State = json.RawMessage(state)
	if answer.Valid {
		c.Answer = json.RawMessage(answer.String)
	}
	c.Created, c.Updated = time.UnixMilli(created).UTC(), time.UnixMilli(updated).UTC()
	return &c, nil
}

// Get returns a run's checkpoint; store.ErrNotFound if there is none.
func (r *Runs) Get(ctx context.Context, id string) (*Checkpoint, error) {
	c, err := scanRun(r.db.QueryRowContext(ctx, `SELECT `+runColumns+` FROM agent_runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("agent run %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("agent: run %s: %w", id, err)
	}
	return c, nil
}

// Unfinished returns the runs still marked running, oldest first: the
// ones a restart interrupted.
func (r *Runs) Unfinished(ctx context.Context) ([]*Checkpoint, error) {
	out, err := store.Collect(ctx, r.db, scanRun, `SELECT `+runColumns+` FROM agent_runs WHERE status = ? ORDER BY updated`, RunRunning)
	if err != nil {
		return nil, fmt.Errorf("agent: unfinished runs: %w", err)
	}
	return out, nil
}

// SetStatus changes a run's status (for instance to abandoned).
func (r *Runs) SetStatus(ctx context.Context, id, status string) error {
	return r.End(ctx, id, status, "")
}

// End sets a run's final status and the error it ended with, if any.
func (r *Runs) End(ctx context.Context, id, status, lastErr string) error {
	res, err := r.db.ExecContext(ctx, `UPDATE agent_runs SET status = ?, last_error = CASE WHEN ? = '' THEN last_error ELSE ? END, updated = ? WHERE id = ?`,
		status, lastErr, lastErr, r.now().UnixMilli(), id)
	if err != nil {
		return fmt.Errorf("agent: run %s status: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("agent run %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// Attempt counts a start or resume of a run and returns the attempts so
// far, this one included.
func (r *Runs) Attempt(ctx context.Context, id string) (int, error) {
	var n int
	err := r.db.QueryRowContext(ctx, `UPDATE agent_runs SET attempts = attempts + 1, updated = ? WHERE id = ? RETURNING attempts`, r.now().UnixMilli(), id).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("agent run %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("agent: run %s attempt: %w", id, err)
	}
	return n, nil
}

// OfSubject returns the background runs about a subject, oldest first.
func (r *Runs) OfSubject(ctx context.Context, subject string) ([]*Checkpoint, error) {
	out, err := store.Collect(ctx, r.db, scanRun, `SELECT `+runColumns+` FROM agent_runs WHERE subject = ? ORDER BY created, id`, subject)
	if err != nil {
		return nil, fmt.Errorf("agent: runs of %s: %w", subject, err)
	}
	return out, nil
}
