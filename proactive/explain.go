package proactive

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/graph"
	"github.com/omnibrain/omnibrain/store"
)

// ErrNotFound is returned by Explain for an id that names nothing known.
var ErrNotFound = errors.New("nothing with that id")

// Explanation is why omnibrain did what it did about an item or a proposal.
type Explanation struct {
	Item          *ExplainedItem          `json:"item,omitempty"`
	Triage        *store.Triage           `json:"triage,omitempty"`
	Proposal      *approval.Proposal      `json:"proposal,omitempty"`
	Notifications []ExplainedNotification `json:"notifications,omitempty"`
	Followups     []*store.Followup       `json:"followups,omitempty"`
	Preferences   []store.Preference      `json:"preferences,omitempty"`
	// Chain is the item's reasoning chain as far as it went.
	Chain []graph.Stage `json:"chain,omitempty"`
}

// ExplainedItem is the item an explanation is about.
type ExplainedItem struct {
	ID         int64     `json:"id"`
	Source     string    `json:"source"`
	ExternalID string    `json:"external_id"`
	Kind       string    `json:"kind"`
	Time       time.Time `json:"time"`
	Title      string    `json:"title"`
	Sender     string    `json:"sender"`
	// DateUncertain says how the time was guessed for a message that had
	// no date of its own; empty when the time is its own.
	DateUncertain string `json:"date_uncertain,omitempty"`
}

// ExplainedNotification is what the owner was told about the item, and when.
type ExplainedNotification struct {
	Key       string    `json:"key"`
	Level     string    `json:"level"`
	State     string    `json:"state"`
	Created   time.Time `json:"created"`
	Delivered time.Time `json:"delivered,omitzero"`
	Reason    string    `json:"reason,omitempty"` // why it was held or failed
}

// Explain explains an item, by the id it was collected or imported with
// (a Gmail message id, a Message-ID, an event id, "pr:owner/repo#3"), or a
// proposal, by its id: the triage decision with every factor, the proposal
// it led to, what the owner was told, and the preferences that applied.
func (e *Engine) Explain(ctx context.Context, id string) (*Explanation, error) {
	id = strings.TrimSpace(id)
	if id == "" {
		return nil, fmt.Errorf("explain: %w", ErrNotFound)
	}
	x := &Explanation{}
	var it *store.Item
	if e.o.Gate != nil && approval.ValidID(id) {
		p, err := e.o.Gate.Get(ctx, id)
		switch {
		case err == nil:
			x.Proposal = p
			if p.ItemID != 0 {
				if it, err = e.o.Store.Item(ctx, p.ItemID); err != nil && !errors.Is(err, store.ErrNotFound) {
					return nil, fmt.Errorf("explain: %w", err)
				}
			}
		case !errors.Is(err, approval.ErrNotFound):
			return nil, fmt.Errorf("explain: %w", err)
		}
	}
	if x.Proposal == nil {
		items, err := e.o.Store.ItemsByExternalID(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("explain: %w", err)
		}
		if len(items) == 0 {
			return nil, fmt.Errorf("explain %q: %w", id, ErrNotFound)
		}
		it = items[0]
		for _, c := range items { // prefer the one triage decided
			if _, err := e.o.Store.TriageOf(ctx, c.ID); err == nil {
				it = c
				break
			}
		}
	}
	if it == nil {
		return x, nil
	}
	x.Item = &ExplainedItem{ID: it.ID, Source: it.Source, ExternalID: it.ExternalID, Kind: it.Kind, Time: it.Time, Title: it.Title, Sender: it.Sender}
	x.Item.DateUncertain, _ = it.Meta["date_uncertain"].(string)
	tr, err := e.o.Store.TriageOf(ctx, it.ID)
	switch {
	case err == nil:
		x.Triage = tr
		if x.Proposal == nil && tr.ProposalID != "" && e.o.Gate != nil {
			if p, err := e.o.Gate.Get(ctx, tr.ProposalID); err == nil {
				x.Proposal = p
			}
		}
	case !errors.Is(err, store.ErrNotFound):
		return nil, fmt.Errorf("explain: %w", err)
	}
	if x.Chain, err = graph.NewChains(e.o.Store).Of(ctx, graph.ItemSubject(it.ID)); err != nil {
		return nil, fmt.Errorf("explain: %w", err)
	}
	ns, err := e.o.Store.NotificationsForItem(ctx, it.ID)
	if err != nil {
		return nil, fmt.Errorf("explain: %w", err)
	}
	for _, n := range ns {
		x.Notifications = append(x.Notifications, ExplainedNotification{Key: n.Key, Level: n.Level, State: n.State, Created: n.Created, Delivered: n.Delivered, Reason: n.LastError})
	}
	fs, err := e.o.Store.OpenFollowups(ctx, 1000)
	if err != nil {
		return nil, fmt.Errorf("explain: %w", err)
	}
	for _, f := range fs {
		if f.ItemID == it.ID || (f.Thread != "" && f.Thread == it.Thread) {
			x.Followups = append(x.Followups, f)
		}
	}
	if it.Sender != "" {
		keys := []string{"sender:" + it.Sender}
		if _, d, ok := strings.Cut(it.Sender, "@"); ok {
			keys = append(keys, "domain:"+d)
		}
		prefs, err := e.o.Store.PreferencesFor(ctx, keys...)
		if err != nil {
			return nil, fmt.Errorf("explain: %w", err)
		}
		for _, k := range keys {
			if p, ok := prefs[k]; ok {
				x.Preferences = append(x.Preferences, p)
			}
		}
	}
	return x, nil
}

