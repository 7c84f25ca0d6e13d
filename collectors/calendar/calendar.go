// Package calendar collects Google Calendar events as items: a windowed
// full sync with recurring events expanded, then incremental syncs with
// the syncToken (410 Gone → full resync), cancellations marked on the
// stored items, attendees with their answers, all-day and cross-timezone
// times kept exact, and overlapping events recorded as conflicts.
package calendar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	gcal "google.golang.org/api/calendar/v3"

	"github.com/omnibrain/omnibrain/google"
	"github.com/omnibrain/omnibrain/store"
)

// Source is the items' source and Name the collector's name.
const (
	Source = "calendar"
	Name   = "calendar"
	Kind   = "event"
)

// Options configure a Collector.
type Options struct {
	Service    *gcal.Service // from google.NewCalendar
	Store      *store.Store
	CalendarID string // default "primary"
	// PastDays and FutureDays bound the window recurring events are
	// expanded in (defaults 7 and 30).
	PastDays, FutureDays int
	// Location is the owner's zone: all-day events start at its midnight
	// and the window moves at its midnight (default UTC).
	Location *time.Location
	Log      *slog.Logger
	Now      func() time.Time
}

// Result is what one pass did.
type Result struct {
	Full      bool // a full (windowed) sync rather than an incremental one
	Seen      int  // events received
	Stored    int  // new or changed items
	Cancelled int  // items marked cancelled
	Skipped   int  // malformed events, logged and skipped
}

// Collector syncs one calendar. Collect may be called from several
// goroutines; passes run one at a time.
type Collector struct {
	svc        *gcal.Service
	st         *store.Store
	calID      string
	past, next int
	loc        *time.Location
	log        *slog.Logger
	now        func() time.Time

	mu sync.Mutex
	// beforeCursor runs inside the transaction after the items are written
	// and before the cursor is: tests fail it to simulate a crash there.
	beforeCursor func() error
}

