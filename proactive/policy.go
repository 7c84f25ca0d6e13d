package proactive

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/notify"
	"github.com/omnibrain/omnibrain/store"
)

// BriefingKeyPrefix starts the notification key of every briefing; the
// owner asked for briefings, so they spend no budget and ignore quiet hours.
const BriefingKeyPrefix = "briefing:"

// Policy is the notification policy the dispatcher asks before every push:
//
//   - silent: recorded, never pushed;
//   - fyi: held, and gathered into the next briefing;
//   - important: pushed, except in quiet hours (deferred to their end) and
//     once the day's pushes (critical ones included) reach the daily
//     budget (then held for the next briefing);
//   - critical: pushed at once, but only for the small set triage can
//     explain — a personal mail it rated critical — or a system message
//     with no item. A critical message about an item triage did not rate
//     critical (spam and bulk never are) is treated as important.
//
// The same item is never pushed twice for the same reason: that is the
// queue's stable key.
type Policy struct {
	st         *store.Store
	proposals  Proposals // who started a proposal; nil: every proposal is omnibrain's
	loc        *time.Location
	quietStart int // minutes after local midnight; -1: no quiet hours
	quietEnd   int
	budget     int
	log        *slog.Logger
}

// Proposals finds a proposal, for the policy to tell what the owner asked
// for from what omnibrain started; the approval gate provides it.
type Proposals interface {
	Get(ctx context.Context, id string) (*approval.Proposal, error)
}

// ownerOrigins are the origins of proposals the owner asked for: a chat
// message (the agent answering it, or redrafting at a button's press) or
// an edit. What omnibrain starts on its own (triage, follow-ups, patterns,
// background runs) is "proactive".
var ownerOrigins = map[string]bool{"agent": true, "owner": true}