// FormatExplanation writes an explanation for a person.
func FormatExplanation(x *Explanation, loc *time.Location) string {
	var b strings.Builder
	if it := x.Item; it != nil {
		fmt.Fprintf(&b, "%s %s%s: %s\n", it.Source, it.Kind, strings.TrimSuffix(" from "+it.Sender, " from "), orNone(it.Title))
		fmt.Fprintf(&b, "  id %s, %s\n", it.ExternalID, it.Time.In(loc).Format("Mon Jan 2 2006 15:04 MST"))
		if it.DateUncertain != "" {
			fmt.Fprintf(&b, "  ~ the date is a guess: %s\n", it.DateUncertain)
		}
	}
	if len(x.Chain) > 0 {
		fmt.Fprintf(&b, "\nReasoning chain: %s\n", graph.Render(x.Chain, loc))
	}
	if tr := x.Triage; tr != nil {
		fmt.Fprintf(&b, "\nTriage: %s — %s, priority %d, notification level %s\n", tr.Decision, tr.Category, tr.Score, tr.Level)
		if !tr.Deadline.IsZero() {
			fmt.Fprintf(&b, "Deadline: %s\n", tr.Deadline.In(loc).Format("Mon Jan 2 15:04 MST"))
		}
		if tr.Model != "" {
			fmt.Fprintf(&b, "A model settled the uncertain middle (%d tokens)\n", tr.Tokens)
		}
		b.WriteString("Factors:\n")
		for _, f := range tr.Factors {
			if f.Points != 0 {
				fmt.Fprintf(&b, "  %+4d  %-16s %s\n", f.Points, f.Name, f.Detail)
			} else {
				fmt.Fprintf(&b, "        %-16s %s\n", f.Name, f.Detail)
			}
		}
	} else if x.Item != nil {
		b.WriteString("\nNot triaged (only new mail, GitHub items and imported mail of the last 7 days are).\n")
	}
	if p := x.Proposal; p != nil {
		fmt.Fprintf(&b, "\nProposal %s (%s, %s): %s\n  why: %s\n  by: %s, created %s\n", p.ID, p.Kind, p.State, p.Title, p.Reason, p.Origin, p.Created.In(loc).Format("Mon Jan 2 15:04"))
	}
	if len(x.Notifications) > 0 {
		b.WriteString("\nTold you:\n")
		for _, n := range x.Notifications {
			fmt.Fprintf(&b, "  %s %s (%s)", n.Level, n.State, n.Key)
			if n.Reason != "" {
				fmt.Fprintf(&b, " — %s", n.Reason)
			}
			b.WriteString("\n")
		}
	}
	for _, f := range x.Followups {
		fmt.Fprintf(&b, "\nFollow-up (%s): %s\n", f.Kind, f.Detail)
	}
	for _, p := range x.Preferences {
		fmt.Fprintf(&b, "\nPreference %s: %+.0f (%s, %d observations) %s\n", p.Key, p.Weight, p.Source, p.Evidence, p.Detail)
	}
	return strings.TrimRight(b.String(), "\n")
}
