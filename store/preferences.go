package store

import (
	"context"
	"fmt"
	"time"
)

// Preference sources.
const (
	PreferenceLearned = "learned" // derived from what the owner did
	PreferenceOwner   = "owner"   // set by the owner; learning never overrides it
)

// Preference is a score adjustment triage applies, with its basis.
type Preference struct {
	Key      string    `json:"key"` // sender:<address>, domain:<domain>
	Weight   float64   `json:"weight"`
	Source   string    `json:"source"`
	Evidence int       `json:"evidence"`
	Detail   string    `json:"detail,omitempty"`
	Updated  time.Time `json:"updated"`
}

// SetPreference stores a preference. A learned preference never replaces
// one the owner set.
func (s *Store) SetPreference(ctx context.Context, p Preference) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO preferences (key, weight, source, evidence, detail, updated) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (key) DO UPDATE SET weight = excluded.weight, source = excluded.source, evidence = excluded.evidence,
			detail = excluded.detail, updated = excluded.updated
		WHERE preferences.source != 'owner' OR excluded.source = 'owner'`,
		p.Key, p.Weight, p.Source, p.Evidence, p.Detail, Millis(s.now()))
	if err != nil {
		return fmt.Errorf("set preference %s: %w", p.Key, err)
	}
	return nil
}

// PreferencesFor returns the preferences with the given keys, by key.
func (s *Store) PreferencesFor(ctx context.Context, keys ...string) (map[string]Preference, error) {
	out := map[string]Preference{}
	if len(keys) == 0 {
		return out, nil
	}
	ps, err := Collect(ctx, s.db, scanPreference, `SELECT `+preferenceColumns+` FROM preferences WHERE key IN (`+Placeholders(len(keys))+`)`, Args(keys)...)
	if err != nil {
		return nil, fmt.Errorf("preferences: %w", err)
	}
	for _, p := range ps {
		out[p.Key] = p
	}
	return out, nil
}

// Preferences lists every preference, strongest first.
func (s *Store) Preferences(ctx context.Context) ([]Preference, error) {
	out, err := Collect(ctx, s.db, scanPreference, `SELECT `+preferenceColumns+` FROM preferences ORDER BY ABS(weight) DESC, key`)
	if err != nil {
		return nil, fmt.Errorf("preferences: %w", err)
	}
	return out, nil
}

const preferenceColumns = `key, weight, source, evidence, detail, updated`

func scanPreference(r Scanner) (p Preference, err error) {
	var updated int64
	err = r.Scan(&p.Key, &p.Weight, &p.Source, &p.Evidence, &p.Detail, &updated)
	p.Updated = FromMillis(updated)
	return p, err
}
