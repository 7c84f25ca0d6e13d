package gmail

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

type env struct {
	fake  *fakegoogle.Server
	st    *store.Store
	now   time.Time
	mu    sync.Mutex
	waits []time.Duration
}

func newEnv(t testing.TB, now time.Time) *env {
	t.Helper()
	e := &env{now: now}
	e.fake = fakegoogle.New(t, fakegoogle.Options{Now: func() time.Time { return e.now }})
	fakegoogle.CheckAtEnd(t, e.fake)
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "omnibrain.db"), store.Options{Now: func() time.Time { return e.now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e.st = st
	return e
}

func (e *env) sleep(_ context.Context, d time.Duration) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.waits = append(e.waits, d)
	return nil
}

func (e *env) collector(t testing.TB, opts Options) *Collector {
	t.Helper()
	hc := google.NewHTTPClient(google.ClientOptions{Sleep: e.sleep, Now: func() time.Time { return e.now }})
	svc, err := google.NewGmail(context.Background(), e.fake.URL, hc)
	if err != nil {
		t.Fatal(err)
	}
	opts.Service, opts.Store, opts.Now = svc, e.st, func() time.Time { return e.now }
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var base = time.Date(2024, 7, 10, 12, 0, 0, 0, time.UTC)

func mail(from, to, subject, msgID, inReplyTo, body string, at time.Time) []byte {
	s := fmt.Sprintf("From: %s\r\nTo: %s\r\nSubject: %s\r\nDate: %s\r\nMessage-ID: <%s>\r\n", from, to, subject, at.Format(time.RFC1123Z), msgID)
	if inReplyTo != "" {
		s += fmt.Sprintf("In-Reply-To: <%s>\r\nReferences: <%s>\r\n", inReplyTo, inReplyTo)
	}
	return []byte(s + "Content-Type: text/plain; charset=utf-8\r\n\r\n" + body + "\r\n")
}

func (e *env) add(raw []byte, at time.Time, labels ...string) fakegoogle.Added {
	return e.fake.AddMessage(raw, fakegoogle.MessageOptions{InternalDate: at, Labels: labels})
}

func (e *env) gets() int { return e.fake.CountRequests("GET", "/gmail/v1/users/me/messages/") }

func (e *env) itemEvents(t testing.TB) int {
	t.Helper()
	evs, err := e.st.PendingEvents(context.Background(), "test", 1000000)
	if err != nil {
		t.Fatal(err)
	}
	return len(evs)
}

func (e *env) item(t testing.TB, id string) *store.Item {
	t.Helper()
	it, err := e.st.ItemByExternalID(context.Background(), Source, id)
	if err != nil {
		t.Fatalf("item %s: %v", id, err)
	}
	return it
}

func TestBackfillThenIncrementalPicksUpOnlyNewMail(t *testing.T) {
	e := newEnv(t, base)
	ctx := context.Background()
	old := e.add(mail("Alice <alice@example.org>", "owner@example.com", "Old", "old@x", "", "long ago", base.AddDate(0, -2, 0)), base.AddDate(0, -2, 0))
	q := e.add(mail("Alice Example <Alice@Example.org>", "owner@example.com", "Budget", "budget@x", "", "Can you send the Q3 budget?\n\n-- \nAlice", base.Add(-48*time.Hour)), base.Add(-48*time.Hour))
	reply := e.add(mail("Owner <owner@example.com>", "alice@example.org", "Re: Budget", "reply@x", "budget@x", "Here it is.\n\n> Can you send the Q3 budget?", base.Add(-47*time.Hour)), base.Add(-47*time.Hour), "SENT")
	lunchID := e.add(mail("bob@example.org", "owner@example.com", "Lunch", "lunch@x", "", "Lunch?", base.Add(-time.Hour)), base.Add(-time.Hour))

	c := e.collector(t, Options{BackfillDays: 30})
	res, err := c.Collect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != "backfill" || res.Seen != 3 || res.Stored != 3 || res.Skipped != 0 {
		t.Errorf("backfill = %+v, want 3 messages of the last 30 days", res)
	}
	if _, err := e.st.ItemByExternalID(ctx, Source, old.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a message older than the window was stored: %v", err)
	}
	owners, _ := e.st.OwnerAddresses(ctx)
	if !slices.Contains(owners, "owner@example.com") {
		t.Errorf("owner addresses = %v, want the profile address", owners)
	}

	it := e.item(t, q.ID)
	if it.Kind != "email" || it.Thread != q.ThreadID || it.Title != "Budget" || it.Sender != "alice@example.org" || it.Body != "Can you send the Q3 budget?" ||
		!it.Time.Equal(base.Add(-48*time.Hour)) || !slices.Contains(it.People, "Alice Example") {
		t.Errorf("item = %+v", it)
	}
	if labels := it.Meta["labels"].([]any); len(labels) != 2 || labels[0] != "INBOX" || it.Meta["message_id"] != "budget@x" {
		t.Errorf("meta = %v", it.Meta)
	}
	r := e.item(t, reply.ID)
	if r.Meta["outbound"] != true || r.Thread != q.ThreadID || r.Meta["in_reply_to"] != "budget@x" {
		t.Errorf("owner's reply meta = %v thread %s", r.Meta, r.Thread)
	}
	alice, err := e.st.Contact(ctx, "alice@example.org")
	if err != nil || alice.Inbound != 1 || alice.Outbound != 1 || alice.OwnerReplies != 1 || alice.OwnerReplyMedian != time.Hour {
		t.Errorf("contact alice = %+v, %v; want one mail each way and the owner's reply after 1h", alice, err)
	}
	// The owner's sent reply is recognised: that thread waits on Alice,
	// Bob's question waits on the owner.
	if th, err := e.st.Thread(ctx, q.ThreadID); err != nil || !th.AwaitingReply || th.OwesReply || th.Outbound != 1 {
		t.Errorf("budget thread = %+v, %v; want awaiting Alice's reply", th, err)
	}
	lunch := e.item(t, lunchID.ID)
	if th, err := e.st.Thread(ctx, lunch.Thread); err != nil || th.AwaitingReply || !th.OwesReply {
		t.Errorf("lunch thread = %+v, %v; want owing the owner's reply", th, err)
	}

	// Nothing new: an incremental pass fetches nothing and stores nothing.
	gets, events := e.gets(), e.itemEvents(t)
	res, err = c.Collect(ctx)
	if err != nil || res.Mode != "incremental" || res.Stored != 0 || e.gets() != gets || e.itemEvents(t) != events {
		t.Errorf("idle pass = %+v, %v; %d gets", res, err, e.gets()-gets)
	}

	// Two new mails and one relabel: exactly those are fetched.
	e.now = base.Add(time.Hour)
	n1 := e.add(mail("carol@example.org", "owner@example.com", "New 1", "n1@x", "", "first", e.now), e.now)
	n2 := e.add(mail("dave@example.org", "owner@example.com", "New 2", "n2@x", "", "second", e.now), e.now)
	if err := e.fake.ModifyLabels(q.ID, []string{"STARRED"}, []string{"UNREAD"}); err != nil {
		t.Fatal(err)
	}
	res, err = c.Collect(ctx)
	if err != nil || res.Mode != "incremental" || res.Seen != 3 || res.Stored != 3 {
		t.Fatalf("incremental = %+v, %v", res, err)
	}
	if got := e.gets() - gets; got != 3 {
		t.Errorf("%d messages fetched, want 3 (two new, one relabelled)", got)
	}
	e.item(t, n1.ID)
	e.item(t, n2.ID)
	if labels := e.item(t, q.ID).Meta["labels"].([]any); !slices.Contains(labels, any("STARRED")) || slices.Contains(labels, any("UNREAD")) {
		t.Errorf("labels after the change = %v", labels)
	}
	if n := e.itemEvents(t) - events; n != 3 {
		t.Errorf("%d item events, want 3", n)
	}

	// The owner deletes Bob's mail for good and a new one that arrived
	// meanwhile: the stored one leaves the store and its search index,
	// the other is never fetched, and the thread statistics stay.
	e.now = base.Add(2 * time.Hour)
	brief := e.add(mail("erin@example.org", "owner@example.com", "Brief", "brief@x", "", "gone soon", e.now), e.now)
	for _, id := range []string{lunchID.ID, brief.ID} {
		if err := e.fake.DeleteMessage(id); err != nil {
			t.Fatal(err)
		}
	}
	gets = e.gets()
	res, err = c.Collect(ctx)
	if err != nil || res.Deleted != 1 || res.Seen != 0 || e.gets() != gets {
		t.Fatalf("pass after deletions = %+v, %v; %d gets", res, err, e.gets()-gets)
	}
	if _, err := e.st.ItemByExternalID(ctx, Source, lunchID.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the deleted mail is still stored: %v", err)
	}
	var fts int
	if err := e.st.DB().QueryRow(`SELECT COUNT(*) FROM items_fts WHERE items_fts MATCH 'lunch'`).Scan(&fts); err != nil || fts != 0 {
		t.Errorf("%d search rows still match the deleted mail, %v", fts, err)
	}
	if th, err := e.st.Thread(ctx, lunch.Thread); err != nil || th.Messages != 1 {
		t.Errorf("lunch thread after the deletion = %+v, %v", th, err)
	}
	if res, err := c.Collect(ctx); err != nil || res.Deleted != 0 {
		t.Errorf("a second pass = %+v, %v; want nothing left to delete", res, err)
	}
}

func TestHistoryExpiredFallsBackToBoundedResync(t *testing.T) {
	e := newEnv(t, base)
	ctx := context.Background()
	for i := range 3 {
		at := base.Add(-time.Duration(10+i) * time.Hour)
		e.add(mail("a@example.org", "owner@example.com", "s", fmt.Sprintf("m%d@x", i), "", "b", at), at)
	}
	c := e.collector(t, Options{MaxMessages: 4})
	if _, err := c.Collect(ctx); err != nil {
		t.Fatal(err)
	}
	e.fake.ExpireHistory()
	var fresh []fakegoogle.Added
	for i := range 3 {
		at := base.Add(-time.Duration(i) * time.Minute)
		fresh = append(fresh, e.add(mail("b@example.org", "owner@example.com", "t", fmt.Sprintf("f%d@x", i), "", "b", at), at))
	}
	gets := e.gets()
	res, err := c.Collect(ctx)
	if err != nil || res.Mode != "resync" {
		t.Fatalf("after 404 = %+v, %v", res, err)
	}
	// Bounded: the 4 newest are listed; the 3 new ones are fetched, the one
	// old message among the 4 is already stored and not fetched again.
	if got := e.gets() - gets; got != 3 || res.Stored != 3 {
		t.Errorf("resync fetched %d, stored %d; want 3 and 3", got, res.Stored)
	}
	for _, f := range fresh {
		e.item(t, f.ID)
	}
	var saw404 bool
	for _, r := range e.fake.Requests() {
		saw404 = saw404 || (r.Status == 404 && r.Path == "/gmail/v1/users/me/history")
	}
	if !saw404 {
		t.Error("history never answered 404")
	}
	if res, err := c.Collect(ctx); err != nil || res.Mode != "incremental" {
		t.Errorf("pass after resync = %+v, %v", res, err)
	}
}

// TestCrashBetweenFetchAndCursor kills the pass after its items and before
// its cursor (inside the transaction that would save it): a restarted
// collector loses nothing and stores nothing twice.
func TestCrashBetweenFetchAndCursor(t *testing.T) {
	for _, phase := range []string{"backfill", "incremental"} {
		t.Run(phase, func(t *testing.T) {
			e := newEnv(t, base)
			ctx := context.Background()
			var ids []string
			addN := func(n int) {
				for range n {
					at := base.Add(-time.Duration(len(ids)+1) * time.Minute)
					ids = append(ids, e.add(mail("x@example.org", "owner@example.com", "s", fmt.Sprintf("c%d@x", len(ids)), "", "b", at), at).ID)
				}
			}
			addN(5)
			if phase == "incremental" {
				if _, err := e.collector(t, Options{}).Collect(ctx); err != nil {
					t.Fatal(err)
				}
				addN(5)
			}
			cursorBefore, _ := e.st.Cursor(ctx, Name)
			c := e.collector(t, Options{BatchSize: 2})
			c.beforeCursor = func() error { return errors.New("killed") }
			if _, err := c.Collect(ctx); err == nil {
				t.Fatal("the simulated crash did not fail the pass")
			}
			if cur, _ := e.st.Cursor(ctx, Name); cur != cursorBefore {
				t.Fatalf("cursor moved despite the crash: %s → %s", cursorBefore, cur)
			}
			// Restart: a new collector (fresh process state).
			restarted := e.collector(t, Options{BatchSize: 2})
			if _, err := restarted.Collect(ctx); err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				e.item(t, id)
			}
			if n := e.itemEvents(t); n != len(ids) {
				t.Errorf("%d item events for %d messages: lost or duplicated", n, len(ids))
			}
			if res, err := restarted.Collect(ctx); err != nil || res.Stored != 0 || res.Mode != "incremental" {
				t.Errorf("next pass = %+v, %v", res, err)
			}
		})
	}
}

