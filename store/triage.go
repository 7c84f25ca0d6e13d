package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Factor is one reason a triage score moved, kept so every decision can be
// explained.
type Factor struct {
	Name   string `json:"name"`
	Points int    `json:"points"`
	Detail string `json:"detail,omitempty"`
}

// Triage is the proactive engine's decision about one item.
type Triage struct {
	ItemID     int64     `json:"item_id"`
	Decision   string    `json:"decision"` // ignore, notify, respond
	Category   string    `json:"category"` // personal, bulk, spam, automated, outbound
	Score      int       `json:"score"`
	Level      string    `json:"level"` // silent, fyi, important, critical
	Deadline   time.Time `json:"deadline,omitzero"`
	Factors    []Factor  `json:"factors"`
	Reason     string    `json:"reason"`
	Model      string    `json:"model,omitempty"`
	Tokens     int       `json:"tokens,omitempty"`
	ProposalID string    `json:"proposal_id,omitempty"`
	ItemTime   time.Time `json:"item_time"`
	Created    time.Time `json:"created"`
	Updated    time.Time `json:"updated"`
}

// SaveTriage stores (or replaces) the decision about an item. A proposal
// id already recorded is kept when the new decision carries none.
func (t *Tx) SaveTriage(tr *Triage) error {
	factors, err := json.Marshal(nonNil(tr.Factors))
	if err != nil {
		return fmt.Errorf("save triage %d: %w", tr.ItemID, err)
	}
	now := Millis(t.now)
	_, err = t.Exec(`INSERT INTO triage (item_id, decision, category, score, level, deadline, factors, reason, model, tokens, proposal_id, item_time, created, updated)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (item_id) DO UPDATE SET decision = excluded.decision, category = excluded.category, score = excluded.score,
			level = excluded.level, deadline = excluded.deadline, factors = excluded.factors, reason = excluded.reason,
			model = excluded.model, tokens = excluded.tokens,
			proposal_id = CASE WHEN excluded.proposal_id != '' THEN excluded.proposal_id ELSE triage.proposal_id END,
			item_time = excluded.item_time, updated = excluded.updated`,
		tr.ItemID, tr.Decision, tr.Category, tr.Score, tr.Level, Millis(tr.Deadline), string(factors), tr.Reason, tr.Model, tr.Tokens,
		tr.ProposalID, Millis(tr.ItemTime), now, now)
	if err != nil {
		return fmt.Errorf("save triage %d: %w", tr.ItemID, err)
	}
	return nil
}

