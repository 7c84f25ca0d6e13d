package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Agent run statuses. A run that is running when the daemon starts was
// interrupted by a stop or a crash.
const (
	RunRunning   = "running"
	RunDone      = "done"
	RunAbandoned = "abandoned" // nobody waits for it any more: never resumed
)

// AgentRun is a checkpoint of an agent run: its serialised state while it
// runs, its answer once done. The agent owns the JSON shapes.
type AgentRun struct {
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
}

// SaveAgentRun inserts or replaces a run's checkpoint.
func (s *Store) SaveAgentRun(ctx context.Context, r *AgentRun) error {
	if r.ID == "" || r.Status == "" || len(r.State) == 0 {
		return errors.New("store: save agent run: id, status and state are required")
	}
	now := ms(s.now())
	var answer any
	if len(r.Answer) > 0 {
		answer = string(r.Answer)
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO agent_runs (id, session, route, objective, status, interactive, iteration, state, answer, created, updated)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET status = excluded.status, iteration = excluded.iteration,
			state = excluded.state, answer = excluded.answer, updated = excluded.updated`,
		r.ID, r.Session, r.Route, r.Objective, r.Status, r.Interactive, r.Iteration, string(r.State), answer, now, now)
	if err != nil {
		return fmt.Errorf("store: save agent run %s: %w", r.ID, err)
	}
	return nil
}

const agentRunColumns = `id, session, route, objective, status, interactive, iteration, state, answer, created, updated`

func scanAgentRun(row Scanner) (*AgentRun, error) {
	var r AgentRun
	var state string
	var answer sql.NullString
	var created, updated int64
	if err := row.Scan(&r.ID, &r.Session, &r.Route, &r.Objective, &r.Status, &r.Interactive, &r.Iteration, &state, &answer, &created, &updated); err != nil {
		return nil, err
	}
	r.State = json.RawMessage(state)
	if answer.Valid {
		r.Answer = json.RawMessage(answer.String)
	}
	r.Created, r.Updated = fromMS(created), fromMS(updated)
	return &r, nil
}

// AgentRun returns a run's checkpoint.
func (s *Store) AgentRun(ctx context.Context, id string) (*AgentRun, error) {
	r, err := scanAgentRun(s.db.QueryRowContext(ctx, `SELECT `+agentRunColumns+` FROM agent_runs WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("agent run %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("store: agent run %s: %w", id, err)
	}
	return r, nil
}

// UnfinishedAgentRuns returns runs still marked running, oldest first:
// the ones a restart interrupted.
func (s *Store) UnfinishedAgentRuns(ctx context.Context) ([]*AgentRun, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+agentRunColumns+` FROM agent_runs WHERE status = ? ORDER BY updated`, RunRunning)
	if err != nil {
		return nil, fmt.Errorf("store: unfinished agent runs: %w", err)
	}
	defer rows.Close()
	var out []*AgentRun
	for rows.Next() {
		r, err := scanAgentRun(rows)
		if err != nil {
			return nil, fmt.Errorf("store: unfinished agent runs: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// SetAgentRunStatus changes a run's status (for instance to abandoned).
func (s *Store) SetAgentRunStatus(ctx context.Context, id, status string) error {
	res, err := s.db.ExecContext(ctx, `UPDATE agent_runs SET status = ?, updated = ? WHERE id = ?`, status, ms(s.now()), id)
	if err != nil {
		return fmt.Errorf("store: agent run %s status: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("agent run %s: %w", id, ErrNotFound)
	}
	return nil
}
