package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Observation is a pattern that passed its evidence threshold.
type Observation struct {
	ID         int64     `json:"id"`
	Kind       string    `json:"kind"`
	Key        string    `json:"key"`
	Summary    string    `json:"summary"`
	Confidence float64   `json:"confidence"`
	Evidence   []int64   `json:"evidence"` // item ids
	State      string    `json:"state"`    // active, dismissed
	Suggestion string    `json:"suggestion,omitempty"`
	FirstSeen  time.Time `json:"first_seen"`
	LastSeen   time.Time `json:"last_seen"`
}

// UpsertObservation records a pattern seen now. It reports whether the
// observation is new. A dismissed observation stays dismissed.
func (s *Store) UpsertObservation(ctx context.Context, o *Observation) (bool, error) {
	ev, err := json.Marshal(nonNil(o.Evidence))
	if err != nil {
		return false, fmt.Errorf("observation %s/%s: %w", o.Kind, o.Key, err)
	}
	var created bool
	err = s.Tx(ctx, func(tx *Tx) error {
		now := Millis(tx.now)
		var id int64
		err := tx.QueryRow(`SELECT id FROM observations WHERE kind = ? AND key = ?`, o.Kind, o.Key).Scan(&id)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			res, err := tx.Exec(`INSERT INTO observations (kind, key, summary, confidence, evidence, suggestion, first_seen, last_seen)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, o.Kind, o.Key, o.Summary, o.Confidence, string(ev), o.Suggestion, now, now)
			if err != nil {
				return err
			}
			created = true
			if id, err = res.LastInsertId(); err != nil {
				return err
			}
		case err != nil:
			return err
		default:
			if _, err := tx.Exec(`UPDATE observations SET summary = ?, confidence = ?, evidence = ?, suggestion = ?, last_seen = ? WHERE id = ?`,
				o.Summary, o.Confidence, string(ev), o.Suggestion, now, id); err != nil {
				return err
			}
		}
		got, err := scanObservation(tx.QueryRow(`SELECT `+observationColumns+` FROM observations WHERE id = ?`, id))
		if err != nil {
			return err
		}
		*o = *got
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("observation %s/%s: %w", o.Kind, o.Key, err)
	}
	return created, nil
}

const observationColumns = `id, kind, key, summary, confidence, evidence, state, suggestion, first_seen, last_seen`

func scanObservation(row Scanner) (*Observation, error) {
	var o Observation
	var ev string
	var first, last int64
	if err := row.Scan(&o.ID, &o.Kind, &o.Key, &o.Summary, &o.Confidence, &ev, &o.State, &o.Suggestion, &first, &last); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(ev), &o.Evidence); err != nil {
		return nil, fmt.Errorf("observation %d: evidence: %w", o.ID, err)
	}
	o.FirstSeen, o.LastSeen = FromMillis(first), FromMillis(last)
	return &o, nil
}

// Observations lists active observations, most confident first; seenSince
// (if set) keeps only those confirmed since then.
func (s *Store) Observations(ctx context.Context, seenSince time.Time, limit int) ([]*Observation, error) {
	if limit <= 0 {
		limit = 50
	}
	out, err := Collect(ctx, s.db, scanObservation, `SELECT `+observationColumns+` FROM observations WHERE state = 'active' AND last_seen >= ?
		ORDER BY confidence DESC, last_seen DESC, id LIMIT ?`, Millis(seenSince), limit)
	if err != nil {
		return nil, fmt.Errorf("observations: %w", err)
	}
	return out, nil
}

// DismissObservation hides an observation for good (the owner said so).
func (s *Store) DismissObservation(ctx context.Context, id int64) error {
	res, err := s.db.ExecContext(ctx, `UPDATE observations SET state = 'dismissed' WHERE id = ?`, id)
	if err != nil {
		return fmt.Errorf("dismiss observation %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("observation %d: %w", id, ErrNotFound)
	}
	return nil
}
