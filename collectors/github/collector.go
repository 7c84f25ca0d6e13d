package github

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	gh "github.com/google/go-github/v62/github"

	"github.com/omnibrain/omnibrain/health"
	"github.com/omnibrain/omnibrain/internal/retry"
	"github.com/omnibrain/omnibrain/internal/wait"
	"github.com/omnibrain/omnibrain/store"
)

// Source is the items' source; Name the collector's and its cursor's name.
const (
	Source = "github"
	Name   = "github"
)

// Reporter is where the collector says that it is waiting for a rate-limit
// reset; health.Registry implements it.
type Reporter interface {
	Set(name string, s health.State, detail string)
}

// Options configure a Collector.
type Options struct {
	Client *gh.Client // from NewClient
	Store  *store.Store
	Log    *slog.Logger
	Health Reporter // optional
	Now    func() time.Time
	// Sleep waits d or until ctx is done (default: a timer). Tests inject
	// one that records the waits.
	Sleep func(ctx context.Context, d time.Duration) error
	// MaxPages bounds the pages read per list (default 10).
	MaxPages int
	// Attempts per request on 5xx, 429 and network errors (default 4).
	Attempts int
	// RequestTimeout bounds one request (default 1 minute); a request that
	// times out is retried like a network error.
	RequestTimeout time.Duration
}

// Result is what one pass did.
type Result struct {
	Seen    int // items received and mapped
	Stored  int // new or changed items stored
	Skipped int // malformed items, logged and skipped
	// NextNotifications is the earliest time X-Poll-Interval allows the
	// next notifications request.
	NextNotifications time.Time
}

// Collector polls GitHub. Collect may be called from several goroutines;
// passes run one at a time.
type Collector struct {
	gh       *gh.Client
	store    *store.Store
	log      *slog.Logger
	health   Reporter
	now      func() time.Time
	sleep    func(context.Context, time.Duration) error
	maxPages int
	retry    retryPolicy
	timeout  time.Duration

	mu    sync.Mutex
	login string
	// nextNotes is when X-Poll-Interval next allows /notifications.
	nextNotes time.Time
	// cache holds the last answer of each conditional GET by URL, so a 304
	// reuses it; only the URLs of the last pass are kept.
	cache map[string]cacheEntry
	// issuesStored says the issue set derived from cache is in the store,
	// so a pass where every answer was 304 writes nothing.
	issuesStored bool
}

type cacheEntry struct {
	etag string
	val  any
}

