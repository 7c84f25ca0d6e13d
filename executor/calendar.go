package executor

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/mail"
	"strings"
	"time"

	gcal "google.golang.org/api/calendar/v3"
	"google.golang.org/api/googleapi"

	"github.com/omnibrain/omnibrain/approval"
)

// Calendar performs approved calendar changes (approval.KindCalendarCreate,
// Update, Delete, Respond) with the payload's sendUpdates, since attendees
// are notified. A created event's id is derived from the idempotency key
// (a repeat is a 409: already done), and every change carries the key in a
// private extended property, so Find can tell whether an attempt landed.
type Calendar struct {
	svc *gcal.Service
	loc *time.Location
	log *slog.Logger
}

// Kinds implements Executor.
func (c *Calendar) Kinds() []approval.Kind {
	return []approval.Kind{approval.KindCalendarCreate, approval.KindCalendarUpdate, approval.KindCalendarDelete, approval.KindCalendarRespond}
}

// CalendarOptions configure NewCalendar.
type CalendarOptions struct {
	Service *gcal.Service // from google.NewCalendar
	// Location is the zone of times without one (the owner's; default UTC).
	Location *time.Location
	Log      *slog.Logger
}

// NewCalendar returns the calendar executor.
func NewCalendar(opts CalendarOptions) (*Calendar, error) {
	if opts.Service == nil {
		return nil, errors.New("calendar executor: a Calendar service is required")
	}
	if opts.Location == nil {
		opts.Location = time.UTC
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Calendar{svc: opts.Service, loc: opts.Location, log: opts.Log.With("component", "executor.calendar")}, nil
}

// keyProperty is the private extended property holding the idempotency key.
const keyProperty = "omnibrain_key"

// EventID is the id a calendar_create with key gets: Calendar ids are
// base32hex (a–v, 0–9), 5 to 1024 characters.
func EventID(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "omnibrain" + hex.EncodeToString(sum[:16])
}

func calendarPayload(p *approval.Proposal) (*approval.CalendarPayload, error) {
	switch p.Kind {
	case approval.KindCalendarCreate, approval.KindCalendarUpdate, approval.KindCalendarDelete, approval.KindCalendarRespond:
	default:
		return nil, fmt.Errorf("calendar executor: proposal %s is a %s", p.ID, p.Kind)
	}
	var pl approval.CalendarPayload
	dec := json.NewDecoder(bytes.NewReader(p.Payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&pl); err != nil {
		return nil, fmt.Errorf("calendar executor: payload of %s: %w", p.ID, err)
	}
	if p.Kind != approval.KindCalendarCreate && pl.EventID == "" {
		return nil, fmt.Errorf("calendar executor: %s of %s needs event_id", p.Kind, p.ID)
	}
	if pl.CalendarID == "" {
		pl.CalendarID = "primary"
	}
	if pl.SendUpdates == "" {
		pl.SendUpdates = "all"
	}
	return &pl, nil
}

// Execute performs the change once.
func (c *Calendar) Execute(ctx context.Context, p *approval.Proposal, key string) (string, error) {
	pl, err := calendarPayload(p)
	if err != nil {
		return "", err
	}
	switch p.Kind {
	case approval.KindCalendarCreate:
		return c.create(ctx, p, pl, key)
	case approval.KindCalendarUpdate:
		ev, err := c.event(pl, key)
		if err != nil {
			return "", err
		}
		if _, err := c.svc.Events.Patch(pl.CalendarID, pl.EventID, ev).SendUpdates(pl.SendUpdates).Context(ctx).Do(); err != nil {
			return c.settle(ctx, p, key, err, calendarError("update", pl, err))
		}
		return pl.EventID, nil
	case approval.KindCalendarDelete:
		err := c.svc.Events.Delete(pl.CalendarID, pl.EventID).SendUpdates(pl.SendUpdates).Context(ctx).Do()
		if err != nil && !isCode(err, 410) { // 410: already deleted, which is what was approved
			return c.settle(ctx, p, key, err, calendarError("delete", pl, err))
		}
		return pl.EventID, nil
	default: // respond
		return c.respond(ctx, p, pl, key)
	}
}

// settle decides a failed call whose answer may have been lost (5xx, no
// answer): done if Find sees the change, unknown if it cannot look,
// failed (with failure) otherwise.
func (c *Calendar) settle(ctx context.Context, p *approval.Proposal, key string, callErr, failure error) (string, error) {
	if !lost(callErr) || ctx.Err() != nil {
		return "", failure
	}
	id, found, err := c.Find(ctx, p, key)
	switch {
	case err != nil:
		return "", fmt.Errorf("%w; looking it up failed too (%v): %w", failure, err, approval.ErrOutcomeUnknown)
	case found:
		c.log.Warn("calendar answered with an error but the change is there", "proposal", p.ID, "err", callErr)
		return id, nil
	}
	return "", failure
}

func (c *Calendar) create(ctx context.Context, p *approval.Proposal, pl *approval.CalendarPayload, key string) (string, error) {
	ev, err := c.event(pl, key)
	if err != nil {
		return "", err
	}
	ev.Id = EventID(key)
	_, err = c.svc.Events.Insert(pl.CalendarID, ev).SendUpdates(pl.SendUpdates).Context(ctx).Do()
	switch {
	case err == nil:
		c.log.Info("event created", "event", ev.Id)
		return ev.Id, nil
	case isCode(err, 409):
		// Our id exists: an earlier attempt created it.
		return ev.Id, nil
	}
	return c.settle(ctx, p, key, err, calendarError("create", pl, err))
}

// respond sets the owner's answer on their attendee entry.
func (c *Calendar) respond(ctx context.Context, p *approval.Proposal, pl *approval.CalendarPayload, key string) (string, error) {
	ev, err := c.svc.Events.Get(pl.CalendarID, pl.EventID).Context(ctx).Do()
	if err != nil {
		return "", calendarError("respond to", pl, err)
	}
	self := -1
	for i, a := range ev.Attendees {
		if a.Self {
			self = i
		}
	}
	if self < 0 {
		return "", fmt.Errorf("calendar: respond to %s: you are not among its attendees", pl.EventID)
	}
	ev.Attendees[self].ResponseStatus = pl.Response
	patch := &gcal.Event{Attendees: ev.Attendees, ExtendedProperties: withKey(ev.ExtendedProperties, key)}
	if _, err := c.svc.Events.Patch(pl.CalendarID, pl.EventID, patch).SendUpdates(pl.SendUpdates).Context(ctx).Do(); err != nil {
		return c.settle(ctx, p, key, err, calendarError("respond to", pl, err))
	}
	return pl.EventID, nil
}

// event builds the event body from the payload's non-empty fields.
func (c *Calendar) event(pl *approval.CalendarPayload, key string) (*gcal.Event, error) {
	loc := c.loc
	if pl.TimeZone != "" {
		z, err := time.LoadLocation(pl.TimeZone)
		if err != nil {
			return nil, fmt.Errorf("calendar: time zone %q: %w", pl.TimeZone, err)
		}
		loc = z
	}
	ev := &gcal.Event{Summary: pl.Summary, Description: pl.Description, Location: pl.Location, ExtendedProperties: withKey(nil, key)}
	if !pl.Start.IsZero() {
		ev.Start = eventTime(pl.Start, pl.AllDay, loc, pl.TimeZone)
	}
	if !pl.End.IsZero() {
		ev.End = eventTime(pl.End, pl.AllDay, loc, pl.TimeZone)
		if pl.AllDay && ev.Start != nil && ev.End.Date <= ev.Start.Date {
			// An all-day end date is exclusive: a one-day event ends the next day.
			ev.End.Date = pl.Start.In(loc).AddDate(0, 0, 1).Format("2006-01-02")
		}
	}
	for _, s := range pl.Attendees {
		a, err := mail.ParseAddress(s)
		if err != nil {
			return nil, fmt.Errorf("calendar: attendee %q: %w", s, err)
		}
		ev.Attendees = append(ev.Attendees, &gcal.EventAttendee{Email: strings.ToLower(a.Address), DisplayName: a.Name})
	}
	return ev, nil
}

func eventTime(t time.Time, allDay bool, loc *time.Location, zone string) *gcal.EventDateTime {
	if allDay {
		return &gcal.EventDateTime{Date: t.In(loc).Format("2006-01-02")}
	}
	return &gcal.EventDateTime{DateTime: t.In(loc).Format(time.RFC3339), TimeZone: zone}
}

func withKey(ep *gcal.EventExtendedProperties, key string) *gcal.EventExtendedProperties {
	out := &gcal.EventExtendedProperties{Private: map[string]string{}}
	if ep != nil {
		for k, v := range ep.Private {
			out.Private[k] = v
		}
		out.Shared = ep.Shared
	}
	out.Private[keyProperty] = key
	return out
}

func hasKey(ev *gcal.Event, key string) bool {
	return ev.ExtendedProperties != nil && ev.ExtendedProperties.Private[keyProperty] == key
}

// Find reports whether an attempt with key reached Calendar: the created
// event exists; the updated or answered event carries the key; the deleted
// event is gone.
func (c *Calendar) Find(ctx context.Context, p *approval.Proposal, key string) (string, bool, error) {
	pl, err := calendarPayload(p)
	if err != nil {
		return "", false, err
	}
	id := pl.EventID
	if p.Kind == approval.KindCalendarCreate {
		id = EventID(key)
	}
	ev, err := c.svc.Events.Get(pl.CalendarID, id).Context(ctx).Do()
	switch {
	case p.Kind == approval.KindCalendarDelete && (isCode(err, 404) || isCode(err, 410)):
		return id, true, nil
	case p.Kind == approval.KindCalendarCreate && isCode(err, 404):
		return "", false, nil
	case err != nil:
		return "", false, calendarError("look up", pl, err)
	case p.Kind == approval.KindCalendarDelete:
		return id, ev.Status == "cancelled", nil
	case p.Kind == approval.KindCalendarCreate:
		return id, true, nil // only our attempt can have made this id
	default:
		return id, hasKey(ev, key), nil
	}
}

func isCode(err error, code int) bool {
	var ge *googleapi.Error
	return errors.As(err, &ge) && ge.Code == code
}

func calendarError(what string, pl *approval.CalendarPayload, err error) error {
	target := pl.EventID
	if target == "" {
		target = fmt.Sprintf("%q", pl.Summary)
	}
	return fmt.Errorf("calendar: %s event %s: %w", what, target, describe(err))
}
