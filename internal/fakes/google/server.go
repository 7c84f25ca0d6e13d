// Package fakegoogle is a wire-faithful httptest fake of the Google APIs
// omnibrain calls: Gmail v1, Calendar v3 and the OAuth 2.0 endpoints. It
// follows the discovery documents in ../shared/data/protocol (paths,
// parameters, field names, int64 fields as JSON strings, error shapes) so
// tests can drive the real google.golang.org/api clients and
// golang.org/x/oauth2 against it.
//
// One server serves everything under its URL, as OMNIBRAIN_GOOGLE_API_URL
// expects: /gmail/v1/…, /upload/gmail/v1/…, /calendar/v3/…, plus /token
// (OMNIBRAIN_GOOGLE_TOKEN_URL) and /o/oauth2/auth (the consent page).
package fakegoogle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Options configure a fake server. The zero value works.
type Options struct {
	// Now is the server's clock (time.Now when nil): internalDate of sent
	// mail, event timestamps, token expiry.
	Now func() time.Time
	// Email is the mailbox owner's address (default owner@example.com); it
	// is the profile address and the id of the primary calendar.
	Email string
	// RequireAuth makes every API call need a Bearer access token issued by
	// the token endpoint (or by IssueToken). Off, any or no token works,
	// which suits clients built with option.WithoutAuthentication.
	RequireAuth bool
	// ClientID and ClientSecret are what the token endpoint accepts
	// (default test-client-id / test-client-secret).
	ClientID     string
	ClientSecret string
	// TimeZone is the primary calendar's zone (default UTC).
	TimeZone string
}

// Server is the fake. Its methods are safe for concurrent use.
type Server struct {
	URL string // the bare root, no trailing slash

	srv  *httptest.Server
	opts Options
	now  func() time.Time

	mu       sync.Mutex
	requests []Request
	faults   []*Fault

	mail  *mailbox
	cal   *calendars
	oauth *oauthState
}

// Request is one request the server received, for assertions and the
// discovery check.
type Request struct {
	Method string
	Path   string
	Query  url.Values
	Body   []byte // JSON bodies only (nil otherwise)
	Status int    // what the server answered
}

// New starts a fake server that is closed when the test ends.
func New(tb testing.TB, opts Options) *Server {
	tb.Helper()
	s := NewServer(opts)
	tb.Cleanup(s.Close)
	return s
}

// NewServer starts a fake server; the caller closes it.
func NewServer(opts Options) *Server {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Email == "" {
		opts.Email = "owner@example.com"
	}
	if opts.ClientID == "" {
		opts.ClientID = "test-client-id"
	}
	if opts.ClientSecret == "" {
		opts.ClientSecret = "test-client-secret"
	}
	if opts.TimeZone == "" {
		opts.TimeZone = "UTC"
	}
	s := &Server{opts: opts, now: opts.Now}
	s.mail = newMailbox(opts.Email)
	s.cal = newCalendars(opts.Email, opts.TimeZone)
	s.oauth = newOAuthState()
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close shuts the server down.
func (s *Server) Close() { s.srv.Close() }

// Email is the mailbox owner's address.
func (s *Server) Email() string { return s.opts.Email }

// TokenURL is the OAuth token endpoint.
func (s *Server) TokenURL() string { return s.URL + "/token" }

// AuthURL is the OAuth consent page. It approves at once: it redirects to
// the redirect_uri with a code and the state (see SetConsent).
func (s *Server) AuthURL() string { return s.URL + "/o/oauth2/auth" }

// ClientID and ClientSecret are the OAuth client the token endpoint accepts.
func (s *Server) ClientID() string     { return s.opts.ClientID }
func (s *Server) ClientSecret() string { return s.opts.ClientSecret }

// Requests returns every request received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// CountRequests counts the requests with the method ("" for any) whose
// path starts with prefix.
func (s *Server) CountRequests(method, prefix string) int {
	n := 0
	for _, r := range s.Requests() {
		if (method == "" || r.Method == method) && strings.HasPrefix(r.Path, prefix) {
			n++
		}
	}
	return n
}

// Fault makes matching requests fail or slow down.
type Fault struct {
	Method string // "" matches any method
	Path   string // prefix of the URL path; "" matches any path
	// Status is the error answered (429, 500, 503…); 0 answers normally
	// after Delay.
	Status int
	// RetryAfter is the Retry-After header sent with the error ("2", or an
	// HTTP date); empty sends none.
	RetryAfter string
	Delay      time.Duration
	// After serves the request normally first and then answers the error
	// instead: the change happened but its answer was lost (a send that
	// went out, then a 500).
	After bool
	// Times is how many matching requests it affects; 0 means until
	// ClearFaults.
	Times int
}

// InjectFault adds a fault; faults are tried in the order added.
func (s *Server) InjectFault(f Fault) {
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

// takeFault returns the first fault matching r, consuming one of its uses.
func (s *Server) takeFault(r *http.Request) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		if f.Method != "" && f.Method != r.Method {
			continue
		}
		if !strings.HasPrefix(r.URL.Path, f.Path) {
			continue
		}
		out := *f
		if f.Times > 0 {
			f.Times--
			if f.Times == 0 {
				s.faults = append(s.faults[:i], s.faults[i+1:]...)
			}
		}
		return &out
	}
	return nil
}