// NewPolicy builds the policy from the notification settings.
func NewPolicy(st *store.Store, proposals Proposals, n config.Notifications, loc *time.Location, log *slog.Logger) (*Policy, error) {
	if loc == nil {
		loc = time.Local
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Policy{st: st, proposals: proposals, loc: loc, quietStart: -1, quietEnd: -1, budget: n.DailyBudget, log: log}
	if n.QuietStart != "" && n.QuietEnd != "" {
		var err error
		if p.quietStart, err = minutesOf(n.QuietStart); err != nil {
			return nil, fmt.Errorf("proactive: notifications.quiet_start: %w", err)
		}
		if p.quietEnd, err = minutesOf(n.QuietEnd); err != nil {
			return nil, fmt.Errorf("proactive: notifications.quiet_end: %w", err)
		}
	}
	return p, nil
}

func minutesOf(hhmm string) (int, error) {
	t, err := time.Parse("15:04", hhmm)
	if err != nil {
		return 0, fmt.Errorf("%q: want HH:MM", hhmm)
	}
	return t.Hour()*60 + t.Minute(), nil
}

// Decide implements notify.Policy.
func (p *Policy) Decide(ctx context.Context, m notify.Queued, now time.Time) notify.Decision {
	level := m.Level
	if level == notify.Critical {
		if ok, why := p.criticalAllowed(ctx, m); !ok {
			p.log.Info("critical notification treated as important", "key", m.Key, "why", why)
			level = notify.Important
		} else {
			return notify.Decision{Action: notify.Deliver, Reason: "critical"}
		}
	}
	switch level {
	case notify.Silent:
		return notify.Decision{Action: notify.Hold, Reason: "silent"}
	case notify.FYI:
		return notify.Decision{Action: notify.Hold, Reason: "fyi: batched into the next briefing"}
	}
	if strings.HasPrefix(m.Key, BriefingKeyPrefix) {
		return notify.Decision{Action: notify.Deliver, Reason: "a briefing the owner scheduled"}
	}
	if why := p.ownerAsked(ctx, m); why != "" {
		// Quiet hours are for what omnibrain starts by itself: what the
		// owner just asked for answers at once, whatever the hour.
		return notify.Decision{Action: notify.Deliver, Reason: why, Asked: true}
	}
	if end, quiet := p.quietUntil(now); quiet {
		return notify.Decision{Action: notify.Defer, Until: end, Reason: "quiet hours"}
	}
	if p.budget > 0 {
		// Every push interrupts, critical ones too: they count against the
		// budget, though the budget never stops them.
		pushed, err := p.st.PushedSince(ctx, localMidnight(now, p.loc), []string{string(notify.Important), string(notify.Critical)}, BriefingKeyPrefix)
		switch {
		case err != nil:
			// Better one push too many than a lost one.
			p.log.Warn("notification budget unknown; delivering", "err", err)
		case pushed >= p.budget:
			return notify.Decision{Action: notify.Hold, Reason: fmt.Sprintf("daily budget of %d pushes spent: batched into the next briefing", p.budget)}
		}
	}
	return notify.Decision{Action: notify.Deliver}
}

// ownerAsked says why m answers something the owner did (a chat message,
// an edit, a button, an approval), or "" when omnibrain started it.
func (p *Policy) ownerAsked(ctx context.Context, m notify.Queued) string {
	if strings.HasPrefix(m.Key, approval.FailedKeyPrefix) {
		return "the outcome of an approval the owner gave"
	}
	if m.ProposalID == "" || p.proposals == nil {
		return ""
	}
	pr, err := p.proposals.Get(ctx, m.ProposalID)
	switch {
	case err != nil:
		p.log.Warn("proposal of a notification unknown; treated as omnibrain's own", "proposal", m.ProposalID, "err", err)
		return ""
	case ownerOrigins[pr.Origin]:
		return "a proposal the owner asked for (" + pr.Origin + ")"
	}
	return ""
}

// criticalAllowed reports whether a critical message may interrupt.
func (p *Policy) criticalAllowed(ctx context.Context, m notify.Queued) (bool, string) {
	if m.ItemID == 0 {
		return true, "a system message"
	}
	tr, err := p.st.TriageOf(ctx, m.ItemID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return false, "no triage decision rates this item critical"
	case err != nil:
		return false, err.Error()
	case tr.Category == "spam" || tr.Category == "bulk":
		return false, "spam and bulk mail are never critical"
	case tr.Level != string(notify.Critical):
		return false, "triage rated this item " + tr.Level
	}
	return true, "triage rated it critical"
}

// quietUntil reports whether now is in quiet hours and when they end.
func (p *Policy) quietUntil(now time.Time) (time.Time, bool) {
	if p.quietStart < 0 || p.quietStart == p.quietEnd {
		return time.Time{}, false
	}
	l := now.In(p.loc)
	mins := l.Hour()*60 + l.Minute()
	in := false
	if p.quietStart < p.quietEnd {
		in = mins >= p.quietStart && mins < p.quietEnd
	} else { // across midnight: 22:30–07:00
		in = mins >= p.quietStart || mins < p.quietEnd
	}
	if !in {
		return time.Time{}, false
	}
	end := wallClock(l.Year(), l.Month(), l.Day(), p.quietEnd, p.loc)
	if !end.After(now) {
		end = wallClock(l.Year(), l.Month(), l.Day()+1, p.quietEnd, p.loc)
	}
	return end, true
}

// wallClock is the instant the day's clocks show mins minutes after
// midnight; if the clocks skip that time (spring forward), the instant
// they jump. time.Date alone may pick a time an hour before or after.
func wallClock(y int, m time.Month, d, mins int, loc *time.Location) time.Time {
	t := time.Date(y, m, d, mins/60, mins%60, 0, 0, loc)
	got := t.Hour()*60 + t.Minute()
	if got == mins {
		return t
	}
	start, end := t.ZoneBounds()
	if got > mins && !start.IsZero() {
		return start // moved past the gap: the jump started this zone
	}
	if !end.IsZero() {
		return end // moved before the gap: the jump ends this zone
	}
	return t
}

func localMidnight(t time.Time, loc *time.Location) time.Time {
	l := t.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day(), 0, 0, 0, 0, loc)
}
