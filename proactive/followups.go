package proactive

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/notify"
	"github.com/omnibrain/omnibrain/proactive/triage"
	"github.com/omnibrain/omnibrain/store"
)

// maxNudgesPerRun keeps a first run over an old mailbox from proposing a
// flood of nudges.
const maxNudgesPerRun = 3

// FollowupResult is what one follow-up pass found.
type FollowupResult struct {
	Opened []*store.Followup // new follow-ups (each told once, as FYI)
	Open   int               // open follow-ups of all kinds after the pass
	Nudges int               // nudge proposals made
}

// Followups finds what the owner should follow up on:
//
//   - awaiting_reply: the owner wrote last in a conversation, asking
//     something, AwaitDays ago or more, and nobody answered;
//   - owes_reply: an important person (a VIP, or someone the owner writes
//     to) wrote to the owner OwesDays ago or more, unanswered;
//   - gone_quiet: a regular two-way contact has not written in QuietDays.
//
// Waits older than MaxAgeDays are over, not overdue. New follow-ups are
// told once (FYI, into the next briefing); an awaiting reply older than
// NudgeDays gets a nudge proposal, which like everything outgoing needs
// the owner's approval.
func (e *Engine) Followups(ctx context.Context) (*FollowupResult, error) {
	res, err := e.followups(ctx)
	if err != nil {
		e.fail(err)
		return nil, fmt.Errorf("proactive: follow-ups: %w", err)
	}
	return res, nil
}

func (e *Engine) followups(ctx context.Context) (*FollowupResult, error) {
	now := e.o.Now()
	f := e.o.Followups
	st := e.o.Store
	owner, err := e.ownerAddresses(ctx)
	if err != nil {
		return nil, err
	}
	oldest := now.AddDate(0, 0, -f.MaxAgeDays)
	res := &FollowupResult{}

	awaiting, err := st.ThreadsAwaitingReply(ctx, now.AddDate(0, 0, -f.AwaitDays), 500)
	if err != nil {
		return nil, err
	}
	var found []*store.Followup
	for _, th := range awaiting {
		if th.LastTime.Before(oldest) {
			continue
		}
		others := without(th.Participants, owner)
		if len(others) == 0 {
			continue
		}
		// Only a mail that asks something waits for an answer: "Thanks."
		// ends a conversation.
		last, err := st.Item(ctx, th.LastItemID)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if !triage.AsksSomething(last.Title, last.Body) {
			continue
		}
		found = append(found, &store.Followup{Key: th.Thread, Thread: th.Thread, Contact: others[0], Subject: th.Subject, ItemID: th.LastItemID, Since: th.LastTime,
			Detail: fmt.Sprintf("you wrote “%s” to %s %s ago; no answer yet", orNone(th.Subject), joinMax(others, 2), human(now.Sub(th.LastTime)))})
	}
	if err := e.syncFollowups(ctx, store.FollowupAwaitingReply, found, res); err != nil {
		return nil, err
	}
	if err := e.nudge(ctx, found, now, res); err != nil {
		return nil, err
	}

	owes, err := st.ThreadsOwingReply(ctx, now.AddDate(0, 0, -f.OwesDays), 500)
	if err != nil {
		return nil, err
	}
	found = nil
	for _, th := range owes {
		if th.LastTime.Before(oldest) || th.LastSender == "" {
			continue
		}
		important, why, err := e.important(ctx, th.LastSender)
		if err != nil {
			return nil, err
		}
		if !important {
			continue
		}
		found = append(found, &store.Followup{Key: th.Thread, Thread: th.Thread, Contact: th.LastSender, Subject: th.Subject, ItemID: th.LastItemID, Since: th.LastTime,
			Detail: fmt.Sprintf("%s (%s) wrote “%s” %s ago; you have not answered", th.LastSender, why, orNone(th.Subject), human(now.Sub(th.LastTime)))})
	}
	if err := e.syncFollowups(ctx, store.FollowupOwesReply, found, res); err != nil {
		return nil, err
	}

	quiet, err := st.QuietContacts(ctx, now.AddDate(0, 0, -f.QuietDays), now.AddDate(0, 0, -90), 3, 20)
	if err != nil {
		return nil, err
	}
	found = nil
	for _, q := range quiet {
		name := q.Address
		if q.Name != "" {
			name = q.Name + " <" + q.Address + ">"
		}
		found = append(found, &store.Followup{Key: q.Address, Contact: q.Address, Since: q.LastSeen,
			Detail: fmt.Sprintf("%s (%d mails from them, %d to them) has been quiet for %s", name, q.Inbound, q.Outbound, human(now.Sub(q.LastSeen)))})
	}
	if err := e.syncFollowups(ctx, store.FollowupGoneQuiet, found, res); err != nil {
		return nil, err
	}
	open, err := st.OpenFollowups(ctx, 10000)
	if err != nil {
		return nil, err
	}
	res.Open = len(open)
	return res, nil
}

