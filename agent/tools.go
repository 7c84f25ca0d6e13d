package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/omnibrain/omnibrain/search"
	"github.com/omnibrain/omnibrain/store"
)

// Searcher runs memory searches; search.Searcher provides it.
type Searcher interface {
	Search(ctx context.Context, q search.Query) ([]search.Hit, error)
}

// ItemReader reads stored items; *store.Store provides it.
type ItemReader interface {
	Item(ctx context.Context, id int64) (*store.Item, error)
	ThreadOf(ctx context.Context, source, thread string, limit int) ([]*store.Item, error)
	ItemsBetween(ctx context.Context, kinds []string, from, to time.Time, limit int) ([]*store.Item, error)
}

// ToolDeps are what the standard tools read from.
type ToolDeps struct {
	Search Searcher   // nil: no search tool
	Items  ItemReader // nil: no get_item, thread, calendar or reply/forward tools
	// Context: nil means no get_items or past_replies.
	Context ContextReader
	// OwnerEmails are left out when a reply goes to all recipients.
	OwnerEmails []string
	Location    *time.Location
	Now         func() time.Time
}

// Item-text bounds: a search hit shows a snippet, get_item the body.
const (
	hitTextLen  = 600
	itemTextLen = 8000
)

// StandardTools returns the read tools over the owner's data and the
// outgoing tools that propose mail, calendar and GitHub actions.
func StandardTools(d ToolDeps) (*Registry, error) {
	if d.Location == nil {
		d.Location = time.Local
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	var tools []*Tool
	add := func(t *Tool, err error) error {
		if err != nil {
			return err
		}
		tools = append(tools, t)
		return nil
	}
	var errs []error
	if d.Search != nil {
		errs = append(errs, add(searchTool(d)))
	}
	if d.Items != nil {
		errs = append(errs, add(getItemTool(d)), add(threadTool(d)), add(calendarTool(d)),
			add(replyTool(d)), add(forwardTool(d)))
	}
	if d.Context != nil {
		errs = append(errs, add(getItemsTool(d)), add(pastRepliesTool(d)))
	}
	errs = append(errs, add(sendEmailTool()), add(createEventTool(d)), add(updateEventTool(d)),
		add(deleteEventTool()), add(respondEventTool()), add(githubCommentTool()))
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return NewRegistry(tools...)
}

// cited turns a stored item into a citable result.
func cited(it *store.Item, text string, n int) Cited {
	return Cited{
		ItemID: it.ID, ExternalID: it.ExternalID, Source: it.Source, Kind: it.Kind,
		Title: it.Title, Time: it.Time, From: it.Sender, Text: clipRunes(strings.TrimSpace(text), n),
	}
}

type searchArgs struct {
	Query  string `json:"query" jsonschema:"what to look for, in natural language or keywords; date words like 'last week' work"`
	Limit  int    `json:"limit,omitempty" jsonschema:"how many results, 1-25 (default 8)"`
	Since  string `json:"since,omitempty" jsonschema:"only items at or after this date or time (YYYY-MM-DD or RFC 3339)"`
	Until  string `json:"until,omitempty" jsonschema:"only items before this date or time"`
	Source string `json:"source,omitempty" jsonschema:"only this source or kind: email, event, github, issue, pr, document, ..."`
	Person string `json:"person,omitempty" jsonschema:"only items involving this name or address"`
}

func searchTool(d ToolDeps) (*Tool, error) {
	return NewTool("search", "Search the owner's stored mail, calendar events, GitHub items and documents. Returns numbered items to cite.", Read, 20*time.Second,
		func(ctx context.Context, a searchArgs) (Result, error) {
			q := search.Query{Text: a.Query, Limit: a.Limit, Location: d.Location, Now: d.Now(), Fallback: true}
			if q.Limit <= 0 || q.Limit > 25 {
				q.Limit = 8
			}
			var err error
			if q.Since, err = parseWhen(a.Since, d.Location); err != nil {
				return Result{}, fmt.Errorf("since: %w", err)
			}
			if q.Until, err = parseWhen(a.Until, d.Location); err != nil {
				return Result{}, fmt.Errorf("until: %w", err)
			}
			if a.Source != "" {
				q.Sources = []string{a.Source}
			}
			if a.Person != "" {
				q.People = []string{a.Person}
			}
			hits, err := d.Search.Search(ctx, q)
			if err != nil {
				return Result{}, err
			}
			if len(hits) == 0 {
				return Result{Text: fmt.Sprintf("No results for %q.", a.Query)}, nil
			}
			res := Result{Text: fmt.Sprintf("%d result(s) for %q, best first. Use get_item with an item id for the full text.", len(hits), a.Query)}
			if o := hits[0].Outside; o != nil {
				res.Text = fmt.Sprintf("Nothing from %s matched %q. These match its other words at other times, best first; say so if you use them. Use get_item with an item id for the full text.",
					periodText(o, d.Location), a.Query)
			}
			for _, h := range hits {
				text := h.Snippet
				if text == "" {
					text = h.Item.Body
				}
				res.Items = append(res.Items, cited(h.Item, fmt.Sprintf("(item id %d) %s", h.Item.ID, text), hitTextLen))
			}
			return res, nil
		})
}

type itemArgs struct {
	ItemID int64 `json:"item_id" jsonschema:"the item id shown as (item id N) in results"`
}

func getItemTool(d ToolDeps) (*Tool, error) {
	return NewTool("get_item", "Read one stored item in full (mail body, event details, issue text).", Read, 10*time.Second,
		func(ctx context.Context, a itemArgs) (Result, error) {
			it, err := d.Items.Item(ctx, a.ItemID)
			if err != nil {
				return Result{}, err
			}
			return Result{Items: []Cited{cited(it, describe(it, d.Location), itemTextLen)}}, nil
		})
}

// describe renders an item's headers and body for get_item.
func describe(it *store.Item, loc *time.Location) string {
	var b strings.Builder
	fmt.Fprintf(&b, "(item id %d, kind %s", it.ID, it.Kind)
	if it.Thread != "" {
		fmt.Fprintf(&b, ", thread %s", it.Thread)
	}
	b.WriteString(")\n")
	for _, k := range []string{"from", "to", "cc", "start", "end", "location", "attendees", "organizer", "repo", "number", "state", "url", "reason", "labels"} {
		v, ok := it.Meta[k]
		if !ok {
			continue
		}
		switch k {
		case "to", "cc", "labels":
			fmt.Fprintf(&b, "%s: %s\n", k, listOf(metaStrings(it, k)))
		case "attendees":
			fmt.Fprintf(&b, "%s: %s\n", k, listOf(attendeesOf(v)))
		default:
			fmt.Fprintf(&b, "%s: %v\n", k, v)
		}
	}
	if len(it.People) > 0 && it.Meta["from"] == nil && it.Meta["attendees"] == nil {
		fmt.Fprintf(&b, "people: %s\n", listOf(it.People))
	}
	b.WriteString("\n")
	b.WriteString(it.Body)
	return b.String()
}

// maxListed bounds the addresses a header line shows: who else got a
// mail matters, the whole distribution list does not.
const maxListed = 5

func listOf(vs []string) string {
	if len(vs) <= maxListed {
		return strings.Join(vs, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(vs[:maxListed], ", "), len(vs)-maxListed)
}

// attendeesOf reads an event's attendees as "Name <address> (status)".
func attendeesOf(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, x := range list {
		a, ok := x.(map[string]any)
		if !ok {
			continue
		}
		email, _ := a["email"].(string)
		s := email
		if name, _ := a["name"].(string); name != "" {
			s = name + " <" + email + ">"
		}
		if self, _ := a["self"].(bool); self {
			s += " (the owner)"
		}
		if st, _ := a["response_status"].(string); st != "" && st != "accepted" {
			s += " (" + st + ")"
		}
		out = append(out, s)
	}
	return out
}

func threadTool(d ToolDeps) (*Tool, error) {
	return NewTool("thread", "List the messages of the conversation an item belongs to, oldest first.", Read, 10*time.Second,
		func(ctx context.Context, a itemArgs) (Result, error) {
			it, err := d.Items.Item(ctx, a.ItemID)
			if err != nil {
				return Result{}, err
			}
			if it.Thread == "" {
				return Result{Text: "This item is not part of a thread.", Items: []Cited{cited(it, it.Body, hitTextLen)}}, nil
			}
			items, err := d.Items.ThreadOf(ctx, it.Source, it.Thread, 30)
			if err != nil {
				return Result{}, err
			}
			res := Result{Text: fmt.Sprintf("%d message(s) in the thread, oldest first.", len(items))}
			for _, x := range items {
				res.Items = append(res.Items, cited(x, fmt.Sprintf("(item id %d) %s", x.ID, x.Body), hitTextLen))
			}
			return res, nil
		})
}

type calendarArgs struct {
	From string `json:"from,omitempty" jsonschema:"start date or time (YYYY-MM-DD or RFC 3339); default today"`
	To   string `json:"to,omitempty" jsonschema:"end date or time, exclusive; default one day after from"`
}

func calendarTool(d ToolDeps) (*Tool, error) {
	return NewTool("calendar", "List calendar events between two dates (default: today), in the owner's timezone.", Read, 10*time.Second,
		func(ctx context.Context, a calendarArgs) (Result, error) {
			from, err := parseWhen(a.From, d.Location)
			if err != nil {
				return Result{}, fmt.Errorf("from: %w", err)
			}
			if from.IsZero() {
				now := d.Now().In(d.Location)
				from = time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, d.Location)
			}
			to, err := parseWhen(a.To, d.Location)
			if err != nil {
				return Result{}, fmt.Errorf("to: %w", err)
			}
			if to.IsZero() {
				to = from.AddDate(0, 0, 1)
			}
			if !to.After(from) {
				return Result{}, errors.New("to must be after from")
			}
			events, err := d.Items.ItemsBetween(ctx, []string{"event"}, from, to, 100)
			if err != nil {
				return Result{}, err
			}
			res := Result{Text: fmt.Sprintf("%d event(s) from %s to %s.", len(events), from.Format("2006-01-02 15:04"), to.Format("2006-01-02 15:04 MST"))}
			for _, ev := range events {
				res.Items = append(res.Items, cited(ev, describe(ev, d.Location), hitTextLen))
			}
			return res, nil
		})
}

// parseWhen reads the date forms models produce; "" is the zero time.
func parseWhen(s string, loc *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a date (use YYYY-MM-DD, YYYY-MM-DD HH:MM or RFC 3339)", s)
}

// periodText names a period the way the owner asked for it, with its dates.
func periodText(p *search.Period, loc *time.Location) string {
	last := p.Until.Add(-time.Nanosecond)
	return fmt.Sprintf("%q (%s to %s)", p.Phrase, p.Since.In(loc).Format("2006-01-02"), last.In(loc).Format("2006-01-02"))
}