// New returns a collector.
func New(opts Options) (*Collector, error) {
	if opts.Client == nil || opts.Store == nil {
		return nil, errors.New("github collector: client and store are required")
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Sleep == nil {
		opts.Sleep = wait.Sleep
	}
	if opts.MaxPages <= 0 {
		opts.MaxPages = 10
	}
	if opts.Attempts <= 0 {
		opts.Attempts = 4
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = time.Minute
	}
	return &Collector{
		gh:       opts.Client,
		store:    opts.Store,
		log:      opts.Log.With("component", "collector.github"),
		health:   opts.Health,
		now:      opts.Now,
		sleep:    opts.Sleep,
		maxPages: opts.MaxPages,
		retry:    retryPolicy{attempts: opts.Attempts, backoff: retry.Policy{Initial: time.Second, Max: 2 * time.Minute}},
		timeout:  opts.RequestTimeout,
		cache:    map[string]cacheEntry{},
	}, nil
}

// Name is the collector's name in the registry and in health.
func (c *Collector) Name() string { return Name }

// Collect runs one pass: notifications (when X-Poll-Interval allows), then
// the searches and the owner's pull requests. What each part fetched is
// stored, with its cursor, before the next part starts.
func (c *Collector) Collect(ctx context.Context) (Result, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var res Result
	if c.login == "" {
		var u gh.User
		if _, _, err := c.get(ctx, "user", nil, &u); err != nil {
			return res, fmt.Errorf("github: get authenticated user: %w", err)
		}
		if u.GetLogin() == "" {
			return res, errors.New("github: GET /user returned no login")
		}
		c.login = u.GetLogin()
	}
	used := map[string]bool{}
	err := c.collectNotifications(ctx, &res)
	if err == nil {
		err = c.collectIssues(ctx, used, &res)
	}
	res.NextNotifications = c.nextNotes
	if err == nil {
		// Forget answers for URLs this pass no longer asked for (closed PRs,
		// old head commits).
		for k := range c.cache {
			if !used[k] {
				delete(c.cache, k)
			}
		}
	}
	return res, err
}

// notesCursor is the notifications sync position saved with the items.
type notesCursor struct {
	LastModified string `json:"last_modified,omitempty"`
}

const notesCursorName = Name + ".notifications"

func (c *Collector) collectNotifications(ctx context.Context, res *Result) error {
	now := c.now()
	if now.Before(c.nextNotes) {
		return nil // X-Poll-Interval: GitHub asks us not to poll sooner
	}
	raw, err := c.store.Cursor(ctx, notesCursorName)
	if err != nil {
		return err
	}
	var cur notesCursor
	if raw != "" {
		if err := json.Unmarshal([]byte(raw), &cur); err != nil {
			c.log.Warn("unreadable notifications cursor; starting over", "err", err)
			cur = notesCursor{}
		}
	}
	hdr := http.Header{}
	if cur.LastModified != "" {
		hdr.Set("If-Modified-Since", cur.LastModified)
	}
	var items []*store.Item
	complete := true
	first, notModified, listed, err := c.pages(ctx, "notifications?per_page=50", hdr, func(body []byte) error {
		var list []json.RawMessage
		if err := json.Unmarshal(body, &list); err != nil {
			return fmt.Errorf("github: notifications: %w", err)
		}
		for _, rawItem := range list {
			var n gh.Notification
			it, err := func() (*store.Item, error) {
				if err := json.Unmarshal(rawItem, &n); err != nil {
					return nil, err
				}
				return notificationItem(&n)
			}()
			if err != nil {
				res.Skipped++
				complete = false // it may be one we hold as unread
				c.log.Warn("skipping malformed notification", "err", err, "item", truncate(rawItem, 200))
				continue
			}
			items = append(items, it)
		}
		return nil
	})
	if first != nil && first.Response != nil {
		if secs, err := strconv.Atoi(first.Header.Get("X-Poll-Interval")); err == nil && secs > 0 {
			c.nextNotes = now.Add(time.Duration(secs) * time.Second)
		}
	}
	if err != nil {
		return fmt.Errorf("github: list notifications: %w", err)
	}
	if notModified {
		return nil
	}
	res.Seen += len(items)
	if complete && listed {
		// The answer lists every unread thread: the others were read or
		// marked done elsewhere.
		read, err := c.readElsewhere(ctx, items)
		if err != nil {
			return err
		}
		items = append(items, read...)
	}
	next := notesCursor{LastModified: first.Header.Get("Last-Modified")}
	cursor, _ := json.Marshal(next)
	stored, err := c.upsert(ctx, items, func(tx *store.Tx) error {
		if next.LastModified == "" {
			return nil
		}
		return tx.SetCursor(notesCursorName, string(cursor))
	})
	res.Stored += stored
	return err
}

// readElsewhere returns the stored notifications still marked unread that
// a complete list of the unread ones (listed) no longer holds, marked read.
func (c *Collector) readElsewhere(ctx context.Context, listed []*store.Item) ([]*store.Item, error) {
	stored, err := c.stored(ctx, "notification")
	if err != nil {
		return nil, err
	}
	ids := map[string]bool{}
	for _, it := range listed {
		ids[it.ExternalID] = true
	}
	var out []*store.Item
	for _, it := range stored {
		if it.Meta["unread"] == true && !ids[it.ExternalID] {
			it.Meta["unread"] = false
			out = append(out, it)
		}
	}
	return out, nil
}

// stored returns every GitHub item of the kinds the store holds, whenever
// it happened: what a complete answer from GitHub is compared with.
func (c *Collector) stored(ctx context.Context, kinds ...string) ([]*store.Item, error) {
	all, err := c.store.ItemsBetween(ctx, kinds, time.Unix(0, 0), time.Unix(1<<40, 0), 100000)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(all, func(it *store.Item) bool { return it.Source != Source }), nil
}

// upsert stores items with events, and then runs also, in one transaction;
// it returns how many items were new or changed.
func (c *Collector) upsert(ctx context.Context, items []*store.Item, also func(*store.Tx) error) (int, error) {
	stored := 0
	err := c.store.Tx(ctx, func(tx *store.Tx) error {
		stored = 0
		for _, it := range items {
			r, err := tx.UpsertItem(it, store.UpsertOptions{Event: true})
			if err != nil {
				return err
			}
			if r.Created || r.Changed {
				stored++
			}
		}
		if also != nil {
			return also(tx)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return stored, nil
}

// query is one issue search and the reason it gives its results.
type query struct {
	reason string
	q      string
}

func (c *Collector) queries() []query {
	return []query{
		{"review_requested", "is:open is:pr archived:false review-requested:" + c.login},
		{"assign", "is:open archived:false assignee:" + c.login},
		{"mention", "is:open archived:false mentions:" + c.login},
		{"author", "is:open is:pr archived:false author:" + c.login},
	}
}

// found is an issue or pull request with every reason it was found for.
type found struct {
	issue   *gh.Issue
	reasons []string
	checks  string
}

func (c *Collector) collectIssues(ctx context.Context, used map[string]bool, res *Result) error {
	byKey := map[string]*found{}
	var order []string
	var own []*found
	complete := true
	for _, q := range c.queries() {
		ans, fresh, err := c.search(ctx, q.q, used, res)
		if err != nil {
			return fmt.Errorf("github: search %s: %w", q.reason, err)
		}
		if fresh {
			c.issuesStored = false // even if this pass fails later
		}
		complete = complete && ans.complete
		for _, is := range ans.issues {
			key := issueKey(is)
			f, ok := byKey[key]
			if !ok {
				f = &found{issue: is}
				byKey[key] = f
				order = append(order, key)
			}
			f.reasons = append(f.reasons, q.reason)
			if q.reason == "author" && is.IsPullRequest() {
				own = append(own, f)
			}
		}
	}
	for _, f := range own {
		checks, fresh, err := c.checks(ctx, f.issue, used)
		if errors.Is(err, errNoRepo) || isStatus(err, http.StatusNotFound, http.StatusUnprocessableEntity) {
			// A PR gone since the search, or a commit GitHub no longer
			// knows: keep the item, without checks.
			c.log.Warn("skipping the checks of a pull request", "pr", issueKey(f.issue), "err", err)
			continue
		}
		if err != nil {
			return fmt.Errorf("github: checks of %s: %w", issueKey(f.issue), err)
		}
		if fresh {
			c.issuesStored = false
		}
		f.checks = checks
	}
	if c.issuesStored {
		return nil // every answer was 304: nothing new to store
	}
	items := make([]*store.Item, 0, len(order))
	for _, key := range order {
		it, err := issueItem(byKey[key])
		if err != nil {
			// Cached answers were already skipped when they arrived; count once.
			c.log.Warn("skipping malformed issue", "err", err, "key", key)
			res.Skipped++
			continue
		}
		items = append(items, it)
	}
	res.Seen += len(items)
	if complete {
		// Only complete answers prove that an item is no longer found.
		gone, err := c.noLongerFound(ctx, byKey)
		if err != nil {
			return err
		}
		items = append(items, gone...)
	}
	stored, err := c.upsert(ctx, items, nil)
	if err != nil {
		return err
	}
	res.Stored += stored
	c.issuesStored = true
	return nil
}

// searchAnswer is one search's issues, and whether they are all it
// matches (not cut by the page limit or GitHub's incomplete_results).
type searchAnswer struct {
	issues   []*gh.Issue
	complete bool
}

// noLongerFound returns the stored issues and pull requests that still
// wait for the owner (they have a reason) but that no search found: merged
// or closed, a review given, an assignment removed. Each is fetched once
// for its state and stored without a reason, so briefings and triage stop
// listing it; one that cannot be read any more just loses its reason.
func (c *Collector) noLongerFound(ctx context.Context, byKey map[string]*found) ([]*store.Item, error) {
	stored, err := c.stored(ctx, "pr", "issue")
	if err != nil {
		return nil, err
	}
	var out []*store.Item
	for _, old := range stored {
		if old.Meta["reason"] == nil || byKey[old.ExternalID] != nil {
			continue
		}
		repo, _ := old.Meta["repo"].(string)
		num, _ := old.Meta["number"].(float64)
		var is gh.Issue
		_, _, err := c.get(ctx, fmt.Sprintf("repos/%s/issues/%d", repo, int(num)), nil, &is)
		var it *store.Item
		if err == nil {
			it, err = issueItem(&found{issue: &is})
		}
		switch {
		case err == nil && it.ExternalID == old.ExternalID:
		case err == nil || isStatus(err, http.StatusNotFound, http.StatusGone, http.StatusForbidden) || errors.Is(err, errNoRepo):
			// Deleted, transferred or out of reach: keep what we knew.
			it = old
			delete(it.Meta, "reason")
			delete(it.Meta, "reasons")
			delete(it.Meta, "checks")
		default:
			return nil, fmt.Errorf("github: refresh %s: %w", old.ExternalID, err)
		}
		out = append(out, it)
	}
	return out, nil
}

// search runs one issue search, every page, reusing the last answer on 304.
// fresh reports that the answer is new.
func (c *Collector) search(ctx context.Context, q string, used map[string]bool, res *Result) (searchAnswer, bool, error) {
	v := url.Values{"q": {q}, "sort": {"updated"}, "order": {"desc"}, "per_page": {"100"}}
	u := "search/issues?" + v.Encode()
	used[u] = true
	hdr := http.Header{}
	prev, cached := c.cache[u]
	if cached {
		hdr.Set("If-None-Match", prev.etag)
	}
	var issues []*gh.Issue
	total, bad, incomplete := 0, 0, false
	first, notModified, _, err := c.pages(ctx, u, hdr, func(body []byte) error {
		var page struct {
			TotalCount int               `json:"total_count"`
			Incomplete bool              `json:"incomplete_results"`
			Items      []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(body, &page); err != nil {
			return err
		}
		total, incomplete = page.TotalCount, incomplete || page.Incomplete
		for _, raw := range page.Items {
			var is gh.Issue
			if err := json.Unmarshal(raw, &is); err != nil {
				res.Skipped++
				bad++
				c.log.Warn("skipping malformed search result", "err", err, "item", truncate(raw, 200))
				continue
			}
			issues = append(issues, &is)
		}
		return nil
	})
	if err != nil {
		return searchAnswer{}, false, err
	}
	if notModified && cached {
		return prev.val.(searchAnswer), false, nil
	}
	// Skipped malformed results count as found: they are still there.
	ans := searchAnswer{issues: issues, complete: !incomplete && len(issues)+bad >= total}
	c.cache[u] = cacheEntry{etag: first.Header.Get("ETag"), val: ans}
	return ans, true, nil
}

// checks returns the combined check state of a pull request's head commit:
// its commit statuses and its check runs.
func (c *Collector) checks(ctx context.Context, is *gh.Issue, used map[string]bool) (string, bool, error) {
	repo, err := repoOf(is)
	if err != nil {
		return "", false, err
	}
	var pr gh.PullRequest
	fresh, err := c.getCached(ctx, fmt.Sprintf("repos/%s/pulls/%d", repo, is.GetNumber()), used, &pr)
	if err != nil {
		return "", false, err
	}
	sha := pr.GetHead().GetSHA()
	if sha == "" {
		return "", fresh, nil
	}
	var status gh.CombinedStatus
	f, err := c.getCached(ctx, fmt.Sprintf("repos/%s/commits/%s/status?per_page=100", repo, sha), used, &status)
	if err != nil {
		return "", false, err
	}
	fresh = fresh || f
	var runs []*gh.CheckRun
	u := fmt.Sprintf("repos/%s/commits/%s/check-runs?per_page=100", repo, sha)
	used[u] = true
	hdr := http.Header{}
	prev, cached := c.cache[u]
	if cached {
		hdr.Set("If-None-Match", prev.etag)
	}
	first, notModified, _, err := c.pages(ctx, u, hdr, func(body []byte) error {
		var page gh.ListCheckRunsResults
		if err := json.Unmarshal(body, &page); err != nil {
			return err
		}
		runs = append(runs, page.CheckRuns...)
		return nil
	})
	if err != nil {
		return "", false, err
	}
	if notModified && cached {
		runs = prev.val.([]*gh.CheckRun)
	} else {
		c.cache[u] = cacheEntry{etag: first.Header.Get("ETag"), val: runs}
		fresh = true
	}
	return checkState(&status, runs), fresh, nil
}

// getCached GETs one JSON object conditionally into v; on 304 it copies
// the cached answer. fresh reports a new answer.
func (c *Collector) getCached(ctx context.Context, u string, used map[string]bool, v any) (bool, error) {
	used[u] = true
	hdr := http.Header{}
	prev, cached := c.cache[u]
	if cached {
		hdr.Set("If-None-Match", prev.etag)
	}
	var buf bytes.Buffer
	resp, notModified, err := c.get(ctx, u, hdr, &buf)
	if err != nil {
		return false, err
	}
	body := buf.Bytes()
	fresh := true
	if notModified && cached {
		body, fresh = prev.val.([]byte), false
	} else {
		c.cache[u] = cacheEntry{etag: resp.Header.Get("ETag"), val: slices.Clone(body)}
	}
	if err := json.Unmarshal(body, v); err != nil {
		return false, fmt.Errorf("decode %s: %w", u, err)
	}
	return fresh, nil
}

// pages GETs u and its following pages (Link rel="next"), handing each
// body to each. hdr goes with the first request only (conditional
// headers); a 304 there returns notModified and reads nothing more.
// complete is false when the page limit cut the list.
func (c *Collector) pages(ctx context.Context, u string, hdr http.Header, each func([]byte) error) (first *gh.Response, notModified, complete bool, err error) {
	for page := 1; page <= c.maxPages; page++ {
		pu := u
		if page > 1 {
			pu = withPage(u, page)
			hdr = nil
		}
		var buf bytes.Buffer
		resp, nm, err := c.get(ctx, pu, hdr, &buf)
		if page == 1 {
			first = resp
		}
		if err != nil {
			return first, false, false, err
		}
		if nm {
			return first, true, false, nil
		}
		if err := each(buf.Bytes()); err != nil {
			return first, false, false, fmt.Errorf("decode %s: %w", pu, err)
		}
		if resp.NextPage == 0 {
			return first, false, true, nil
		}
	}
	c.log.Warn("stopped paginating at the page limit", "url", u, "pages", c.maxPages)
	return first, false, false, nil
}

func withPage(u string, page int) string {
	parsed, err := url.Parse(u)
	if err != nil {
		return u
	}
	q := parsed.Query()
	q.Set("page", strconv.Itoa(page))
	parsed.RawQuery = q.Encode()
	return parsed.String()
}

// get sends one GET with retries: it waits for the rate-limit reset when
// the primary limit is spent, and backs off on 429, secondary limits, 5xx
// and network errors as Retry-After says. A 304 is not an error.
func (c *Collector) get(ctx context.Context, u string, hdr http.Header, v any) (*gh.Response, bool, error) {
	rateWaits := 0
	for attempt := 0; ; attempt++ {
		req, err := c.gh.NewRequest(http.MethodGet, u, nil)
		if err != nil {
			return nil, false, err
		}
		for k, vals := range hdr {
			req.Header[k] = vals
		}
		if buf, ok := v.(*bytes.Buffer); ok {
			buf.Reset()
		}
		// A per-request deadline rather than http.Client.Timeout: Do has
		// read and closed the body when it returns, so nothing lingers.
		rctx, cancel := context.WithTimeout(ctx, c.timeout)
		resp, err := c.gh.Do(rctx, req, v)
		timedOut := rctx.Err() != nil
		cancel()
		if err == nil {
			return resp, false, nil
		}
		if resp != nil && resp.Response != nil && resp.StatusCode == http.StatusNotModified {
			return resp, true, nil
		}
		if ctx.Err() != nil {
			return resp, false, ctx.Err()
		}
		wait, kind, retry := classify(resp, err, c.now(), attempt, c.retry)
		if timedOut {
			wait, kind, retry = c.retry.wait(attempt), waitBackoff, true
			err = fmt.Errorf("no answer within %v: %w", c.timeout, err)
		}
		switch {
		case !retry:
			return resp, false, err
		case kind == waitRateLimit:
			// Not an attempt: the limit resets, then the request is sent.
			attempt--
			if rateWaits++; rateWaits > 3 {
				return resp, false, err
			}
			until := c.now().Add(wait)
			c.log.Warn("rate limit exhausted; waiting for the reset", "until", until.Format(time.RFC3339))
			if c.health != nil {
				c.health.Set(Name, health.Degraded, "rate limit exhausted; waiting until "+until.Format(time.RFC3339))
			}
		case attempt+1 >= c.retry.attempts:
			return resp, false, &RetryLaterError{Err: err, After: wait}
		default:
			c.log.Warn("request failed; retrying", "url", req.URL.Path, "err", err, "wait", wait, "attempt", attempt+1)
		}
		if err := c.sleep(ctx, wait); err != nil {
			return resp, false, err
		}
	}
}

// isStatus reports whether err is a GitHub error answer with one of codes.
func isStatus(err error, codes ...int) bool {
	var er *gh.ErrorResponse
	return errors.As(err, &er) && er.Response != nil && slices.Contains(codes, er.Response.StatusCode)
}

func truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return string(b[:n]) + "…"
}
