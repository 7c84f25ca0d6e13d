package executor

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/google"
	fakegoogle "github.com/omnibrain/omnibrain/internal/fakes/google"
)

func calendarExecutor(t *testing.T, fake *fakegoogle.Server) *Calendar {
	t.Helper()
	svc, err := google.NewCalendar(context.Background(), fake.URL, google.NewHTTPClient(google.ClientOptions{Sleep: noSleep}))
	if err != nil {
		t.Fatal(err)
	}
	berlin, _ := time.LoadLocation("Europe/Berlin")
	c, err := NewCalendar(CalendarOptions{Service: svc, Location: berlin})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func key(p *approval.Proposal) string { return approval.IdempotencyKey(p.ID, p.PayloadHash) }

func TestCalendarCreateIsIdempotent(t *testing.T) {
	fake := fakegoogle.New(t, fakegoogle.Options{})
	fakegoogle.CheckAtEnd(t, fake)
	c := calendarExecutor(t, fake)
	ctx := context.Background()
	start := time.Date(2024, 7, 11, 9, 0, 0, 0, time.UTC)
	p := proposal(t, "c1", approval.KindCalendarCreate, approval.CalendarPayload{Summary: "Planning", Description: "Q3", Location: "Room 1",
		Start: start, End: start.Add(time.Hour), TimeZone: "America/New_York", Attendees: []string{"Alice <Alice@example.org>"}})
	k := key(p)
	if _, found, err := c.Find(ctx, p, k); err != nil || found {
		t.Fatalf("Find before = %v, %v", found, err)
	}
	id, err := c.Execute(ctx, p, k)
	if err != nil {
		t.Fatal(err)
	}
	if id != EventID(k) {
		t.Errorf("id = %s, want EventID(key) %s", id, EventID(k))
	}
	ev, ok := fake.GetEvent("primary", id)
	if !ok || ev.Summary != "Planning" || ev.Start.DateTime != "2024-07-11T05:00:00-04:00" || ev.Start.TimeZone != "America/New_York" ||
		len(ev.Attendees) != 1 || ev.Attendees[0].Email != "alice@example.org" || ev.Attendees[0].DisplayName != "Alice" {
		t.Errorf("event = %+v start %+v", ev, ev.Start)
	}
	// Executed again (the answer was lost, or a crash): 409, already done.
	if again, err := c.Execute(ctx, p, k); err != nil || again != id {
		t.Errorf("repeat = %q, %v", again, err)
	}
	if got, found, err := c.Find(ctx, p, k); err != nil || !found || got != id {
		t.Errorf("Find after = %q, %v, %v", got, found, err)
	}
	w := fake.CalendarWrites()
	if len(w) != 2 || w[0].SendUpdates != "all" || w[0].Status != 200 || w[1].Status != 409 {
		t.Errorf("writes = %+v", w)
	}
	var body map[string]any
	json.Unmarshal(w[0].Body, &body)
	if props, _ := body["extendedProperties"].(map[string]any); props == nil || props["private"].(map[string]any)["omnibrain_key"] != k {
		t.Errorf("insert body carries no key: %s", w[0].Body)
	}
}

func TestCalendarAllDayCreate(t *testing.T) {
	fake := fakegoogle.New(t, fakegoogle.Options{})
	c := calendarExecutor(t, fake)
	// Midnight in Berlin is the day before in UTC: the date must be Berlin's.
	day := time.Date(2024, 7, 11, 0, 0, 0, 0, time.FixedZone("CEST", 2*3600))
	p := proposal(t, "c2", approval.KindCalendarCreate, approval.CalendarPayload{Summary: "Off", AllDay: true, Start: day, End: day.Add(time.Hour), SendUpdates: "none"})
	id, err := c.Execute(context.Background(), p, key(p))
	if err != nil {
		t.Fatal(err)
	}
	ev, _ := fake.GetEvent("primary", id)
	if ev.Start.Date != "2024-07-11" || ev.End.Date != "2024-07-12" || ev.Start.DateTime != "" {
		t.Errorf("all-day start %+v end %+v", ev.Start, ev.End)
	}
	if w := fake.CalendarWrites(); w[0].SendUpdates != "none" {
		t.Errorf("sendUpdates = %q", w[0].SendUpdates)
	}
}

func TestCalendarUpdateDeleteRespond(t *testing.T) {
	fake := fakegoogle.New(t, fakegoogle.Options{})
	fakegoogle.CheckAtEnd(t, fake)
	c := calendarExecutor(t, fake)
	ctx := context.Background()
	ev, err := fake.AddEvent("primary", fakegoogle.Event{Summary: "Sync", Start: &fakegoogle.EventDateTime{DateTime: "2024-07-11T10:00:00+02:00"},
		End: &fakegoogle.EventDateTime{DateTime: "2024-07-11T11:00:00+02:00"}, Organizer: &fakegoogle.Person{Email: "bob@example.org"},
		Attendees: []fakegoogle.Attendee{{Email: "bob@example.org"}, {Email: "owner@example.com"}}})
	if err != nil {
		t.Fatal(err)
	}

	upd := proposal(t, "u1", approval.KindCalendarUpdate, approval.CalendarPayload{EventID: ev.ID, Location: "Room 2", SendUpdates: "externalOnly"})
	if _, found, _ := c.Find(ctx, upd, key(upd)); found {
		t.Error("update found before it ran")
	}
	if id, err := c.Execute(ctx, upd, key(upd)); err != nil || id != ev.ID {
		t.Fatalf("update = %q, %v", id, err)
	}
	got, _ := fake.GetEvent("primary", ev.ID)
	if got.Location != "Room 2" || got.Summary != "Sync" {
		t.Errorf("after update = %+v", got)
	}
	if _, found, err := c.Find(ctx, upd, key(upd)); err != nil || !found {
		t.Errorf("Find after update = %v, %v", found, err)
	}

	resp := proposal(t, "r1", approval.KindCalendarRespond, approval.CalendarPayload{EventID: ev.ID, Response: "accepted", SendUpdates: "all"})
	if _, err := c.Execute(ctx, resp, key(resp)); err != nil {
		t.Fatal(err)
	}
	got, _ = fake.GetEvent("primary", ev.ID)
	if got.Attendees[1].Email != "owner@example.com" || got.Attendees[1].ResponseStatus != "accepted" || got.Attendees[0].ResponseStatus != "needsAction" || got.Location != "Room 2" {
		t.Errorf("after respond = %+v", got.Attendees)
	}
	if _, found, _ := c.Find(ctx, resp, key(resp)); !found {
		t.Error("Find after respond: not found")
	}

	del := proposal(t, "d1", approval.KindCalendarDelete, approval.CalendarPayload{EventID: ev.ID})
	if _, err := c.Execute(ctx, del, key(del)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Execute(ctx, del, key(del)); err != nil {
		t.Errorf("deleting again (410) must count as done: %v", err)
	}
	if _, found, err := c.Find(ctx, del, key(del)); err != nil || !found {
		t.Errorf("Find after delete = %v, %v", found, err)
	}
	var methods []string
	for _, w := range fake.CalendarWrites() {
		methods = append(methods, w.Method+":"+w.SendUpdates)
	}
	if strings.Join(methods, " ") != "patch:externalOnly patch:all delete:all delete:all" {
		t.Errorf("writes = %v", methods)
	}

	// Not invited: a clear error.
	other, _ := fake.AddEvent("primary", fakegoogle.Event{Summary: "Theirs", Start: &fakegoogle.EventDateTime{DateTime: "2024-07-12T10:00:00Z"},
		End: &fakegoogle.EventDateTime{DateTime: "2024-07-12T11:00:00Z"}, Attendees: []fakegoogle.Attendee{{Email: "bob@example.org"}}})
	bad := proposal(t, "r2", approval.KindCalendarRespond, approval.CalendarPayload{EventID: other.ID, Response: "declined"})
	if _, err := c.Execute(ctx, bad, key(bad)); err == nil || !strings.Contains(err.Error(), "not among its attendees") {
		t.Errorf("respond uninvited: %v", err)
	}
	missing := proposal(t, "u2", approval.KindCalendarUpdate, approval.CalendarPayload{EventID: "nosuchevent", Summary: "x"})
	if _, err := c.Execute(ctx, missing, key(missing)); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("update unknown event: %v", err)
	}
}

// A change whose answer was lost is looked up: found means done; a lookup
// that fails too means the outcome is unknown; a change that never
// happened is a plain failure.
func TestCalendarLostAnswers(t *testing.T) {
	fake := fakegoogle.New(t, fakegoogle.Options{})
	c := calendarExecutor(t, fake)
	ctx := context.Background()
	ev, err := fake.AddEvent("primary", fakegoogle.Event{Summary: "Sync", Start: &fakegoogle.EventDateTime{DateTime: "2024-07-11T10:00:00Z"},
		End: &fakegoogle.EventDateTime{DateTime: "2024-07-11T11:00:00Z"}})
	if err != nil {
		t.Fatal(err)
	}
	const events = "/calendar/v3/calendars/primary/events"
	upd := proposal(t, "u3", approval.KindCalendarUpdate, approval.CalendarPayload{EventID: ev.ID, Location: "Room 9"})
	fake.InjectFault(fakegoogle.Fault{Method: "PATCH", Path: events, Status: 503, After: true, Times: 1})
	if id, err := c.Execute(ctx, upd, key(upd)); err != nil || id != ev.ID {
		t.Errorf("update with a lost answer = %q, %v; want done", id, err)
	}

	upd2 := proposal(t, "u4", approval.KindCalendarUpdate, approval.CalendarPayload{EventID: ev.ID, Location: "Room 10"})
	fake.InjectFault(fakegoogle.Fault{Method: "PATCH", Path: events, Status: 503, Times: 1})
	if _, err := c.Execute(ctx, upd2, key(upd2)); err == nil || errors.Is(err, approval.ErrOutcomeUnknown) || !strings.Contains(err.Error(), "503") {
		t.Errorf("update that never happened = %v, want a plain failure", err)
	}

	start := time.Date(2024, 7, 12, 9, 0, 0, 0, time.UTC)
	cr := proposal(t, "c9", approval.KindCalendarCreate, approval.CalendarPayload{Summary: "New", Start: start, End: start.Add(time.Hour)})
	fake.InjectFault(fakegoogle.Fault{Method: "POST", Path: events, Status: 500, After: true, Times: 1})
	fake.InjectFault(fakegoogle.Fault{Method: "GET", Path: events, Status: 500, Times: 3}) // every attempt of the retrying read
	if _, err := c.Execute(ctx, cr, key(cr)); !errors.Is(err, approval.ErrOutcomeUnknown) {
		t.Errorf("create with a lost answer and a failed lookup = %v, want an unknown outcome", err)
	}
	if _, found, err := c.Find(ctx, cr, key(cr)); err != nil || !found {
		t.Errorf("Find afterwards = %v, %v", found, err)
	}

	del := proposal(t, "d9", approval.KindCalendarDelete, approval.CalendarPayload{EventID: ev.ID})
	fake.InjectFault(fakegoogle.Fault{Method: "DELETE", Path: events, Status: 502, After: true, Times: 1})
	if _, err := c.Execute(ctx, del, key(del)); err != nil {
		t.Errorf("delete with a lost answer = %v; want done", err)
	}
}
