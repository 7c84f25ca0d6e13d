package proactive

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/collectors/mailparse"
	"github.com/omnibrain/omnibrain/store"
)

func TestPatternsWithEvidence(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2001, 10, 26, 12, 0, 0, 0, houston) // a Friday
	w := newWorld(t, now)
	start := time.Date(2001, 9, 24, 0, 0, 0, 0, houston) // a Monday, 4.5 weeks back
	var reportIDs []int64
	n := 0
	for d := start; d.Before(now); d = d.AddDate(0, 0, 1) {
		switch d.Weekday() {
		case time.Saturday, time.Sunday:
			continue
		case time.Monday:
			w.mail(t, fmt.Sprintf("wk%d@example.com", n), "Weekly <weekly@newsletter.example.com>", ownerAddr, fmt.Sprintf("Issue %d: markets", n), d.Add(6*time.Hour), "Stories")
		}
		it := w.mail(t, fmt.Sprintf("pi%d@example.com", n), "Feedback <feedback@intcx.example.com>", ownerAddr, fmt.Sprintf("Power Indices %d/%d", d.Month(), d.Day()), d.Add(9*time.Hour+55*time.Minute), "Indices attached")
		reportIDs = append(reportIDs, it.ID)
		// The owner writes mostly in the morning.
		w.mail(t, fmt.Sprintf("out%d@example.com", n), "Owen <"+ownerAddr+">", "team@example.com", fmt.Sprintf("Note %d", n), d.Add(8*time.Hour+30*time.Minute), "FYI")
		n++
	}
	// The owner answers Alice within minutes, three times.
	for i := range 3 {
		at := now.AddDate(0, 0, -10+i)
		w.mail(t, fmt.Sprintf("al%d@example.com", i), "Alice <alice@example.com>", ownerAddr, fmt.Sprintf("Question %d", i), at, "Can you check?")
		w.mail(t, fmt.Sprintf("re%d@example.com", i), "Owen <"+ownerAddr+">", "alice@example.com", fmt.Sprintf("Re: Question %d", i), at.Add(20*time.Minute), "Done.")
	}
	// Promotions the owner archives (no INBOX label) and never answers.
	for i := range 6 {
		raw := fmt.Sprintf("Message-ID: <promo%d@shop.example.com>\r\nFrom: Shop <deals@shop.example.com>\r\nTo: %s\r\nSubject: Sale %d\r\nDate: %s\r\n\r\nBuy.\r\n", i, ownerAddr, i, now.AddDate(0, 0, -20+i).Format(time.RFC1123Z))
		msg, _ := mailparse.Parse([]byte(raw))
		it, m := msg.Item(mailparse.ItemOptions{Source: "gmail", ExternalID: fmt.Sprintf("promo%d", i), Thread: fmt.Sprintf("promo%d", i), Labels: []string{"CATEGORY_PROMOTIONS"}})
		if err := w.st.Tx(ctx, func(tx *store.Tx) error { _, err := tx.UpsertMail(it, m, store.UpsertOptions{}); return err }); err != nil {
			t.Fatal(err)
		}
	}
	// Two proposed replies to Pat, both rejected.
	for i := range 2 {
		it := w.mail(t, fmt.Sprintf("pat%d@example.com", i), "Pat <pat@example.com>", ownerAddr, fmt.Sprintf("Idea %d", i), now.AddDate(0, 0, -5+i), "Thoughts?")
		p, err := w.gate.Propose(ctx, approval.Draft{Kind: approval.KindReply, Origin: "proactive", ItemID: it.ID,
			Payload: approval.EmailPayload{To: []string{"pat@example.com"}, Subject: "Re: idea", Body: "ok", InReplyTo: "<x@y>"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.gate.Reject(ctx, p.ID, approval.APIOwner()); err != nil {
			t.Fatal(err)
		}
	}

	res, err := w.engine.Patterns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	obs, err := w.st.Observations(ctx, time.Time{}, 100)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*store.Observation{}
	for _, o := range obs {
		got[o.Kind+"|"+o.Key] = o
	}
	for _, key := range []string{
		"recurring_sender|weekly@newsletter.example.com",
		"recurring_subject|feedback@intcx.example.com|power indices #/#",
		"hour_habit|outbound",
		"answers_fast|alice@example.com",
		"always_archives|deals@shop.example.com",
		"rejects_replies|pat@example.com",
	} {
		o := got[key]
		if o == nil {
			t.Errorf("pattern %s not found; have %v", key, keysOf(got))
			continue
		}
		if o.Confidence <= 0 || o.Confidence > 1 || len(o.Evidence) == 0 || o.Summary == "" {
			t.Errorf("pattern %s without confidence or evidence: %+v", key, o)
		}
	}
	if o := got["recurring_subject|feedback@intcx.example.com|power indices #/#"]; o != nil {
		if !slices.Contains(reportIDs, o.Evidence[len(o.Evidence)-1]) || !strings.Contains(o.Summary, "around 09:00") {
			t.Errorf("report pattern %+v: evidence must be the reports, and it says when they come", o)
		}
	}
	if o := got["recurring_sender|feedback@intcx.example.com"]; o != nil {
		t.Errorf("a daily sender was called a weekday pattern: %+v", o)
	}
	if res.Learned != 3 {
		t.Errorf("learned %d preferences, want 3 (alice up, shop and pat down)", res.Learned)
	}
	prefs, _ := w.st.PreferencesFor(ctx, "sender:alice@example.com", "sender:deals@shop.example.com", "sender:pat@example.com")
	if prefs["sender:alice@example.com"].Weight <= 0 || prefs["sender:deals@shop.example.com"].Weight >= 0 || prefs["sender:pat@example.com"].Weight >= 0 {
		t.Errorf("preferences %+v", prefs)
	}
	fyi := 0
	for _, n := range w.notifications(t) {
		if strings.HasPrefix(n.Key, "pattern:") {
			fyi++
		}
	}
	if fyi != res.New || res.New < 6 {
		t.Errorf("%d pattern notifications for %d new patterns", fyi, res.New)
	}
	// A second pass confirms, tells nothing new.
	res2, err := w.engine.Patterns(ctx)
	if err != nil || res2.New != 0 || res2.Confirmed != res.Confirmed {
		t.Errorf("second pass %+v (%v), first %+v", res2, err, res)
	}

	// Triage uses what it learned: Alice's next mail carries the preference.
	it := w.mail(t, "al9@example.com", "Alice <alice@example.com>", ownerAddr, "Another one", now, "Quick check?")
	w.pass(t)
	tr, err := w.st.TriageOf(ctx, it.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(tr.Factors, func(f store.Factor) bool { return f.Name == "preference" && f.Points == 10 }) {
		t.Errorf("triage ignored the learned preference: %+v", tr.Factors)
	}
}

func keysOf[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
