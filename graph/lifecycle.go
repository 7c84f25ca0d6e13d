package graph

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/store"
)

// Lifecycles are the reasoning chains every mail, meeting, GitHub item and
// pattern advances through, kept durably stage by stage with the time and
// the ids of the items each stage rests on. They gate: a stage is
// recorded only after the one it follows, so a reply cannot be proposed
// for a mail whose context was never gathered, and a run cannot skip
// stages. `omnibrain explain` shows them.

// Lifecycle names.
const (
	Mail    = "mail"
	Meeting = "meeting"
	Issue   = "issue"
	Pattern = "pattern"
)

// Stage names.
const (
	Received        = "received"
	Classified      = "classified"
	ContextGathered = "context_gathered"
	ReplyDrafted    = "reply_drafted"
	NoReplyNeeded   = "no_reply_needed"

	Upcoming   = "upcoming"
	BriefReady = "brief_ready"

	Reported        = "reported"
	Analysed        = "analysed"
	CommentProposed = "comment_proposed"

	Observed           = "observed"
	PatternConfirmed   = "confirmed"
	AutomationProposed = "automation_proposed"
)

// step is one stage of a lifecycle and the stage it follows ("" first).
// Stages that follow the same one are alternatives: one excludes the other.
type step struct {
	name, after, label string
}

var lifecycles = map[string][]step{
	Mail: {
		{Received, "", "received"},
		{Classified, Received, "classified"},
		{ContextGathered, Classified, "context gathered"},
		{ReplyDrafted, ContextGathered, "reply drafted"},
		{NoReplyNeeded, Classified, "no reply needed"},
	},
	Meeting: {
		{Upcoming, "", "upcoming"},
		{ContextGathered, Upcoming, "context gathered"},
		{BriefReady, ContextGathered, "brief ready"},
	},
	Issue: {
		{Reported, "", "reported"},
		{Analysed, Reported, "analysed"},
		{CommentProposed, Analysed, "comment proposed"},
	},
	Pattern: {
		{Observed, "", "observed"},
		{PatternConfirmed, Observed, "confirmed"},
		{AutomationProposed, PatternConfirmed, "automation proposed"},
	},
}

// Stage is one recorded step of a subject's lifecycle.
type Stage struct {
	Subject  string    `json:"subject"`
	Chain    string    `json:"chain"`
	Name     string    `json:"stage"`
	At       time.Time `json:"at"`
	Evidence []int64   `json:"evidence,omitempty"` // item ids
	Detail   string    `json:"detail,omitempty"`
}

// Label is the stage's name for people ("context gathered").
func (s Stage) Label() string {
	for _, st := range lifecycles[s.Chain] {
		if st.name == s.Name {
			return st.label
		}
	}
	return s.Name
}

// ItemSubject names a stored item as a lifecycle subject.
func ItemSubject(itemID int64) string { return "item:" + strconv.FormatInt(itemID, 10) }

// ErrOutOfOrder is returned for a stage whose predecessor is not recorded,
// or whose alternative already is.
var ErrOutOfOrder = errors.New("stage out of order")

// Chains is the repository of lifecycles in the store's database (table
// item_chains). It is safe for concurrent use.
type Chains struct {
	st *store.Store
}

// NewChains returns the repository over st.
func NewChains(st *store.Store) *Chains { return &Chains{st: st} }

// Advance records a stage; see AdvanceTx.
func (c *Chains) Advance(ctx context.Context, s Stage) error {
	return c.st.Tx(ctx, func(tx *store.Tx) error { return AdvanceTx(tx, s) })
}

