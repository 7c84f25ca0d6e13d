// Package omi is an httptest fake of an app that offers Omi chat tools:
// it serves a manifest at /.well-known/omi-tools.json and answers tool
// calls as the contract says an app does — POST with a JSON body
// {"uid","app_id","tool_name",...params} (GET: the same as query
// parameters), answering {"result": "..."} or {"error": "..."}. It
// records every call with its headers, so tests can check the exact
// request and count deliveries.
package omi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// ManifestPath is where apps serve their chat-tools manifest.
const ManifestPath = "/.well-known/omi-tools.json"

// Call is one request to a tool endpoint.
type Call struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte     // exactly as received
	Query  url.Values // GET parameters
	// Fields are the body's (or the query's) fields.
	Fields map[string]any
}

// Answer is what an endpoint answers: a status and a JSON value.
type Answer struct {
	Status int
	Body   any
	Delay  time.Duration // before answering
	Header http.Header
}

// Server is the fake app.
type Server struct {
	*httptest.Server
	t testing.TB

	mu       sync.Mutex
	manifest []byte
	fetches  int
	calls    []Call
	answers  map[string]func(Call) Answer
	changed  chan struct{}
}

// New starts a fake app with an empty manifest; it stops with the test.
func New(t testing.TB) *Server {
	s := &Server{t: t, answers: map[string]func(Call) Answer{}, changed: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// ManifestURL is the manifest's address.
func (s *Server) ManifestURL() string { return s.URL + ManifestPath }

// SetManifest serves m (marshalled to JSON, or raw bytes as they are).
func (s *Server) SetManifest(m any) {
	b, ok := m.([]byte)
	if !ok {
		var err error
		if b, err = json.Marshal(m); err != nil {
			s.t.Fatal(err)
		}
	}
	s.mu.Lock()
	s.manifest = b
	s.mu.Unlock()
}

// Handle sets what the endpoint at path answers; without a handler an
// endpoint answers {"result":"ok"}.
func (s *Server) Handle(path string, fn func(Call) Answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers[path] = fn
}

// Calls are the calls made to path so far ("" for every path).
func (s *Server) Calls(path string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if path == "" || c.Path == path {
			out = append(out, c)
		}
	}
	return out
}

// ManifestFetches counts requests for the manifest.
func (s *Server) ManifestFetches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fetches
}

// WaitCalls waits until path has had n calls, or timeout; it reports
// whether it had.
func (s *Server) WaitCalls(path string, n int, timeout time.Duration) bool {
	deadline := time.After(timeout)
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if len(s.Calls(path)) >= n {
			return true
		}
		select {
		case <-ch:
		case <-deadline:
			return false
		}
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == ManifestPath {
		s.mu.Lock()
		s.fetches++
		m := s.manifest
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write(m)
		return
	}
	body, _ := io.ReadAll(r.Body)
	c := Call{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body, Query: r.URL.Query(), Fields: map[string]any{}}
	if r.Method == http.MethodGet {
		for k, v := range c.Query {
			c.Fields[k] = strings.Join(v, ",")
		}
	} else if err := json.Unmarshal(body, &c.Fields); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "Missing request body"})
		s.record(c)
		return
	}
	s.mu.Lock()
	fn := s.answers[r.URL.Path]
	s.mu.Unlock()
	a := Answer{Status: http.StatusOK, Body: map[string]string{"result": "ok"}}
	if fn != nil {
		a = fn(c)
	}
	// A call counts once the app has it, before it answers: a lost
	// answer is still a delivery.
	s.record(c)
	if a.Delay > 0 {
		select {
		case <-time.After(a.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if a.Status == 0 {
		a.Status = http.StatusOK
	}
	for k, v := range a.Header {
		w.Header()[k] = v
	}
	if raw, ok := a.Body.([]byte); ok {
		w.WriteHeader(a.Status)
		w.Write(raw)
		return
	}
	writeJSON(w, a.Status, a.Body)
}

func (s *Server) record(c Call) {
	s.mu.Lock()
	s.calls = append(s.calls, c)
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// Tool is a manifest entry, as apps write them.
type Tool struct {
	Name          string         `json:"name"`
	Description   string         `json:"description"`
	Endpoint      string         `json:"endpoint"`
	Method        string         `json:"method,omitempty"`
	Parameters    map[string]any `json:"parameters,omitempty"`
	AuthRequired  *bool          `json:"auth_required,omitempty"`
	StatusMessage string         `json:"status_message,omitempty"`
}

// Manifest is a chat-tools manifest.
type Manifest struct {
	Tools        []Tool        `json:"tools"`
	ChatMessages *ChatMessages `json:"chat_messages,omitempty"`
}

// ChatMessages enables app-initiated messages.
type ChatMessages struct {
	Enabled bool   `json:"enabled"`
	Target  string `json:"target,omitempty"`
	Notify  bool   `json:"notify,omitempty"`
}

// StringParams is a parameters schema of required string properties.
func StringParams(names ...string) map[string]any {
	props := map[string]any{}
	for _, n := range names {
		props[n] = map[string]any{"type": "string", "description": n}
	}
	return map[string]any{"properties": props, "required": names}
}
