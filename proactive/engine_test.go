package proactive

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/collectors/mailparse"
	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/internal/fakes/llm"
	"github.com/omnibrain/omnibrain/internal/testutil"
	"github.com/omnibrain/omnibrain/internal/untrusted"
	"github.com/omnibrain/omnibrain/notify"
	"github.com/omnibrain/omnibrain/proactive/schedule"
	"github.com/omnibrain/omnibrain/proactive/triage"
	"github.com/omnibrain/omnibrain/router"
	"github.com/omnibrain/omnibrain/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(cleanupAfter{m}) }

// cleanupAfter removes what benchmarks share across runs (the big store)
// before goleak looks for leftovers.
type cleanupAfter struct{ m *testing.M }

func (c cleanupAfter) Run() int {
	defer closeBigStore()
	return c.m.Run()
}

const ownerAddr = "owner@example.com"

// world is a store with the real gate and notification queue, a triager
// and an engine over them, on a settable clock.
type world struct {
	st     *store.Store
	clock  *testutil.Clock
	gate   *approval.Gate
	queue  *notify.Queue
	triage *triage.Triager
	engine *Engine
}

func newWorld(t testing.TB, start time.Time, edit ...func(*Options)) *world {
	t.Helper()
	ctx := context.Background()
	w := &world{clock: testutil.NewClock(start)}
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), store.FileName), store.Options{Now: w.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	w.st = st
	if err := st.AddOwnerAddresses(ctx, "config", ownerAddr); err != nil {
		t.Fatal(err)
	}
	w.queue = notify.NewQueue(st, nil)
	if w.gate, err = approval.NewGate(approval.GateOptions{Store: st, Notifier: w.queue, Now: w.clock.Now}); err != nil {
		t.Fatal(err)
	}
	owner := config.Owner{Name: "Owen Owner", Emails: []string{ownerAddr}, VIPs: []string{"boss@example.com"}}
	if w.triage, err = triage.New(triage.Options{Store: st, OwnerName: owner.Name, Owner: owner.Emails, VIPs: owner.VIPs, Location: houston,
		Proposer: w.gate, Notifier: w.queue, Now: w.clock.Now}); err != nil {
		t.Fatal(err)
	}
	o := Options{Store: st, Owner: owner, Location: houston, Schedule: config.Default("").Schedule, Gate: w.gate, Notifier: w.queue, Now: w.clock.Now}
	for _, e := range edit {
		e(&o)
	}
	if w.engine, err = New(o); err != nil {
		t.Fatal(err)
	}
	return w
}

