package github

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/omnibrain/omnibrain/health"
	fake "github.com/omnibrain/omnibrain/internal/fakes/github"
	"github.com/omnibrain/omnibrain/internal/testutil"
	"github.com/omnibrain/omnibrain/internal/wait"
	"github.com/omnibrain/omnibrain/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// clock is a settable clock. It starts in the past on purpose: go-github
// compares rate-limit resets with the real time.Now, and a reset computed
// from this clock is then already over for it, so only our own waiting
func newClock() *testutil.Clock {
	return testutil.NewClock(time.Date(2025, 3, 3, 9, 0, 0, 0, time.UTC))
}

// sleeper records every wait and moves the clock instead of sleeping.
type sleeper struct {
	clk   *testutil.Clock
	mu    sync.Mutex
	waits []time.Duration
	real  bool // also sleep for real (for go-github's own real-time checks)
}

func (s *sleeper) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.mu.Unlock()
	s.clk.Add(d)
	if s.real {
		return wait.Sleep(ctx, d)
	}
	return ctx.Err()
}

func (s *sleeper) Waits() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

type reporter struct {
	mu      sync.Mutex
	details []string
}

func (r *reporter) Set(name string, st health.State, detail string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.details = append(r.details, name+" "+string(st)+" "+detail)
}

type harness struct {
	fake  *fake.Server
	store *store.Store
	clk   *testutil.Clock
	sleep *sleeper
	rep   *reporter
	col   *Collector
}

func newHarness(t testing.TB, fo fake.Options) *harness {
	t.Helper()
	clk := newClock()
	fo.Now = clk.Now
	if fo.Login == "" {
		fo.Login = "owner"
	}
	fo.Token = "ghp_test"
	srv := fake.New(fo)
	t.Cleanup(srv.Close)
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "omnibrain.db"), store.Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := &harness{fake: srv, store: st, clk: clk, sleep: &sleeper{clk: clk}, rep: &reporter{}}
	h.col = h.newCollector(t, srv.URL()+fo.Prefix)
	t.Cleanup(func() {
		for _, r := range srv.Unrouted() {
			t.Errorf("request to a path the fake does not serve: %s %s", r.Method, r.Path)
		}
	})
	return h
}

// newCollector builds a collector over the same store, as after a restart.
func (h *harness) newCollector(t testing.TB, apiURL string) *Collector {
	t.Helper()
	client, err := NewClient(apiURL, "ghp_test", h.fake.Client())
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Options{Client: client, Store: h.store, Now: h.clk.Now, Sleep: h.sleep.Sleep, Health: h.rep})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (h *harness) collect(t testing.TB) Result {
	t.Helper()
	res, err := h.col.Collect(context.Background())
	if err != nil {
		t.Fatalf("collect: %v", err)
	}
	return res
}

func (h *harness) item(t *testing.T, extID string) *store.Item {
	t.Helper()
	it, err := h.store.ItemByExternalID(context.Background(), Source, extID)
	if err != nil {
		t.Fatalf("item %s: %v", extID, err)
	}
	return it
}

func (h *harness) events(t *testing.T) int {
	t.Helper()
	evs, err := h.store.PendingEvents(context.Background(), "test", 10000)
	if err != nil {
		t.Fatal(err)
	}
	return len(evs)
}

func (h *harness) requests(method, path string) []fake.Request {
	var out []fake.Request
	for _, r := range h.fake.Requests() {
		if r.Method == method && r.Path == path {
			out = append(out, r)
		}
	}
	return out
}

