package proactive

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/config"
	faketg "github.com/omnibrain/omnibrain/internal/fakes/telegram"
	"github.com/omnibrain/omnibrain/internal/testutil"
	"github.com/omnibrain/omnibrain/notify"
	"github.com/omnibrain/omnibrain/proactive/schedule"
	"github.com/omnibrain/omnibrain/store"
	"github.com/omnibrain/omnibrain/telegram"
)

var houston = mustZone("America/Chicago")

func mustZone(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return loc
}

const (
	tgToken = "123:TEST"
	ownerID = int64(4242)
)

// delivery is the real delivery path: queue → dispatcher (with the
// policy) → Telegram bot → fake Telegram.
type delivery struct {
	st    *store.Store
	clock *testutil.Clock
	queue *notify.Queue
	gate  *approval.Gate
	disp  *notify.Dispatcher
	tg    *faketg.Server
}

func newDelivery(t *testing.T, n config.Notifications, start time.Time) *delivery {
	t.Helper()
	ctx := context.Background()
	d := &delivery{clock: testutil.NewClock(start)}
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), store.FileName), store.Options{Now: d.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	d.st = st
	d.queue = notify.NewQueue(st, nil)
	gate, err := approval.NewGate(approval.GateOptions{Store: st, Notifier: d.queue, Now: d.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	d.tg = faketg.New(tgToken)
	t.Cleanup(d.tg.Close)
	d.tg.OpenChat(ownerID)
	bot, err := telegram.New(ctx, telegram.Options{Token: tgToken, APIURL: d.tg.URL(), OwnerID: ownerID, DB: st.DB(), Gate: gate, Queue: d.queue, Now: d.clock.Now, Location: houston})
	if err != nil {
		t.Fatal(err)
	}
	d.gate = gate
	policy, err := NewPolicy(st, gate, n, houston, nil)
	if err != nil {
		t.Fatal(err)
	}
	d.disp, err = notify.NewDispatcher(notify.DispatcherOptions{Queue: d.queue, Store: st, Sender: bot, Policy: policy, Now: d.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func (d *delivery) notify(t *testing.T, m notify.Message) {
	t.Helper()
	if err := d.queue.Notify(context.Background(), m); err != nil {
		t.Fatal(err)
	}
}

func (d *delivery) pass(t *testing.T) {
	t.Helper()
	if _, err := d.disp.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// sent returns the texts the owner received.
func (d *delivery) sent() []string {
	var out []string
	for _, m := range d.tg.SentTo(ownerID) {
		out = append(out, m.Text)
	}
	return out
}

func (d *delivery) state(t *testing.T, key string) string {
	t.Helper()
	n, err := d.st.NotificationByKey(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return n.State
}

// triaged stores an item with a triage decision, for the critical checks.
func triaged(t *testing.T, st *store.Store, id, category, level string) int64 {
	t.Helper()
	ctx := context.Background()
	res, err := st.UpsertItems(ctx, []*store.Item{{Source: "gmail", ExternalID: id, Kind: "email", Time: time.Now()}}, store.UpsertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = st.Tx(ctx, func(tx *store.Tx) error {
		return tx.SaveTriage(&store.Triage{ItemID: res[0].ID, Decision: "notify", Category: category, Level: level, Score: 90, ItemTime: time.Now()})
	})
	if err != nil {
		t.Fatal(err)
	}
	return res[0].ID
}

func TestPolicyThroughTheRealDelivery(t *testing.T) {
	night := time.Date(2001, 10, 25, 23, 0, 0, 0, houston)
	d := newDelivery(t, config.Notifications{QuietStart: "22:30", QuietEnd: "07:00", DailyBudget: 2}, night)
	personal := triaged(t, d.st, "crit-personal", "personal", "critical")
	spam := triaged(t, d.st, "crit-spam", "spam", "critical")
	bulk := triaged(t, d.st, "crit-bulk", "bulk", "critical")
	notCrit := triaged(t, d.st, "was-important", "personal", "important")

	d.notify(t, notify.Message{Level: notify.Important, Key: "a", Text: "important at night"})
	d.notify(t, notify.Message{Level: notify.Critical, Key: "sys", Text: "google access revoked"})
	d.notify(t, notify.Message{Level: notify.Critical, Key: "crit-personal", Text: "boss needs it by 5pm", ItemID: personal})
	d.notify(t, notify.Message{Level: notify.Critical, Key: "crit-spam", Text: "URGENT money", ItemID: spam})
	d.notify(t, notify.Message{Level: notify.Critical, Key: "crit-bulk", Text: "list alert", ItemID: bulk})
	d.notify(t, notify.Message{Level: notify.Critical, Key: "crit-claimed", Text: "claims critical", ItemID: notCrit})
	d.notify(t, notify.Message{Level: notify.FYI, Key: "f", Text: "fyi"})
	d.notify(t, notify.Message{Level: notify.Silent, Key: "s", Text: "silent"})
	d.notify(t, notify.Message{Level: notify.Important, Key: BriefingKeyPrefix + "evening:2001-10-25", Text: "your evening briefing"})
	// The same key again is dropped by the queue: never twice.
	d.notify(t, notify.Message{Level: notify.Critical, Key: "crit-personal", Text: "boss needs it by 5pm", ItemID: personal})
	d.pass(t)

	got := strings.Join(d.sent(), "|")
	for _, want := range []string{"google access revoked", "boss needs it by 5pm", "your evening briefing"} {
		if !strings.Contains(got, want) {
			t.Errorf("at 23:00 %q was not pushed; sent: %s", want, got)
		}
	}
	for _, not := range []string{"important at night", "URGENT money", "list alert", "claims critical", "fyi", "silent"} {
		if strings.Contains(got, not) {
			t.Errorf("at 23:00 in quiet hours %q was pushed", not)
		}
	}
	if n := strings.Count(got, "boss needs it by 5pm"); n != 1 {
		t.Errorf("the critical mail was pushed %d times", n)
	}
	for key, want := range map[string]string{"f": "held", "s": "held", "a": "queued", "crit-spam": "queued", "sys": "delivered"} {
		if st := d.state(t, key); st != want {
			t.Errorf("%s is %s, want %s", key, st, want)
		}
	}

	// 06:59: still quiet.
	d.clock.Set(time.Date(2001, 10, 26, 6, 59, 0, 0, houston))
	d.pass(t)
	if len(d.sent()) != 3 {
		t.Errorf("pushed before quiet hours ended: %v", d.sent())
	}
	// 07:00: the deferred ones go out, as far as the budget of 2 allows.
	d.clock.Set(time.Date(2001, 10, 26, 7, 0, 0, 0, houston))
	d.pass(t)
	sent := d.sent()
	if len(sent) != 5 {
		t.Fatalf("after quiet hours %d pushed, want 5 (2 more within the budget): %v", len(sent), sent)
	}
	held := 0
	for _, key := range []string{"a", "crit-spam", "crit-bulk", "crit-claimed"} {
		if d.state(t, key) == "held" {
			held++
		}
	}
	if held != 2 {
		t.Errorf("%d of the 4 deferred held for the briefing, want 2 (budget 2)", held)
	}
	// What was held, the FYI and the two the budget held back, is in the
	// morning briefing; what is silent is not.
	e, err := New(Options{Store: d.st, Location: houston, Now: d.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := e.Briefing(context.Background(), KindMorning, schedule.Run{Scheduled: d.clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	var bd BriefingData
	json.Unmarshal(b.Data, &bd)
	var fyi []string
	for _, f := range bd.FYI {
		fyi = append(fyi, f.Level+":"+f.Text)
	}
	slices.Sort(fyi)
	if fmt.Sprint(fyi) != "[critical:claims critical critical:list alert fyi:fyi]" || !strings.Contains(b.Text, " * list alert") {
		t.Errorf("the morning briefing gathered %v, want the FYI and the 2 held back by the budget:\n%s", fyi, b.Text)
	}
	// The budget counts per local day: tomorrow there is room again.
	d.clock.Set(time.Date(2001, 10, 27, 9, 0, 0, 0, houston))
	d.notify(t, notify.Message{Level: notify.Important, Key: "next-day", Text: "next day"})
	d.pass(t)
	if got := d.sent(); !strings.Contains(got[len(got)-1], "next day") {
		t.Errorf("the next day's push did not go out: %v", got)
	}
}

func TestQuietHoursWindow(t *testing.T) {
	p, err := NewPolicy(nil, nil, config.Notifications{QuietStart: "22:30", QuietEnd: "07:00"}, houston, nil)
	if err != nil {
		t.Fatal(err)
	}
	day := func(d, h, m int) time.Time { return time.Date(2001, 10, d, h, m, 0, 0, houston) }
	tests := []struct {
		now   time.Time
		quiet bool
		until time.Time
	}{
		{day(25, 22, 29), false, time.Time{}},
		{day(25, 22, 30), true, day(26, 7, 0)},
		{day(26, 3, 0), true, day(26, 7, 0)},
		{day(26, 7, 0), false, time.Time{}},
		{day(27, 23, 0), true, day(28, 7, 0)}, // the night clocks fall back: 07:00 CST
	}
	for _, tt := range tests {
		until, quiet := p.quietUntil(tt.now)
		if quiet != tt.quiet || !until.Equal(tt.until) {
			t.Errorf("%s: quiet %v until %v, want %v until %v", tt.now, quiet, until, tt.quiet, tt.until)
		}
	}
	if _, err := NewPolicy(nil, nil, config.Notifications{QuietStart: "25:00", QuietEnd: "07:00"}, houston, nil); err == nil {
		t.Error("a bad quiet_start was accepted")
	}
}

// Times in a briefing read as a person would say them, relative to the
// briefing's own time in the owner's zone.
func TestBriefingClock(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	ref := time.Date(2026, 3, 3, 7, 0, 0, 0, berlin) // a Tuesday morning
	tests := []struct {
		t    time.Time
		want string
	}{
		{time.Date(2026, 3, 3, 1, 30, 0, 0, berlin), "01:30"},
		{time.Date(2026, 3, 2, 19, 0, 0, 0, berlin), "yesterday 19:00"},
		{time.Date(2026, 3, 2, 23, 30, 0, 0, time.UTC), "00:30"}, // already Tuesday in Berlin
		{time.Date(2026, 3, 4, 9, 0, 0, 0, berlin), "tomorrow 09:00"},
		{time.Date(2026, 3, 6, 17, 0, 0, 0, berlin), "Fri 17:00"},
		{time.Date(2026, 2, 27, 17, 0, 0, 0, berlin), "Fri 17:00"},
		{time.Date(2026, 3, 20, 12, 0, 0, 0, berlin), "Fri Mar 20 12:00"},
	}
	for _, tt := range tests {
		if got := clock(tt.t, berlin, ref); got != tt.want {
			t.Errorf("clock(%v) = %q, want %q", tt.t, got, tt.want)
		}
	}
}

// Quiet hours that end at a time the spring-forward night skips end when
// the clocks jump, not a day later.
func TestQuietHoursEndingInTheDSTGap(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	utc := func(mo, d, h, m int) time.Time { return time.Date(2024, time.Month(mo), d, h, m, 0, 0, time.UTC) }
	tests := []struct {
		name  string
		loc   *time.Location
		now   time.Time
		until time.Time
	}{
		{"Chicago 01:45 CST, quiet until 02:30", houston, utc(3, 10, 7, 45), utc(3, 10, 8, 0)}, // 03:00 CDT
		{"Chicago 01:00 CST, quiet until 02:30", houston, utc(3, 10, 7, 0), utc(3, 10, 8, 0)},  // 03:00 CDT
		{"Berlin 01:45 CET, quiet until 02:30", berlin, utc(3, 31, 0, 45), utc(3, 31, 1, 0)},   // 03:00 CEST
		{"Chicago the night after, 01:45 CDT", houston, utc(3, 11, 6, 45), utc(3, 11, 7, 30)},  // 02:30 CDT
		{"Chicago fall back, 01:45 CDT", houston, utc(11, 3, 6, 45), utc(11, 3, 8, 30)},        // 02:30 CST
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewPolicy(nil, nil, config.Notifications{QuietStart: "23:00", QuietEnd: "02:30"}, tt.loc, nil)
			if err != nil {
				t.Fatal(err)
			}
			until, quiet := p.quietUntil(tt.now)
			if !quiet || !until.Equal(tt.until) {
				t.Errorf("quiet %v until %v, want until %v", quiet, until.In(tt.loc), tt.until.In(tt.loc))
			}
		})
	}
}

// Quiet hours, and the owner's /quiet, hold what omnibrain starts by
// itself; what the owner asked for (a proposal from chat) goes at once.
func TestWhatTheOwnerAskedForIsNotHeldByQuietHours(t *testing.T) {
	ctx := context.Background()
	night := time.Date(2001, 10, 25, 23, 0, 0, 0, houston)
	d := newDelivery(t, config.Notifications{QuietStart: "22:30", QuietEnd: "07:00"}, night)
	if err := d.queue.SetQuiet(ctx, night.Add(4*time.Hour)); err != nil {
		t.Fatal(err)
	}
	asked, err := d.gate.Propose(ctx, approval.Draft{Kind: approval.KindEmail, Origin: "agent", Title: "Mail Lily: I'll come",
		Payload: approval.EmailPayload{To: []string{"lily@example.com"}, Subject: "Friday", Body: "I'll come."}})
	if err != nil {
		t.Fatal(err)
	}
	own, err := d.gate.Propose(ctx, approval.Draft{Kind: approval.KindEmail, Origin: "proactive", Title: "Mail Bob: the numbers",
		Payload: approval.EmailPayload{To: []string{"bob@example.com"}, Subject: "Numbers", Body: "Here they are."}})
	if err != nil {
		t.Fatal(err)
	}
	d.pass(t)
	got := strings.Join(d.sent(), "|")
	if !strings.Contains(got, "Lily") {
		t.Errorf("the proposal the owner asked for waits in quiet hours; sent: %s", got)
	}
	if strings.Contains(got, "Bob") {
		t.Errorf("omnibrain's own proposal was pushed in quiet hours; sent: %s", got)
	}
	if st := d.state(t, "proposal:"+asked.ID); st != store.NotificationDelivered {
		t.Errorf("the asked-for proposal's notification is %s", st)
	}
	if st := d.state(t, "proposal:"+own.ID); st != store.NotificationQueued {
		t.Errorf("omnibrain's own proposal's notification is %s, want it held", st)
	}
}
