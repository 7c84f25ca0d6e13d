package llm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// Turn is one scripted answer or fault. The zero Turn answers an empty text.
type Turn struct {
	Text      string
	ToolCalls []ToolCall
	// StopReason overrides the normalised stop reason: "stop", "tool_calls"
	// or "length" (sent as end_turn, tool_use, max_tokens to Anthropic
	// clients). By default it is tool_calls when ToolCalls is set, else stop.
	StopReason string
	// Token counts to report; 0 means an estimate (4 bytes per token).
	InputTokens, OutputTokens int
	// ChunkSize is the runes of text and bytes of tool arguments per
	// streamed delta; default 3, so every answer spans several chunks.
	ChunkSize int

	// Status answers with this HTTP error status and the API's error body.
	Status int
	// RetryAfter is the Retry-After header sent with Status (seconds or an
	// HTTP date).
	RetryAfter string
	// ErrorType and ErrorMessage fill the error body; defaults follow the
	// status the way the real API names them.
	ErrorType, ErrorMessage string

	// Hang stalls: before any answer, or after CutAfter events of a stream,
	// until the client gives up or the fake closes.
	Hang bool
	// CutAfter > 0 stops a stream after that many SSE events: the
	// connection is dropped (unless Hang or StreamError says otherwise).
	CutAfter int
	// StreamError, with CutAfter, sends an in-stream error event of this
	// type (e.g. "server_error", "overloaded_error") instead of dropping
	// the connection.
	StreamError string
	// EventDelay paces a stream: each event waits this long first (a slow
	// local model writing a long answer).
	EventDelay time.Duration
}

// ToolCall is a scripted tool call. ID defaults to call_N (OpenAI) or
// toolu_N (Anthropic); Arguments is sent verbatim, valid JSON or not.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Request is what a fake received, decoded into one shape for both APIs.
type Request struct {
	API    string // "openai" or "anthropic"
	Method string
	Path   string
	Header http.Header
	Body   []byte

	Model        string
	Stream       bool
	IncludeUsage bool // OpenAI stream_options.include_usage
	MaxTokens    int  // max_tokens or max_completion_tokens
	Temperature  *float64
	// System is the system prompt: Anthropic's system field, or the text of
	// OpenAI's system/developer messages (which also stay in Messages).
	System   string
	Messages []Message
	Tools    []Tool

	// Invalid says why the fake rejected the request as the real API would;
	// empty for accepted requests.
	Invalid string
}

// Message is one decoded input message. Anthropic tool_result blocks become
// Role "tool" messages and tool_use blocks become the assistant's ToolCalls,
// in their original order.
type Message struct {
	Role       string
	Content    string
	ToolCalls  []ToolCall
	ToolCallID string
	IsError    bool
}

// Tool is one decoded tool definition.
type Tool struct {
	Name        string
	Description string
	Parameters  json.RawMessage // OpenAI function.parameters, Anthropic input_schema
}

// fake is the scripting and recording core both APIs share.
type fake struct {
	t       testing.TB
	srv     *httptest.Server
	respond func(Request) Turn

	mu    sync.Mutex
	queue []Turn
	reqs  []Request
	calls int // tool call ids handed out

	done      chan struct{}
	closeOnce sync.Once
}

func newFake(t testing.TB, h http.Handler) *fake {
	f := &fake{t: t, done: make(chan struct{})}
	f.srv = httptest.NewServer(h)
	t.Cleanup(f.close)
	return f
}

func (f *fake) script(turns []Turn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queue = append(f.queue, turns...)
}

func (f *fake) setRespond(fn func(Request) Turn) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.respond = fn
}

func (f *fake) requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Request(nil), f.reqs...)
}

func (f *fake) pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.queue)
}

func (f *fake) record(r Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, r)
}