// SetTriageProposal records the reply proposal made for an item.
func (s *Store) SetTriageProposal(ctx context.Context, itemID int64, proposalID string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE triage SET proposal_id = ?, updated = ? WHERE item_id = ?`, proposalID, Millis(s.now()), itemID)
	if err != nil {
		return fmt.Errorf("set triage proposal %d: %w", itemID, err)
	}
	return nil
}

const triageColumns = `item_id, decision, category, score, level, deadline, factors, reason, model, tokens, proposal_id, item_time, created, updated`

func scanTriage(row Scanner) (*Triage, error) {
	var tr Triage
	var deadline, itemTime, created, updated int64
	var factors string
	if err := row.Scan(&tr.ItemID, &tr.Decision, &tr.Category, &tr.Score, &tr.Level, &deadline, &factors, &tr.Reason, &tr.Model,
		&tr.Tokens, &tr.ProposalID, &itemTime, &created, &updated); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(factors), &tr.Factors); err != nil {
		return nil, fmt.Errorf("triage %d: factors: %w", tr.ItemID, err)
	}
	tr.Deadline, tr.ItemTime, tr.Created, tr.Updated = FromMillis(deadline), FromMillis(itemTime), FromMillis(created), FromMillis(updated)
	return &tr, nil
}

// TriageOf returns the decision about an item.
func (s *Store) TriageOf(ctx context.Context, itemID int64) (*Triage, error) {
	tr, err := scanTriage(s.db.QueryRowContext(ctx, `SELECT `+triageColumns+` FROM triage WHERE item_id = ?`, itemID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("triage of item %d: %w", itemID, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("triage of item %d: %w", itemID, err)
	}
	return tr, nil
}

// TriageByProposal returns the decision that made a proposal.
func (s *Store) TriageByProposal(ctx context.Context, proposalID string) (*Triage, error) {
	tr, err := scanTriage(s.db.QueryRowContext(ctx, `SELECT `+triageColumns+` FROM triage WHERE proposal_id = ?`, proposalID))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("triage of proposal %s: %w", proposalID, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("triage of proposal %s: %w", proposalID, err)
	}
	return tr, nil
}

// TriagedItem is an item with its triage decision.
type TriagedItem struct {
	Item   *Item
	Triage *Triage
}

// TriageFilter selects triaged items.
type TriageFilter struct {
	Since, Until time.Time // item time, since inclusive, until exclusive
	DecidedSince time.Time // only decisions made at or after it
	Decisions    []string  // any when empty
	MinScore     int
	Limit        int // default 50
}

// TriagedItems returns triaged items, highest score first, then newest.
func (s *Store) TriagedItems(ctx context.Context, f TriageFilter) ([]TriagedItem, error) {
	if f.Limit <= 0 {
		f.Limit = 50
	}
	q := `SELECT ` + qualified("t.", triageColumns) + `, ` + qualified("i.", itemColumns) + ` FROM triage t JOIN items i ON i.id = t.item_id
		WHERE t.item_time >= ? AND t.item_time < ? AND t.score >= ?`
	args := []any{Millis(f.Since), untilMS(f.Until), f.MinScore}
	if !f.DecidedSince.IsZero() {
		q += ` AND t.created >= ?`
		args = append(args, Millis(f.DecidedSince))
	}
	if len(f.Decisions) > 0 {
		q += ` AND t.decision IN (` + Placeholders(len(f.Decisions)) + `)`
		args = append(args, Args(f.Decisions)...)
	}
	q += ` ORDER BY t.score DESC, t.item_time DESC, t.item_id LIMIT ?`
	args = append(args, f.Limit)
	out, err := Collect(ctx, s.db, func(r Scanner) (TriagedItem, error) {
		tr, it, err := scanTriageItem(r)
		return TriagedItem{Item: it, Triage: tr}, err
	}, q, args...)
	if err != nil {
		return nil, fmt.Errorf("triaged items: %w", err)
	}
	return out, nil
}

func scanTriageItem(rows Scanner) (*Triage, *Item, error) {
	var tr Triage
	var it Item
	var deadline, itemTime, created, updated, t, icreated, iupdated int64
	var factors, people, meta string
	err := rows.Scan(&tr.ItemID, &tr.Decision, &tr.Category, &tr.Score, &tr.Level, &deadline, &factors, &tr.Reason, &tr.Model,
		&tr.Tokens, &tr.ProposalID, &itemTime, &created, &updated,
		&it.ID, &it.Source, &it.ExternalID, &it.Kind, &it.Thread, &t, &it.Title, &it.Body, &it.Quoted, &it.Sender, &people, &meta, &it.MessageID, &icreated, &iupdated)
	if err != nil {
		return nil, nil, err
	}
	if err := json.Unmarshal([]byte(factors), &tr.Factors); err != nil {
		return nil, nil, fmt.Errorf("triage %d: factors: %w", tr.ItemID, err)
	}
	if err := json.Unmarshal([]byte(people), &it.People); err != nil {
		return nil, nil, fmt.Errorf("item %d: people: %w", it.ID, err)
	}
	if meta != "{}" {
		if err := json.Unmarshal([]byte(meta), &it.Meta); err != nil {
			return nil, nil, fmt.Errorf("item %d: meta: %w", it.ID, err)
		}
	}
	tr.Deadline, tr.ItemTime, tr.Created, tr.Updated = FromMillis(deadline), FromMillis(itemTime), FromMillis(created), FromMillis(updated)
	it.Time, it.Created, it.Updated = FromMillis(t), FromMillis(icreated), FromMillis(iupdated)
	return &tr, &it, nil
}

// TriageCounts counts decisions and categories of items with time in
// [since, until): keys are "decision:<d>", "category:<c>", "level:<l>"
// and "model" (decisions a model helped with).
func (s *Store) TriageCounts(ctx context.Context, since, until time.Time) (map[string]int, error) {
	out := map[string]int{}
	err := Each(ctx, s.db, func(r Scanner) error {
		var d, c, l string
		var model bool
		var n int
		if err := r.Scan(&d, &c, &l, &model, &n); err != nil {
			return err
		}
		out["decision:"+d] += n
		out["category:"+c] += n
		out["level:"+l] += n
		if model {
			out["model"] += n
		}
		return nil
	}, `SELECT decision, category, level, model != '', COUNT(*) FROM triage
		WHERE item_time >= ? AND item_time < ? GROUP BY 1, 2, 3, 4`, Millis(since), untilMS(until))
	if err != nil {
		return nil, fmt.Errorf("triage counts: %w", err)
	}
	return out, nil
}

// ItemsByExternalID returns every item with the external id, whatever its
// source (ids are unique per source only), and the items that copies with
// that id were merged into.
func (s *Store) ItemsByExternalID(ctx context.Context, externalID string) ([]*Item, error) {
	out, err := Collect(ctx, s.db, scanItem, `SELECT `+itemColumns+` FROM items WHERE id IN (
			SELECT id FROM items WHERE external_id = ?1 UNION SELECT item_id FROM item_aliases WHERE external_id = ?1)
		ORDER BY source LIMIT 20`, externalID)
	if err != nil {
		return nil, fmt.Errorf("items by external id: %w", err)
	}
	return out, nil
}

// untilMS maps a zero upper bound to "no bound".
func untilMS(t time.Time) int64 {
	if t.IsZero() {
		return 1<<63 - 1
	}
	return Millis(t)
}

// qualified qualifies each column of a comma-separated list with prefix.
func qualified(prefix, columns string) string {
	cols := strings.Split(columns, ",")
	for i, c := range cols {
		cols[i] = prefix + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}