func TestMalformedMessagesAreSkipped(t *testing.T) {
	e := newEnv(t, base)
	ctx := context.Background()
	good := e.add(mail("a@example.org", "owner@example.com", "fine", "ok@x", "", "b", base.Add(-time.Hour)), base.Add(-time.Hour))
	corrupt := e.add(mail("b@example.org", "owner@example.com", "bad raw", "bad@x", "", "b", base.Add(-2*time.Hour)), base.Add(-2*time.Hour))
	e.fake.CorruptMessage(corrupt.ID)
	garbage := e.add([]byte("\x00\x01\x02 this is not mail"), base.Add(-3*time.Hour))
	// No usable Date header: kept, at Gmail's receipt time.
	undated := e.add([]byte("From: c@example.org\r\nTo: owner@example.com\r\nSubject: undated\r\nDate: someday\r\n\r\nhi\r\n"), base.Add(-4*time.Hour))
	res, err := e.collector(t, Options{}).Collect(ctx)
	if err != nil || res.Stored != 2 || res.Skipped != 2 {
		t.Fatalf("pass = %+v, %v; want 2 stored, 2 skipped", res, err)
	}
	e.item(t, good.ID)
	if it := e.item(t, undated.ID); !it.Time.Equal(base.Add(-4*time.Hour)) || it.Title != "undated" {
		t.Errorf("undated mail = %v %q", it.Time, it.Title)
	}
	for _, id := range []string{corrupt.ID, garbage.ID} {
		if _, err := e.st.ItemByExternalID(ctx, Source, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("malformed %s stored: %v", id, err)
		}
	}
	if cur, _ := e.st.Cursor(ctx, Name); cur == "" {
		t.Error("malformed mail blocked the cursor")
	}
}

