package jobs

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/agent"
	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/drafting"
	"github.com/omnibrain/omnibrain/graph"
	"github.com/omnibrain/omnibrain/proactive/triage"
	"github.com/omnibrain/omnibrain/router"
	"github.com/omnibrain/omnibrain/store"
)

// Caps of a drafting run: the context is looked up before the model is
// asked, so one turn usually writes and proposes the reply.
const (
	replyIterations = 3
	replyTokens     = 8000
	replyOutput     = 600
	replyDeadline   = 2 * time.Minute
)

// replyTools are the read tools a drafting run may use beyond what it was
// given (the thread and past mail are in its conversation already):
// something the mail refers to, a whole message the thread showed
// clipped, another day of the calendar.
var replyTools = []string{"search", "get_item", "calendar"}

// DraftReply has a background run draft the owner's reply to a mail that
// triage decided needs one, and propose it: the run first reads the
// thread, the owner's past mail to the sender and the calendar on the
// days the mail names (mentions), is told of any conflict with the
// calendar and of the mail's language, and the proposal's reason lists
// the items it used. It returns the proposal's id.
func (r *Runner) DraftReply(ctx context.Context, it *store.Item, why string, mentions []triage.Mention) (string, error) {
	m := triage.MailFromItem(it)
	subject := graph.ItemSubject(it.ID)
	prefetch := []router.ToolCall{call("thread", map[string]any{"item_id": it.ID})}
	if m.From != "" {
		prefetch = append(prefetch, call("past_replies", map[string]any{"address": m.From}))
	}
	var days []string
	for _, mn := range mentions {
		from := dayStart(mn.Time)
		prefetch = append(prefetch, call("calendar", map[string]any{"from": from.Format(time.RFC3339), "to": from.AddDate(0, 0, 1).Format(time.RFC3339)}))
		days = append(days, "calendar "+mn.Time.Format("Mon Jan 2"))
	}
	conflicts, err := r.conflicts(ctx, mentions)
	if err != nil {
		return "", err
	}

	name := m.FromName
	if name == "" {
		name = m.From
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Draft the owner's reply to the mail from %s <%s>, subject %q (item id %d). Why it needs an answer: %s.", name, m.From, m.Subject, it.ID, strings.TrimSuffix(why, "."))
	if lang := drafting.Language(m.Body); lang != "" {
		fmt.Fprintf(&b, " The mail is in %s: write the reply in %s.", lang, lang)
	} else {
		b.WriteString(" Write the reply in the mail's language.")
	}
	for _, c := range conflicts {
		fmt.Fprintf(&b, " The mail names %s, when the owner's calendar has %s: do not accept that time; say the owner is busy then and offer another time.", c.when, c.event)
	}
	b.WriteString(" Greet and sign off as the owner does with this person. Then propose the reply with propose_reply.")

	task := agent.Task{
		Objective: b.String(), Kind: DraftReply, Subject: subject, Route: router.TaskDraft, Plan: "draft_reply",
		Instructions: drafting.Rules(r.o.OwnerName), Tools: replyTools, Prefetch: prefetch,
		MaxIterations: replyIterations, MaxTokens: replyTokens, MaxOutput: replyOutput, Deadline: replyDeadline,
		FinishOn: []string{"propose_reply"}, NoProfile: true, Origin: "proactive",
	}
	uses := append([]string{"thread"}, days...)
	if m.From != "" {
		uses = slices.Insert(uses, 1, "past mail to "+m.From)
	}
	ans, err := r.run(ctx, job{task: task, chain: graph.Mail, stage: graph.ContextGathered, detail: func(items []agent.Citation) string {
		d := fmt.Sprintf("items %s (%s)", ids(items), strings.Join(uses, ", "))
		for _, c := range conflicts {
			d += fmt.Sprintf("; ⚠️ %s conflicts with %s (item %d)", c.when, c.event, c.itemID)
		}
		return d
	}})
	if err != nil {
		return "", err
	}
	id := ""
	for _, p := range ans.Proposals {
		if p.Kind == approval.KindReply {
			id = p.ID
		}
	}
	if id == "" {
		return "", fmt.Errorf("%w: the drafting run ended without proposing a reply", ErrFailed)
	}
	if err := r.o.Chains.Advance(ctx, graph.Stage{Subject: subject, Chain: graph.Mail, Name: graph.ReplyDrafted, Detail: "proposal " + id}); err != nil {
		r.o.Log.Warn("recording a drafted reply failed", "item", it.ID, "err", err)
	}
	return id, nil
}

// conflict is a time a mail names that overlaps an event of the owner's.
type conflict struct {
	when, event string
	itemID      int64
}

// conflicts finds the events overlapping the hour starting at each named
// time of day.
func (r *Runner) conflicts(ctx context.Context, mentions []triage.Mention) ([]conflict, error) {
	var out []conflict
	for _, mn := range mentions {
		if !mn.Clock {
			continue
		}
		from, to := mn.Time, mn.Time.Add(time.Hour)
		events, err := r.o.Store.ItemsBetween(ctx, []string{"event"}, dayStart(from).AddDate(0, 0, -1), dayStart(from).AddDate(0, 0, 1), 100)
		if err != nil {
			return nil, fmt.Errorf("jobs: calendar: %w", err)
		}
		for _, ev := range events {
			s, e, ok := span(ev)
			if ok && s.Before(to) && e.After(from) {
				loc := mn.Time.Location()
				out = append(out, conflict{
					when:   mn.Time.Format("Mon Jan 2 15:04"),
					event:  fmt.Sprintf("%q (%s–%s)", ev.Title, s.In(loc).Format("15:04"), e.In(loc).Format("15:04")),
					itemID: ev.ID,
				})
			}
		}
	}
	return out, nil
}

// span is an event's start and end; all-day, cancelled and declined
// events block no hour.
func span(ev *store.Item) (time.Time, time.Time, bool) {
	if allDay, _ := ev.Meta["all_day"].(bool); allDay {
		return time.Time{}, time.Time{}, false
	}
	if st, _ := ev.Meta["status"].(string); st == "cancelled" {
		return time.Time{}, time.Time{}, false
	}
	if list, ok := ev.Meta["attendees"].([]any); ok {
		for _, x := range list {
			if a, ok := x.(map[string]any); ok && a["self"] == true && a["response_status"] == "declined" {
				return time.Time{}, time.Time{}, false
			}
		}
	}
	start, end := ev.Time, ev.Time
	if s, ok := ev.Meta["start"].(string); ok {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			start = t
		}
	}
	if s, ok := ev.Meta["end"].(string); ok {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			end = t
		}
	}
	if !end.After(start) {
		end = start.Add(time.Hour)
	}
	return start, end, true
}

func dayStart(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, t.Location())
}

// call is a prefetched tool call.
func call(name string, args map[string]any) router.ToolCall {
	raw, _ := json.Marshal(args)
	return router.ToolCall{Name: name, Arguments: raw}
}

// ids lists the cited items' ids.
func ids(items []agent.Citation) string {
	parts := make([]string, 0, len(items))
	for _, c := range items {
		parts = append(parts, fmt.Sprint(c.ItemID))
	}
	return strings.Join(parts, ", ")
}