// next records the request and takes the turn that answers it; ok is false
// when nothing is scripted (the test is failed and the caller answers 500).
func (f *fake) next(r Request) (Turn, bool) {
	f.mu.Lock()
	f.reqs = append(f.reqs, r)
	if len(f.queue) > 0 {
		turn := f.queue[0]
		f.queue = f.queue[1:]
		f.mu.Unlock()
		return turn, true
	}
	respond := f.respond
	f.mu.Unlock()
	if respond != nil {
		return respond(r), true
	}
	f.t.Errorf("fake %s: unexpected request %d (%s %s): no scripted turn left", r.API, len(f.requests()), r.Method, r.Path)
	return Turn{}, false
}

// callID hands out a fresh tool call id with the API's prefix.
func (f *fake) callID(prefix string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return fmt.Sprintf("%s%d", prefix, f.calls)
}

// hang stalls until the client goes away or the fake closes.
func (f *fake) hang(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-f.done:
	}
}

func (f *fake) close() {
	f.closeOnce.Do(func() {
		close(f.done)
		f.srv.CloseClientConnections()
		f.srv.Close()
	})
}

// sse writes server-sent events, counting them against a turn's CutAfter.
type sse struct {
	w      http.ResponseWriter
	fl     http.Flusher
	events int
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	return &sse{w: w, fl: fl}
}

// send writes one event (name may be empty) with data as JSON or raw text.
func (s *sse) send(name string, data any) {
	var b []byte
	switch v := data.(type) {
	case string:
		b = []byte(v)
	default:
		var err error
		if b, err = json.Marshal(v); err != nil {
			panic(err) // the fake's own values always marshal
		}
	}
	if name != "" {
		fmt.Fprintf(s.w, "event: %s\n", name)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", b)
	if s.fl != nil {
		s.fl.Flush()
	}
	s.events++
}

// dropConnection aborts the response so the client sees the connection
// break mid-body, as when a proxy or the network cuts a stream.
func dropConnection() { panic(http.ErrAbortHandler) }

// chunks splits s into pieces of n runes (n bytes when bytewise).
func chunks(s string, n int, bytewise bool) []string {
	if n <= 0 {
		n = 3
	}
	var out []string
	for len(s) > 0 {
		end := 0
		for i := 0; i < n && end < len(s); i++ {
			if bytewise {
				end++
				continue
			}
			_, size := utf8.DecodeRuneInString(s[end:])
			end += size
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}

// estimate is a rough token count: 4 bytes per token, at least 1.
func estimate(n int) int { return max(1, (n+3)/4) }

func (t Turn) outputTokens() int {
	if t.OutputTokens > 0 {
		return t.OutputTokens
	}
	n := len(t.Text)
	for _, c := range t.ToolCalls {
		n += len(c.Name) + len(c.Arguments)
	}
	return estimate(n)
}

func (t Turn) inputTokens(body []byte) int {
	if t.InputTokens > 0 {
		return t.InputTokens
	}
	return estimate(len(body))
}

func (t Turn) stopReason() string {
	if t.StopReason != "" {
		return t.StopReason
	}
	if len(t.ToolCalls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

// writeRetryAfter sets the Retry-After header of an error answer.
func (t Turn) writeRetryAfter(w http.ResponseWriter) {
	if t.RetryAfter != "" {
		w.Header().Set("Retry-After", t.RetryAfter)
	}
}

// cutBody writes half of a JSON answer and drops the connection.
func cutBody(w http.ResponseWriter, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	w.WriteHeader(http.StatusOK)
	w.Write(b[:len(b)/2])
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
	dropConnection()
}

var created = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Unix()

// pause waits d before a stream event; false if the client went away.
func pause(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	select {
	case <-time.After(d):
		return true
	case <-r.Context().Done():
		return false
	}
}

// hostedTransport delivers every request to the fake whatever host it
// names, so a provider configured with a hosted base URL (one that is not
// loopback, e.g. https://api.openai.example/v1) reaches the fake through
// the real client: what the router does for hosted providers (prices,
// budgets) is tested without leaving the machine.
func (f *fake) hostedTransport() http.RoundTripper {
	target := f.srv.Listener.Addr().String()
	base := f.srv.Client().Transport
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.URL.Scheme, r.URL.Host = "http", target
		return base.RoundTrip(r)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (rt roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return rt(r) }
