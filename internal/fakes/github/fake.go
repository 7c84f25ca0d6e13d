// Package github is an httptest fake of the GitHub REST API paths omnibrain
// calls: the authenticated user, notifications (Last-Modified,
// If-Modified-Since, X-Poll-Interval), issue search, pull requests, combined
// status, check runs and issue comments. It paginates with Link headers,
// answers conditional requests with 304, keeps primary rate limits per
// resource (core, search) with the X-RateLimit-* headers, and injects faults
// (status codes, Retry-After, delays, a lost response after the change is
// made). Its state is scriptable between polls, and it records every request
// and every comment created.
package github

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Routes are the operations the fake serves, named as in GitHub's OpenAPI
// description ("METHOD /path/{param}"). Tests check each against
// ../shared/data/protocol/github-openapi_operations.go-github-v62.yaml.
var Routes = []string{
	"GET /user",
	"GET /notifications",
	"GET /search/issues",
	"GET /repos/{owner}/{repo}/issues/{issue_number}",
	"GET /repos/{owner}/{repo}/pulls/{pull_number}",
	"GET /repos/{owner}/{repo}/commits/{ref}/status",
	"GET /repos/{owner}/{repo}/commits/{ref}/check-runs",
	"GET /repos/{owner}/{repo}/issues/{issue_number}/comments",
	"POST /repos/{owner}/{repo}/issues/{issue_number}/comments",
}

// Query parameters each route understands, as documented for the operation.
// The fake rejects others with 422 so a client sending a misspelt or
// invented parameter fails loudly in tests.
var routeParams = map[string][]string{
	"GET /user":          nil,
	"GET /notifications": {"all", "participating", "since", "before", "page", "per_page"},
	"GET /search/issues": {"q", "sort", "order", "page", "per_page"},
	"GET /repos/{owner}/{repo}/issues/{issue_number}":           nil,
	"GET /repos/{owner}/{repo}/pulls/{pull_number}":             nil,
	"GET /repos/{owner}/{repo}/commits/{ref}/status":            {"page", "per_page"},
	"GET /repos/{owner}/{repo}/commits/{ref}/check-runs":        {"check_name", "status", "filter", "app_id", "page", "per_page"},
	"GET /repos/{owner}/{repo}/issues/{issue_number}/comments":  {"since", "page", "per_page"},
	"POST /repos/{owner}/{repo}/issues/{issue_number}/comments": nil,
}

// Options configure a fake.
type Options struct {
	// Login is the authenticated user (default "octocat").
	Login string
	// Token, when set, is the only token accepted (Bearer or token scheme).
	Token string
	// Scopes are sent in X-OAuth-Scopes on GET /user; nil sends no header,
	// as for a fine-grained token.
	Scopes []string
	// Prefix serves the API below a path, "/api/v3" for GitHub Enterprise.
	Prefix string
	// Now is the fake's clock (time.Now when nil): timestamps, rate-limit
	// resets and Last-Modified come from it.
	Now func() time.Time
	// PollInterval is sent as X-Poll-Interval on /notifications (default 60s).
	PollInterval time.Duration
	// CoreLimit and SearchLimit are the primary rate limits per window
	// (defaults 5000 an hour and 30 a minute).
	CoreLimit, SearchLimit int
	// ExhaustedStatus answers a request over the primary limit (403 as
	// GitHub mostly does, or 429).
	ExhaustedStatus int
}

// Notification is a notification thread in the fake.
type Notification struct {
	ID      string // assigned when empty
	Repo    string // owner/repo
	Type    string // PullRequest, Issue, Release, Commit, Discussion, CheckSuite
	Number  int    // the issue or PR number; 0 when the subject has none
	Title   string
	Reason  string // review_requested, mention, assign, author, comment, subscribed, ...
	Read    bool
	Updated time.Time // default: the fake's now
}

// Issue is an issue or a pull request in the fake.
type Issue struct {
	Repo      string // owner/repo
	Number    int    // assigned per repo when 0
	PR        bool
	Title     string
	Body      string
	Author    string
	State     string // open (default) or closed
	Draft     bool
	HeadSHA   string   // pull requests: the head commit
	Assignees []string // logins
	Reviewers []string // requested reviewers (pull requests)
	Mentions  []string // logins mentioned in the body or comments
	Labels    []string
	Created   time.Time
	Updated   time.Time
}

