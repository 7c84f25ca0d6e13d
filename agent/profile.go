package agent

import (
	"context"
	"fmt"
	"github.com/omnibrain/omnibrain/internal/untrusted"
	"strings"
	"time"
)

// Profile is what the agent knows about the owner right now. Every part
// but Now is optional; missing parts are left out of the prompt.
type Profile struct {
	Owner        string
	Emails       []string
	Location     *time.Location
	Now          time.Time
	Pending      []ProfileProposal
	Today        []ProfileEvent
	Preferences  []string
	TopContacts  []ProfileContact
	Observations []string
}

// ProfileProposal is a proposal waiting for the owner.
type ProfileProposal struct {
	ID, Kind, Title string
}

// ProfileEvent is one of today's calendar events.
type ProfileEvent struct {
	Start, End time.Time
	AllDay     bool
	Title      string
	Location   string
}

// ProfileContact is someone the owner deals with often.
type ProfileContact struct {
	Name, Address string
	Messages      int
}

// Render writes the profile for the system prompt within about budget
// tokens: the owner and local time first, then pending proposals, today's
// calendar, preferences, top contacts and observations, each line added
// while it fits. Everything past the owner and the time goes inside one
// untrusted-data block: event titles, names, observations quoting mail,
// and learned preferences naming senders all carry outside text.
func (p *Profile) Render(budget int) string {
	if p == nil {
		return ""
	}
	loc := p.Location
	if loc == nil {
		loc = time.Local
	}
	now := p.Now.In(loc)
	var head strings.Builder
	head.WriteString("About the owner:\n")
	if p.Owner != "" || len(p.Emails) > 0 {
		fmt.Fprintf(&head, "Owner: %s", p.Owner)
		if len(p.Emails) > 0 {
			fmt.Fprintf(&head, " <%s>", strings.Join(p.Emails, ">, <"))
		}
		head.WriteString("\n")
	}
	fmt.Fprintf(&head, "Timezone: %s. Local time: %s.\n", loc, now.Format("Monday 2006-01-02 15:04"))

	used := EstimateTokens(head.String()) + 30 // the data block's delimiters
	var data strings.Builder
	add := func(dst *strings.Builder, title string, lines []string) {
		if len(lines) == 0 {
			return
		}
		cost := EstimateTokens(title)
		if used+cost+EstimateTokens(lines[0]) > budget {
			return
		}
		dst.WriteString(title)
		used += cost
		for _, l := range lines {
			c := EstimateTokens(l)
			if used+c > budget {
				break
			}
			dst.WriteString(l)
			used += c
		}
	}
	var lines []string
	for _, pr := range p.Pending {
		lines = append(lines, fmt.Sprintf("- %s (%s): %s\n", pr.ID, pr.Kind, oneLine(pr.Title)))
	}
	add(&data, "Proposals waiting for the owner's approval:\n", lines)
	lines = nil
	for _, ev := range p.Today {
		when := "all day"
		if !ev.AllDay {
			when = ev.Start.In(loc).Format("15:04")
			if !ev.End.IsZero() {
				when += "–" + ev.End.In(loc).Format("15:04")
			}
		}
		l := fmt.Sprintf("- %s %s", when, oneLine(ev.Title))
		if ev.Location != "" {
			l += " (" + oneLine(ev.Location) + ")"
		}
		lines = append(lines, l+"\n")
	}
	add(&data, "Today's calendar:\n", lines)
	lines = nil
	for _, pr := range p.Preferences {
		lines = append(lines, "- "+oneLine(pr)+"\n")
	}
	add(&data, "The owner's preferences:\n", lines)
	lines = nil
	for _, c := range p.TopContacts {
		l := "- " + oneLine(c.Name)
		if c.Address != "" {
			l += " <" + c.Address + ">"
		}
		if c.Messages > 0 {
			l += fmt.Sprintf(" (%d messages)", c.Messages)
		}
		lines = append(lines, l+"\n")
	}
	add(&data, "Frequent contacts:\n", lines)
	lines = nil
	for _, o := range p.Observations {
		lines = append(lines, "- "+oneLine(o)+"\n")
	}
	add(&data, "Recent observations:\n", lines)

	out := head.String()
	if data.Len() > 0 {
		out += untrusted.Wrap("profile", data.String()) + "\n"
	}
	return out
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return clipRunes(s, 160)
}

// ProfileBuilder assembles a Profile from whatever sources are wired; a
// nil function leaves its part out, and a failing one is logged by the
// agent and left out too, so a broken source never stops a run.
type ProfileBuilder struct {
	Owner    string
	Emails   []string
	Location *time.Location
	Now      func() time.Time

	Pending      func(ctx context.Context) ([]ProfileProposal, error)
	Today        func(ctx context.Context, from, to time.Time) ([]ProfileEvent, error)
	Preferences  func(ctx context.Context) ([]string, error)
	TopContacts  func(ctx context.Context, n int) ([]ProfileContact, error)
	Observations func(ctx context.Context, n int) ([]string, error)
}

// Profile gathers the parts. Its error joins the parts that failed; the
// profile is still usable.
func (b *ProfileBuilder) Profile(ctx context.Context) (*Profile, error) {
	loc := b.Location
	if loc == nil {
		loc = time.Local
	}
	now := time.Now
	if b.Now != nil {
		now = b.Now
	}
	p := &Profile{Owner: b.Owner, Emails: b.Emails, Location: loc, Now: now()}
	var errs []string
	note := func(what string, err error) {
		if err != nil {
			errs = append(errs, what+": "+err.Error())
		}
	}
	var err error
	if b.Pending != nil {
		p.Pending, err = b.Pending(ctx)
		note("pending proposals", err)
	}
	if b.Today != nil {
		local := p.Now.In(loc)
		start := time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, loc)
		p.Today, err = b.Today(ctx, start, start.AddDate(0, 0, 1))
		note("calendar", err)
	}
	if b.Preferences != nil {
		p.Preferences, err = b.Preferences(ctx)
		note("preferences", err)
	}
	if b.TopContacts != nil {
		p.TopContacts, err = b.TopContacts(ctx, 8)
		note("contacts", err)
	}
	if b.Observations != nil {
		p.Observations, err = b.Observations(ctx, 5)
		note("observations", err)
	}
	if len(errs) > 0 {
		return p, fmt.Errorf("agent: profile: %s", strings.Join(errs, "; "))
	}
	return p, nil
}