func TestNotificationsIncrementalWith304(t *testing.T) {
	h := newHarness(t, fake.Options{})
	h.fake.AddNotification(fake.Notification{Repo: "acme/api", Type: "PullRequest", Number: 12, Title: "Add retries", Reason: "review_requested"})
	h.fake.AddNotification(fake.Notification{Repo: "acme/web", Type: "Issue", Number: 3, Title: "Broken link", Reason: "mention"})

	res := h.collect(t)
	if res.Stored != 2 {
		t.Fatalf("first pass stored %d, want 2", res.Stored)
	}
	cur, err := h.store.Cursor(context.Background(), notesCursorName)
	if err != nil || !strings.Contains(cur, "GMT") {
		t.Fatalf("cursor after first pass = %q, %v; want the Last-Modified date", cur, err)
	}

	h.clk.Add(2 * time.Minute)
	res = h.collect(t)
	reqs := h.requests("GET", "/notifications")
	if len(reqs) != 2 {
		t.Fatalf("notifications requests = %d, want 2", len(reqs))
	}
	if reqs[0].Header.Get("If-Modified-Since") != "" {
		t.Errorf("first request sent If-Modified-Since %q", reqs[0].Header.Get("If-Modified-Since"))
	}
	if ims := reqs[1].Header.Get("If-Modified-Since"); ims == "" || !strings.Contains(cur, ims) {
		t.Errorf("second request If-Modified-Since = %q, want the saved Last-Modified from %s", ims, cur)
	}
	if res.Stored != 0 {
		t.Errorf("304 pass stored %d", res.Stored)
	}

	h.clk.Add(2 * time.Minute)
	h.fake.AddNotification(fake.Notification{Repo: "acme/api", Type: "Issue", Number: 40, Title: "Flaky test", Reason: "assign"})
	h.clk.Add(2 * time.Minute)
	res = h.collect(t)
	if res.Stored != 1 {
		t.Errorf("third pass stored %d, want only the new notification", res.Stored)
	}
	if n := h.events(t); n != 3 {
		t.Errorf("events = %d, want one per notification (3)", n)
	}

	it := h.item(t, "notification:"+notificationID(t, h, "Add retries"))
	want := map[string]any{"repo": "acme/api", "number": float64(12), "reason": "review_requested", "unread": true, "type": "PullRequest"}
	for k, v := range want {
		if it.Meta[k] != v {
			t.Errorf("meta[%s] = %v, want %v", k, it.Meta[k], v)
		}
	}
	if it.Kind != "notification" || it.Thread != "acme/api#12" || it.Title != "Add retries" {
		t.Errorf("item = kind %q thread %q title %q", it.Kind, it.Thread, it.Title)
	}
	if u, _ := it.Meta["url"].(string); !strings.HasSuffix(u, "/acme/api/pull/12") {
		t.Errorf("meta url = %q, want the pull request's web page", u)
	}
	if _, err := time.Parse(time.RFC3339, it.Meta["updated"].(string)); err != nil {
		t.Errorf("meta updated: %v", err)
	}
}

func notificationID(t *testing.T, h *harness, title string) string {
	t.Helper()
	rows, err := h.store.DB().Query(`SELECT external_id FROM items WHERE title = ? AND kind = 'notification'`, title)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		rows.Scan(&id)
		return strings.TrimPrefix(id, "notification:")
	}
	t.Fatalf("no notification titled %q", title)
	return ""
}

func TestPollIntervalHonoured(t *testing.T) {
	h := newHarness(t, fake.Options{PollInterval: 120 * time.Second})
	h.fake.AddNotification(fake.Notification{Repo: "acme/api", Number: 1, Title: "x", Reason: "mention"})
	res := h.collect(t)
	if want := h.clk.Now().Add(120 * time.Second); !res.NextNotifications.Equal(want) {
		t.Errorf("NextNotifications = %v, want %v", res.NextNotifications, want)
	}
	h.clk.Add(60 * time.Second)
	h.collect(t)
	if n := len(h.requests("GET", "/notifications")); n != 1 {
		t.Fatalf("after 60s of a 120s poll interval: %d notifications requests, want 1", n)
	}
	h.clk.Add(61 * time.Second)
	h.collect(t)
	if n := len(h.requests("GET", "/notifications")); n != 2 {
		t.Fatalf("after the poll interval: %d notifications requests, want 2", n)
	}
}

