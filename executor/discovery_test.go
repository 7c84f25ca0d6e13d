package executor

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/collectors/calendar"
	"github.com/omnibrain/omnibrain/collectors/gmail"
	"github.com/omnibrain/omnibrain/google"
	fakegoogle "github.com/omnibrain/omnibrain/internal/fakes/google"
	"github.com/omnibrain/omnibrain/store"
)

// TestGoogleCallsExistInDiscovery drives every Google call omnibrain makes
// (both collectors through their 404/410 fallbacks, both executors with
// Find) against one fake, then checks each request's path, parameters,
// enum values and body fields against the discovery documents.
func TestGoogleCallsExistInDiscovery(t *testing.T) {
	disc := fakegoogle.TestDiscovery(t)
	now := time.Date(2024, 7, 10, 12, 0, 0, 0, time.UTC)
	fake := fakegoogle.New(t, fakegoogle.Options{Now: func() time.Time { return now }})
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "o.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	hc := google.NewHTTPClient(google.ClientOptions{})
	gsvc, _ := google.NewGmail(ctx, fake.URL, hc)
	csvc, _ := google.NewCalendar(ctx, fake.URL, hc)
	clock := func() time.Time { return now }
	mailCol, _ := gmail.New(gmail.Options{Service: gsvc, Store: st, Now: clock})
	calCol, _ := calendar.New(calendar.Options{Service: csvc, Store: st, Now: clock})

	fake.AddMessage([]byte("From: a@example.org\r\nTo: owner@example.com\r\nSubject: x\r\nMessage-ID: <x@example.org>\r\n\r\nx\r\n"), fakegoogle.MessageOptions{InternalDate: now.Add(-time.Hour)})
	ev, _ := fake.AddEvent("primary", fakegoogle.Event{Summary: "s", Start: &fakegoogle.EventDateTime{DateTime: "2024-07-11T10:00:00Z"},
		End: &fakegoogle.EventDateTime{DateTime: "2024-07-11T11:00:00Z"}, Attendees: []fakegoogle.Attendee{{Email: "owner@example.com"}}})
	passes := func() {
		t.Helper()
		if _, err := mailCol.Collect(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := calCol.Collect(ctx); err != nil {
			t.Fatal(err)
		}
	}
	passes() // backfill, full sync
	passes() // history, syncToken
	fake.ExpireHistory()
	fake.ExpireSyncTokens()
	passes() // 404 → resync, 410 → full sync

	mailExec, _ := NewGmail(GmailOptions{Service: gsvc})
	calExec, _ := NewCalendar(CalendarOptions{Service: csvc})
	start := now.Add(48 * time.Hour)
	for _, c := range []struct {
		ex   approval.Executor
		kind approval.Kind
		pl   any
	}{
		{mailExec, approval.KindEmail, approval.EmailPayload{To: []string{"a@example.org"}, Subject: "s", Body: "b", Cc: []string{"c@example.org"}}},
		{calExec, approval.KindCalendarCreate, approval.CalendarPayload{Summary: "n", Start: start, End: start.Add(time.Hour), Attendees: []string{"a@example.org"}}},
		{calExec, approval.KindCalendarUpdate, approval.CalendarPayload{EventID: ev.ID, Summary: "renamed", SendUpdates: "externalOnly"}},
		{calExec, approval.KindCalendarRespond, approval.CalendarPayload{EventID: ev.ID, Response: "tentative"}},
		{calExec, approval.KindCalendarDelete, approval.CalendarPayload{EventID: ev.ID, SendUpdates: "none"}},
	} {
		p := proposal(t, "d-"+string(c.kind), c.kind, c.pl)
		if _, err := c.ex.Execute(ctx, p, key(p)); err != nil {
			t.Fatalf("%s: %v", c.kind, err)
		}
		if _, found, err := c.ex.Find(ctx, p, key(p)); err != nil || !found {
			t.Fatalf("%s: Find = %v, %v", c.kind, found, err)
		}
	}

	reqs := fake.Requests()
	disc.Check(t, reqs)
	want := []string{
		"calendar.events.delete", "calendar.events.get", "calendar.events.insert", "calendar.events.list", "calendar.events.patch",
		"gmail.users.getProfile", "gmail.users.history.list", "gmail.users.messages.get", "gmail.users.messages.list", "gmail.users.messages.send",
	}
	if got := disc.Methods(reqs); !slices.Equal(got, want) {
		t.Errorf("methods called = %v\nwant %v", got, want)
	}
	// The fallbacks really happened.
	var saw404, saw410 bool
	for _, r := range reqs {
		saw404 = saw404 || (r.Status == 404 && r.Path == "/gmail/v1/users/me/history")
		saw410 = saw410 || (r.Status == 410 && r.Method == "GET")
	}
	if !saw404 || !saw410 {
		t.Errorf("fallbacks exercised: history 404 %v, syncToken 410 %v", saw404, saw410)
	}
}