func TestRateLimitsHonourRetryAfter(t *testing.T) {
	e := newEnv(t, base)
	a := e.add(mail("a@example.org", "owner@example.com", "s", "a@x", "", "b", base.Add(-time.Hour)), base.Add(-time.Hour))
	e.fake.InjectFault(fakegoogle.Fault{Path: "/gmail/v1/users/me/messages/", Status: 429, RetryAfter: "2", Times: 1})
	c := e.collector(t, Options{})
	if res, err := c.Collect(context.Background()); err != nil || res.Stored != 1 {
		t.Fatalf("pass = %+v, %v", res, err)
	}
	if len(e.waits) != 1 || e.waits[0] != 2*time.Second {
		t.Errorf("waits = %v, want [2s]", e.waits)
	}
	e.item(t, a.ID)
	// Retry-After beyond what a request waits: the pass fails with it, for
	// the scheduler to back off, and the cursor stays.
	e.add(mail("b@example.org", "owner@example.com", "s", "b@x", "", "b", base), base)
	e.fake.InjectFault(fakegoogle.Fault{Path: "/gmail/v1/users/me/history", Status: 429, RetryAfter: "900", Times: 1})
	_, err := c.Collect(context.Background())
	var re *google.RetryError
	if !errors.As(err, &re) || re.RetryAfter() != 15*time.Minute {
		t.Errorf("long Retry-After: %v", err)
	}
}