// Status is one commit status context.
type Status struct {
	Context     string
	State       string // error, failure, pending, success
	Description string
}

// CheckRun is one check run on a commit.
type CheckRun struct {
	Name       string
	Status     string // queued, in_progress, completed
	Conclusion string // success, failure, neutral, cancelled, skipped, timed_out, action_required
}

// Comment is an issue comment.
type Comment struct {
	ID      int64
	Repo    string
	Number  int
	Author  string
	Body    string
	Created time.Time
	Updated time.Time
}

// Request is one request the fake received.
type Request struct {
	Method string
	Path   string // without the prefix
	Query  string
	Route  string // the matched route, "" when none matched
	Header http.Header
	Status int // the answer's status code
}

// Fault makes matching requests fail or slow down.
type Fault struct {
	Method string // "" matches any
	Path   string // path prefix (without the API prefix); "" matches any
	Times  int    // how many requests it affects; 0 means every one
	Delay  time.Duration
	Status int // 0: only delay
	// RetryAfter is sent as Retry-After (seconds) when set.
	RetryAfter string
	// Secondary marks a 403 as a secondary rate limit (documentation_url
	// ends in secondary-rate-limits), as GitHub sends it.
	Secondary bool
	// AfterEffect lets the handler change state first and then replaces the
	// answer with Status: a request that reached GitHub whose response was
	// lost (a crash or a timeout between the two).
	AfterEffect bool
}

type bucket struct {
	limit, remaining int
	window           time.Duration
	reset            time.Time
}

// Server is the fake. Create it with New; Close it when done.
type Server struct {
	srv  *httptest.Server
	opts Options
	now  func() time.Time

	mu            sync.Mutex
	notifications []*Notification
	rawNotes      []json.RawMessage // malformed items served as they are
	notesChanged  time.Time
	issues        []*Issue
	statuses      map[string][]Status   // by commit sha
	checks        map[string][]CheckRun // by commit sha
	setAt         map[string]time.Time  // when a sha's statuses or checks last changed
	comments      []*Comment
	created       []Comment
	requests      []Request
	faults        []*Fault
	buckets       map[string]*bucket
	nextID        int64
}

// New starts a fake.
func New(opts Options) *Server {
	if opts.Login == "" {
		opts.Login = "octocat"
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.PollInterval == 0 {
		opts.PollInterval = 60 * time.Second
	}
	if opts.CoreLimit == 0 {
		opts.CoreLimit = 5000
	}
	if opts.SearchLimit == 0 {
		opts.SearchLimit = 30
	}
	if opts.ExhaustedStatus == 0 {
		opts.ExhaustedStatus = http.StatusForbidden
	}
	opts.Prefix = strings.TrimSuffix(opts.Prefix, "/")
	s := &Server{
		opts:     opts,
		now:      opts.Now,
		statuses: map[string][]Status{},
		checks:   map[string][]CheckRun{},
		setAt:    map[string]time.Time{},
		nextID:   100,
	}
	s.notesChanged = s.now()
	s.buckets = map[string]*bucket{
		"core":   {limit: opts.CoreLimit, remaining: opts.CoreLimit, window: time.Hour},
		"search": {limit: opts.SearchLimit, remaining: opts.SearchLimit, window: time.Minute},
	}
	mux := http.NewServeMux()
	handlers := map[string]handler{
		"GET /user":          s.getUser,
		"GET /notifications": s.listNotifications,
		"GET /search/issues": s.searchIssues,
		"GET /repos/{owner}/{repo}/issues/{issue_number}":           s.getIssue,
		"GET /repos/{owner}/{repo}/pulls/{pull_number}":             s.getPull,
		"GET /repos/{owner}/{repo}/commits/{ref}/status":            s.combinedStatus,
		"GET /repos/{owner}/{repo}/commits/{ref}/check-runs":        s.listCheckRuns,
		"GET /repos/{owner}/{repo}/issues/{issue_number}/comments":  s.listComments,
		"POST /repos/{owner}/{repo}/issues/{issue_number}/comments": s.createComment,
	}
	for _, route := range Routes {
		method, path, _ := strings.Cut(route, " ")
		mux.Handle(method+" "+opts.Prefix+path, s.wrap(route, handlers[route]))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.setStatus(s.record(r, ""), http.StatusNotFound)
		writeJSON(w, http.StatusNotFound, nil, wireError{Message: "Not Found", DocumentationURL: "https://docs.github.com/rest"})
	})
	s.srv = httptest.NewServer(mux)
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// URL is the bare root (scheme://host:port), what OMNIBRAIN_GITHUB_API_URL
// is set to; with a Prefix the client adds /api/v3/ itself.
func (s *Server) URL() string { return s.srv.URL }

// APIURL is where the API is served, with a trailing slash.
func (s *Server) APIURL() string { return s.apiBase() }

// Client is an http.Client for the fake.
func (s *Server) Client() *http.Client { return s.srv.Client() }

func (s *Server) apiBase() string { return s.srv.URL + s.opts.Prefix + "/" }
func (s *Server) webBase() string { return s.srv.URL + "/" }

// AddNotification adds (or, with a known ID, replaces) a notification
// thread and returns its id. Last-Modified moves to now.
func (s *Server) AddNotification(n Notification) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n.Updated.IsZero() {
		n.Updated = s.now()
	}
	if n.Type == "" {
		n.Type = "Issue"
	}
	if n.ID == "" {
		s.nextID++
		n.ID = strconv.FormatInt(s.nextID, 10)
	}
	for i, old := range s.notifications {
		if old.ID == n.ID {
			s.notifications[i] = &n
			s.notesChanged = s.now()
			return n.ID
		}
	}
	s.notifications = append(s.notifications, &n)
	s.notesChanged = s.now()
	return n.ID
}

