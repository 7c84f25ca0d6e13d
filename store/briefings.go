package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Briefing is a stored morning, evening or weekly briefing.
type Briefing struct {
	ID          int64     `json:"id"`
	Kind        string    `json:"kind"`
	Day         string    `json:"day"` // local date YYYY-MM-DD (weekly: its Monday)
	PeriodStart time.Time `json:"period_start"`
	PeriodEnd   time.Time `json:"period_end"`
	Data        []byte    `json:"-"` // JSON sections
	Text        string    `json:"text"`
	Narrative   string    `json:"narrative,omitempty"`
	Late        bool      `json:"late,omitempty"`
	Manual      bool      `json:"manual,omitempty"`
	Created     time.Time `json:"created"`
}

// InsertBriefing stores b unless a briefing of its kind exists for its
// day; it reports whether b was stored. Either way b ends up holding the
// stored briefing, so racing triggers all see the one that won. The held
// notifications it shows are marked briefed in the same transaction, so
// a crash cannot show them twice.
func (s *Store) InsertBriefing(ctx context.Context, b *Briefing, shown ...int64) (bool, error) {
	var added bool
	err := s.Tx(ctx, func(tx *Tx) error {
		res, err := tx.Exec(`INSERT INTO briefings (kind, day, period_start, period_end, data, text, narrative, late, manual, created)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (kind, day) DO NOTHING`,
			b.Kind, b.Day, Millis(b.PeriodStart), Millis(b.PeriodEnd), string(b.Data), b.Text, b.Narrative, b.Late, b.Manual, Millis(tx.now))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		added = n > 0
		if added {
			if err := tx.MarkBriefed(shown); err != nil {
				return err
			}
		}
		got, err := scanBriefing(tx.QueryRow(`SELECT `+briefingColumns+` FROM briefings WHERE kind = ? AND day = ?`, b.Kind, b.Day))
		if err != nil {
			return err
		}
		*b = *got
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("insert briefing %s %s: %w", b.Kind, b.Day, err)
	}
	return added, nil
}

// ReplaceBriefing replaces the stored briefing of b's kind and day by b
// (made again with what arrived since) and marks the held notifications
// it newly shows briefed, in one transaction; b then holds the stored row.
func (s *Store) ReplaceBriefing(ctx context.Context, b *Briefing, shown ...int64) error {
	err := s.Tx(ctx, func(tx *Tx) error {
		res, err := tx.Exec(`UPDATE briefings SET period_start = ?, period_end = ?, data = ?, text = ?, narrative = ?, manual = ?, created = ?
			WHERE kind = ? AND day = ?`, Millis(b.PeriodStart), Millis(b.PeriodEnd), string(b.Data), b.Text, b.Narrative, b.Manual, Millis(tx.now), b.Kind, b.Day)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return errors.Join(err, ErrNotFound)
		}
		if err := tx.MarkBriefed(shown); err != nil {
			return err
		}
		got, err := scanBriefing(tx.QueryRow(`SELECT `+briefingColumns+` FROM briefings WHERE kind = ? AND day = ?`, b.Kind, b.Day))
		if err != nil {
			return err
		}
		*b = *got
		return nil
	})
	if err != nil {
		return fmt.Errorf("replace briefing %s %s: %w", b.Kind, b.Day, err)
	}
	return nil
}

const briefingColumns = `id, kind, day, period_start, period_end, data, text, narrative, late, manual, created`

func scanBriefing(row Scanner) (*Briefing, error) {
	var b Briefing
	var data string
	var ps, pe, created int64
	if err := row.Scan(&b.ID, &b.Kind, &b.Day, &ps, &pe, &data, &b.Text, &b.Narrative, &b.Late, &b.Manual, &created); err != nil {
		return nil, err
	}
	b.Data = []byte(data)
	b.PeriodStart, b.PeriodEnd, b.Created = FromMillis(ps), FromMillis(pe), FromMillis(created)
	return &b, nil
}

// BriefingFor returns the briefing of a kind for a local day.
func (s *Store) BriefingFor(ctx context.Context, kind, day string) (*Briefing, error) {
	b, err := scanBriefing(s.db.QueryRowContext(ctx, `SELECT `+briefingColumns+` FROM briefings WHERE kind = ? AND day = ?`, kind, day))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%s briefing of %s: %w", kind, day, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("%s briefing of %s: %w", kind, day, err)
	}
	return b, nil
}

// Briefings lists briefings of a kind (any if empty), newest first.
func (s *Store) Briefings(ctx context.Context, kind string, limit int) ([]*Briefing, error) {
	if limit <= 0 {
		limit = 20
	}
	q := `SELECT ` + briefingColumns + ` FROM briefings`
	args := []any{}
	if kind != "" {
		q += ` WHERE kind = ?`
		args = append(args, kind)
	}
	q += ` ORDER BY period_end DESC, id DESC LIMIT ?`
	args = append(args, limit)
	out, err := Collect(ctx, s.db, scanBriefing, q, args...)
	if err != nil {
		return nil, fmt.Errorf("briefings: %w", err)
	}
	return out, nil
}

// MeetingPrep is the brief prepared for one meeting.
type MeetingPrep struct {
	EventID string    `json:"event_id"`
	Start   time.Time `json:"start"`
	ItemID  int64     `json:"item_id"`
	Text    string    `json:"text"`
	Context []byte    `json:"-"` // JSON: the item ids it drew on
	Created time.Time `json:"created"`
}

// InsertMeetingPrep stores a prep unless one exists for the event and
// start; it reports whether it was stored (a meeting is prepared once).
func (s *Store) InsertMeetingPrep(ctx context.Context, p *MeetingPrep) (bool, error) {
	ctxJSON := p.Context
	if len(ctxJSON) == 0 {
		ctxJSON = []byte("{}")
	}
	res, err := s.db.ExecContext(ctx, `INSERT INTO meeting_preps (event_id, start, item_id, text, context, created) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (event_id, start) DO NOTHING`, p.EventID, Millis(p.Start), p.ItemID, p.Text, string(ctxJSON), Millis(s.now()))
	if err != nil {
		return false, fmt.Errorf("insert meeting prep %s: %w", p.EventID, err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// MeetingPreps returns the preps of meetings starting in [from, to), by start.
func (s *Store) MeetingPreps(ctx context.Context, from, to time.Time) ([]*MeetingPrep, error) {
	out, err := Collect(ctx, s.db, func(r Scanner) (*MeetingPrep, error) {
		var p MeetingPrep
		var start, created int64
		var c string
		err := r.Scan(&p.EventID, &start, &p.ItemID, &p.Text, &c, &created)
		p.Start, p.Created, p.Context = FromMillis(start), FromMillis(created), []byte(c)
		return &p, err
	}, `SELECT event_id, start, item_id, text, context, created FROM meeting_preps
		WHERE start >= ? AND start < ? ORDER BY start, event_id`, Millis(from), untilMS(to))
	if err != nil {
		return nil, fmt.Errorf("meeting preps: %w", err)
	}
	return out, nil
}
