package fakegoogle_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	fakegoogle "github.com/omnibrain/omnibrain/internal/fakes/google"
	"google.golang.org/api/calendar/v3"
	"google.golang.org/api/option"
)

func calendarClient(t testing.TB, fake *fakegoogle.Server) *calendar.Service {
	t.Helper()
	fakegoogle.CheckAtEnd(t, fake)
	svc, err := calendar.NewService(context.Background(), option.WithEndpoint(fake.URL+"/calendar/v3/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

func listAll(t *testing.T, call *calendar.EventsListCall) ([]*calendar.Event, string) {
	t.Helper()
	var items []*calendar.Event
	var token string
	err := call.Pages(context.Background(), func(e *calendar.Events) error {
		items = append(items, e.Items...)
		token = e.NextSyncToken
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return items, token
}

func dt(s, tz string) *fakegoogle.EventDateTime {
	return &fakegoogle.EventDateTime{DateTime: s, TimeZone: tz}
}

func TestCalendarExpansionAndSync(t *testing.T) {
	now := time.Date(2024, 3, 15, 12, 0, 0, 0, time.UTC)
	fake := fakegoogle.New(t, fakegoogle.Options{TimeZone: "Europe/Berlin", Now: func() time.Time { return now }})
	// Weekly 09:00 Berlin across the DST change of 31 March.
	weekly, err := fake.AddEvent("primary", fakegoogle.Event{Summary: "Weekly", Start: dt("2024-03-18T09:00:00+01:00", "Europe/Berlin"),
		End: dt("2024-03-18T09:30:00+01:00", "Europe/Berlin"), Recurrence: []string{"RRULE:FREQ=WEEKLY;BYDAY=MO;COUNT=4", "EXDATE;TZID=Europe/Berlin:20240408T090000"}})
	if err != nil {
		t.Fatal(err)
	}
	allDay, err := fake.AddEvent("primary", fakegoogle.Event{Summary: "Holiday", Start: &fakegoogle.EventDateTime{Date: "2024-03-22"}, End: &fakegoogle.EventDateTime{Date: "2024-03-23"}})
	if err != nil {
		t.Fatal(err)
	}
	ny, err := fake.AddEvent("primary", fakegoogle.Event{Summary: "NY call", Start: dt("2024-03-21T10:00:00-04:00", "America/New_York"), End: dt("2024-03-21T11:00:00-04:00", "America/New_York"),
		Attendees: []fakegoogle.Attendee{{Email: "owner@example.com", ResponseStatus: "tentative"}, {Email: "bob@example.org"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := fake.CancelEvent("primary", weekly.ID+"_20240325T080000Z"); err != nil {
		t.Fatal(err)
	}
	svc := calendarClient(t, fake)

	items, token := listAll(t, svc.Events.List("primary").SingleEvents(true).TimeMin("2024-03-01T00:00:00Z").TimeMax("2024-05-01T00:00:00Z").MaxResults(2))
	var got []string
	for _, e := range items {
		got = append(got, e.Id+"@"+e.Start.DateTime+e.Start.Date)
	}
	want := []string{
		weekly.ID + "_20240318T080000Z@2024-03-18T09:00:00+01:00",
		weekly.ID + "_20240401T070000Z@2024-04-01T09:00:00+02:00", // 09:00 local after DST; 25 Mar cancelled, 8 Apr excluded
		allDay.ID + "@2024-03-22",
		ny.ID + "@2024-03-21T10:00:00-04:00",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("instances:\n got %v\nwant %v", got, want)
	}
	if token == "" {
		t.Fatal("no nextSyncToken on the last page")
	}
	if items[0].RecurringEventId != weekly.ID || items[0].OriginalStartTime == nil {
		t.Errorf("instance lacks recurringEventId/originalStartTime: %+v", items[0])
	}
	if a := items[3].Attendees; len(a) != 2 || !a[0].Self || a[0].ResponseStatus != "tentative" || a[1].ResponseStatus != "needsAction" {
		t.Errorf("attendees = %+v %+v", a[0], a[1])
	}

	// Nothing changed: the incremental answer is empty.
	inc, token2 := listAll(t, svc.Events.List("primary").SingleEvents(true).SyncToken(token))
	if len(inc) != 0 || token2 == "" {
		t.Errorf("unchanged incremental = %d items", len(inc))
	}
	// One change and one cancellation: exactly those come back.
	now = now.Add(time.Hour)
	fake.UpdateEvent("primary", ny.ID, func(e *fakegoogle.Event) { e.Summary = "NY call (moved)" })
	fake.CancelEvent("primary", allDay.ID)
	inc, token3 := listAll(t, svc.Events.List("primary").SingleEvents(true).SyncToken(token2))
	byID := map[string]*calendar.Event{}
	for _, e := range inc {
		byID[e.Id] = e
	}
	if len(inc) != 2 || byID[ny.ID] == nil || byID[ny.ID].Summary != "NY call (moved)" || byID[allDay.ID] == nil || byID[allDay.ID].Status != "cancelled" {
		t.Errorf("incremental = %d items: %+v", len(inc), byID)
	}
	// A sync token cannot be combined with a window.
	if _, err := svc.Events.List("primary").SyncToken(token3).TimeMin("2024-03-01T00:00:00Z").Do(); !isStatus(err, 400) {
		t.Errorf("syncToken+timeMin: %v, want 400", err)
	}
	fake.ExpireSyncTokens()
	if _, err := svc.Events.List("primary").SingleEvents(true).SyncToken(token3).Do(); !isStatus(err, 410) {
		t.Errorf("stale token: %v, want 410", err)
	}
	// An instance can be fetched by its id.
	inst, err := svc.Events.Get("primary", weekly.ID+"_20240318T080000Z").Do()
	if err != nil || inst.RecurringEventId != weekly.ID {
		t.Errorf("get instance: %+v, %v", inst, err)
	}
}

func TestCalendarWrites(t *testing.T) {
	fake := fakegoogle.New(t, fakegoogle.Options{})
	svc := calendarClient(t, fake)
	ev := &calendar.Event{
		Id: "omnibrain0123abc", Summary: "Lunch",
		Start:     &calendar.EventDateTime{DateTime: "2024-07-01T12:00:00+02:00", TimeZone: "Europe/Berlin"},
		End:       &calendar.EventDateTime{DateTime: "2024-07-01T13:00:00+02:00", TimeZone: "Europe/Berlin"},
		Attendees: []*calendar.EventAttendee{{Email: "alice@example.org"}},
	}
	got, err := svc.Events.Insert("primary", ev).SendUpdates("all").Do()
	if err != nil {
		t.Fatal(err)
	}
	if got.Id != ev.Id || got.Status != "confirmed" || got.HtmlLink == "" || got.Attendees[0].ResponseStatus != "needsAction" {
		t.Errorf("inserted = %+v", got)
	}
	if _, err := svc.Events.Insert("primary", ev).SendUpdates("all").Do(); !isStatus(err, 409) {
		t.Errorf("repeat insert: %v, want 409", err)
	}
	bad := *ev
	bad.Id = "Has-Upper_case"
	if _, err := svc.Events.Insert("primary", &bad).Do(); !isStatus(err, 400) {
		t.Errorf("invalid id: %v, want 400", err)
	}
	p, err := svc.Events.Patch("primary", ev.Id, &calendar.Event{Location: "Canteen"}).SendUpdates("externalOnly").Do()
	if err != nil || p.Location != "Canteen" || p.Summary != "Lunch" || p.Sequence != 1 {
		t.Errorf("patch = %+v, %v", p, err)
	}
	upd := *ev
	upd.Summary = "Long lunch"
	u, err := svc.Events.Update("primary", ev.Id, &upd).SendUpdates("none").Do()
	if err != nil || u.Summary != "Long lunch" || u.Location != "" {
		t.Errorf("update = %+v, %v", u, err)
	}
	if err := svc.Events.Delete("primary", ev.Id).SendUpdates("all").Do(); err != nil {
		t.Fatal(err)
	}
	if err := svc.Events.Delete("primary", ev.Id).Do(); !isStatus(err, 410) {
		t.Errorf("second delete: %v, want 410", err)
	}
	if err := svc.Events.Delete("primary", "nosuchevent1").Do(); !isStatus(err, 404) {
		t.Errorf("delete unknown: %v, want 404", err)
	}
	w := fake.CalendarWrites()
	var summary []string
	for _, x := range w {
		summary = append(summary, x.Method+":"+x.SendUpdates+":"+strconv.Itoa(x.Status))
	}
	want := "insert:all:200 insert:all:409 insert::400 patch:externalOnly:200 update:none:200 delete:all:204 delete::410 delete::404"
	if strings.Join(summary, " ") != want {
		t.Errorf("writes:\n got %s\nwant %s", strings.Join(summary, " "), want)
	}
	if e, ok := fake.GetEvent("primary", ev.Id); !ok || e.Status != "cancelled" {
		t.Errorf("deleted event is %+v, want a cancelled tombstone", e)
	}
}