// AddRawNotification serves raw (valid JSON, but any shape) as one more
// element of the notifications list, to test that a client skips a bad item.
func (s *Server) AddRawNotification(raw string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rawNotes = append(s.rawNotes, json.RawMessage(raw))
	s.notesChanged = s.now()
}

// MarkRead marks a notification thread read.
func (s *Server) MarkRead(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.notifications {
		if n.ID == id {
			n.Read = true
			s.notesChanged = s.now()
		}
	}
}

// AddIssue adds an issue or pull request and returns its number.
func (s *Server) AddIssue(is Issue) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if is.State == "" {
		is.State = "open"
	}
	if is.Created.IsZero() {
		is.Created = s.now()
	}
	if is.Updated.IsZero() {
		is.Updated = is.Created
	}
	if is.Number == 0 {
		is.Number = 1
		for _, o := range s.issues {
			if o.Repo == is.Repo && o.Number >= is.Number {
				is.Number = o.Number + 1
			}
		}
	}
	if is.PR && is.HeadSHA == "" {
		sum := sha256.Sum256([]byte(is.Repo + "#" + strconv.Itoa(is.Number)))
		is.HeadSHA = hex.EncodeToString(sum[:20])
	}
	s.issues = append(s.issues, &is)
	return is.Number
}

// UpdateIssue changes an issue in place; Updated moves to now unless fn
// sets it.
func (s *Server) UpdateIssue(repo string, number int, fn func(*Issue)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	is := s.findIssue(repo, number)
	if is == nil {
		return false
	}
	before := is.Updated
	fn(is)
	if is.Updated.Equal(before) {
		is.Updated = s.now()
	}
	return true
}

// SetStatuses replaces the commit statuses of sha.
func (s *Server) SetStatuses(sha string, st ...Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.statuses[sha] = st
	s.setAt[sha] = s.now()
}

// SetCheckRuns replaces the check runs of sha.
func (s *Server) SetCheckRuns(sha string, runs ...CheckRun) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checks[sha] = runs
	s.setAt[sha] = s.now()
}

// AddComment adds a comment as if someone had written it.
func (s *Server) AddComment(c Comment) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addComment(c).ID
}

func (s *Server) addComment(c Comment) *Comment {
	s.nextID++
	c.ID = s.nextID
	if c.Created.IsZero() {
		c.Created = s.now()
	}
	if c.Updated.IsZero() {
		c.Updated = c.Created
	}
	s.comments = append(s.comments, &c)
	return &c
}

// Created returns every comment created through the API, in order.
func (s *Server) Created() []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Comment(nil), s.created...)
}

// Requests returns every request received, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// ResetRequests forgets the recorded requests.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
}

// Unrouted returns the requests that matched no route.
func (s *Server) Unrouted() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Request
	for _, r := range s.requests {
		if r.Route == "" {
			out = append(out, r)
		}
	}
	return out
}