func TestNotificationsPaginated(t *testing.T) {
	h := newHarness(t, fake.Options{})
	for i := range 120 {
		h.fake.AddNotification(fake.Notification{Repo: "acme/api", Number: i + 1, Title: "n", Reason: "subscribed", Updated: h.clk.Now().Add(-time.Duration(i) * time.Minute)})
	}
	res := h.collect(t)
	if res.Stored != 120 {
		t.Fatalf("stored %d, want all 120 across pages", res.Stored)
	}
	if n := len(h.requests("GET", "/notifications")); n != 3 {
		t.Errorf("notifications requests = %d, want 3 pages of 50", n)
	}
}

func TestPageFailureStoresNothingAndKeepsCursor(t *testing.T) {
	h := newHarness(t, fake.Options{})
	for i := range 60 {
		h.fake.AddNotification(fake.Notification{Repo: "acme/api", Number: i + 1, Title: "n", Reason: "subscribed", Updated: h.clk.Now().Add(-time.Duration(i) * time.Minute)})
	}
	// The first page succeeds, then every later request fails.
	h.fake.Inject(fake.Fault{Path: "/notifications", Times: 1})
	h.fake.Inject(fake.Fault{Path: "/notifications", Status: 500})
	if _, err := h.col.Collect(context.Background()); err == nil {
		t.Fatal("collect succeeded although page 2 kept failing")
	}
	if cur, _ := h.store.Cursor(context.Background(), notesCursorName); cur != "" {
		t.Errorf("cursor saved after a failed pass: %q", cur)
	}
	if n := h.events(t); n != 0 {
		t.Errorf("%d items stored from a half-read list", n)
	}
	h.fake.ClearFaults()
	h.clk.Add(2 * time.Minute)
	if res := h.collect(t); res.Stored != 60 {
		t.Errorf("retry stored %d, want 60", res.Stored)
	}
}

func TestRateLimitExhaustedWaitsUntilReset(t *testing.T) {
	for _, status := range []int{http.StatusForbidden, http.StatusTooManyRequests} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			h := newHarness(t, fake.Options{ExhaustedStatus: status})
			h.fake.AddNotification(fake.Notification{Repo: "acme/api", Number: 1, Title: "x", Reason: "mention"})
			reset := h.clk.Now().Add(90 * time.Second)
			h.fake.SetRate("core", 0, reset)
			res := h.collect(t)
			if res.Stored != 1 {
				t.Fatalf("stored %d after the reset, want 1", res.Stored)
			}
			waits := h.sleep.Waits()
			if len(waits) != 1 || waits[0] != 91*time.Second {
				t.Errorf("waits = %v, want one wait until the reset (90s + 1s margin)", waits)
			}
			if len(h.rep.details) == 0 || !strings.Contains(h.rep.details[0], "degraded rate limit exhausted; waiting until "+reset.Add(time.Second).Format(time.RFC3339)) {
				t.Errorf("health reports = %q, want the rate-limit wait", h.rep.details)
			}
		})
	}
}

func TestSearchRateLimitWaitsOnlyForSearch(t *testing.T) {
	h := newHarness(t, fake.Options{})
	h.fake.AddIssue(fake.Issue{Repo: "acme/api", Title: "Assigned", Author: "bob", Assignees: []string{"owner"}})
	h.fake.SetRate("search", 0, h.clk.Now().Add(30*time.Second))
	h.collect(t)
	if waits := h.sleep.Waits(); len(waits) != 1 || waits[0] != 31*time.Second {
		t.Errorf("waits = %v, want one 31s wait for the search limit", waits)
	}
	h.item(t, "issue:acme/api#1")
}

