package notify_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/omnibrain/omnibrain/health"
	"github.com/omnibrain/omnibrain/internal/testutil"
	"github.com/omnibrain/omnibrain/notify"
	"github.com/omnibrain/omnibrain/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(t testing.TB, c *testutil.Clock) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "omnibrain.db"), store.Options{Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// sender records deliveries; err, if set, answers every Send.
type sender struct {
	mu   sync.Mutex
	got  []notify.Queued
	err  error
	sent chan struct{}
}

func (s *sender) Send(_ context.Context, m notify.Queued) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	s.got = append(s.got, m)
	if s.sent != nil {
		s.sent <- struct{}{}
	}
	return nil
}

func (s *sender) texts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, m := range s.got {
		out = append(out, m.Text)
	}
	return out
}

func TestNotifyValidatesAndDeduplicates(t *testing.T) {
	c := testutil.NewClock(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	st := open(t, c)
	q := notify.NewQueue(st, nil)
	ctx := context.Background()
	if err := q.Notify(ctx, notify.Message{Level: "loud", Text: "x"}); err == nil {
		t.Error("unknown level accepted")
	}
	if err := q.Notify(ctx, notify.Message{Level: notify.FYI}); err == nil {
		t.Error("empty message accepted")
	}
	for i := 0; i < 3; i++ {
		if err := q.Notify(ctx, notify.Message{Level: notify.Important, Key: "mail:1:urgent", Text: fmt.Sprint("urgent ", i)}); err != nil {
			t.Fatal(err)
		}
	}
	q.Notify(ctx, notify.Message{Level: notify.FYI, Text: "no key 1"})
	q.Notify(ctx, notify.Message{Level: notify.FYI, Text: "no key 2"})
	counts, _ := q.Counts(ctx)
	if counts["queued"] != 3 {
		t.Errorf("queued %d, want 3 (one per key, every keyless one)", counts["queued"])
	}
	n, _ := st.NotificationByKey(ctx, "mail:1:urgent")
	if n.Text != "urgent 0" {
		t.Errorf("kept %q, want the first", n.Text)
	}
}

func TestDispatcherDeliversInOrderOnceAndHoldsSilent(t *testing.T) {
	c := testutil.NewClock(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	st := open(t, c)
	q := notify.NewQueue(st, nil)
	ctx := context.Background()
	for i, l := range []notify.Level{notify.FYI, notify.Silent, notify.Important, notify.Critical} {
		q.Notify(ctx, notify.Message{Level: l, Text: fmt.Sprint(i, l)})
	}
	s := &sender{}
	reg := health.NewRegistry(c.Now)
	d, _ := notify.NewDispatcher(notify.DispatcherOptions{Queue: q, Store: st, Sender: s, Now: c.Now, Health: reg, HealthName: "telegram"})
	for i := 0; i < 2; i++ {
		if _, err := d.Pass(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := fmt.Sprint(s.texts()); got != "[0fyi 2important 3critical]" {
		t.Errorf("delivered %s", got)
	}
	held, _ := q.Held(ctx, 10)
	if len(held) != 1 || held[0].Level != notify.Silent {
		t.Errorf("held %+v", held)
	}
	if comp, _ := reg.Get("telegram"); comp.State != health.OK || comp.Counters["notifications_delivered"] != 3 {
		t.Errorf("health %+v", comp)
	}
}

func TestDispatcherKeepsEverythingWhileUnreachable(t *testing.T) {
	c := testutil.NewClock(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	st := open(t, c)
	q := notify.NewQueue(st, nil)
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		q.Notify(ctx, notify.Message{Level: notify.Important, Text: fmt.Sprint(i)})
	}
	s := &sender{err: errors.New("dial tcp: connection refused")}
	reg := health.NewRegistry(c.Now)
	d, _ := notify.NewDispatcher(notify.DispatcherOptions{Queue: q, Store: st, Sender: s, Now: c.Now, Health: reg, HealthName: "telegram"})
	for i := 0; i < 3; i++ {
		if _, err := d.Pass(ctx); err == nil {
			t.Fatal("pass succeeded while the channel is down")
		}
	}
	if comp, _ := reg.Get("telegram"); comp.State != health.Degraded {
		t.Errorf("health while down: %+v", comp)
	}
	counts, _ := q.Counts(ctx)
	if counts["queued"] != 5 {
		t.Fatalf("counts while down %v", counts)
	}
	s.mu.Lock()
	s.err = nil
	s.mu.Unlock()
	if _, err := d.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	d.Pass(ctx)
	if got := fmt.Sprint(s.texts()); got != "[0 1 2 3 4]" {
		t.Errorf("delivered %s", got)
	}
}

func TestDispatcherRateLimitAndPermanentErrors(t *testing.T) {
	c := testutil.NewClock(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	st := open(t, c)
	q := notify.NewQueue(st, nil)
	ctx := context.Background()
	q.Notify(ctx, notify.Message{Level: notify.Important, Key: "a", Text: "a"})
	s := &sender{err: &notify.RetryAfterError{After: 30 * time.Second, Err: errors.New("429"), RateLimit: true}}
	d, _ := notify.NewDispatcher(notify.DispatcherOptions{Queue: q, Store: st, Sender: s, Now: c.Now})
	var ra *notify.RetryAfterError
	if _, err := d.Pass(ctx); !errors.As(err, &ra) {
		t.Fatalf("pass: %v", err)
	}
	s.err = nil
	d.Pass(ctx)
	if len(s.texts()) != 0 {
		t.Fatal("sent before retry_after passed")
	}
	c.Add(31 * time.Second)
	d.Pass(ctx)
	if len(s.texts()) != 1 {
		t.Fatal("not sent after retry_after")
	}

	q.Notify(ctx, notify.Message{Level: notify.Important, Key: "b", Text: "b"})
	s.err = &notify.PermanentError{Err: errors.New("Bad Request: can't parse entities")}
	if _, err := d.Pass(ctx); err != nil {
		t.Fatalf("a permanent failure stopped the queue: %v", err)
	}
	n, _ := st.NotificationByKey(ctx, "b")
	if n.State != "failed" || n.LastError == "" {
		t.Errorf("refused notification %+v", n)
	}
}

func TestQuietDefersAllButCritical(t *testing.T) {
	c := testutil.NewClock(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	st := open(t, c)
	q := notify.NewQueue(st, nil)
	ctx := context.Background()
	q.SetQuiet(ctx, c.Now().Add(time.Hour))
	q.Notify(ctx, notify.Message{Level: notify.Important, Text: "later"})
	q.Notify(ctx, notify.Message{Level: notify.Critical, Text: "now"})
	s := &sender{}
	d, _ := notify.NewDispatcher(notify.DispatcherOptions{Queue: q, Store: st, Sender: s, Now: c.Now})
	wait, _ := d.Pass(ctx)
	if got := fmt.Sprint(s.texts()); got != "[now]" {
		t.Errorf("during quiet: %s", got)
	}
	if wait <= 0 || wait > time.Hour {
		t.Errorf("wait %v", wait)
	}
	c.Add(time.Hour)
	d.Pass(ctx)
	if got := fmt.Sprint(s.texts()); got != "[now later]" {
		t.Errorf("after quiet: %s", got)
	}
}

// /quiet off (or a shorter /quiet) releases what the quiet time held,
// and only that: a notification the policy deferred further keeps its time.
func TestEndingQuietReleasesWhatItHeld(t *testing.T) {
	c := testutil.NewClock(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	st := open(t, c)
	q := notify.NewQueue(st, nil)
	ctx := context.Background()
	later := c.Now().Add(5 * time.Hour)
	s := &sender{}
	d, _ := notify.NewDispatcher(notify.DispatcherOptions{Queue: q, Store: st, Sender: s, Now: c.Now,
		Policy: textPolicy{"policy says later": later}})
	q.SetQuiet(ctx, c.Now().Add(3*time.Hour))
	q.Notify(ctx, notify.Message{Level: notify.Important, Key: "a", Text: "held by quiet"})
	q.Notify(ctx, notify.Message{Level: notify.Important, Key: "b", Text: "policy says later"})
	d.Pass(ctx)
	if got := s.texts(); len(got) != 0 {
		t.Fatalf("during quiet: %q", got)
	}
	// Shortened to an hour: due then, not before.
	if err := q.SetQuiet(ctx, c.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	c.Add(59 * time.Minute)
	d.Pass(ctx)
	if got := s.texts(); len(got) != 0 {
		t.Fatalf("before the shortened end: %q", got)
	}
	c.Add(time.Minute)
	d.Pass(ctx)
	if got := fmt.Sprint(s.texts()); got != "[held by quiet]" {
		t.Fatalf("at the shortened end: %s", got)
	}
	// Quiet again, then off: released at once.
	q.SetQuiet(ctx, c.Now().Add(3*time.Hour))
	q.Notify(ctx, notify.Message{Level: notify.Important, Key: "c", Text: "held again"})
	d.Pass(ctx)
	if err := q.SetQuiet(ctx, time.Time{}); err != nil {
		t.Fatal(err)
	}
	d.Pass(ctx)
	if got := fmt.Sprint(s.texts()); got != "[held by quiet held again]" {
		t.Errorf("after /quiet off: %s", got)
	}
	if n, _ := st.NotificationByKey(ctx, "b"); n.State != store.NotificationQueued || !n.NotBefore.Equal(later) {
		t.Errorf("the policy's deferral was changed: %+v", n)
	}
}

// textPolicy defers the messages it names until their time.
type textPolicy map[string]time.Time

func (p textPolicy) Decide(_ context.Context, m notify.Queued, now time.Time) notify.Decision {
	if until, ok := p[m.Text]; ok && now.Before(until) {
		return notify.Decision{Action: notify.Defer, Until: until}
	}
	return notify.Decision{Action: notify.Deliver}
}

// policy defers everything once by an hour.
type policy struct{ until time.Time }

func (p policy) Decide(_ context.Context, m notify.Queued, now time.Time) notify.Decision {
	if now.Before(p.until) {
		return notify.Decision{Action: notify.Defer, Until: p.until}
	}
	return notify.Decision{Action: notify.Deliver}
}

func TestRunWakesOnNotify(t *testing.T) {
	c := testutil.NewClock(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	st := open(t, c)
	q := notify.NewQueue(st, nil)
	s := &sender{sent: make(chan struct{}, 4)}
	d, _ := notify.NewDispatcher(notify.DispatcherOptions{Queue: q, Store: st, Sender: s, Now: c.Now, Policy: policy{}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- d.Run(ctx) }()
	q.Notify(ctx, notify.Message{Level: notify.FYI, Text: "hello"})
	select {
	case <-s.sent:
	case <-time.After(5 * time.Second):
		t.Fatal("not delivered")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// WaitPass returns after a whole dispatcher pass begun after the call:
// what was due is delivered by then, and what is held is not.
func TestWaitPassSeesEverythingDueDelivered(t *testing.T) {
	c := testutil.NewClock(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	st := open(t, c)
	q := notify.NewQueue(st, nil)
	s := &sender{}
	d, _ := notify.NewDispatcher(notify.DispatcherOptions{Queue: q, Store: st, Sender: s, Now: c.Now})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- d.Run(ctx) }()
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	for i := range 3 {
		q.Notify(ctx, notify.Message{Level: notify.FYI, Text: fmt.Sprint("due ", i)})
		q.Notify(ctx, notify.Message{Level: notify.Silent, Text: fmt.Sprint("held ", i)})
		if err := q.WaitPass(wctx); err != nil {
			t.Fatal(err)
		}
		s.mu.Lock()
		n := len(s.got)
		s.mu.Unlock()
		if n != i+1 {
			t.Fatalf("after pass %d: %d delivered, want %d", i, n, i+1)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Without a running dispatcher WaitPass waits for its context.
	if err := q.WaitPass(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitPass without a dispatcher = %v", err)
	}
}

// answeringPolicy stands in for the owner's /briefing answering with a
// briefing the queue also holds: between the dispatcher reading its due
// list and sending, the notification is marked delivered another way.
type answeringPolicy struct {
	st *store.Store
}

func (p answeringPolicy) Decide(ctx context.Context, m notify.Queued, _ time.Time) notify.Decision {
	p.st.UpdateNotification(ctx, m.ID, store.NotificationUpdate{State: store.NotificationDelivered, Error: "answered in the chat"})
	return notify.Decision{Action: notify.Deliver}
}

// A notification delivered another way after the dispatcher listed it is
// not sent again; one the dispatcher claimed cannot be marked delivered by
// anyone else; one left claimed by a crash is queued again at start.
func TestDispatcherClaimsBeforeSending(t *testing.T) {
	c := testutil.NewClock(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC))
	st := open(t, c)
	q := notify.NewQueue(st, nil)
	ctx := context.Background()
	q.Notify(ctx, notify.Message{Level: notify.Important, Key: "briefing:evening", Text: "Evening summary"})
	s := &sender{}
	d, _ := notify.NewDispatcher(notify.DispatcherOptions{Queue: q, Store: st, Sender: s, Now: c.Now, Policy: answeringPolicy{st}})
	if _, err := d.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if got := s.texts(); len(got) != 0 {
		t.Errorf("sent %q, which the owner already had", got)
	}

	q.Notify(ctx, notify.Message{Level: notify.Important, Key: "mail:7", Text: "Urgent mail"})
	n, _ := st.NotificationByKey(ctx, "mail:7")
	if ok, err := st.ClaimNotification(ctx, n.ID); !ok || err != nil {
		t.Fatalf("claim: %v %v", ok, err)
	}
	if ok, _ := st.ClaimNotification(ctx, n.ID); ok {
		t.Error("claimed twice")
	}
	if err := st.UpdateNotification(ctx, n.ID, store.NotificationUpdate{State: store.NotificationDelivered}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a claimed notification was marked delivered from queued: %v", err)
	}
	// The daemon died with it claimed: the next dispatcher sends it.
	d2, _ := notify.NewDispatcher(notify.DispatcherOptions{Queue: q, Store: st, Sender: s, Now: c.Now})
	runCtx, cancel := context.WithCancel(ctx)
	s.sent = make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() { done <- d2.Run(runCtx) }()
	select {
	case <-s.sent:
	case <-time.After(30 * time.Second):
		t.Fatal("the interrupted notification was never sent")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(s.texts()); got != "[Urgent mail]" {
		t.Errorf("sent %s", got)
	}
}

// With nothing delivering them, at most notify.MaxWaiting notifications wait:
// the oldest are dropped, critical ones last, each with the reason.
func TestQueueIsCapped(t *testing.T) {
	ctx := context.Background()
	st := open(t, testutil.NewClock(time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)))
	q := notify.NewQueue(st, nil)
	if err := q.Notify(ctx, notify.Message{Level: notify.Critical, Key: "critical", Text: "the server is on fire"}); err != nil {
		t.Fatal(err)
	}
	for i := range notify.MaxWaiting + 5 {
		if err := q.Notify(ctx, notify.Message{Level: notify.Important, Key: fmt.Sprintf("k%d", i), Text: fmt.Sprintf("message %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	waiting, err := q.Waiting(ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(waiting) != notify.MaxWaiting {
		t.Fatalf("%d waiting, want %d", len(waiting), notify.MaxWaiting)
	}
	if waiting[0].Key != "critical" || waiting[1].Key != "k6" || waiting[len(waiting)-1].Key != fmt.Sprintf("k%d", notify.MaxWaiting+4) {
		t.Errorf("kept %s, %s … %s; want the critical one and the newest", waiting[0].Key, waiting[1].Key, waiting[len(waiting)-1].Key)
	}
	dropped, err := st.Notifications(ctx, store.NotificationDropped, 100)
	if err != nil || len(dropped) != 6 || !strings.Contains(dropped[0].LastError, "oldest were dropped") {
		t.Fatalf("dropped %d (%v), want 6 with a reason", len(dropped), err)
	}
	n, err := q.Clear(ctx, nil)
	if err != nil || n != notify.MaxWaiting {
		t.Fatalf("clear = %d, %v", n, err)
	}
	if w, _ := q.Waiting(ctx, 10); len(w) != 0 {
		t.Errorf("%d wait after clear", len(w))
	}
}