func (e *Engine) syncFollowups(ctx context.Context, kind string, found []*store.Followup, res *FollowupResult) error {
	opened, err := e.o.Store.SyncFollowups(ctx, kind, found)
	if err != nil {
		return err
	}
	for _, f := range opened {
		res.Opened = append(res.Opened, f)
		key := fmt.Sprintf("followup:%s:%s:%d", kind, f.Key, f.Since.UnixMilli())
		if err := e.notify(ctx, notify.Message{Level: notify.FYI, Key: key, Text: "Follow-up: " + f.Detail, ItemID: f.ItemID}); err != nil {
			return err
		}
	}
	return nil
}

// important says whether a sender's unanswered mail is worth a follow-up.
func (e *Engine) important(ctx context.Context, addr string) (bool, string, error) {
	if rule := triage.MatchVIP(e.o.Owner.VIPs, addr); rule != "" {
		return true, "VIP", nil
	}
	c, err := e.o.Store.Contact(ctx, addr)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return false, "", nil
	case err != nil:
		return false, "", err
	case c.VIP:
		return true, "VIP", nil
	case c.Outbound >= 2:
		return true, fmt.Sprintf("you wrote to them %d times", c.Outbound), nil
	}
	return false, "", nil
}

// nudge proposes a polite follow-up for waits past NudgeDays, once each.
func (e *Engine) nudge(ctx context.Context, found []*store.Followup, now time.Time, res *FollowupResult) error {
	if e.o.Gate == nil || e.o.Followups.NudgeDays < 0 {
		return nil
	}
	for _, f := range found {
		if res.Nudges == maxNudgesPerRun {
			break
		}
		if f.ProposalID != "" || now.Sub(f.Since) < time.Duration(e.o.Followups.NudgeDays)*24*time.Hour || f.ItemID == 0 {
			continue
		}
		it, err := e.o.Store.Item(ctx, f.ItemID)
		if err != nil {
			return err
		}
		payload, ok := nudgePayload(it, e.o.Owner.Name)
		if !ok {
			continue
		}
		p, err := e.o.Gate.Propose(ctx, approval.Draft{
			Kind: approval.KindReply, Title: fmt.Sprintf("Nudge %s: %s", payload.To[0], payload.Subject),
			Reason: "Follow-up (templated): " + f.Detail, Origin: "proactive", Payload: payload, ItemID: it.ID, Thread: it.Thread,
		})
		if err != nil {
			e.o.Log.Error("could not propose a nudge", "thread", f.Thread, "err", err)
			continue
		}
		if err := e.o.Store.SetFollowupProposal(ctx, f, p.ID); err != nil {
			return err
		}
		f.ProposalID = p.ID
		res.Nudges++
	}
	return nil
}

// nudgePayload is a short follow-up to the owner's own last mail, threaded
// under it and sent to the same people.
func nudgePayload(it *store.Item, ownerName string) (approval.EmailPayload, bool) {
	m := triage.MailFromItem(it)
	if len(m.To) == 0 {
		return approval.EmailPayload{}, false
	}
	sign := "Best regards"
	if ownerName != "" {
		sign += ",\n" + ownerName
	}
	body := "Hello,\n\nI am following up on my message below — could you let me know where this stands?\n\n" + sign
	p := triage.ReplyPayload(m, body)
	p.To, p.Cc = slices.Clone(m.To), slices.Clone(m.Cc)
	return p, p.InReplyTo != "" || p.ThreadID != ""
}

// without returns the addresses of list not in drop.
func without(list, drop []string) []string {
	var out []string
	for _, a := range list {
		if a = strings.ToLower(a); a != "" && !slices.Contains(drop, a) {
			out = append(out, a)
		}
	}
	return out
}
