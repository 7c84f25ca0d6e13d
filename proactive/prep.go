package proactive

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/graph"
	"github.com/omnibrain/omnibrain/notify"
	"github.com/omnibrain/omnibrain/store"
)

// prepContext is what a meeting prep drew on, kept with it.
type prepContext struct {
	Mail        []int64  `json:"mail"`
	Threads     []string `json:"threads"`
	LastMeeting int64    `json:"last_meeting,omitempty"`
	Cited       []int64  `json:"cited,omitempty"` // what a model's brief cites
}

// MeetingPrep prepares the meetings that start within the lead time and
// have not been prepared: recent mail with the attendees, threads open
// with them, and the last meeting with them, delivered once per meeting
// (a moved meeting is a new one). It returns how many it prepared.
func (e *Engine) MeetingPrep(ctx context.Context) (int, error) {
	now := e.o.Now()
	items, err := e.o.Store.ItemsBetween(ctx, []string{"event"}, now, now.Add(e.o.PrepLead), 100)
	if err != nil {
		e.fail(err)
		return 0, fmt.Errorf("proactive: meeting prep: %w", err)
	}
	owner, err := e.ownerAddresses(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, it := range items {
		ev := eventOf(it)
		key := fmt.Sprintf("prep:%s:%d", it.ExternalID, ev.start.UnixMilli())
		if ev.cancelled || ev.declined {
			key = "" // a prep still waiting (quiet hours) goes, whatever its time
		}
		// A prep for a time the meeting no longer has, or for a meeting
		// that is off, must not go out late.
		if _, err := e.o.Store.WithdrawQueued(ctx, "prep:"+it.ExternalID+":", key); err != nil {
			return n, fmt.Errorf("proactive: meeting prep: %w", err)
		}
		if key == "" || ev.allDay || !ev.start.After(now) {
			continue
		}
		var with []attendee
		for _, a := range ev.attendees {
			if !a.self && !slices.Contains(owner, strings.ToLower(a.email)) {
				with = append(with, a)
			}
		}
		if len(with) == 0 {
			continue // a meeting with oneself needs no prep
		}
		text, err := e.storedPrep(ctx, it.ExternalID, ev.start)
		if err != nil {
			return n, err
		}
		if text == "" {
			var pc prepContext
			text, pc, err = e.prep(ctx, it, ev, with, now)
			if err != nil {
				e.fail(err)
				return n, err
			}
			if e.o.Brain != nil {
				text, pc = e.brief(ctx, it, with, text, pc)
			}
			raw, _ := json.Marshal(pc)
			added, err := e.o.Store.InsertMeetingPrep(ctx, &store.MeetingPrep{EventID: it.ExternalID, Start: ev.start, ItemID: it.ID, Text: text, Context: raw})
			if err != nil {
				return n, fmt.Errorf("proactive: meeting prep: %w", err)
			}
			if added {
				n++
			}
		}
		// Queued on every run until the meeting starts, not only when the
		// prep is stored: the daemon may have stopped in between. The key
		// keeps it to one message per meeting.
		if err := e.notify(ctx, notify.Message{Level: notify.Important, Key: key, Text: text, ItemID: it.ID}); err != nil {
			return n, err
		}
	}
	return n, nil
}

// storedPrep is the text of the prep made for the meeting at start, or "".
func (e *Engine) storedPrep(ctx context.Context, eventID string, start time.Time) (string, error) {
	ps, err := e.o.Store.MeetingPreps(ctx, start, start.Add(time.Millisecond))
	if err != nil {
		return "", fmt.Errorf("proactive: meeting prep: %w", err)
	}
	for _, p := range ps {
		if p.EventID == eventID {
			return p.Text, nil
		}
	}
	return "", nil
}

// brief has the Brain write the prep from what the template gathered: the
// template's first lines (what, when, with whom) and the model's brief
// with its sources. If no model could write it, the template stands and
// says so.
func (e *Engine) brief(ctx context.Context, it *store.Item, with []attendee, template string, pc prepContext) (string, prepContext) {
	subject := graph.ItemSubject(it.ID)
	related := slices.Clone(pc.Mail)
	if pc.LastMeeting != 0 {
		related = append(related, pc.LastMeeting)
	}
	if err := graph.NewChains(e.o.Store).Advance(ctx, graph.Stage{Subject: subject, Chain: graph.Meeting, Name: graph.Upcoming, Evidence: related,
		Detail: "starts " + it.Time.In(e.o.Location).Format("Mon Jan 2 15:04")}); err != nil {
		e.o.Log.Warn("recording an upcoming meeting failed", "event", it.ExternalID, "err", err)
	}
	names := make([]string, len(with))
	for i, a := range with {
		names[i] = a.label()
	}
	text, cited, err := e.o.Brain.MeetingBrief(ctx, it, names, related)
	if err != nil {
		e.o.Log.Warn("meeting brief unavailable; sending the templated prep", "event", it.ExternalID, "err", err)
		return template + "\n(Templated prep: " + strings.TrimPrefix(withoutModel(err), "no model summary, ") + ".)", pc
	}
	if err := graph.NewChains(e.o.Store).Advance(ctx, graph.Stage{Subject: subject, Chain: graph.Meeting, Name: graph.BriefReady, Evidence: cited, Detail: "written by a model"}); err != nil {
		e.o.Log.Warn("recording a meeting brief failed", "event", it.ExternalID, "err", err)
	}
	pc.Cited = cited
	head := firstLines(template, 2)
	return head + "\n\n" + text, pc
}

func (e *Engine) prep(ctx context.Context, it *store.Item, ev event, with []attendee, now time.Time) (string, prepContext, error) {
	var pc prepContext
	emails := make([]string, 0, len(with))
	names := make([]string, 0, len(with))
	for _, a := range with {
		if a.email != "" {
			emails = append(emails, a.email)
		}
		names = append(names, a.label())
	}
	st := e.o.Store
	mail, err := st.ItemsWithPerson(ctx, "email", emails, now.AddDate(0, 0, -30), now, 5)
	if err != nil {
		return "", pc, err
	}
	threads, err := st.OpenThreadsWith(ctx, emails, 5)
	if err != nil {
		return "", pc, err
	}
	past, err := st.ItemsWithPerson(ctx, "event", emails, ev.start.AddDate(0, 0, -120), ev.start, 10)
	if err != nil {
		return "", pc, err
	}
	var last *store.Item
	for _, p := range past {
		pev := eventOf(p)
		if p.ExternalID != it.ExternalID && !pev.cancelled && pev.start.Before(ev.start) {
			last = p
			break
		}
	}

	loc := e.o.Location
	var b strings.Builder
	fmt.Fprintf(&b, "Meeting prep: %s at %s (in %s)\n", orNone(it.Title), ev.start.In(loc).Format("Mon 15:04"), human(ev.start.Sub(now)))
	fmt.Fprintf(&b, "With: %s\n", joinMax(names, 6))
	if ev.location != "" {
		fmt.Fprintf(&b, "Where: %s\n", ev.location)
	}
	if len(ev.conflicts) > 0 {
		fmt.Fprintf(&b, "Overlaps %d other event(s)\n", len(ev.conflicts))
	}
	if len(mail) > 0 {
		b.WriteString("Recent mail with them:\n")
		for _, m := range mail {
			fmt.Fprintf(&b, " - %s %s: %s\n", m.Time.In(loc).Format("Jan 2"), m.Sender, orNone(m.Title))
			pc.Mail = append(pc.Mail, m.ID)
		}
	} else {
		b.WriteString("No mail with them in the last 30 days.\n")
	}
	if len(threads) > 0 {
		b.WriteString("Open threads:\n")
		for _, th := range threads {
			who := "waiting for your answer"
			if th.AwaitingReply {
				who = "you are waiting for an answer"
			}
			fmt.Fprintf(&b, " - %s — %s since %s\n", orNone(th.Subject), who, th.LastTime.In(loc).Format("Jan 2"))
			pc.Threads = append(pc.Threads, th.Thread)
		}
	}
	if last != nil {
		fmt.Fprintf(&b, "Last meeting with them: %s on %s\n", orNone(last.Title), eventOf(last).start.In(loc).Format("Mon Jan 2"))
		pc.LastMeeting = last.ID
	}
	if desc := strings.TrimSpace(it.Body); desc != "" {
		if len(desc) > 300 {
			desc = desc[:300] + "…"
		}
		fmt.Fprintf(&b, "Agenda: %s\n", strings.Join(strings.Fields(desc), " "))
	}
	return strings.TrimRight(b.String(), "\n"), pc, nil
}

// ownerAddresses are the configured and learned owner addresses, lower-case.
func (e *Engine) ownerAddresses(ctx context.Context) ([]string, error) {
	learned, err := e.o.Store.OwnerAddresses(ctx)
	if err != nil {
		return nil, fmt.Errorf("proactive: %w", err)
	}
	out := slices.Clone(learned)
	for _, a := range e.o.Owner.Emails {
		if a = strings.ToLower(strings.TrimSpace(a)); a != "" && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out, nil
}