// New returns a collector.
func New(opts Options) (*Collector, error) {
	if opts.Service == nil || opts.Store == nil {
		return nil, errors.New("calendar collector: service and store are required")
	}
	if opts.CalendarID == "" {
		opts.CalendarID = "primary"
	}
	if opts.PastDays <= 0 {
		opts.PastDays = 7
	}
	if opts.FutureDays <= 0 {
		opts.FutureDays = 30
	}
	if opts.Location == nil {
		opts.Location = time.UTC
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Collector{svc: opts.Service, st: opts.Store, calID: opts.CalendarID, past: opts.PastDays, next: opts.FutureDays,
		loc: opts.Location, log: opts.Log.With("component", "collector.calendar"), now: opts.Now}, nil
}

// Name is the collector's name in the registry and in health.
func (c *Collector) Name() string { return Name }

// cursor is what is saved between passes.
type cursor struct {
	SyncToken   string    `json:"sync_token"`
	WindowStart time.Time `json:"window_start"`
	WindowEnd   time.Time `json:"window_end"`
}

func (c *Collector) cursorName() string { return Name + ":" + c.calID }

// window is [today-past, today+next+1) in the owner's zone.
func (c *Collector) window() (time.Time, time.Time) {
	y, m, d := c.now().In(c.loc).Date()
	return time.Date(y, m, d-c.past, 0, 0, 0, 0, c.loc), time.Date(y, m, d+c.next+1, 0, 0, 0, 0, c.loc)
}

// Collect runs one pass: incremental when the saved sync token is valid
// and the window has not moved, else a full sync of the window.
func (c *Collector) Collect(ctx context.Context) (Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	raw, err := c.st.Cursor(ctx, c.cursorName())
	if err != nil {
		return Result{}, err
	}
	var cur cursor
	if raw != "" {
		if err := json.Unmarshal([]byte(raw), &cur); err != nil {
			c.log.Warn("unreadable calendar cursor; doing a full sync", "err", err)
			cur = cursor{}
		}
	}
	from, to := c.window()
	if cur.SyncToken != "" && cur.WindowStart.Equal(from) {
		res, err := c.sync(ctx, cur.SyncToken, from, to)
		if !google.IsStatus(err, 410) {
			return res, err
		}
		c.log.Info("calendar sync token expired (410); doing a full sync")
	}
	return c.sync(ctx, "", from, to)
}

// sync fetches every page (incremental from token, or the full window)
// and stores the events with the new cursor in one transaction.
func (c *Collector) sync(ctx context.Context, token string, from, to time.Time) (Result, error) {
	res := Result{Full: token == ""}
	var events []*gcal.Event
	var next string
	call := c.svc.Events.List(c.calID).SingleEvents(true).MaxResults(250)
	if token != "" {
		call = call.SyncToken(token)
	} else {
		call = call.TimeMin(from.Format(time.RFC3339)).TimeMax(to.Format(time.RFC3339))
	}
	err := call.Pages(ctx, func(page *gcal.Events) error {
		events = append(events, page.Items...)
		next = page.NextSyncToken
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("calendar: list events: %w", google.Classify(err, c.now()))
	}
	if next == "" {
		return res, errors.New("calendar: the last page carried no nextSyncToken")
	}
	res.Seen = len(events)
	newCur, err := json.Marshal(cursor{SyncToken: next, WindowStart: from, WindowEnd: to})
	if err != nil {
		return res, err
	}

	// What is stored in the window, to resolve tombstones and, after a
	// full sync, events that disappeared.
	stored, err := c.storedInWindow(ctx, from, to)
	if err != nil {
		return res, err
	}
	err = c.st.Tx(ctx, func(tx *store.Tx) error {
		seen := map[string]bool{}
		for _, ev := range events {
			if ev.Status == "cancelled" {
				n, err := c.cancel(ctx, tx, ev, stored)
				if err != nil {
					return err
				}
				res.Cancelled += n
				continue
			}
			it, err := c.item(ev)
			if err != nil {
				c.log.Warn("skipping a malformed event", "event", ev.Id, "err", err)
				res.Skipped++
				continue
			}
			seen[it.ExternalID] = true
			if !overlaps(it, from, to) {
				// Outside the window only changes to what we hold matter.
				if _, err := c.st.ItemByExternalID(ctx, Source, it.ExternalID); errors.Is(err, store.ErrNotFound) {
					continue
				} else if err != nil {
					return err
				}
			}
			// Conflicts are computed in the window only: one moved out of it
			// must not keep those of its old time.
			if old := stored[it.ExternalID]; old != nil && overlaps(it, from, to) {
				keepConflicts(it, old)
			}
			r, err := tx.UpsertItem(it, store.UpsertOptions{Event: true})
			if err != nil {
				return err
			}
			if r.Created || r.Changed {
				res.Stored++
			}
		}
		if res.Full {
			// Gone from a full listing of the window: deleted while we did
			// not listen (or moved away, which the listing would show).
			for id, it := range stored {
				if !seen[id] && metaString(it, "status") != "cancelled" && overlaps(it, from, to) {
					if err := markCancelled(tx, it); err != nil {
						return err
					}
					res.Cancelled++
				}
			}
		}
		if c.beforeCursor != nil {
			if err := c.beforeCursor(); err != nil {
				return err
			}
		}
		return tx.SetCursor(c.cursorName(), string(newCur))
	})
	if err != nil {
		return res, fmt.Errorf("calendar: store events: %w", err)
	}
	// Conflicts depend on all events of the window; they are recomputed
	// from the store every pass, so a crash here heals on the next one.
	if err := c.updateConflicts(ctx, from, to); err != nil {
		return res, err
	}
	return res, nil
}

// storedInWindow returns this calendar's stored events overlapping the
// window, by event id. Events start at most a few weeks before they end;
// the lookback catches long ones that began before the window.
func (c *Collector) storedInWindow(ctx context.Context, from, to time.Time) (map[string]*store.Item, error) {
	items, err := c.st.ItemsBetween(ctx, []string{Kind}, from.AddDate(0, 0, -60), to, 100000)
	if err != nil {
		return nil, err
	}
	out := map[string]*store.Item{}
	for _, it := range items {
		if it.Source == Source && metaString(it, "calendar_id") == c.calID {
			out[it.ExternalID] = it
		}
	}
	return out, nil
}

// cancel marks the stored item of a cancelled event (or, for a cancelled
// recurring series, of its instances) cancelled.
func (c *Collector) cancel(ctx context.Context, tx *store.Tx, ev *gcal.Event, stored map[string]*store.Item) (int, error) {
	var targets []*store.Item
	if it, err := c.st.ItemByExternalID(ctx, Source, ev.Id); err == nil {
		targets = append(targets, it)
	} else if !errors.Is(err, store.ErrNotFound) {
		return 0, err
	}
	for _, it := range stored {
		if metaString(it, "recurring_event_id") == ev.Id {
			targets = append(targets, it)
		}
	}
	n := 0
	for _, it := range targets {
		if metaString(it, "status") == "cancelled" {
			continue
		}
		if err := markCancelled(tx, it); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func markCancelled(tx *store.Tx, it *store.Item) error {
	if it.Meta == nil {
		it.Meta = map[string]any{}
	}
	it.Meta["status"] = "cancelled"
	delete(it.Meta, "conflicts")
	_, err := tx.UpsertItem(it, store.UpsertOptions{Event: true})
	return err
}

// keepConflicts carries the stored conflicts over, so an unchanged event
// upserts as unchanged; updateConflicts corrects them afterwards.
func keepConflicts(it, old *store.Item) {
	if v, ok := old.Meta["conflicts"]; ok {
		it.Meta["conflicts"] = v
	}
}

// item maps an event to an item.
func (c *Collector) item(ev *gcal.Event) (*store.Item, error) {
	if ev.Id == "" {
		return nil, errors.New("event without id")
	}
	start, startStr, allDay, err := c.eventTime(ev.Start)
	if err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	end, endStr, _, err := c.eventTime(ev.End)
	if err != nil {
		if !ev.EndTimeUnspecified {
			return nil, fmt.Errorf("end: %w", err)
		}
		end, endStr = start, startStr
	}
	if end.Before(start) {
		return nil, fmt.Errorf("ends (%s) before it starts (%s)", endStr, startStr)
	}
	meta := map[string]any{
		"start":       startStr,
		"end":         endStr,
		"status":      orDefault(ev.Status, "confirmed"),
		"calendar_id": c.calID,
	}
	if allDay {
		meta["all_day"] = true
	}
	setIf := func(k, v string) {
		if v != "" {
			meta[k] = v
		}
	}
	setIf("location", ev.Location)
	setIf("recurring_event_id", ev.RecurringEventId)
	setIf("html_link", ev.HtmlLink)
	if ev.Start != nil {
		setIf("time_zone", ev.Start.TimeZone)
	}
	if ev.Transparency == "transparent" {
		meta["transparent"] = true
	}
	it := &store.Item{
		Source:     Source,
		ExternalID: ev.Id,
		Kind:       Kind,
		Thread:     ev.RecurringEventId,
		Time:       start.UTC(),
		Title:      ev.Summary,
		Body:       ev.Description,
	}
	var people []string
	addPerson := func(email, name string) {
		for _, s := range []string{strings.ToLower(email), name} {
			if s != "" && !slices.Contains(people, s) {
				people = append(people, s)
			}
		}
	}
	if ev.Organizer != nil {
		it.Sender = strings.ToLower(ev.Organizer.Email)
		setIf("organizer", it.Sender)
		addPerson(ev.Organizer.Email, ev.Organizer.DisplayName)
	}
	if len(ev.Attendees) > 0 {
		var atts []map[string]any
		for _, a := range ev.Attendees {
			m := map[string]any{"email": strings.ToLower(a.Email), "response_status": orDefault(a.ResponseStatus, "needsAction")}
			if a.DisplayName != "" {
				m["name"] = a.DisplayName
			}
			if a.Self {
				m["self"] = true
			}
			if a.Organizer {
				m["organizer"] = true
			}
			atts = append(atts, m)
			addPerson(a.Email, a.DisplayName)
		}
		meta["attendees"] = atts
	}
	it.People = people
	it.Meta = roundTrip(meta)
	return it, nil
}

// eventTime reads a start or end: a timed event keeps Google's RFC 3339
// text (the offset of its own zone); an all-day date is midnight in the
// owner's zone.
func (c *Collector) eventTime(dt *gcal.EventDateTime) (time.Time, string, bool, error) {
	switch {
	case dt == nil:
		return time.Time{}, "", false, errors.New("missing")
	case dt.DateTime != "":
		t, err := time.Parse(time.RFC3339, dt.DateTime)
		if err != nil {
			return time.Time{}, "", false, err
		}
		return t, dt.DateTime, false, nil
	case dt.Date != "":
		t, err := time.ParseInLocation("2006-01-02", dt.Date, c.loc)
		if err != nil {
			return time.Time{}, "", true, err
		}
		return t, t.Format(time.RFC3339), true, nil
	}
	return time.Time{}, "", false, errors.New("neither date nor dateTime")
}

// roundTrip normalises meta to what it reads back as from the store (JSON
// types), so an unchanged event hashes the same on every pass.
func roundTrip(m map[string]any) map[string]any {
	b, err := json.Marshal(m)
	if err != nil {
		return m
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return m
	}
	return out
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func metaString(it *store.Item, key string) string {
	s, _ := it.Meta[key].(string)
	return s
}

func metaTime(it *store.Item, key string) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339, metaString(it, key))
	return t, err == nil
}

func overlaps(it *store.Item, from, to time.Time) bool {
	start, ok1 := metaTime(it, "start")
	end, ok2 := metaTime(it, "end")
	if !ok1 || !ok2 {
		return !it.Time.Before(from) && it.Time.Before(to)
	}
	return end.After(from) && start.Before(to) || (start.Equal(end) && !start.Before(from) && start.Before(to))
}

// busy says whether an event blocks the owner's time: not cancelled, not
// all-day, not marked free, not declined by the owner.
func busy(it *store.Item) bool {
	if metaString(it, "status") == "cancelled" || it.Meta["all_day"] == true || it.Meta["transparent"] == true {
		return false
	}
	atts, _ := it.Meta["attendees"].([]any)
	for _, a := range atts {
		if m, ok := a.(map[string]any); ok && m["self"] == true && m["response_status"] == "declined" {
			return false
		}
	}
	return true
}

// updateConflicts sets meta "conflicts" (the ids of overlapping busy
// events) on every event of the window, writing only what changed.
func (c *Collector) updateConflicts(ctx context.Context, from, to time.Time) error {
	stored, err := c.storedInWindow(ctx, from, to)
	if err != nil {
		return err
	}
	type span struct {
		it         *store.Item
		start, end time.Time
	}
	var spans []span
	for _, it := range stored {
		if !busy(it) {
			continue
		}
		s, ok1 := metaTime(it, "start")
		e, ok2 := metaTime(it, "end")
		if ok1 && ok2 && e.After(s) {
			spans = append(spans, span{it, s, e})
		}
	}
	sort.Slice(spans, func(i, j int) bool { return spans[i].start.Before(spans[j].start) })
	conflicts := map[string][]string{}
	for i := range spans {
		for j := i + 1; j < len(spans) && spans[j].start.Before(spans[i].end); j++ {
			a, b := spans[i].it.ExternalID, spans[j].it.ExternalID
			conflicts[a] = append(conflicts[a], b)
			conflicts[b] = append(conflicts[b], a)
		}
	}
	var changed []*store.Item
	for id, it := range stored {
		want := conflicts[id]
		sort.Strings(want)
		var have []string
		if v, ok := it.Meta["conflicts"].([]any); ok {
			for _, x := range v {
				if s, ok := x.(string); ok {
					have = append(have, s)
				}
			}
		}
		if slices.Equal(want, have) {
			continue
		}
		if len(want) == 0 {
			delete(it.Meta, "conflicts")
		} else {
			it.Meta["conflicts"] = anySlice(want)
		}
		changed = append(changed, it)
	}
	if len(changed) == 0 {
		return nil
	}
	err = c.st.Tx(ctx, func(tx *store.Tx) error {
		for _, it := range changed {
			if _, err := tx.UpsertItem(it, store.UpsertOptions{Event: true}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("calendar: store conflicts: %w", err)
	}
	return nil
}

func anySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