// mail stores a mail the way a collector does and returns its item.
func (w *world) mail(t testing.TB, id, from, to, subject string, when time.Time, body string, headers ...string) *store.Item {
	t.Helper()
	raw := fmt.Sprintf("Message-ID: <%s>\r\nFrom: %s\r\nTo: %s\r\nSubject: %s\r\nDate: %s\r\n", id, from, to, subject, when.Format(time.RFC1123Z))
	for _, h := range headers {
		raw += h + "\r\n"
	}
	raw += "\r\n" + strings.ReplaceAll(body, "\n", "\r\n") + "\r\n"
	msg, err := mailparse.Parse([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	it, m := msg.Item(mailparse.ItemOptions{Source: "gmail", ExternalID: "g-" + id, Thread: "t-" + msg.ThreadKey(), Labels: []string{"INBOX"}})
	err = w.st.Tx(context.Background(), func(tx *store.Tx) error {
		_, err := tx.UpsertMail(it, m, store.UpsertOptions{Event: true})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return it
}

// event stores a calendar event the way the calendar collector does.
func (w *world) event(t testing.TB, id, title string, start, end time.Time, attendees []string, meta map[string]any) *store.Item {
	t.Helper()
	atts := []any{map[string]any{"email": ownerAddr, "self": true, "response_status": "accepted"}}
	people := []string{ownerAddr}
	for _, a := range attendees {
		atts = append(atts, map[string]any{"email": a, "response_status": "accepted"})
		people = append(people, a)
	}
	m := map[string]any{"start": start.Format(time.RFC3339), "end": end.Format(time.RFC3339), "status": "confirmed", "attendees": atts}
	for k, v := range meta {
		m[k] = v
	}
	b, _ := json.Marshal(m)
	var rt map[string]any
	json.Unmarshal(b, &rt)
	it := &store.Item{Source: "calendar", ExternalID: id, Kind: "event", Time: start.UTC(), Title: title, People: people, Meta: rt}
	if _, err := w.st.UpsertItems(context.Background(), []*store.Item{it}, store.UpsertOptions{Event: true}); err != nil {
		t.Fatal(err)
	}
	return it
}

func (w *world) pass(t testing.TB) {
	t.Helper()
	if _, err := w.triage.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func (w *world) notifications(t testing.TB) []*store.Notification {
	t.Helper()
	ns, err := w.st.Notifications(context.Background(), "", 10000)
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

func TestBriefingOncePerDayWhoeverAsks(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, time.Date(2001, 10, 25, 7, 0, 0, 0, houston))
	b1, created, err := w.engine.Briefing(ctx, KindMorning, schedule.Run{Scheduled: w.clock.Now()})
	if err != nil || !created {
		t.Fatalf("scheduled briefing: %v %v", created, err)
	}
	w.clock.Set(time.Date(2001, 10, 25, 9, 0, 0, 0, houston))
	b2, created, err := w.engine.Briefing(ctx, KindMorning, schedule.Run{Manual: true})
	if err != nil || created || b2.ID != b1.ID {
		t.Fatalf("manual trigger the same day made a new briefing (%v, %v)", created, err)
	}
	// Late catch-up for a slot of the same day: still the same one.
	if _, created, _ := w.engine.Briefing(ctx, KindMorning, schedule.Run{Scheduled: time.Date(2001, 10, 25, 7, 0, 0, 0, houston), Late: true}); created {
		t.Error("a late run made a second morning briefing")
	}
	n := 0
	for _, x := range w.notifications(t) {
		if strings.HasPrefix(x.Key, BriefingKeyPrefix) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d briefing notifications, want 1", n)
	}
	// The next day is a new one; weekly is keyed by its Monday.
	w.clock.Set(time.Date(2001, 10, 26, 7, 0, 0, 0, houston))
	if _, created, _ := w.engine.Briefing(ctx, KindMorning, schedule.Run{}); !created {
		t.Error("the next day's morning briefing was not made")
	}
	wk, _, err := w.engine.Briefing(ctx, KindWeekly, schedule.Run{})
	if err != nil || wk.Day != "2001-10-22" {
		t.Errorf("weekly review day %q (%v), want the Monday 2001-10-22", wk.Day, err)
	}
	if _, _, err := w.engine.Briefing(ctx, "hourly", schedule.Run{}); err == nil {
		t.Error("an unknown briefing kind was accepted")
	}
}

func TestMorningBriefingContent(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2001, 10, 24, 22, 0, 0, 0, houston)
	w := newWorld(t, start)
	// Last night's evening briefing sets where "overnight" starts.
	if _, _, err := w.engine.Briefing(ctx, KindEvening, schedule.Run{}); err != nil {
		t.Fatal(err)
	}
	w.mail(t, "b1@example.com", "Big Boss <boss@example.com>", ownerAddr, "Budget", start.Add(2*time.Hour), "I need the Q4 numbers by 5pm tomorrow. Can you send them?")
	w.mail(t, "n1@example.com", "News <news@lists.example.org>", ownerAddr, "Weekly digest", start.Add(3*time.Hour), "Stories. Unsubscribe here.", "List-Id: <w.lists.example.org>")
	w.mail(t, "old@example.com", "Carol <carol@example.com>", ownerAddr, "Old question", start.Add(-5*time.Hour), "What do you think about the plan?")
	w.pass(t)
	day := time.Date(2001, 10, 25, 0, 0, 0, 0, houston)
	w.event(t, "ev1", "Budget review", day.Add(10*time.Hour), day.Add(11*time.Hour), []string{"boss@example.com"}, map[string]any{"conflicts": []string{"ev2"}})
	w.event(t, "ev2", "Dentist", day.Add(10*time.Hour+30*time.Minute), day.Add(11*time.Hour+30*time.Minute), nil, map[string]any{"conflicts": []string{"ev1"}})
	w.event(t, "ev3", "Cancelled sync", day.Add(14*time.Hour), day.Add(15*time.Hour), nil, map[string]any{"status": "cancelled"})
	w.event(t, "ev4", "Tomorrow's thing", day.Add(34*time.Hour), day.Add(35*time.Hour), nil, nil)
	w.queue.Notify(ctx, notify.Message{Level: notify.FYI, Key: "fyi-1", Text: "The pipeline report is out"})
	// The dispatcher holds FYIs; here the held state is set as it would.
	n, _ := w.st.NotificationByKey(ctx, "fyi-1")
	w.st.UpdateNotification(ctx, n.ID, store.NotificationUpdate{State: store.NotificationHeld})

	w.clock.Set(time.Date(2001, 10, 25, 7, 0, 0, 0, houston))
	b, created, err := w.engine.Briefing(ctx, KindMorning, schedule.Run{Scheduled: w.clock.Now()})
	if err != nil || !created {
		t.Fatal(created, err)
	}
	var d BriefingData
	if err := json.Unmarshal(b.Data, &d); err != nil {
		t.Fatal(err)
	}
	if !d.PeriodStart.Equal(start) {
		t.Errorf("overnight starts %v, want the evening briefing at %v", d.PeriodStart, start)
	}
	if len(d.Mail) != 1 || d.Mail[0].Subject != "Budget" || d.Mail[0].ProposalID == "" {
		t.Errorf("overnight mail %+v: want only the boss's mail, with its reply proposal (the newsletter is ignored, Carol's is older)", d.Mail)
	}
	if d.MailCounts["decision:ignore"] != 1 || d.MailCounts["category:bulk"] != 1 {
		t.Errorf("mail counts %v", d.MailCounts)
	}
	var titles []string
	for _, ev := range d.Calendar {
		titles = append(titles, ev.Title)
	}
	if strings.Join(titles, ",") != "Budget review,Dentist" {
		t.Errorf("today's calendar %v: want the two live events of today", titles)
	}
	if len(d.Calendar) == 2 && (len(d.Calendar[0].Conflicts) != 1 || d.Calendar[0].Conflicts[0] != "Dentist") {
		t.Errorf("conflicts %+v", d.Calendar[0])
	}
	if len(d.Pending) != 1 { // the reply to the boss; Carol, unknown, only asks an open question
		t.Errorf("pending proposals %+v", d.Pending)
	}
	if len(d.NeedsAnswer) != 2 {
		t.Errorf("needs answer %+v", d.NeedsAnswer)
	}
	if len(d.FYI) != 1 || d.FYI[0].Text != "The pipeline report is out" {
		t.Errorf("FYI %+v", d.FYI)
	}
	for _, want := range []string{"Good morning — Thursday, October 25", "Budget review", "conflicts with: Dentist", "Waiting for your decision (1)", "The pipeline report is out", "(due 17:00)"} {
		if !strings.Contains(b.Text, want) && !strings.Contains(b.Text, strings.ReplaceAll(want, "(due 17:00)", "(due tomorrow 17:00)")) {
			t.Errorf("briefing text lacks %q:\n%s", want, b.Text)
		}
	}
	// The evening briefing does not repeat the FYI, and shows tomorrow.
	w.clock.Set(time.Date(2001, 10, 25, 22, 0, 0, 0, houston))
	e, _, err := w.engine.Briefing(ctx, KindEvening, schedule.Run{})
	if err != nil {
		t.Fatal(err)
	}
	var ed BriefingData
	json.Unmarshal(e.Data, &ed)
	if len(ed.FYI) != 0 {
		t.Errorf("the evening briefing repeats FYIs: %+v", ed.FYI)
	}
	if len(ed.Calendar) != 1 || ed.Calendar[0].Title != "Tomorrow's thing" || !strings.Contains(e.Text, "Tomorrow, Fri Oct 26") {
		t.Errorf("evening calendar %+v\n%s", ed.Calendar, e.Text)
	}
}

func TestMeetingPrepOncePerMeeting(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2001, 10, 25, 9, 0, 0, 0, houston)
	w := newWorld(t, now)
	w.mail(t, "x1@example.com", "Jae Black <jae.black@example.com>", ownerAddr, "Staff meeting agenda", now.Add(-24*time.Hour), "Agenda attached. Can you add your items?")
	w.mail(t, "x2@example.com", "Other <other@example.com>", ownerAddr, "Unrelated", now.Add(-2*time.Hour), "Hi")
	w.event(t, "past", "Staff meeting", now.AddDate(0, 0, -7), now.AddDate(0, 0, -7).Add(time.Hour), []string{"jae.black@example.com"}, nil)
	w.event(t, "soon", "Staff meeting", now.Add(time.Hour), now.Add(2*time.Hour), []string{"jae.black@example.com"}, map[string]any{"location": "EB 3321"})
	w.event(t, "later", "Offsite", now.Add(5*time.Hour), now.Add(6*time.Hour), []string{"jae.black@example.com"}, nil)
	w.event(t, "solo", "Focus time", now.Add(30*time.Minute), now.Add(time.Hour), nil, nil)

	n, err := w.engine.MeetingPrep(ctx)
	if err != nil || n != 1 {
		t.Fatalf("prepared %d (%v), want 1: the staff meeting within 90 minutes with someone", n, err)
	}
	w.clock.Set(now.Add(15 * time.Minute))
	if n, _ := w.engine.MeetingPrep(ctx); n != 0 {
		t.Errorf("prepared %d on the next run, want 0 (once per meeting)", n)
	}
	var prep *store.Notification
	for _, x := range w.notifications(t) {
		if strings.HasPrefix(x.Key, "prep:soon:") {
			if prep != nil {
				t.Error("two prep notifications for one meeting")
			}
			prep = x
		}
	}
	if prep == nil {
		t.Fatal("no prep notification")
	}
	for _, want := range []string{"Meeting prep: Staff meeting", "With: jae.black@example.com", "EB 3321", "Staff meeting agenda", "Last meeting with them: Staff meeting on Thu Oct 18", "waiting for your answer"} {
		if !strings.Contains(prep.Text, want) {
			t.Errorf("prep lacks %q:\n%s", want, prep.Text)
		}
	}
	if strings.Contains(prep.Text, "Unrelated") {
		t.Errorf("prep includes mail not with the attendees:\n%s", prep.Text)
	}
	// The morning briefing shows the prep beside the meeting.
	d := &BriefingData{Kind: KindMorning}
	if d.Calendar, err = w.engine.calendar(ctx, w.engine.dayStart(now), w.engine.nextDayStart(now)); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ev := range d.Calendar {
		if ev.ID == "soon" && strings.Contains(ev.Prep, "Meeting prep") {
			found = true
		}
	}
	if !found {
		t.Errorf("today's calendar does not carry the prep: %+v", d.Calendar)
	}
}

func TestExplainItemAndProposal(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, time.Date(2001, 10, 25, 9, 0, 0, 0, houston))
	w.mail(t, "b1@example.com", "Big Boss <boss@example.com>", ownerAddr, "Budget", w.clock.Now().Add(-time.Hour), "I need the numbers by 5pm today. Can you send them?")
	w.pass(t)
	x, err := w.engine.Explain(ctx, "g-b1@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if x.Triage == nil || x.Triage.Decision != "respond" || x.Proposal == nil || len(x.Notifications) == 0 {
		t.Fatalf("explanation %+v", x)
	}
	byProposal, err := w.engine.Explain(ctx, x.Proposal.ID)
	if err != nil || byProposal.Item == nil || byProposal.Item.ExternalID != "g-b1@example.com" || byProposal.Triage == nil {
		t.Fatalf("explain by proposal id: %+v %v", byProposal, err)
	}
	text := FormatExplanation(x, houston)
	for _, want := range []string{"Triage: respond — personal", "vip", "deadline", "Proposal " + x.Proposal.ID, "critical"} {
		if !strings.Contains(text, want) {
			t.Errorf("explanation lacks %q:\n%s", want, text)
		}
	}
	if _, err := w.engine.Explain(ctx, "no-such-id"); err == nil {
		t.Error("explaining an unknown id succeeded")
	}
}

func TestWeeklyReviewWithNarrative(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2001, 10, 29, 8, 0, 0, 0, houston) // Monday 08:00
	fake := llm.NewOpenAI(t)
	w := newWorld(t, now, func(o *Options) {
		r, err := router.New(ctx, router.Options{LLM: config.LLM{Provider: "openai", BaseURL: fake.URL, Model: "gpt-test", APIKey: "k", Timeout: 5 * time.Second},
			Location: houston, Now: o.Now, OllamaURL: "http://127.0.0.1:1/v1", Sleep: func(ctx context.Context, d time.Duration) error { return ctx.Err() }})
		if err != nil {
			t.Fatal(err)
		}
		o.Model = r
	})
	fake.Script(llm.Turn{Text: "A busier week: mail up, and one reply still waits for you."})
	day := 24 * time.Hour
	// Last week: 2 received. This week: 4 received, 2 sent, the owner answering within an hour.
	for i := range 2 {
		w.mail(t, fmt.Sprintf("p%d@example.com", i), "Alice <alice@example.com>", ownerAddr, fmt.Sprintf("Old %d", i), now.Add(-10*day+time.Duration(i)*time.Hour), "hi")
	}
	for i := range 4 {
		at := now.Add(-5*day + time.Duration(i)*time.Hour)
		w.mail(t, fmt.Sprintf("n%d@example.com", i), "Alice <alice@example.com>", ownerAddr, fmt.Sprintf("New %d", i), at, "Can you look?")
		if i < 2 {
			w.mail(t, fmt.Sprintf("r%d@example.com", i), "Owen <"+ownerAddr+">", "alice@example.com", fmt.Sprintf("Re: New %d", i), at.Add(30*time.Minute), "Done.")
		}
	}
	w.clock.Set(now.Add(-5*day + 5*time.Hour)) // triaged as they came, not as a stale backfill
	w.pass(t)
	props, _ := w.gate.List(ctx, approval.ListOptions{})
	if len(props) < 2 {
		t.Fatalf("%d proposals, want at least 2 to decide", len(props))
	}
	hash := props[0].PayloadHash
	if _, err := w.gate.Approve(ctx, props[0].ID, hash, approval.APIOwner()); err != nil {
		t.Fatal(err)
	}
	if _, err := w.gate.Reject(ctx, props[1].ID, approval.APIOwner()); err != nil {
		t.Fatal(err)
	}
	w.clock.Set(now)
	b, _, err := w.engine.Briefing(ctx, KindWeekly, schedule.Run{Scheduled: now})
	if err != nil {
		t.Fatal(err)
	}
	var d BriefingData
	json.Unmarshal(b.Data, &d)
	wk := d.Week
	if wk == nil || wk.Mail.Inbound != 4 || wk.PrevMail.Inbound != 2 || wk.Mail.Outbound != 2 || wk.Mail.OwnerReplies != 2 || wk.Mail.OwnerReplyMedian != 30*time.Minute {
		t.Fatalf("week stats %+v", wk)
	}
	if wk.Accepted != 1 || wk.Rejected != 1 || wk.Acceptance != 0.5 {
		t.Errorf("proposal stats %+v", wk)
	}
	if len(wk.Trends) != 0 { // 4 vs 2 is too little to call a trend
		t.Errorf("trends %v", wk.Trends)
	}
	// The review covers the last whole week, and its title says which.
	if !d.PeriodStart.Equal(time.Date(2001, 10, 22, 0, 0, 0, 0, houston)) || !d.PeriodEnd.Equal(time.Date(2001, 10, 29, 0, 0, 0, 0, houston)) ||
		!strings.HasPrefix(b.Text, "Weekly review — Monday, October 22 to Sunday, October 28\n") {
		t.Errorf("period %v – %v, text:\n%s", d.PeriodStart, d.PeriodEnd, b.Text)
	}
	if b.Narrative != "A busier week: mail up, and one reply still waits for you." {
		t.Errorf("narrative %q", b.Narrative)
	}
	req := fake.Requests()[0]
	if last := req.Messages[len(req.Messages)-1].Content; !strings.Contains(req.System, untrusted.Rule) ||
		!strings.HasPrefix(last, untrusted.Open) || !strings.Contains(last, "Weekly review") {
		t.Errorf("narrative request: system %q, briefing %q", req.System, last)
	}
	n, err := w.st.NotificationByKey(ctx, BriefingKeyPrefix+"weekly:2001-10-29")
	if err != nil || !strings.HasPrefix(n.Text, "A busier week") {
		t.Errorf("weekly briefing notification %+v %v: want the narrative on top", n, err)
	}
}

// failOnce is a notifier whose first message is lost (the daemon
// stopped, or the queue could not be written, right after the briefing
// was stored).
type failOnce struct {
	Notifier
	failed bool
}

func (f *failOnce) Notify(ctx context.Context, m notify.Message) error {
	if !f.failed {
		f.failed = true
		return fmt.Errorf("disk full")
	}
	return f.Notifier.Notify(ctx, m)
}

// A briefing stored but never handed to the queue is sent by the next
// scheduled run of the day (the catch-up after a restart), not kept
// silently: "one briefing per day" must not become "none".
func TestBriefingStoredButNotQueuedIsSentByTheNextRun(t *testing.T) {
	ctx := context.Background()
	var lossy *failOnce
	w := newWorld(t, time.Date(2001, 10, 25, 7, 0, 0, 0, houston), func(o *Options) {
		lossy = &failOnce{Notifier: o.Notifier}
		o.Notifier = lossy
	})
	slot := w.clock.Now()
	if _, _, err := w.engine.Briefing(ctx, KindMorning, schedule.Run{Scheduled: slot}); err == nil {
		t.Fatal("the lost notification was not reported")
	}
	w.clock.Set(slot.Add(2 * time.Hour))
	if _, created, err := w.engine.Briefing(ctx, KindMorning, schedule.Run{Scheduled: slot, Late: true}); err != nil || created {
		t.Fatalf("catch-up: created %v, %v; want the stored briefing", created, err)
	}
	if _, err := w.st.NotificationByKey(ctx, BriefingKeyPrefix+KindMorning+":2001-10-25"); err != nil {
		t.Errorf("the morning briefing never reached the queue: %v", err)
	}
}

// A prep stored but never handed to the queue is queued by the next run,
// still once.
func TestMeetingPrepStoredButNotQueuedIsSentByTheNextRun(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2001, 10, 25, 9, 0, 0, 0, houston)
	var lossy *failOnce
	w := newWorld(t, now, func(o *Options) {
		lossy = &failOnce{Notifier: o.Notifier}
		o.Notifier = lossy
	})
	w.event(t, "soon", "Staff meeting", now.Add(time.Hour), now.Add(2*time.Hour), []string{"jae.black@example.com"}, nil)
	if _, err := w.engine.MeetingPrep(ctx); err == nil {
		t.Fatal("the lost notification was not reported")
	}
	for range 2 {
		w.clock.Set(w.clock.Now().Add(15 * time.Minute))
		if _, err := w.engine.MeetingPrep(ctx); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for _, x := range w.notifications(t) {
		if strings.HasPrefix(x.Key, "prep:soon:") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d prep notifications for the meeting, want 1", n)
	}
}

// The briefing lists GitHub items that wait for the owner: a notification
// the owner already read on GitHub does not wait any more, nor does a
// closed pull request; an unread mention does.
func TestBriefingGitHubSkipsWhatWasReadOrClosed(t *testing.T) {
	now := time.Date(2001, 10, 25, 7, 0, 0, 0, houston)
	w := newWorld(t, now)
	ctx := context.Background()
	items := []*store.Item{
		{Source: "github", ExternalID: "n1", Kind: "notification", Time: now.Add(-2 * time.Hour), Title: "Read on GitHub",
			Meta: map[string]any{"reason": "mention", "state": "open", "unread": false, "url": "https://github.com/acme/api/issues/1"}},
		{Source: "github", ExternalID: "n2", Kind: "notification", Time: now.Add(-time.Hour), Title: "Still unread",
			Meta: map[string]any{"reason": "mention", "state": "open", "unread": true, "url": "https://github.com/acme/api/issues/2"}},
		{Source: "github", ExternalID: "p3", Kind: "pr", Time: now.Add(-time.Hour), Title: "Merged already",
			Meta: map[string]any{"reason": "review_requested", "state": "merged", "url": "https://github.com/acme/api/pull/3"}},
	}
	if _, err := w.st.UpsertItems(ctx, items, store.UpsertOptions{}); err != nil {
		t.Fatal(err)
	}
	lines, err := w.engine.github(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 1 || lines[0].Title != "Still unread" {
		t.Errorf("GitHub lines %+v, want only the unread mention", lines)
	}
}

// A notification held for the briefings after a briefing ran, though
// created before a notification that briefing showed (deferred by quiet
// hours, then held back by the day's budget), is in the next briefing,
// and each held notification is shown once.
func TestHeldLateStillReachesTheNextBriefing(t *testing.T) {
	w := newWorld(t, time.Date(2001, 10, 25, 6, 0, 0, 0, houston))
	ctx := context.Background()
	for _, m := range []notify.Message{
		{Level: notify.Important, Key: "deferred", Text: "Deferred by quiet hours"},
		{Level: notify.FYI, Key: "fyi", Text: "An FYI for the morning"},
	} {
		if err := w.queue.Notify(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	hold := func(key string) {
		t.Helper()
		n, err := w.st.NotificationByKey(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.st.UpdateNotification(ctx, n.ID, store.NotificationUpdate{State: store.NotificationHeld}); err != nil {
			t.Fatal(err)
		}
	}
	hold("fyi")
	w.clock.Set(time.Date(2001, 10, 25, 7, 0, 0, 0, houston))
	m, _, err := w.engine.Briefing(ctx, KindMorning, schedule.Run{Scheduled: w.clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(m.Text, "An FYI for the morning") || strings.Contains(m.Text, "Deferred by quiet hours") {
		t.Fatalf("morning briefing:\n%s", m.Text)
	}
	hold("deferred") // quiet hours ended, the day's budget was spent
	w.clock.Set(time.Date(2001, 10, 25, 22, 0, 0, 0, houston))
	e, _, err := w.engine.Briefing(ctx, KindEvening, schedule.Run{Scheduled: w.clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(e.Text, "Deferred by quiet hours") || strings.Contains(e.Text, "An FYI for the morning") {
		t.Errorf("evening briefing:\n%s\nwant the late-held notification and not the morning's FYI again", e.Text)
	}
}

// A prep still waiting to go out (held back by quiet hours, say) is
// withdrawn when its meeting is cancelled or moved: the owner is not
// briefed late for a meeting that is off or at another time.
func TestMeetingPrepWithdrawnWhenTheMeetingChanges(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2001, 10, 25, 9, 0, 0, 0, houston)
	w := newWorld(t, now)
	w.event(t, "off", "Staff meeting", now.Add(time.Hour), now.Add(2*time.Hour), []string{"jae.black@example.com"}, nil)
	w.event(t, "moved", "Budget review", now.Add(80*time.Minute), now.Add(2*time.Hour), []string{"jae.black@example.com"}, nil)
	if n, err := w.engine.MeetingPrep(ctx); err != nil || n != 2 {
		t.Fatalf("prepared %d, %v; want 2", n, err)
	}
	w.event(t, "off", "Staff meeting", now.Add(time.Hour), now.Add(2*time.Hour), []string{"jae.black@example.com"}, map[string]any{"status": "cancelled"})
	w.event(t, "moved", "Budget review", now.Add(70*time.Minute), now.Add(2*time.Hour), []string{"jae.black@example.com"}, nil)
	w.clock.Set(now.Add(5 * time.Minute))
	if _, err := w.engine.MeetingPrep(ctx); err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, n := range w.notifications(t) {
		if strings.HasPrefix(n.Key, "prep:") {
			states[n.Key] = n.State
		}
	}
	want := map[string]string{
		fmt.Sprintf("prep:off:%d", now.Add(time.Hour).UnixMilli()):        store.NotificationWithdrawn,
		fmt.Sprintf("prep:moved:%d", now.Add(80*time.Minute).UnixMilli()): store.NotificationWithdrawn,
		fmt.Sprintf("prep:moved:%d", now.Add(70*time.Minute).UnixMilli()): store.NotificationQueued,
	}
	for key, state := range want {
		if states[key] != state {
			t.Errorf("%s: %q, want %q (all: %v)", key, states[key], state, states)
		}
	}
}

// Asked for just after midnight, the evening summary is the day that just
// ended: it covers that day's mail, and the new day keeps its own evening
// summary for its evening.
func TestManualEveningAfterMidnightIsTheDayThatEnded(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t, time.Date(2001, 10, 25, 15, 0, 0, 0, houston))
	w.mail(t, "late@example.com", "Jae Black <jae.black@example.com>", ownerAddr, "Contract question", time.Date(2001, 10, 25, 15, 0, 0, 0, houston),
		"Can you review the contract today?")
	if _, err := w.triage.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	w.clock.Set(time.Date(2001, 10, 26, 0, 30, 0, 0, houston))
	b, created, err := w.engine.Briefing(ctx, KindEvening, schedule.Run{Manual: true})
	if err != nil || !created {
		t.Fatal(created, err)
	}
	if b.Day != "2001-10-25" || !strings.Contains(b.Text, "Evening summary — Thursday, October 25") || !strings.Contains(b.Text, "Contract question") {
		t.Fatalf("manual evening summary at 00:30 is for %s:\n%s", b.Day, b.Text)
	}
	w.clock.Set(time.Date(2001, 10, 26, 22, 0, 0, 0, houston))
	e, created, err := w.engine.Briefing(ctx, KindEvening, schedule.Run{Scheduled: w.clock.Now()})
	if err != nil || !created || e.Day != "2001-10-26" {
		t.Errorf("the next evening: day %s, created %v, %v; want its own summary", e.Day, created, err)
	}
}
