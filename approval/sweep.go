package approval

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/omnibrain/omnibrain/store"
)

// Sweep expires undecided proposals whose time ran out and brings snoozed
// ones back (shown to the owner again).
func (g *Gate) Sweep(ctx context.Context) error {
	if err := g.expireDue(ctx); err != nil {
		return err
	}
	return g.wakeSnoozed(ctx)
}

func (g *Gate) expireDue(ctx context.Context) error {
	now := g.now().UTC()
	ps, err := g.records(ctx).list(filter{States: undecided, ExpiresBefore: now, Oldest: true})
	if err != nil {
		return fmt.Errorf("approval: expire: %w", err)
	}
	for _, r := range ps {
		if p, err := g.systemTransition(ctx, r, StateExpired, "expired", "not decided by "+r.Expires.Format(time.RFC3339), nil); err != nil {
			return err
		} else if p != nil {
			g.changed(p)
		}
	}
	return nil
}

func (g *Gate) wakeSnoozed(ctx context.Context) error {
	now := g.now().UTC()
	ps, err := g.records(ctx).list(filter{States: []State{StateSnoozed}, SnoozedBefore: now, Oldest: true})
	if err != nil {
		return fmt.Errorf("approval: wake snoozed: %w", err)
	}
	for _, r := range ps {
		var zero time.Time
		p, err := g.systemTransition(ctx, r, StatePending, "woken", "snooze over", &zero)
		if err != nil {
			return err
		}
		if p == nil {
			continue
		}
		g.changed(p)
		// A new key: the proposal is shown again, once per snooze.
		g.announce(ctx, p, "proposal:"+p.ID+":after-snooze:"+strconv.FormatInt(r.SnoozeUntil.UnixMilli(), 10))
	}
	return nil
}

// systemTransition moves an undecided proposal on the system's behalf; nil
// when another decision came first.
func (g *Gate) systemTransition(ctx context.Context, p *Proposal, to State, action, detail string, snooze *time.Time) (*Proposal, error) {
	var after *Proposal
	err := g.st.Tx(ctx, func(tx *store.Tx) error {
		r := inTx(tx)
		c := change{ID: p.ID, From: []State{p.State}, PayloadHash: p.PayloadHash, To: to, SnoozeUntil: snooze}
		if to == StateExpired {
			c.Decided, c.DecidedBy = g.now().UTC(), actorSystem
		}
		ok, err := r.transition(c)
		if err != nil || !ok {
			return err
		}
		if err := r.audit(AuditEntry{Actor: actorSystem, Action: action, ProposalID: p.ID, PayloadHash: p.PayloadHash, Detail: detail}); err != nil {
			return err
		}
		after, err = r.get(p.ID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("approval: %s %s: %w", action, p.ID, err)
	}
	return after, nil
}

// ThreadConsumer is the item_events consumer name of SupersedeAnswered.
const ThreadConsumer = "approval.threads"

// SupersedeAnswered reads new items and supersedes the mail proposals of
// a thread the owner has answered themselves (an outbound mail in the
// thread newer than the proposal) that are undecided or approved and
// waiting out the send delay. It returns how many events it read.
func (g *Gate) SupersedeAnswered(ctx context.Context) (int, error) {
	events, err := g.st.PendingEvents(ctx, ThreadConsumer, 200)
	if err != nil || len(events) == 0 {
		return 0, err
	}
	ids := make([]int64, 0, len(events))
	for _, e := range events {
		ids = append(ids, e.ItemID)
	}
	items, err := g.st.ItemsByID(ctx, ids)
	if err != nil {
		return 0, fmt.Errorf("approval: read new items: %w", err)
	}
	var changed []*Proposal
	err = g.st.Tx(ctx, func(tx *store.Tx) error {
		for _, it := range items {
			if it.Kind != "email" || it.Thread == "" || it.Meta["outbound"] != true {
				continue
			}
			why := fmt.Sprintf("the owner answered the thread (%s item %s)", it.Source, it.ExternalID)
			ps, err := g.supersedeThread(inTx(tx), it.Thread, it.Time, "", actorGmail, why, notStarted)
			if err != nil {
				return err
			}
			changed = append(changed, ps...)
		}
		return tx.AckEvents(ThreadConsumer, events[len(events)-1].ID)
	})
	if err != nil {
		return 0, fmt.Errorf("approval: supersede answered threads: %w", err)
	}
	g.changed(changed...)
	return len(events), nil
}

// notStarted are the states in which a proposal can still be stopped.
var notStarted = []State{StatePending, StateSnoozed, StateApproved}

// recheck looks at an approved proposal again just before it runs and
// stops it if it should not: its time ran out during the send delay, or
// the owner answered its thread meanwhile. It reports whether it stopped it.
func (g *Gate) recheck(ctx context.Context, p *Proposal) bool {
	if !g.now().Before(p.Expires) {
		stopped, err := g.systemTransition(ctx, p, StateExpired, "expired", "approved, but it expired at "+p.Expires.Format(time.RFC3339)+" before it could run", nil)
		if err != nil {
			g.log.Error("could not expire a proposal", "proposal", p.ID, "err", err)
			return true // not executed: the next pass tries again
		}
		if stopped != nil {
			g.changed(stopped)
		}
		return true
	}
	if !isEmailKind(p.Kind) || p.Thread == "" {
		return false
	}
	th, err := g.st.Thread(ctx, p.Thread)
	if errors.Is(err, store.ErrNotFound) {
		return false
	}
	if err != nil {
		g.log.Error("could not check whether the thread was answered; not sending yet", "proposal", p.ID, "err", err)
		return true
	}
	if !th.LastOutbound.After(p.Created) {
		return false
	}
	var stopped []*Proposal
	err = g.st.Tx(ctx, func(tx *store.Tx) error {
		stopped, err = g.supersedeThread(inTx(tx), p.Thread, th.LastOutbound, "", actorGmail,
			"the owner answered the thread at "+th.LastOutbound.Format(time.RFC3339)+" while it waited to be sent", []State{StateApproved})
		return err
	})
	if err != nil {
		g.log.Error("could not supersede an answered thread's proposal", "proposal", p.ID, "err", err)
		return true
	}
	g.changed(stopped...)
	return true
}
