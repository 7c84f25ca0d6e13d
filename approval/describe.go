package approval

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Field is one line of what a proposal would do, as the owner reads it.
type Field struct {
	Name  string
	Value string
}

// Describe is what a proposal would do, as the owner reads it: every
// recipient and the subject of a mail; an event's times with their dates
// and, for a change, the event as it is now beside the new values; a
// comment's place — then its free text (the body sent, the description
// attendees get). Never a summary. Telegram and the CLI show it.
func Describe(p *Proposal, loc *time.Location) (fields []Field, text string) {
	add := func(name, value string) {
		if value != "" {
			fields = append(fields, Field{name, value})
		}
	}
	switch p.Kind {
	case KindReply, KindEmail, KindForward:
		var e EmailPayload
		json.Unmarshal(p.Payload, &e)
		add("To", strings.Join(e.To, ", "))
		add("Cc", strings.Join(e.Cc, ", "))
		add("Bcc", strings.Join(e.Bcc, ", "))
		fields = append(fields, Field{"Subject", e.Subject})
		add("In reply to", e.InReplyTo)
		return fields, e.Body
	case KindCalendarCreate, KindCalendarUpdate, KindCalendarDelete, KindCalendarRespond:
		var c CalendarPayload
		json.Unmarshal(p.Payload, &c)
		return describeEvent(p.Kind, c, p.Current, loc), c.Description
	case KindGitHubComment:
		var g GitHubCommentPayload
		json.Unmarshal(p.Payload, &g)
		add("On", fmt.Sprintf("%s/%s#%d", g.Owner, g.Repo, g.Number))
		return fields, g.Body
	case KindAutomation:
		var a AutomationPayload
		json.Unmarshal(p.Payload, &a)
		add("Rule", a.Rule)
		add("Sender", a.Sender)
		add("Score change", fmt.Sprintf("%+d", a.Weight))
		return fields, a.Detail
	default:
		var pa PluginActionPayload
		json.Unmarshal(p.Payload, &pa)
		add("Plugin", pa.Plugin)
		add("Tool", pa.Tool)
		if pa.Endpoint == "" {
			add("Arguments", string(pa.Arguments))
			return fields, ""
		}
		// The exact request: where it goes and every byte of its body.
		add("Request", pa.Method+" "+pa.Endpoint)
		return fields, string(pa.Body)
	}
}

// describeEvent shows a calendar change. For an update, delete or answer
// the event as the store had it when proposed (cur) comes first, so the
// owner sees what changes and which event it is; what a payload leaves
// out stays as it is, and is shown so.
func describeEvent(kind Kind, c CalendarPayload, cur *CalendarPayload, loc *time.Location) []Field {
	var fields []Field
	add := func(name, value string) {
		if value != "" {
			fields = append(fields, Field{name, value})
		}
	}
	if kind == KindCalendarCreate {
		add("Event", c.Summary)
		add("When", EventTime(c, loc))
		add("Where", c.Location)
		add("Attendees", strings.Join(c.Attendees, ", "))
		add("Invitations sent to", sendUpdates(c))
		add("Calendar", c.CalendarID)
		return fields
	}
	if cur == nil {
		add("Event", c.EventID+" (not in the local store: its title, time and attendees are not known here)")
	} else {
		add("Event now", cur.Summary)
		add("When now", EventTime(*cur, loc))
		add("Attendees now", strings.Join(cur.Attendees, ", "))
	}
	switch kind {
	case KindCalendarDelete:
		add("Change", "delete the event")
		add("Cancellations sent to", sendUpdates(c))
		return fields
	case KindCalendarRespond:
		add("Your answer", c.Response)
		add("Answer sent to", sendUpdates(c))
		return fields
	}
	// An update: each new value beside what stays.
	unchanged := func(now string) string {
		if now == "" {
			return "unchanged"
		}
		return "unchanged (" + now + ")"
	}
	title, when, where, who := unchanged(""), unchanged(""), unchanged(""), unchanged("")
	if cur != nil {
		title, when, where, who = unchanged(cur.Summary), unchanged(EventTime(*cur, loc)), unchanged(cur.Location), unchanged(strings.Join(cur.Attendees, ", "))
	}
	if c.Summary != "" {
		title = c.Summary
	}
	if !c.Start.IsZero() || !c.End.IsZero() {
		when = EventTime(effective(c, cur), loc)
	}
	if c.Location != "" {
		where = c.Location
	}
	if len(c.Attendees) > 0 {
		who = strings.Join(c.Attendees, ", ")
	}
	add("New title", title)
	add("New time", when)
	add("New place", where)
	add("New attendees", who)
	add("Updates sent to", sendUpdates(c))
	return fields
}

// effective is the event's time after an update that sets only a start or
// an end: the rest comes from the event as it is.
func effective(c CalendarPayload, cur *CalendarPayload) CalendarPayload {
	if cur == nil {
		return c
	}
	out := c
	if out.Start.IsZero() {
		out.Start = cur.Start
	}
	if out.End.IsZero() {
		out.End = cur.End
		if !c.Start.IsZero() && !cur.Start.IsZero() { // moved: the same length
			out.End = c.Start.Add(cur.End.Sub(cur.Start))
		}
	}
	if out.TimeZone == "" {
		out.TimeZone = cur.TimeZone
	}
	if c.Start.IsZero() {
		out.AllDay = cur.AllDay
	}
	return out
}

func sendUpdates(c CalendarPayload) string {
	switch c.SendUpdates {
	case "none":
		return "nobody"
	case "externalOnly":
		return "guests outside your organisation"
	}
	return "all attendees"
}

// EventTime shows when an event is, honestly: both dates whenever start
// and end fall on different days (in the event's zone, else loc), and an
// all-day range as its first and last day with how many days it has (the
// end of an all-day event is exclusive).
func EventTime(c CalendarPayload, loc *time.Location) string {
	if c.TimeZone != "" {
		if l, err := time.LoadLocation(c.TimeZone); err == nil {
			loc = l
		}
	}
	if c.Start.IsZero() {
		return ""
	}
	start := c.Start.In(loc)
	const day, dayTime = "Mon 2 Jan 2006", "Mon 2 Jan 2006 15:04"
	if c.AllDay {
		days := 1
		if !c.End.IsZero() {
			end := c.End.In(loc)
			days = max(1, int(dateOf(end).Sub(dateOf(start)).Hours()/24+0.5))
		}
		if days == 1 {
			return start.Format(day) + " (all day)"
		}
		last := dateOf(start).AddDate(0, 0, days-1)
		return fmt.Sprintf("%s – %s (all day, %d days)", start.Format(day), last.Format(day), days)
	}
	zone := start.Format("MST")
	if c.End.IsZero() {
		return start.Format(dayTime) + " " + zone
	}
	end := c.End.In(loc)
	if dateOf(start).Equal(dateOf(end)) {
		return start.Format(dayTime) + "–" + end.Format("15:04") + " " + zone
	}
	return start.Format(dayTime) + " – " + end.Format(dayTime) + " " + zone
}

// dateOf is midnight of t's day, in UTC, for counting days across DST.
func dateOf(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}
