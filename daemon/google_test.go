package daemon

import (
	"context"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/google"
	fakegoogle "github.com/omnibrain/omnibrain/internal/fakes/google"
)

// TestApprovedProposalsReachGoogle: the gate finds the Gmail and Calendar
// executors in the wired app, and an approved mail and event each reach
// the fake exactly once.
func TestApprovedProposalsReachGoogle(t *testing.T) {
	fake := fakegoogle.New(t, fakegoogle.Options{RequireAuth: true})
	fakegoogle.CheckAtEnd(t, fake)
	app, _ := googleApp(t, fake)
	tok := fake.IssueToken(time.Hour)
	data := `{"access_token":"` + tok.AccessToken + `","refresh_token":"` + tok.RefreshToken + `","expiry":"` + tok.Expiry.Format(time.RFC3339) + `"}`
	if err := google.ImportToken(app.cfg.Path(google.TokenFileName), []byte(data), time.Now()); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	gate := app.Gate()
	start := time.Now().Add(48 * time.Hour).Truncate(time.Hour)
	for _, d := range []approval.Draft{
		{Kind: approval.KindEmail, Origin: "owner", Payload: approval.EmailPayload{To: []string{"alice@example.org"}, Subject: "Hello", Body: "Hi Alice."}},
		{Kind: approval.KindCalendarCreate, Origin: "owner", Payload: approval.CalendarPayload{Summary: "Lunch", Start: start, End: start.Add(time.Hour), Attendees: []string{"alice@example.org"}}},
	} {
		p, err := gate.Propose(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := gate.Approve(ctx, p.ID, p.PayloadHash, approval.APIOwner()); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 { // a second run finds nothing left to do
		if err := gate.ExecuteApproved(ctx); err != nil {
			t.Fatal(err)
		}
	}
	ps, err := gate.List(ctx, approval.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.State != approval.StateExecuted || p.RemoteID == "" {
			t.Errorf("%s: state %s remote %q error %q", p.Kind, p.State, p.RemoteID, p.Error)
		}
	}
	if sent := fake.Sent(); len(sent) != 1 || sent[0].Header.Get("To") != "<alice@example.org>" {
		t.Errorf("sent = %+v, want exactly one mail to alice", sent)
	}
	inserts := 0
	for _, w := range fake.CalendarWrites() {
		if w.Method == "insert" && w.Status == 200 && w.SendUpdates == "all" {
			inserts++
		}
	}
	if inserts != 1 {
		t.Errorf("%d event inserts, want 1: %+v", inserts, fake.CalendarWrites())
	}
}
