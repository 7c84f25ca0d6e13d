package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// openTestAt opens a fresh store on a settable clock.
func openTestAt(t testing.TB, now *time.Time) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), FileName), Options{Now: func() time.Time { return *now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func addMail(t *testing.T, s *Store, id string, when time.Time) int64 {
	t.Helper()
	res, err := s.UpsertItems(context.Background(), []*Item{{Source: "gmail", ExternalID: id, Kind: "email", Time: when, Title: "subject " + id, Sender: "a@example.com"}}, UpsertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res[0].ID
}

func TestTriageSaveReadAndOrder(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2024, 5, 1, 12, 0, 0, 0, time.UTC)
	s := openTestAt(t, &now)
	base := time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)
	scores := map[string]int{"low": 10, "high": 90, "mid": 50, "old": 95}
	ids := map[string]int64{}
	for name, score := range scores {
		when := base.Add(time.Hour)
		if name == "old" {
			when = base.Add(-48 * time.Hour)
		}
		ids[name] = addMail(t, s, name, when)
		err := s.Tx(ctx, func(tx *Tx) error {
			return tx.SaveTriage(&Triage{ItemID: ids[name], Decision: "notify", Category: "personal", Score: score, Level: "fyi",
				Factors: []Factor{{Name: "base", Points: score}}, Reason: "because " + name, ItemTime: when})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.TriagedItems(ctx, TriageFilter{Since: base, Until: base.Add(24 * time.Hour), MinScore: 20})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, ti := range got {
		order = append(order, ti.Item.ExternalID)
		if ti.Triage.ItemID != ti.Item.ID {
			t.Errorf("triage %d joined to item %d", ti.Triage.ItemID, ti.Item.ID)
		}
	}
	if fmt.Sprint(order) != "[high mid]" {
		t.Errorf("triaged items %v, want [high mid] (in period, score >= 20, highest first)", order)
	}

	// A re-triage without a proposal keeps the proposal recorded before.
	if err := s.SetTriageProposal(ctx, ids["high"], "prop123456"); err != nil {
		t.Fatal(err)
	}
	err = s.Tx(ctx, func(tx *Tx) error {
		return tx.SaveTriage(&Triage{ItemID: ids["high"], Decision: "respond", Category: "personal", Score: 91, Level: "important", ItemTime: base})
	})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := s.TriageByProposal(ctx, "prop123456")
	if err != nil {
		t.Fatal(err)
	}
	if tr.ItemID != ids["high"] || tr.Decision != "respond" || tr.Score != 91 || tr.Factors == nil {
		t.Errorf("triage after update %+v", tr)
	}
	if _, err := s.TriageOf(ctx, 999999); !errors.Is(err, ErrNotFound) {
		t.Errorf("TriageOf(missing) = %v, want ErrNotFound", err)
	}
	counts, err := s.TriageCounts(ctx, base, base.Add(24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if counts["decision:notify"] != 2 || counts["decision:respond"] != 1 || counts["category:personal"] != 3 {
		t.Errorf("counts %v", counts)
	}
}

func TestBriefingIsOncePerKindAndDay(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2024, 5, 1, 7, 0, 0, 0, time.UTC)
	s := openTestAt(t, &now)
	var wg sync.WaitGroup
	added := make([]bool, 8)
	texts := make([]string, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := &Briefing{Kind: "morning", Day: "2024-05-01", Data: []byte(`{}`), Text: fmt.Sprintf("version %d", i)}
			ok, err := s.InsertBriefing(ctx, b)
			if err != nil {
				t.Error(err)
			}
			added[i], texts[i] = ok, b.Text
		}()
	}
	wg.Wait()
	n := 0
	for i := range added {
		if added[i] {
			n++
		}
		if texts[i] != texts[0] {
			t.Errorf("racing inserts saw different briefings: %q vs %q", texts[i], texts[0])
		}
	}
	if n != 1 {
		t.Fatalf("%d inserts won, want exactly 1", n)
	}
	if ok, err := s.InsertBriefing(ctx, &Briefing{Kind: "evening", Day: "2024-05-01", Data: []byte(`{}`), Text: "e"}); err != nil || !ok {
		t.Errorf("another kind the same day: %v %v", ok, err)
	}
	if ok, err := s.InsertBriefing(ctx, &Briefing{Kind: "morning", Day: "2024-05-02", Data: []byte(`{}`), Text: "m2"}); err != nil || !ok {
		t.Errorf("the same kind the next day: %v %v", ok, err)
	}
	bs, err := s.Briefings(ctx, "morning", 10)
	if err != nil || len(bs) != 2 {
		t.Fatalf("morning briefings %d, %v", len(bs), err)
	}
	if _, err := s.BriefingFor(ctx, "weekly", "2024-05-01"); !errors.Is(err, ErrNotFound) {
		t.Errorf("missing briefing: %v", err)
	}
}

func TestMeetingPrepOnce(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2024, 5, 1, 7, 0, 0, 0, time.UTC)
	s := openTestAt(t, &now)
	id := addMail(t, s, "ev1", now)
	start := now.Add(time.Hour)
	for i, want := range []bool{true, false} {
		ok, err := s.InsertMeetingPrep(ctx, &MeetingPrep{EventID: "ev1", Start: start, ItemID: id, Text: "prep"})
		if err != nil || ok != want {
			t.Errorf("insert %d: %v %v, want %v", i, ok, err, want)
		}
	}
	// The same event moved to another time is a new meeting.
	if ok, err := s.InsertMeetingPrep(ctx, &MeetingPrep{EventID: "ev1", Start: start.Add(time.Hour), ItemID: id, Text: "prep"}); err != nil || !ok {
		t.Errorf("moved meeting: %v %v", ok, err)
	}
	ps, err := s.MeetingPreps(ctx, now, now.Add(24*time.Hour))
	if err != nil || len(ps) != 2 {
		t.Errorf("preps %d, %v", len(ps), err)
	}
}

func TestSyncFollowupsOpensOnceAndCloses(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2024, 5, 1, 7, 0, 0, 0, time.UTC)
	s := openTestAt(t, &now)
	since := now.Add(-72 * time.Hour)
	a := &Followup{Key: "thread-a", Thread: "thread-a", Subject: "A", Since: since}
	b := &Followup{Key: "thread-b", Thread: "thread-b", Subject: "B", Since: since}
	opened, err := s.SyncFollowups(ctx, FollowupAwaitingReply, []*Followup{a, b})
	if err != nil || len(opened) != 2 {
		t.Fatalf("first sync opened %d, %v", len(opened), err)
	}
	if err := s.SetFollowupProposal(ctx, a, "nudge12345"); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Hour)
	a2 := &Followup{Key: "thread-a", Thread: "thread-a", Subject: "A", Since: since}
	opened, err = s.SyncFollowups(ctx, FollowupAwaitingReply, []*Followup{a2})
	if err != nil || len(opened) != 0 {
		t.Fatalf("second sync opened %d, %v; want none (a is known, b closed)", len(opened), err)
	}
	if a2.ProposalID != "nudge12345" || !a2.Detected.Equal(time.Date(2024, 5, 1, 7, 0, 0, 0, time.UTC)) {
		t.Errorf("known follow-up lost its history: %+v", a2)
	}
	open, err := s.OpenFollowups(ctx, 10)
	if err != nil || len(open) != 1 || open[0].Key != "thread-a" {
		t.Fatalf("open follow-ups %+v, %v", open, err)
	}
	// Another kind is independent.
	if _, err := s.SyncFollowups(ctx, FollowupOwesReply, nil); err != nil {
		t.Fatal(err)
	}
	if open, _ := s.OpenFollowups(ctx, 10); len(open) != 1 {
		t.Errorf("syncing another kind closed %d", 1-len(open))
	}
	// A new wait in the same thread (the owner wrote again) is a new follow-up.
	a3 := &Followup{Key: "thread-a", Thread: "thread-a", Subject: "A", Since: now}
	if opened, _ := s.SyncFollowups(ctx, FollowupAwaitingReply, []*Followup{a3}); len(opened) != 1 {
		t.Errorf("new wait opened %d, want 1", len(opened))
	}
}

func TestObservationsKeepDismissal(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2024, 5, 1, 7, 0, 0, 0, time.UTC)
	s := openTestAt(t, &now)
	o := &Observation{Kind: "recurring_sender", Key: "a@example.com", Summary: "A writes every Monday", Confidence: 0.8, Evidence: []int64{1, 2, 3}}
	created, err := s.UpsertObservation(ctx, o)
	if err != nil || !created || o.ID == 0 || o.State != "active" {
		t.Fatalf("upsert %+v %v %v", o, created, err)
	}
	if err := s.DismissObservation(ctx, o.ID); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Hour)
	again := &Observation{Kind: "recurring_sender", Key: "a@example.com", Summary: "A writes every Monday", Confidence: 0.9, Evidence: []int64{1, 2, 3, 4}}
	created, err = s.UpsertObservation(ctx, again)
	if err != nil || created || again.State != "dismissed" || len(again.Evidence) != 4 {
		t.Errorf("re-observed %+v %v %v: want the same row, still dismissed, evidence updated", again, created, err)
	}
	if os, _ := s.Observations(ctx, time.Time{}, 10); len(os) != 0 {
		t.Errorf("dismissed observation listed: %+v", os[0])
	}
	if err := s.DismissObservation(ctx, 12345); !errors.Is(err, ErrNotFound) {
		t.Errorf("dismiss missing: %v", err)
	}
}