func TestRateLimitWaitStopsOnShutdown(t *testing.T) {
	h := newHarness(t, fake.Options{})
	client, err := NewClient(h.fake.URL(), "ghp_test", h.fake.Client())
	if err != nil {
		t.Fatal(err)
	}
	// The real sleep: the wait is an hour, so only cancellation ends it.
	c, err := New(Options{Client: client, Store: h.store, Now: h.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	h.fake.SetRate("core", 0, h.clk.Now().Add(time.Hour))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := c.Collect(ctx); done <- err }()
	for len(h.requests("GET", "/user")) == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("collect returned %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("collect kept waiting for the rate limit after shutdown")
	}
}

func TestBackoffOn429And5xx(t *testing.T) {
	h := newHarness(t, fake.Options{})
	h.fake.AddNotification(fake.Notification{Repo: "acme/api", Number: 1, Title: "x", Reason: "mention"})
	h.fake.Inject(fake.Fault{Path: "/notifications", Status: http.StatusTooManyRequests, RetryAfter: "7", Times: 1})
	h.fake.Inject(fake.Fault{Path: "/search/issues", Status: http.StatusBadGateway, Times: 2})
	h.fake.Inject(fake.Fault{Path: "/user", Status: http.StatusServiceUnavailable, RetryAfter: "3", Times: 1})
	res := h.collect(t)
	if res.Stored != 1 {
		t.Fatalf("stored %d, want 1", res.Stored)
	}
	want := []time.Duration{3 * time.Second, 7 * time.Second, 1 * time.Second, 2 * time.Second}
	if got := h.sleep.Waits(); !equalDurations(got, want) {
		t.Errorf("waits = %v, want %v (Retry-After, then exponential backoff)", got, want)
	}
}

func TestSlowAnswerTimesOutAndIsRetried(t *testing.T) {
	h := newHarness(t, fake.Options{})
	client, err := NewClient(h.fake.URL(), "ghp_test", h.fake.Client())
	if err != nil {
		t.Fatal(err)
	}
	h.col, err = New(Options{Client: client, Store: h.store, Now: h.clk.Now, Sleep: h.sleep.Sleep, RequestTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	h.fake.Inject(fake.Fault{Path: "/user", Delay: 5 * time.Second, Times: 1})
	h.collect(t)
	if waits := h.sleep.Waits(); len(waits) != 1 || waits[0] != time.Second {
		t.Errorf("waits = %v, want one 1s backoff after the timeout", waits)
	}
	if n := len(h.requests("GET", "/user")); n != 2 {
		t.Errorf("GET /user sent %d times, want 2", n)
	}
}

func TestBackoffGivesUp(t *testing.T) {
	h := newHarness(t, fake.Options{})
	h.fake.Inject(fake.Fault{Path: "/user", Status: http.StatusInternalServerError})
	_, err := h.col.Collect(context.Background())
	if err == nil || !strings.Contains(err.Error(), "500") {
		t.Fatalf("collect = %v, want the 500 after the attempts", err)
	}
	if n := len(h.requests("GET", "/user")); n != 4 {
		t.Errorf("attempts = %d, want 4", n)
	}
	var rl *RetryLaterError
	if !errors.As(err, &rl) || rl.RetryAfter() != 8*time.Second {
		t.Errorf("error %v does not tell the scheduler to retry after the next backoff (8s)", err)
	}
}

func TestSecondaryRateLimitHonoursRetryAfter(t *testing.T) {
	h := newHarness(t, fake.Options{})
	h.sleep.real = true // go-github itself refuses requests until Retry-After has passed in real time
	h.fake.Inject(fake.Fault{Path: "/user", Status: http.StatusForbidden, Secondary: true, RetryAfter: "1", Times: 1})
	h.collect(t)
	if waits := h.sleep.Waits(); len(waits) == 0 || waits[0] != time.Second {
		t.Errorf("waits = %v, want 1s first (Retry-After)", waits)
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestReviewRequestsMentionsAndChecksMapped(t *testing.T) {
	h := newHarness(t, fake.Options{})
	f := h.fake
	review := f.AddIssue(fake.Issue{Repo: "acme/api", PR: true, Title: "Add retries", Body: "please look @owner", Author: "alice",
		Reviewers: []string{"owner"}, Mentions: []string{"owner"}, Labels: []string{"backend"}})
	assigned := f.AddIssue(fake.Issue{Repo: "acme/web", Title: "Broken link", Author: "bob", Assignees: []string{"owner", "carol"}})
	mention := f.AddIssue(fake.Issue{Repo: "acme/web", Title: "Question", Author: "dave", Mentions: []string{"owner"}})
	red := f.AddIssue(fake.Issue{Repo: "owner/tool", PR: true, Title: "My red PR", Author: "owner", HeadSHA: "aaaa"})
	running := f.AddIssue(fake.Issue{Repo: "owner/tool", PR: true, Title: "My running PR", Author: "owner", HeadSHA: "bbbb", Draft: true})
	green := f.AddIssue(fake.Issue{Repo: "owner/tool", PR: true, Title: "My green PR", Author: "owner", HeadSHA: "cccc"})
	bare := f.AddIssue(fake.Issue{Repo: "owner/tool", PR: true, Title: "No CI", Author: "owner", HeadSHA: "dddd"})
	f.AddIssue(fake.Issue{Repo: "acme/api", Title: "Closed, assigned", Author: "bob", Assignees: []string{"owner"}, State: "closed"})
	f.AddIssue(fake.Issue{Repo: "acme/api", PR: true, Title: "Someone else's", Author: "erin", Reviewers: []string{"frank"}})
	f.SetStatuses("aaaa", fake.Status{Context: "ci/lint", State: "success"}, fake.Status{Context: "ci/test", State: "failure"})
	f.SetCheckRuns("aaaa", fake.CheckRun{Name: "build", Status: "completed", Conclusion: "success"})
	f.SetCheckRuns("bbbb", fake.CheckRun{Name: "build", Status: "in_progress"}, fake.CheckRun{Name: "lint", Status: "completed", Conclusion: "success"})
	f.SetStatuses("cccc", fake.Status{Context: "ci/test", State: "success"})
	f.SetCheckRuns("cccc", fake.CheckRun{Name: "build", Status: "completed", Conclusion: "skipped"})

	res := h.collect(t)
	if res.Stored != 7 {
		t.Errorf("stored %d items, want 7 (closed and unrelated left out)", res.Stored)
	}
	tests := []struct {
		id   string
		kind string
		meta map[string]any
	}{
		{fmtID("pr", "acme/api", review), "pr", map[string]any{"reason": "review_requested", "reasons": []any{"review_requested", "mention"}, "state": "open", "author": "alice", "draft": false, "labels": []any{"backend"}}},
		{fmtID("issue", "acme/web", assigned), "issue", map[string]any{"reason": "assign", "assignees": []any{"owner", "carol"}}},
		{fmtID("issue", "acme/web", mention), "issue", map[string]any{"reason": "mention"}},
		{fmtID("pr", "owner/tool", red), "pr", map[string]any{"reason": "author", "checks": "failure"}},
		{fmtID("pr", "owner/tool", running), "pr", map[string]any{"reason": "author", "checks": "pending", "draft": true}},
		{fmtID("pr", "owner/tool", green), "pr", map[string]any{"reason": "author", "checks": "success"}},
		{fmtID("pr", "owner/tool", bare), "pr", map[string]any{"reason": "author", "checks": nil}},
	}
	for _, tt := range tests {
		it := h.item(t, tt.id)
		if it.Kind != tt.kind {
			t.Errorf("%s: kind %q, want %q", tt.id, it.Kind, tt.kind)
		}
		for k, want := range tt.meta {
			if got := it.Meta[k]; !equalJSON(got, want) {
				t.Errorf("%s: meta[%s] = %#v, want %#v", tt.id, k, got, want)
			}
		}
		repo, num := it.Meta["repo"].(string), it.Meta["number"].(float64)
		if it.Thread != repo+"#"+strconv.Itoa(int(num)) {
			t.Errorf("%s: thread %q", tt.id, it.Thread)
		}
	}
	pr := h.item(t, fmtID("pr", "acme/api", review))
	if !strings.HasSuffix(pr.Meta["url"].(string), "/acme/api/pull/1") || pr.Sender != "alice" || pr.Body != "please look @owner" {
		t.Errorf("review PR: url %v sender %q body %q", pr.Meta["url"], pr.Sender, pr.Body)
	}
	if got := h.item(t, fmtID("issue", "acme/web", assigned)).People; len(got) != 3 {
		t.Errorf("people = %v, want author and both assignees", got)
	}

	// The checks change: only that PR changes, with one event.
	before := h.events(t)
	f.SetCheckRuns("bbbb", fake.CheckRun{Name: "build", Status: "completed", Conclusion: "timed_out"}, fake.CheckRun{Name: "lint", Status: "completed", Conclusion: "success"})
	h.clk.Add(10 * time.Minute)
	res = h.collect(t)
	if res.Stored != 1 || h.events(t) != before+1 {
		t.Errorf("after a check failed: stored %d, events +%d; want 1 and 1", res.Stored, h.events(t)-before)
	}
	if got := h.item(t, fmtID("pr", "owner/tool", running)).Meta["checks"]; got != "failure" {
		t.Errorf("checks after timed_out = %v, want failure", got)
	}
}

func fmtID(kind, repo string, n int) string { return kind + ":" + repo + "#" + strconv.Itoa(n) }

func equalJSON(got, want any) bool {
	switch w := want.(type) {
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if g[i] != w[i] {
				return false
			}
		}
		return true
	default:
		return got == want
	}
}

func TestVanishedPullRequestKeepsItsItem(t *testing.T) {
	h := newHarness(t, fake.Options{})
	h.fake.AddIssue(fake.Issue{Repo: "owner/tool", PR: true, Title: "Mine", Author: "owner", HeadSHA: "abc"})
	h.fake.AddIssue(fake.Issue{Repo: "owner/tool", PR: true, Title: "Also mine", Author: "owner", HeadSHA: "def"})
	h.fake.SetCheckRuns("def", fake.CheckRun{Name: "build", Status: "completed", Conclusion: "failure"})
	h.fake.Inject(fake.Fault{Path: "/repos/owner/tool/pulls/1", Status: http.StatusNotFound})
	if res := h.collect(t); res.Stored != 2 {
		t.Errorf("stored %d, want both PRs", res.Stored)
	}
	if got := h.item(t, "pr:owner/tool#1").Meta["checks"]; got != nil {
		t.Errorf("checks of the vanished PR = %v, want none", got)
	}
	if got := h.item(t, "pr:owner/tool#2").Meta["checks"]; got != "failure" {
		t.Errorf("checks of the other PR = %v", got)
	}
}

func TestSecondPassAddsNothing(t *testing.T) {
	h := newHarness(t, fake.Options{})
	h.fake.AddNotification(fake.Notification{Repo: "acme/api", Number: 1, Title: "x", Reason: "mention"})
	h.fake.AddIssue(fake.Issue{Repo: "acme/api", PR: true, Title: "Review me", Author: "alice", Reviewers: []string{"owner"}})
	h.fake.AddIssue(fake.Issue{Repo: "owner/tool", PR: true, Title: "Mine", Author: "owner", HeadSHA: "abc"})
	h.fake.SetCheckRuns("abc", fake.CheckRun{Name: "build", Status: "completed", Conclusion: "success"})
	h.fake.SetStatuses("abc", fake.Status{Context: "ci/lint", State: "success"})
	h.collect(t)
	events := h.events(t)
	if events != 3 {
		t.Fatalf("first pass: %d events, want 3", events)
	}

	h.clk.Add(2 * time.Minute)
	h.fake.ResetRequests()
	if res := h.collect(t); res.Stored != 0 {
		t.Errorf("second pass stored %d", res.Stored)
	}
	for _, r := range h.fake.Requests() {
		if r.Path == "/user" {
			t.Errorf("second pass asked for /user again")
		}
		if r.Header.Get("If-None-Match") == "" && r.Header.Get("If-Modified-Since") == "" {
			t.Errorf("second pass sent an unconditional %s %s", r.Method, r.Path)
		}
		if r.Status != http.StatusNotModified {
			t.Errorf("second pass: %s %s answered %d, want 304", r.Method, r.Path, r.Status)
		}
	}
	// After a restart nothing is cached: full answers, still nothing new.
	h.col = h.newCollector(t, h.fake.URL())
	h.clk.Add(2 * time.Minute)
	if res := h.collect(t); res.Stored != 0 {
		t.Errorf("pass after restart stored %d", res.Stored)
	}
	if got := h.events(t); got != events {
		t.Errorf("events grew from %d to %d without changes", events, got)
	}
}

func TestMalformedItemsSkipped(t *testing.T) {
	h := newHarness(t, fake.Options{})
	h.fake.AddNotification(fake.Notification{Repo: "acme/api", Number: 1, Title: "good", Reason: "mention"})
	h.fake.AddRawNotification(`{"id": 5, "repository": "not an object"}`)
	h.fake.AddRawNotification(`{"id": "77", "repository": {"full_name": ""}, "subject": {"title": "no repo"}, "updated_at": "2025-03-03T08:00:00Z"}`)
	h.fake.AddRawNotification(`{"id": "78", "repository": {"full_name": "acme/api"}, "subject": {"title": "no time"}}`)
	res := h.collect(t)
	if res.Stored != 1 || res.Skipped != 3 {
		t.Errorf("stored %d skipped %d, want 1 and 3", res.Stored, res.Skipped)
	}
	if cur, _ := h.store.Cursor(context.Background(), notesCursorName); cur == "" {
		t.Error("cursor not saved: the bad items blocked the good one")
	}
}

func TestEnterpriseServer(t *testing.T) {
	h := newHarness(t, fake.Options{Prefix: "/api/v3"})
	h.fake.AddNotification(fake.Notification{Repo: "corp/app", Number: 9, Title: "on GHES", Reason: "assign"})
	h.fake.AddIssue(fake.Issue{Repo: "corp/app", Title: "Mine", Author: "x", Assignees: []string{"owner"}})
	for _, apiURL := range []string{h.fake.URL() + "/api/v3", h.fake.URL() + "/api/v3/"} {
		c, err := NewClient(apiURL, "ghp_test", h.fake.Client())
		if err != nil {
			t.Fatal(err)
		}
		if got, want := c.BaseURL.String(), h.fake.URL()+"/api/v3/"; got != want {
			t.Errorf("NewClient(%q).BaseURL = %q, want %q", apiURL, got, want)
		}
	}
	if res := h.collect(t); res.Stored != 2 {
		t.Errorf("stored %d, want 2", res.Stored)
	}
	if u := h.item(t, "issue:corp/app#1").Meta["url"].(string); !strings.HasPrefix(u, h.fake.URL()+"/corp/app/issues/1") {
		t.Errorf("url = %q", u)
	}
}

func TestNewClientRejectsBadURL(t *testing.T) {
	for _, u := range []string{"ftp://x", "not a url", "http://"} {
		if _, err := NewClient(u, "", nil); err == nil {
			t.Errorf("NewClient(%q) accepted", u)
		}
	}
	c, err := NewClient("https://api.github.com", "", nil)
	if err != nil || c.BaseURL.String() != "https://api.github.com/" {
		t.Errorf("default root: %v %v", c.BaseURL, err)
	}
}

// An item no search finds any more (a merged PR, a review already given,
// an issue unassigned) must not keep saying it waits for the owner:
// briefings list open items by their reason.
func TestItemsNoLongerFoundLoseTheirReason(t *testing.T) {
	h := newHarness(t, fake.Options{})
	f := h.fake
	merged := f.AddIssue(fake.Issue{Repo: "acme/api", PR: true, Title: "Merged", Author: "alice", Reviewers: []string{"owner"}})
	reviewed := f.AddIssue(fake.Issue{Repo: "acme/api", PR: true, Title: "Reviewed", Author: "alice", Reviewers: []string{"owner"}})
	gone := f.AddIssue(fake.Issue{Repo: "acme/secret", Title: "Lost access", Author: "bob", Assignees: []string{"owner"}})
	kept := f.AddIssue(fake.Issue{Repo: "acme/web", Title: "Still mine", Author: "bob", Assignees: []string{"owner"}})
	h.collect(t)

	h.clk.Add(10 * time.Minute)
	f.UpdateIssue("acme/api", merged, func(is *fake.Issue) { is.State = "closed" })
	f.UpdateIssue("acme/api", reviewed, func(is *fake.Issue) { is.Reviewers = nil })
	f.UpdateIssue("acme/secret", gone, func(is *fake.Issue) { is.Assignees = nil })
	f.Inject(fake.Fault{Path: "/repos/acme/secret/issues/1", Status: http.StatusNotFound})
	h.collect(t)

	tests := []struct {
		id     string
		reason any
		state  any
	}{
		{fmtID("pr", "acme/api", merged), nil, "closed"},
		{fmtID("pr", "acme/api", reviewed), nil, "open"},
		{fmtID("issue", "acme/secret", gone), nil, "open"},
		{fmtID("issue", "acme/web", kept), "assign", "open"},
	}
	for _, tt := range tests {
		it := h.item(t, tt.id)
		if it.Meta["reason"] != tt.reason || it.Meta["state"] != tt.state {
			t.Errorf("%s: reason %v state %v, want %v %v", tt.id, it.Meta["reason"], it.Meta["state"], tt.reason, tt.state)
		}
	}

	// Once settled, a pass asks nothing more about them.
	h.clk.Add(10 * time.Minute)
	f.ResetRequests()
	if res := h.collect(t); res.Stored != 0 {
		t.Errorf("third pass stored %d, want 0", res.Stored)
	}
	for _, r := range f.Requests() {
		if strings.Contains(r.Path, "/issues/") {
			t.Errorf("third pass fetched %s again", r.Path)
		}
	}
}

// A notification read or marked done on GitHub leaves the unread list; the
// stored one must stop saying it is unread.
func TestNotificationReadElsewhereIsMarkedRead(t *testing.T) {
	h := newHarness(t, fake.Options{})
	readID := h.fake.AddNotification(fake.Notification{Repo: "acme/api", Type: "PullRequest", Number: 12, Title: "Add retries", Reason: "review_requested"})
	keptID := h.fake.AddNotification(fake.Notification{Repo: "acme/web", Type: "Issue", Number: 3, Title: "Broken link", Reason: "mention"})
	h.collect(t)

	h.clk.Add(2 * time.Minute)
	h.fake.MarkRead(readID)
	h.clk.Add(2 * time.Minute)
	if res := h.collect(t); res.Stored != 1 {
		t.Errorf("stored %d, want the read notification updated", res.Stored)
	}
	if got := h.item(t, "notification:"+readID).Meta["unread"]; got != false {
		t.Errorf("read notification: unread = %v, want false", got)
	}
	if got := h.item(t, "notification:"+keptID).Meta["unread"]; got != true {
		t.Errorf("unread notification: unread = %v, want true", got)
	}
}