func TestEnronAndSpamAssassinCorpora(t *testing.T) {
	for _, c := range []struct {
		dir string
		now time.Time
	}{
		{"mail/enron/maildir", time.Date(2003, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"mail/spamassassin/data", time.Date(2003, 1, 1, 0, 0, 0, 0, time.UTC)}, // all 6,046: ham, hard ham and spam
	} {
		t.Run(c.dir, func(t *testing.T) {
			dir := testutil.SharedData(t, c.dir)
			e := newEnv(t, c.now)
			n, err := e.fake.LoadMaildir(dir)
			if err != nil {
				t.Fatal(err)
			}
			col := e.collector(t, Options{BackfillDays: 800000}) // Enron has Date headers of year 1
			res, err := col.Collect(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d messages: %+v", n, res)
			// Every message is accounted for: stored, or skipped and logged.
			if res.Seen != n || res.Stored+res.Skipped != n {
				t.Errorf("%d messages: %+v", n, res)
			}
			if res.Skipped > n/100 {
				t.Errorf("%d of %d skipped: the parser rejects too much real mail", res.Skipped, n)
			}
			counts, _ := e.st.CountItems(context.Background())
			if len(counts) != 1 || counts[0].Items != int64(res.Stored) {
				t.Errorf("items = %v, want %d gmail items", counts, res.Stored)
			}
			if res, err := col.Collect(context.Background()); err != nil || res.Stored != 0 {
				t.Errorf("second pass = %+v, %v", res, err)
			}
		})
	}
}

// BenchmarkBackfillEnron measures the first sync of the 2,195 Enron
// messages through the real Gmail client against the fake.
func BenchmarkBackfillEnron(b *testing.B) {
	dir := testutil.SharedData(b, "mail/enron/maildir")
	now := time.Date(2003, 1, 1, 0, 0, 0, 0, time.UTC)
	fake := fakegoogle.New(b, fakegoogle.Options{Now: func() time.Time { return now }})
	n, err := fake.LoadMaildir(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var total, cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		e := &env{fake: fake, now: now}
		st, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "omnibrain.db"), store.Options{})
		if err != nil {
			b.Fatal(err)
		}
		e.st = st
		c := e.collector(b, Options{BackfillDays: 800000})
		b.StartTimer()
		start, startCPU := time.Now(), testutil.CPUTime()
		res, err := c.Collect(context.Background())
		total, cpu = total+time.Since(start), cpu+testutil.CPUTime()-startCPU
		if err != nil || res.Seen != n {
			b.Fatalf("backfill = %+v, %v", res, err)
		}
		b.StopTimer()
		st.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(n*b.N)/total.Seconds(), "msgs/s")
	// CPU of the whole process: the collector, the store and the fake.
	b.ReportMetric(float64(n*b.N)/cpu.Seconds(), "msgs/cpu-s")
}

// BenchmarkIdlePoll measures one incremental pass with nothing new: the
// steady-state cost of polling (profile + history.list, no writes but the
// cursor). cpu-µs/op is the process's CPU, the in-process fake's included.
func BenchmarkIdlePoll(b *testing.B) {
	e := newEnv(b, base)
	for i := range 50 {
		at := base.Add(-time.Duration(i) * time.Hour)
		e.add(mail("a@example.org", "owner@example.com", "s", fmt.Sprintf("i%d@x", i), "", "b", at), at)
	}
	c := e.collector(b, Options{})
	if _, err := c.Collect(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu := testutil.CPUTime()
	for b.Loop() {
		res, err := c.Collect(context.Background())
		if err != nil || res.Mode != "incremental" || res.Stored != 0 {
			b.Fatalf("idle pass = %+v, %v", res, err)
		}
	}
	b.ReportMetric(float64((testutil.CPUTime()-cpu).Microseconds())/float64(b.N), "cpu-µs/op")
}
