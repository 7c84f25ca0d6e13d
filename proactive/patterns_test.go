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
	"github.com/omnibrain/omnibrain/executor"
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

	checkStandingRules(t, w, res, res2)
}

// checkStandingRules: the patterns proposed two standing rules (mute the
// shop, promote Alice), once; nothing changed until the owner decided;
// the approved one is carried out by the gate's outbox as the owner's own
// preference, which triage applies and learning cannot override; the
// rejected one leaves nothing behind.
func checkStandingRules(t *testing.T, w *world, first, second *PatternResult) {
	t.Helper()
	ctx := context.Background()
	if first.Proposed != 2 || second.Proposed != 0 {
		t.Fatalf("proposed %d rules, then %d; want 2, then none again", first.Proposed, second.Proposed)
	}
	rules, err := w.gate.List(ctx, approval.ListOptions{States: []approval.State{approval.StatePending}})
	if err != nil {
		t.Fatal(err)
	}
	byTitle := map[string]*approval.Proposal{}
	for _, p := range rules {
		if p.Kind == approval.KindAutomation {
			byTitle[p.Title] = p
		}
	}
	mute, promote := byTitle["Mute mail from deals@shop.example.com"], byTitle["Always tell me about mail from alice@example.com"]
	if len(byTitle) != 2 || mute == nil || promote == nil {
		t.Fatalf("pending rules %v", keysOf(byTitle))
	}
	if !strings.Contains(mute.Reason, "you archive mail from deals@shop.example.com") || !strings.Contains(string(mute.Payload), `"weight":-30`) {
		t.Errorf("the mute rule does not say why or what: %s %s", mute.Reason, mute.Payload)
	}
	told := false
	for _, n := range w.notifications(t) {
		told = told || (n.Key == "pattern:always_archives:deals@shop.example.com" && strings.Contains(n.Text, mute.ID))
	}
	if !told {
		t.Error("the pattern's notification does not name the rule proposed for approval")
	}
	shop := func() store.Preference {
		prefs, err := w.st.PreferencesFor(ctx, "sender:deals@shop.example.com")
		if err != nil {
			t.Fatal(err)
		}
		return prefs["sender:deals@shop.example.com"]
	}
	if p := shop(); p.Source != store.PreferenceLearned || p.Weight != -15 {
		t.Errorf("before any approval the shop's preference is %+v, want only the learned -15", p)
	}

	reg := executor.NewRegistry()
	if err := reg.Register(executor.Automation{Store: w.st}); err != nil {
		t.Fatal(err)
	}
	gate, err := approval.NewGate(approval.GateOptions{Store: w.st, Executors: reg, Now: w.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gate.Reject(ctx, promote.ID, approval.APIOwner()); err != nil {
		t.Fatal(err)
	}
	if _, err := gate.Approve(ctx, mute.ID, mute.PayloadHash, approval.APIOwner()); err != nil {
		t.Fatal(err)
	}
	if err := gate.ExecuteApproved(ctx); err != nil {
		t.Fatal(err)
	}
	if p, _ := gate.Get(ctx, mute.ID); p.State != approval.StateExecuted {
		t.Fatalf("the approved rule is %s (%s), want executed", p.State, p.Error)
	}
	if p := shop(); p.Source != store.PreferenceOwner || p.Weight != -30 || !strings.Contains(p.Detail, mute.ID) {
		t.Errorf("after approval the shop's preference is %+v, want the owner's -30", p)
	}
	if _, found, err := (executor.Automation{Store: w.st}).Find(ctx, mute, ""); err != nil || !found {
		t.Errorf("the executor does not find the rule it carried out: %v %v", found, err)
	}
	prefs, _ := w.st.PreferencesFor(ctx, "sender:alice@example.com")
	if p := prefs["sender:alice@example.com"]; p.Source != store.PreferenceLearned || p.Weight != 10 {
		t.Errorf("the rejected rule changed Alice's preference: %+v", p)
	}
	// Learning again does not override the owner's rule.
	if _, err := w.engine.Patterns(ctx); err != nil {
		t.Fatal(err)
	}
	if p := shop(); p.Source != store.PreferenceOwner || p.Weight != -30 {
		t.Errorf("a later pattern pass replaced the owner's rule: %+v", p)
	}
	// The shop's next mail: muted, and triage says why.
	it := w.mail(t, "promo9@shop.example.com", "Shop <deals@shop.example.com>", ownerAddr, "Flash sale: reply to claim", w.clock.Now(), "Can you confirm your order today?")
	w.pass(t)
	tr, err := w.st.TriageOf(ctx, it.ID)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Level != "silent" || !slices.ContainsFunc(tr.Factors, func(f store.Factor) bool { return f.Name == "preference" && f.Points == -30 }) {
		t.Errorf("the muted sender's mail is %s: %+v", tr.Level, tr.Factors)
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