func TestLearnedPreferenceNeverOverridesTheOwner(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2024, 5, 1, 7, 0, 0, 0, time.UTC)
	s := openTestAt(t, &now)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.SetPreference(ctx, Preference{Key: "sender:a@x.com", Weight: 20, Source: PreferenceOwner}))
	must(s.SetPreference(ctx, Preference{Key: "sender:a@x.com", Weight: -30, Source: PreferenceLearned, Evidence: 5}))
	must(s.SetPreference(ctx, Preference{Key: "sender:b@x.com", Weight: -10, Source: PreferenceLearned, Evidence: 3}))
	must(s.SetPreference(ctx, Preference{Key: "sender:b@x.com", Weight: -15, Source: PreferenceLearned, Evidence: 4}))
	got, err := s.PreferencesFor(ctx, "sender:a@x.com", "sender:b@x.com", "sender:c@x.com")
	must(err)
	if got["sender:a@x.com"].Weight != 20 || got["sender:b@x.com"].Weight != -15 || len(got) != 2 {
		t.Errorf("preferences %+v", got)
	}
}

func TestPushedSinceAndHeld(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2024, 5, 1, 9, 0, 0, 0, time.UTC)
	s := openTestAt(t, &now)
	add := func(key, level string) int64 {
		n := &Notification{Key: key, Level: level, Text: key}
		if _, err := s.EnqueueNotification(ctx, n); err != nil {
			t.Fatal(err)
		}
		return n.ID
	}
	for _, k := range []string{"a", "b", "briefing:morning:2024-05-01", "c_under"} {
		id := add(k, "important")
		if err := s.UpdateNotification(ctx, id, NotificationUpdate{State: NotificationDelivered}); err != nil {
			t.Fatal(err)
		}
	}
	crit := add("crit", "critical")
	s.UpdateNotification(ctx, crit, NotificationUpdate{State: NotificationDelivered})
	f1 := add("f1", "fyi")
	s.UpdateNotification(ctx, f1, NotificationUpdate{State: NotificationHeld})
	f2 := add("f2", "fyi")
	s.UpdateNotification(ctx, f2, NotificationUpdate{State: NotificationHeld})

	n, err := s.PushedSince(ctx, now.Add(-time.Hour), []string{"important"}, "briefing:")
	if err != nil || n != 3 {
		t.Errorf("pushed = %d, %v; want 3 (briefings and critical not counted)", n, err)
	}
	if n, _ := s.PushedSince(ctx, now.Add(time.Hour), []string{"important"}); n != 0 {
		t.Errorf("pushed since later = %d", n)
	}
	if err := s.Tx(ctx, func(tx *Tx) error { return tx.MarkBriefed([]int64{f1}) }); err != nil {
		t.Fatal(err)
	}
	held, err := s.HeldForBriefing(ctx, []string{"fyi"}, 10)
	if err != nil || len(held) != 1 || held[0].Key != "f2" {
		t.Errorf("held and not briefed: %v %v; want f2 only", held, err)
	}
	if held, _ := s.HeldForBriefing(ctx, []string{"important"}, 10); len(held) != 0 {
		t.Errorf("held important ones: %v, want none", held)
	}
}