// statusRecorder remembers the status written.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (w *statusRecorder) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusRecorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	var body []byte
	if r.Body != nil {
		b, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err != nil {
			writeGoogleError(w, http.StatusBadRequest, "badRequest", "cannot read body: "+err.Error())
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			body = b
		}
	}
	rec := &statusRecorder{ResponseWriter: w}
	defer func() {
		s.mu.Lock()
		s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Body: body, Status: rec.status})
		s.mu.Unlock()
	}()

	f := s.takeFault(r)
	if f != nil && f.After {
		s.route(httptest.NewRecorder(), r)
	}
	if f != nil {
		if f.Delay > 0 {
			select {
			case <-time.After(f.Delay):
			case <-r.Context().Done():
				return
			}
		}
		if f.Status != 0 {
			if f.RetryAfter != "" {
				rec.Header().Set("Retry-After", f.RetryAfter)
			}
			reason := "backendError"
			if f.Status == http.StatusTooManyRequests {
				reason = "rateLimitExceeded"
			}
			writeGoogleError(rec, f.Status, reason, http.StatusText(f.Status))
			return
		}
	}
	s.route(rec, r)
}

// route serves one request by its path.
func (s *Server) route(rec http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case p == "/token":
		s.handleToken(rec, r)
		return
	case p == "/o/oauth2/auth":
		s.handleAuthorize(rec, r)
		return
	}
	if !s.authorized(r) {
		rec.Header().Set("WWW-Authenticate", `Bearer realm="https://accounts.google.com/", error="invalid_token"`)
		writeError(rec, http.StatusUnauthorized, "UNAUTHENTICATED", "authError",
			"Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.")
		return
	}
	switch {
	case strings.HasPrefix(p, "/gmail/v1/users/"):
		s.serveGmail(rec, r, strings.TrimPrefix(p, "/gmail/v1/users/"))
	case strings.HasPrefix(p, "/upload/gmail/v1/users/"):
		s.serveGmailUpload(rec, r, strings.TrimPrefix(p, "/upload/gmail/v1/users/"))
	case strings.HasPrefix(p, "/calendar/v3/calendars/"):
		s.serveCalendar(rec, r, strings.TrimPrefix(p, "/calendar/v3/calendars/"))
	default:
		writeGoogleError(rec, http.StatusNotFound, "notFound", "fake google: no such path "+p)
	}
}

// errorBody is Google's JSON error shape (googleapi.Error decodes it).
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    int         `json:"code"`
	Message string      `json:"message"`
	Errors  []errorItem `json:"errors,omitempty"`
	Status  string      `json:"status,omitempty"`
}

type errorItem struct {
	Domain  string `json:"domain"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

var statusNames = map[int]string{
	400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
	409: "ALREADY_EXISTS", 410: "FAILED_PRECONDITION", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE",
}

func writeGoogleError(w http.ResponseWriter, code int, reason, msg string) {
	writeError(w, code, statusNames[code], reason, msg)
}

func writeError(w http.ResponseWriter, code int, status, reason, msg string) {
	writeJSON(w, code, errorBody{Error: errorDetail{
		Code: code, Message: msg, Status: status,
		Errors: []errorItem{{Domain: "global", Reason: reason, Message: msg}},
	}})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, fmt.Sprintf("fake google: encode: %v", err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(code)
	w.Write(b)
}
