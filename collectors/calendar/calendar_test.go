package calendar

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/omnibrain/omnibrain/google"
	fakegoogle "github.com/omnibrain/omnibrain/internal/fakes/google"
	"github.com/omnibrain/omnibrain/internal/testutil"
	"github.com/omnibrain/omnibrain/store"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"))
}

var berlin = mustZone("Europe/Berlin")

func mustZone(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return loc
}

type env struct {
	fake  *fakegoogle.Server
	st    *store.Store
	clock *testutil.Clock
	waits *waits
}

type waits struct {
	mu sync.Mutex
	d  []time.Duration
}

func (w *waits) sleep(_ context.Context, d time.Duration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.d = append(w.d, d)
	return nil
}

func newEnv(t *testing.T) *env {
	t.Helper()
	clk := testutil.NewClock(time.Date(2024, 3, 15, 12, 0, 0, 0, time.UTC))
	fake := fakegoogle.New(t, fakegoogle.Options{TimeZone: "Europe/Berlin", Now: clk.Now})
	fakegoogle.CheckAtEnd(t, fake)
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "omnibrain.db"), store.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &env{fake: fake, st: st, clock: clk, waits: &waits{}}
}

func (e *env) collector(t *testing.T) *Collector { return e.collectorTB(t) }

func (e *env) collectorTB(t testing.TB) *Collector {
	t.Helper()
	hc := google.NewHTTPClient(google.ClientOptions{Sleep: e.waits.sleep, Now: e.clock.Now})
	svc, err := google.NewCalendar(context.Background(), e.fake.URL, hc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Options{Service: svc, Store: e.st, PastDays: 7, FutureDays: 30, Location: berlin, Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func dt(s, tz string) *fakegoogle.EventDateTime {
	return &fakegoogle.EventDateTime{DateTime: s, TimeZone: tz}
}

func (e *env) add(t *testing.T, ev fakegoogle.Event) fakegoogle.Event {
	t.Helper()
	out, err := e.fake.AddEvent("primary", ev)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (e *env) item(t *testing.T, id string) *store.Item {
	t.Helper()
	it, err := e.st.ItemByExternalID(context.Background(), Source, id)
	if err != nil {
		t.Fatalf("item %s: %v", id, err)
	}
	return it
}

func (e *env) events(t *testing.T) int {
	t.Helper()
	evs, err := e.st.PendingEvents(context.Background(), "test", 100000)
	if err != nil {
		t.Fatal(err)
	}
	return len(evs)
}

func conflictsOf(it *store.Item) []string {
	var out []string
	for _, v := range it.Meta["conflicts"].([]any) {
		out = append(out, v.(string))
	}
	return out
}

func TestFullSyncThenIncremental(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	weekly := e.add(t, fakegoogle.Event{Summary: "Weekly", Start: dt("2024-03-18T09:00:00+01:00", "Europe/Berlin"), End: dt("2024-03-18T10:00:00+01:00", "Europe/Berlin"),
		Recurrence: []string{"RRULE:FREQ=WEEKLY;BYDAY=MO;COUNT=3"},
		Attendees:  []fakegoogle.Attendee{{Email: "owner@example.com", ResponseStatus: "accepted"}, {Email: "Alice@Example.org", DisplayName: "Alice", ResponseStatus: "declined"}}})
	holiday := e.add(t, fakegoogle.Event{Summary: "Holiday", Start: &fakegoogle.EventDateTime{Date: "2024-03-22"}, End: &fakegoogle.EventDateTime{Date: "2024-03-23"}})
	// 03:30 in New York on 1 April is 09:30 in Berlin: it overlaps the
	// Weekly instance of that day (09:00–10:00 Berlin).
	ny := e.add(t, fakegoogle.Event{Summary: "NY sync", Start: dt("2024-04-01T03:30:00-04:00", "America/New_York"), End: dt("2024-04-01T04:30:00-04:00", "America/New_York")})
	free := e.add(t, fakegoogle.Event{Summary: "Focus (free)", Transparency: "transparent", Start: dt("2024-04-01T09:00:00+02:00", "Europe/Berlin"), End: dt("2024-04-01T11:00:00+02:00", "Europe/Berlin")})
	far := e.add(t, fakegoogle.Event{Summary: "Next year", Start: dt("2025-03-18T09:00:00+01:00", "Europe/Berlin"), End: dt("2025-03-18T10:00:00+01:00", "Europe/Berlin")})

	c := e.collector(t)
	res, err := c.Collect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Full || res.Stored != 6 || res.Skipped != 0 {
		t.Errorf("first pass = %+v, want a full sync storing 3 instances + holiday + NY + focus", res)
	}
	if _, err := e.st.ItemByExternalID(ctx, Source, far.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an event outside the window was stored: %v", err)
	}

	// Recurring instances at 09:00 Berlin on both sides of the DST change.
	first := e.item(t, weekly.ID+"_20240318T080000Z")
	afterDST := e.item(t, weekly.ID+"_20240401T070000Z")
	if !first.Time.Equal(time.Date(2024, 3, 18, 8, 0, 0, 0, time.UTC)) || first.Meta["start"] != "2024-03-18T09:00:00+01:00" {
		t.Errorf("first instance time %v start %v", first.Time, first.Meta["start"])
	}
	if !afterDST.Time.Equal(time.Date(2024, 4, 1, 7, 0, 0, 0, time.UTC)) || afterDST.Meta["start"] != "2024-04-01T09:00:00+02:00" {
		t.Errorf("instance after DST time %v start %v", afterDST.Time, afterDST.Meta["start"])
	}
	if afterDST.Meta["recurring_event_id"] != weekly.ID || afterDST.Thread != weekly.ID || afterDST.Meta["time_zone"] != "Europe/Berlin" {
		t.Errorf("instance meta = %v", afterDST.Meta)
	}
	atts := afterDST.Meta["attendees"].([]any)
	alice := atts[1].(map[string]any)
	if alice["email"] != "alice@example.org" || alice["name"] != "Alice" || alice["response_status"] != "declined" || atts[0].(map[string]any)["self"] != true {
		t.Errorf("attendees = %v", atts)
	}
	if !slices.Contains(afterDST.People, "alice@example.org") || !slices.Contains(afterDST.People, "Alice") {
		t.Errorf("people = %v", afterDST.People)
	}
	// All-day: midnight Berlin, flagged.
	h := e.item(t, holiday.ID)
	if h.Meta["all_day"] != true || h.Meta["start"] != "2024-03-22T00:00:00+01:00" || h.Meta["end"] != "2024-03-23T00:00:00+01:00" || !h.Time.Equal(time.Date(2024, 3, 21, 23, 0, 0, 0, time.UTC)) {
		t.Errorf("all-day = time %v meta %v", h.Time, h.Meta)
	}
	// Cross-timezone: New York's offset kept, UTC in Time.
	n := e.item(t, ny.ID)
	if n.Meta["start"] != "2024-04-01T03:30:00-04:00" || !n.Time.Equal(time.Date(2024, 4, 1, 7, 30, 0, 0, time.UTC)) {
		t.Errorf("NY event time %v start %v", n.Time, n.Meta["start"])
	}
	// Conflicts: NY (07:30–08:30 UTC) overlaps the 1 April instance
	// (07:00–08:00 UTC); the free focus block conflicts with nothing.
	if got := conflictsOf(e.item(t, ny.ID)); !slices.Equal(got, []string{afterDST.ExternalID}) {
		t.Errorf("NY conflicts = %v", got)
	}
	if got := conflictsOf(e.item(t, afterDST.ExternalID)); !slices.Equal(got, []string{ny.ID}) {
		t.Errorf("instance conflicts = %v", got)
	}
	if _, ok := e.item(t, free.ID).Meta["conflicts"]; ok {
		t.Error("a free (transparent) event has conflicts")
	}

	// A second pass changes nothing and uses the sync token.
	eventsBefore := e.events(t)
	res, err = c.Collect(ctx)
	if err != nil || res.Full || res.Stored != 0 || e.events(t) != eventsBefore {
		t.Errorf("second pass = %+v, %v; %d new item events", res, err, e.events(t)-eventsBefore)
	}
	last := e.fake.Requests()[len(e.fake.Requests())-1]
	if last.Query.Get("syncToken") == "" || last.Query.Get("timeMin") != "" {
		t.Errorf("second pass request = %v, want an incremental syncToken request", last.Query)
	}

	// The owner declines the NY sync elsewhere: only that event comes back,
	// and the conflict goes on both sides.
	e.clock.Add(time.Minute)
	e.fake.UpdateEvent("primary", ny.ID, func(ev *fakegoogle.Event) {
		ev.Attendees = []fakegoogle.Attendee{{Email: "owner@example.com", ResponseStatus: "declined", Self: true}}
	})
	res, err = c.Collect(ctx)
	if err != nil || res.Seen != 1 || res.Stored != 1 {
		t.Errorf("after a change = %+v, %v", res, err)
	}
	if _, ok := e.item(t, afterDST.ExternalID).Meta["conflicts"]; ok {
		t.Error("conflict kept after the owner declined the other event")
	}
}

func TestCancellations(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	weekly := e.add(t, fakegoogle.Event{Summary: "Weekly", Start: dt("2024-03-18T09:00:00+01:00", "Europe/Berlin"), End: dt("2024-03-18T10:00:00+01:00", "Europe/Berlin"),
		Recurrence: []string{"RRULE:FREQ=WEEKLY;COUNT=3"}})
	single := e.add(t, fakegoogle.Event{Summary: "Clash", Start: dt("2024-03-18T09:30:00+01:00", ""), End: dt("2024-03-18T10:30:00+01:00", "")})
	gone := e.add(t, fakegoogle.Event{Summary: "Dropped while offline", Start: dt("2024-03-20T09:00:00+01:00", ""), End: dt("2024-03-20T10:00:00+01:00", "")})
	series := e.add(t, fakegoogle.Event{Summary: "Daily standup", Start: dt("2024-03-16T11:00:00+01:00", "Europe/Berlin"), End: dt("2024-03-16T11:15:00+01:00", "Europe/Berlin"),
		Recurrence: []string{"RRULE:FREQ=DAILY;COUNT=4"}})
	c := e.collector(t)
	if _, err := c.Collect(ctx); err != nil {
		t.Fatal(err)
	}
	var standups []string
	for d := 16; d <= 19; d++ {
		standups = append(standups, fmt.Sprintf("%s_202403%02dT100000Z", series.ID, d))
		e.item(t, standups[len(standups)-1])
	}
	inst := weekly.ID + "_20240318T080000Z"
	if !slices.Equal(conflictsOf(e.item(t, inst)), []string{single.ID}) {
		t.Fatalf("conflicts before = %v", e.item(t, inst).Meta["conflicts"])
	}

	e.clock.Add(time.Minute)
	e.fake.CancelEvent("primary", single.ID)
	e.fake.CancelEvent("primary", weekly.ID+"_20240325T080000Z")
	res, err := c.Collect(ctx)
	if err != nil || res.Cancelled != 2 {
		t.Fatalf("pass with cancellations = %+v, %v", res, err)
	}
	if s := e.item(t, single.ID); s.Meta["status"] != "cancelled" || s.Title != "Clash" {
		t.Errorf("cancelled single = %v %v", s.Title, s.Meta)
	}
	if s := e.item(t, weekly.ID+"_20240325T080000Z"); s.Meta["status"] != "cancelled" {
		t.Errorf("cancelled instance = %v", s.Meta)
	}
	if _, ok := e.item(t, inst).Meta["conflicts"]; ok {
		t.Error("a conflict with a cancelled event remains")
	}

	// The whole series is deleted: every stored instance is cancelled.
	e.clock.Add(time.Minute)
	e.fake.CancelEvent("primary", series.ID)
	if res, err := c.Collect(ctx); err != nil || res.Full || res.Cancelled != len(standups) {
		t.Fatalf("pass cancelling the series = %+v, %v; want %d cancelled", res, err, len(standups))
	}
	for _, id := range standups {
		if it := e.item(t, id); it.Meta["status"] != "cancelled" || it.Title != "Daily standup" {
			t.Errorf("instance %s of the deleted series = %q %v", id, it.Title, it.Meta)
		}
	}

	// Deleted while the token was stale: the full resync notices.
	e.fake.CancelEvent("primary", gone.ID)
	e.fake.ExpireSyncTokens()
	res, err = c.Collect(ctx)
	if err != nil || !res.Full || res.Cancelled != 1 {
		t.Errorf("full resync = %+v, %v", res, err)
	}
	if e.item(t, gone.ID).Meta["status"] != "cancelled" {
		t.Error("an event deleted during a 410 gap is not marked cancelled")
	}
}

func TestSyncToken410FallsBackToFullSync(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	a := e.add(t, fakegoogle.Event{Summary: "A", Start: dt("2024-03-18T09:00:00+01:00", ""), End: dt("2024-03-18T10:00:00+01:00", "")})
	c := e.collector(t)
	if _, err := c.Collect(ctx); err != nil {
		t.Fatal(err)
	}
	e.fake.ExpireSyncTokens()
	b := e.add(t, fakegoogle.Event{Summary: "B", Start: dt("2024-03-19T09:00:00+01:00", ""), End: dt("2024-03-19T10:00:00+01:00", "")})
	before := e.events(t)
	res, err := c.Collect(ctx)
	if err != nil || !res.Full || res.Stored != 1 {
		t.Fatalf("after 410 = %+v, %v; want a full sync storing only B", res, err)
	}
	if e.events(t)-before != 1 {
		t.Errorf("%d item events, want 1 (A must not be re-announced)", e.events(t)-before)
	}
	e.item(t, a.ID)
	e.item(t, b.ID)
	var saw410 bool
	for _, r := range e.fake.Requests() {
		saw410 = saw410 || r.Status == 410
	}
	if !saw410 {
		t.Error("the fake never answered 410")
	}
	// The new token works again.
	if res, err := c.Collect(ctx); err != nil || res.Full {
		t.Errorf("pass after resync = %+v, %v", res, err)
	}
}

func TestWindowMovesAtMidnight(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := e.collector(t)
	if _, err := c.Collect(ctx); err != nil {
		t.Fatal(err)
	}
	// A daily event: its instance of 15 April enters the window tomorrow.
	daily := e.add(t, fakegoogle.Event{Summary: "Daily", Start: dt("2024-03-15T08:00:00+01:00", "Europe/Berlin"), End: dt("2024-03-15T08:15:00+01:00", "Europe/Berlin"),
		Recurrence: []string{"RRULE:FREQ=DAILY"}})
	res, err := c.Collect(ctx)
	if err != nil || res.Full {
		t.Fatalf("same day: %+v, %v", res, err)
	}
	edge := daily.ID + "_20240415T060000Z" // 31 days ahead: in the window only from tomorrow
	if _, err := e.st.ItemByExternalID(ctx, Source, edge); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("15 April stored before it entered the window: %v", err)
	}
	e.clock.Add(24 * time.Hour)
	res, err = c.Collect(ctx)
	if err != nil || !res.Full {
		t.Fatalf("next day: %+v, %v; want a full sync of the moved window", res, err)
	}
	e.item(t, edge)
}

func TestCrashBetweenItemsAndCursor(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for i := range 5 {
		day := time.Date(2024, 3, 18+i, 9, 0, 0, 0, berlin)
		e.add(t, fakegoogle.Event{Summary: "E", Start: dt(day.Format(time.RFC3339), ""), End: dt(day.Add(time.Hour).Format(time.RFC3339), "")})
	}
	c := e.collector(t)
	c.beforeCursor = func() error { return errors.New("killed") }
	if _, err := c.Collect(ctx); err == nil {
		t.Fatal("the simulated crash did not fail the pass")
	}
	if cur, _ := e.st.Cursor(ctx, c.cursorName()); cur != "" {
		t.Errorf("cursor saved despite the crash: %s", cur)
	}
	counts, _ := e.st.CountItems(ctx)
	if len(counts) != 0 || e.events(t) != 0 {
		t.Errorf("items without their cursor: %v", counts)
	}
	// A restarted daemon (a new collector) syncs everything once.
	c2 := e.collector(t)
	if res, err := c2.Collect(ctx); err != nil || res.Stored != 5 {
		t.Fatalf("after restart = %+v, %v", res, err)
	}
	if res, err := c2.Collect(ctx); err != nil || res.Stored != 0 {
		t.Errorf("again = %+v, %v", res, err)
	}
	if n := e.events(t); n != 5 {
		t.Errorf("%d item events, want 5 (no duplicates)", n)
	}
}

func TestRateLimitedListIsRetried(t *testing.T) {
	e := newEnv(t)
	e.add(t, fakegoogle.Event{Summary: "A", Start: dt("2024-03-18T09:00:00+01:00", ""), End: dt("2024-03-18T10:00:00+01:00", "")})
	e.fake.InjectFault(fakegoogle.Fault{Path: "/calendar/v3/", Status: 429, RetryAfter: "3", Times: 1})
	c := e.collector(t)
	res, err := c.Collect(context.Background())
	if err != nil || res.Stored != 1 {
		t.Fatalf("pass = %+v, %v", res, err)
	}
	if len(e.waits.d) != 1 || e.waits.d[0] != 3*time.Second {
		t.Errorf("waits = %v, want [3s] from Retry-After", e.waits.d)
	}
	// A long Retry-After ends the pass with a RetryError for the scheduler.
	e.fake.InjectFault(fakegoogle.Fault{Path: "/calendar/v3/", Status: 429, RetryAfter: "600", Times: 1})
	_, err = c.Collect(context.Background())
	var re *google.RetryError
	if !errors.As(err, &re) || re.RetryAfter() != 10*time.Minute {
		t.Errorf("long Retry-After: %v", err)
	}
}

func TestMalformedEventIsSkipped(t *testing.T) {
	e := newEnv(t)
	good := e.add(t, fakegoogle.Event{Summary: "Good", Start: dt("2024-03-18T09:00:00+01:00", ""), End: dt("2024-03-18T10:00:00+01:00", "")})
	bad := e.add(t, fakegoogle.Event{Summary: "Bad", Start: dt("2024-03-19T09:00:00+01:00", ""), End: dt("2024-03-19T10:00:00+01:00", "")})
	// Corrupt the stored answer: an end before the start.
	e.fake.UpdateEvent("primary", bad.ID, func(ev *fakegoogle.Event) { ev.End = dt("2024-03-19T08:00:00+01:00", "") })
	res, err := e.collector(t).Collect(context.Background())
	if err != nil || res.Skipped != 1 || res.Stored != 1 {
		t.Fatalf("pass = %+v, %v", res, err)
	}
	e.item(t, good.ID)
}

// BenchmarkIdlePoll measures one incremental pass with nothing changed
// over a month of events: the steady-state cost of polling a calendar.
// cpu-µs/op is the process's CPU, the in-process fake's included.
func BenchmarkIdlePoll(b *testing.B) {
	clk := testutil.NewClock(time.Date(2024, 3, 15, 12, 0, 0, 0, time.UTC))
	fake := fakegoogle.New(b, fakegoogle.Options{TimeZone: "Europe/Berlin", Now: clk.Now})
	st, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "omnibrain.db"), store.Options{Now: clk.Now})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	e := &env{fake: fake, st: st, clock: clk, waits: &waits{}}
	fake.AddEvent("primary", fakegoogle.Event{Summary: "Daily", Start: dt("2024-03-11T09:00:00+01:00", "Europe/Berlin"), End: dt("2024-03-11T09:15:00+01:00", "Europe/Berlin"),
		Recurrence: []string{"RRULE:FREQ=DAILY"}})
	for i := range 20 {
		day := time.Date(2024, 3, 16+i, 14, 0, 0, 0, berlin)
		fake.AddEvent("primary", fakegoogle.Event{Summary: "Meeting", Start: dt(day.Format(time.RFC3339), ""), End: dt(day.Add(time.Hour).Format(time.RFC3339), "")})
	}
	c := e.collectorTB(b)
	if _, err := c.Collect(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu := testutil.CPUTime()
	for b.Loop() {
		res, err := c.Collect(context.Background())
		if err != nil || res.Full || res.Stored != 0 {
			b.Fatalf("idle pass = %+v, %v", res, err)
		}
	}
	b.ReportMetric(float64((testutil.CPUTime()-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
}

// An event moved out of the window is still updated (we hold it), but its
// conflicts are only computed inside the window: it must not keep the ones
// it had at its old time.
func TestEventMovedOutOfWindowDropsItsConflicts(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	a := e.add(t, fakegoogle.Event{Summary: "A", Start: dt("2024-03-18T10:00:00+01:00", "Europe/Berlin"), End: dt("2024-03-18T11:00:00+01:00", "Europe/Berlin")})
	b := e.add(t, fakegoogle.Event{Summary: "B", Start: dt("2024-03-18T10:30:00+01:00", "Europe/Berlin"), End: dt("2024-03-18T11:30:00+01:00", "Europe/Berlin")})
	c := e.collector(t)
	if _, err := c.Collect(ctx); err != nil {
		t.Fatal(err)
	}
	if got := conflictsOf(e.item(t, b.ID)); !slices.Equal(got, []string{a.ID}) {
		t.Fatalf("B conflicts = %v", got)
	}

	e.clock.Add(time.Minute)
	e.fake.UpdateEvent("primary", b.ID, func(ev *fakegoogle.Event) {
		ev.Start, ev.End = dt("2024-06-18T10:30:00+02:00", "Europe/Berlin"), dt("2024-06-18T11:30:00+02:00", "Europe/Berlin")
	})
	if res, err := c.Collect(ctx); err != nil || res.Full {
		t.Fatalf("incremental pass = %+v, %v", res, err)
	}
	for _, id := range []string{a.ID, b.ID} {
		if v, ok := e.item(t, id).Meta["conflicts"]; ok {
			t.Errorf("%s keeps conflicts %v after B moved months away", id, v)
		}
	}
	if got := e.item(t, b.ID).Meta["start"]; got != "2024-06-18T10:30:00+02:00" {
		t.Errorf("B start = %v, want the new time", got)
	}
}