// Inject adds a fault; faults are matched in the order added.
func (s *Server) Inject(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &f)
}

// ClearFaults removes every fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = nil
}

// SetRate sets a resource's ("core" or "search") remaining requests and
// the time its window resets.
func (s *Server) SetRate(resource string, remaining int, reset time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buckets[resource]
	b.remaining, b.reset = remaining, reset
}

// Remaining reports a resource's remaining requests.
func (s *Server) Remaining(resource string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buckets[resource]
	s.refill(b)
	return b.remaining
}

// reply is what a handler answers; wrap writes it.
type reply struct {
	status int
	body   any
	header http.Header
}

type handler func(r *http.Request) reply

// statusWriter remembers the status written, for the request log.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}

func (s *Server) record(r *http.Request, route string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, Request{
		Method: r.Method,
		Path:   strings.TrimPrefix(r.URL.Path, s.opts.Prefix),
		Query:  r.URL.RawQuery,
		Route:  route,
		Header: r.Header.Clone(),
	})
	return len(s.requests) - 1
}

func (s *Server) setStatus(i, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i < len(s.requests) {
		s.requests[i].Status = status
	}
}

// wrap does what every GitHub endpoint does around its own work:
// authentication, parameter checks, faults, the primary rate limit and its
// headers, and conditional requests (a 304 costs no quota).
func (s *Server) wrap(route string, h handler) http.Handler {
	allowed := map[string]bool{}
	for _, p := range routeParams[route] {
		allowed[p] = true
	}
	resource := "core"
	if strings.HasPrefix(route, "GET /search/") {
		resource = "search"
	}
	return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w := &statusWriter{ResponseWriter: rw}
		i := s.record(r, route)
		defer func() { s.setStatus(i, w.status) }()
		if !s.authorized(r) {
			writeJSON(w, http.StatusUnauthorized, nil, wireError{Message: "Bad credentials", DocumentationURL: "https://docs.github.com/rest", Status: "401"})
			return
		}
		for name := range r.URL.Query() {
			if !allowed[name] {
				writeJSON(w, http.StatusUnprocessableEntity, nil, wireError{
					Message:          "Validation Failed",
					Errors:           []wireErrorEntry{{Resource: route, Field: name, Code: "invalid", Message: "unknown parameter " + name}},
					DocumentationURL: "https://docs.github.com/rest",
				})
				return
			}
		}
		f := s.fault(r)
		if f != nil && f.Delay > 0 {
			t := time.NewTimer(f.Delay)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		if f != nil && f.Status != 0 && !f.AfterEffect {
			s.writeFault(w, f, resource)
			return
		}

		s.mu.Lock()
		b := s.buckets[resource]
		s.refill(b)
		if b.remaining <= 0 {
			hdr := s.rateHeaders(resource, b)
			s.mu.Unlock()
			writeJSON(w, s.opts.ExhaustedStatus, hdr, wireError{
				Message:          "API rate limit exceeded for user ID " + strconv.FormatInt(userID(s.opts.Login), 10) + ".",
				DocumentationURL: "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-the-primary-rate-limit",
			})
			return
		}
		s.mu.Unlock()

		rep := h(r)
		if f != nil && f.AfterEffect {
			s.writeFault(w, f, resource)
			return
		}
		var body []byte
		if rep.body != nil {
			var err error
			if body, err = json.Marshal(rep.body); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
		}
		hdr := rep.header
		if hdr == nil {
			hdr = http.Header{}
		}
		status := rep.status
		if r.Method == http.MethodGet && status == http.StatusOK {
			sum := sha256.Sum256(body)
			etag := `W/"` + hex.EncodeToString(sum[:16]) + `"`
			hdr.Set("ETag", etag)
			if inm := r.Header.Get("If-None-Match"); inm != "" && inm == etag {
				status = http.StatusNotModified
			}
		}
		s.mu.Lock()
		if status != http.StatusNotModified {
			b.remaining--
		}
		for k, v := range s.rateHeaders(resource, b) {
			hdr[k] = v
		}
		s.mu.Unlock()
		if status == http.StatusNotModified {
			body = nil
		}
		writeRaw(w, status, hdr, body)
	})
}