// AdvanceTx records a stage inside tx (with the decision that reached it).
// Recording a stage again keeps the first record. A stage whose
// predecessor is missing, or whose alternative is recorded, is refused
// with ErrOutOfOrder. A zero At is the transaction's time.
func AdvanceTx(tx *store.Tx, s Stage) error {
	steps, ok := lifecycles[s.Chain]
	if !ok {
		return fmt.Errorf("graph: no lifecycle %q", s.Chain)
	}
	i := slices.IndexFunc(steps, func(st step) bool { return st.name == s.Name })
	if i < 0 {
		return fmt.Errorf("graph: lifecycle %s has no stage %q", s.Chain, s.Name)
	}
	if s.Subject == "" {
		return errors.New("graph: a stage needs a subject")
	}
	have, err := recorded(tx, s.Subject)
	if err != nil {
		return err
	}
	if have[s.Name] {
		return nil
	}
	after := steps[i].after
	if after != "" && !have[after] {
		return fmt.Errorf("graph: %s %s cannot be %s before it is %s: %w", s.Chain, s.Subject, steps[i].label, labelOf(steps, after), ErrOutOfOrder)
	}
	for _, alt := range steps {
		if alt.after == after && alt.name != s.Name && have[alt.name] {
			return fmt.Errorf("graph: %s %s is already %s, not %s: %w", s.Chain, s.Subject, alt.label, steps[i].label, ErrOutOfOrder)
		}
	}
	at := s.At
	if at.IsZero() {
		at = tx.Now()
	}
	ev, err := json.Marshal(nonNil(s.Evidence))
	if err != nil {
		return err
	}
	if _, err := tx.Exec(`INSERT INTO item_chains (subject, chain, stage, at, evidence, detail) VALUES (?, ?, ?, ?, ?, ?)`,
		s.Subject, s.Chain, s.Name, at.UnixMilli(), string(ev), s.Detail); err != nil {
		return fmt.Errorf("graph: record %s %s: %w", s.Subject, s.Name, err)
	}
	return nil
}

func recorded(tx *store.Tx, subject string) (map[string]bool, error) {
	names, err := store.Collect(context.Background(), tx, store.Value[string], `SELECT stage FROM item_chains WHERE subject = ?`, subject)
	if err != nil {
		return nil, fmt.Errorf("graph: stages of %s: %w", subject, err)
	}
	have := map[string]bool{}
	for _, n := range names {
		have[n] = true
	}
	return have, nil
}

func labelOf(steps []step, name string) string {
	for _, s := range steps {
		if s.name == name {
			return s.label
		}
	}
	return name
}

func nonNil(ids []int64) []int64 {
	if ids == nil {
		return []int64{}
	}
	return ids
}

// Of returns a subject's recorded stages in the order they were reached:
// their lifecycle's order (a stage is recorded only after the one it
// follows), not their times, since a stage's time may be the item's own,
// from another clock than ours.
func (c *Chains) Of(ctx context.Context, subject string) ([]Stage, error) {
	out, err := store.Collect(ctx, c.st.DB(), scanStage, `SELECT subject, chain, stage, at, evidence, detail FROM item_chains WHERE subject = ? ORDER BY rowid`, subject)
	if err != nil {
		return nil, fmt.Errorf("graph: stages of %s: %w", subject, err)
	}
	slices.SortStableFunc(out, func(a, b Stage) int { return position(a) - position(b) })
	return out, nil
}

// position is a stage's place in its lifecycle.
func position(s Stage) int {
	return slices.IndexFunc(lifecycles[s.Chain], func(st step) bool { return st.name == s.Name })
}

// Has reports whether a subject reached a stage.
func (c *Chains) Has(ctx context.Context, subject, stage string) (bool, error) {
	var n int
	err := c.st.DB().QueryRowContext(ctx, `SELECT count(*) FROM item_chains WHERE subject = ? AND stage = ?`, subject, stage).Scan(&n)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return false, fmt.Errorf("graph: stage %s of %s: %w", stage, subject, err)
	}
	return n > 0, nil
}

func scanStage(r store.Scanner) (Stage, error) {
	var s Stage
	var at int64
	var ev string
	if err := r.Scan(&s.Subject, &s.Chain, &s.Name, &at, &ev, &s.Detail); err != nil {
		return s, err
	}
	s.At = time.UnixMilli(at).UTC()
	if err := json.Unmarshal([]byte(ev), &s.Evidence); err != nil {
		return s, fmt.Errorf("evidence of %s %s: %w", s.Subject, s.Name, err)
	}
	return s, nil
}

// Render writes a chain for a person: one line per stage with its time,
// evidence and detail.
func Render(stages []Stage, loc *time.Location) string {
	var b strings.Builder
	for i, s := range stages {
		if i > 0 {
			b.WriteString(" → ")
		}
		b.WriteString(s.Label())
	}
	b.WriteString("\n")
	for _, s := range stages {
		fmt.Fprintf(&b, "  %s  %-16s", s.At.In(loc).Format("Jan 2 15:04:05"), s.Label())
		if len(s.Evidence) > 0 {
			ids := make([]string, len(s.Evidence))
			for i, id := range s.Evidence {
				ids[i] = strconv.FormatInt(id, 10)
			}
			fmt.Fprintf(&b, " items %s", strings.Join(ids, ", "))
		}
		if s.Detail != "" {
			fmt.Fprintf(&b, " — %s", s.Detail)
		}
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n")
}