func (s *Server) authorized(r *http.Request) bool {
	if s.opts.Token == "" {
		return true
	}
	auth := r.Header.Get("Authorization")
	for _, scheme := range []string{"Bearer ", "token "} {
		if tok, ok := strings.CutPrefix(auth, scheme); ok && tok == s.opts.Token {
			return true
		}
	}
	return false
}

// fault returns the first matching fault and uses one of its times.
func (s *Server) fault(r *http.Request) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	path := strings.TrimPrefix(r.URL.Path, s.opts.Prefix)
	for i, f := range s.faults {
		if f.Method != "" && f.Method != r.Method {
			continue
		}
		if !strings.HasPrefix(path, f.Path) {
			continue
		}
		if f.Times > 0 {
			f.Times--
			if f.Times == 0 {
				s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
			}
		}
		cp := *f
		return &cp
	}
	return nil
}

func (s *Server) writeFault(w http.ResponseWriter, f *Fault, resource string) {
	s.mu.Lock()
	hdr := s.rateHeaders(resource, s.buckets[resource])
	s.mu.Unlock()
	if f.RetryAfter != "" {
		hdr.Set("Retry-After", f.RetryAfter)
	}
	e := wireError{Message: http.StatusText(f.Status), DocumentationURL: "https://docs.github.com/rest"}
	if f.Secondary || f.Status == http.StatusTooManyRequests {
		e.Message = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
		e.DocumentationURL = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
	}
	writeJSON(w, f.Status, hdr, e)
}

func (s *Server) refill(b *bucket) {
	now := s.now()
	if b.reset.IsZero() || !now.Before(b.reset) {
		b.remaining = b.limit
		b.reset = now.Add(b.window)
	}
}

func (s *Server) rateHeaders(resource string, b *bucket) http.Header {
	h := http.Header{}
	h.Set("X-RateLimit-Limit", strconv.Itoa(b.limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(max(b.remaining, 0)))
	h.Set("X-RateLimit-Used", strconv.Itoa(b.limit-max(b.remaining, 0)))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(b.reset.Unix(), 10))
	h.Set("X-RateLimit-Resource", resource)
	h.Set("X-GitHub-Media-Type", "github.v3; format=json")
	return h
}

func writeJSON(w http.ResponseWriter, status int, hdr http.Header, v any) {
	b, _ := json.Marshal(v)
	writeRaw(w, status, hdr, b)
}

func writeRaw(w http.ResponseWriter, status int, hdr http.Header, body []byte) {
	for k, v := range hdr {
		w.Header()[k] = v
	}
	if body != nil {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
	}
	w.WriteHeader(status)
	if body != nil && status != http.StatusNotModified {
		w.Write(body)
	}
}

// page slices items by the page and per_page parameters and sets the Link
// header GitHub uses for pagination.
func page[T any](s *Server, r *http.Request, items []T, defPer, maxPer int, hdr http.Header) []T {
	q := r.URL.Query()
	per := defPer
	if v, err := strconv.Atoi(q.Get("per_page")); err == nil && v > 0 {
		per = min(v, maxPer)
	}
	pg := 1
	if v, err := strconv.Atoi(q.Get("page")); err == nil && v > 0 {
		pg = v
	}
	last := max(1, (len(items)+per-1)/per)
	link := func(p int) string {
		u := *r.URL
		qq := u.Query()
		qq.Set("page", strconv.Itoa(p))
		qq.Set("per_page", strconv.Itoa(per))
		u.RawQuery = qq.Encode()
		return "<" + strings.TrimSuffix(s.srv.URL, "/") + u.RequestURI() + ">"
	}
	var links []string
	if pg < last {
		links = append(links, link(pg+1)+`; rel="next"`, link(last)+`; rel="last"`)
	}
	if pg > 1 {
		links = append(links, link(1)+`; rel="first"`, link(min(pg-1, last))+`; rel="prev"`)
	}
	if len(links) > 0 {
		hdr.Set("Link", strings.Join(links, ", "))
	}
	start := (pg - 1) * per
	if start >= len(items) {
		return []T{}
	}
	return items[start:min(start+per, len(items))]
}

func (s *Server) findIssue(repo string, number int) *Issue {
	for _, is := range s.issues {
		if is.Repo == repo && is.Number == number {
			return is
		}
	}
	return nil
}

func sortByUpdatedDesc[T any](items []T, updated func(T) time.Time) {
	sort.SliceStable(items, func(i, j int) bool { return updated(items[i]).After(updated(items[j])) })
}
