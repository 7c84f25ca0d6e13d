package router_test

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/health"
	"github.com/omnibrain/omnibrain/internal/fakes/llm"
	"github.com/omnibrain/omnibrain/internal/testutil"
	"github.com/omnibrain/omnibrain/notify"
	"github.com/omnibrain/omnibrain/router"
	"github.com/omnibrain/omnibrain/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// harness is a router over a real store, with a recorded sleep, notifier
// and health registry and a fixed clock.
type harness struct {
	r      *router.Router
	st     *store.Store
	health *health.Registry
	clock  *testutil.Clock

	mu     sync.Mutex
	sleeps []time.Duration
	notes  []notify.Message
}

func (h *harness) Notify(_ context.Context, m notify.Message) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.notes = append(h.notes, m)
	return nil
}

func (h *harness) slept() []time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]time.Duration(nil), h.sleeps...)
}

func (h *harness) notifications() []notify.Message {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]notify.Message(nil), h.notes...)
}

var berlin = mustZone("Europe/Berlin")

func mustZone(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return loc
}

// newHarness builds a router from cfg; edit may adjust the options.
func newHarness(t testing.TB, cfg config.LLM, edit ...func(*router.Options)) *harness {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "test.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := &harness{st: st, clock: testutil.NewClock(time.Date(2025, 6, 2, 10, 0, 0, 0, berlin))}
	h.health = health.NewRegistry(h.clock.Now)
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	opts := router.Options{
		LLM: cfg, Location: berlin, Calls: st, Notifier: h, Health: h.health, Now: h.clock.Now,
		Sleep: func(ctx context.Context, d time.Duration) error {
			h.mu.Lock()
			h.sleeps = append(h.sleeps, d)
			h.mu.Unlock()
			return ctx.Err()
		},
		OllamaURL: "http://" + closedAddr(t) + "/v1",
	}
	for _, e := range edit {
		e(&opts)
	}
	r, err := router.New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	h.r = r
	return h
}

// calls reads back what the router recorded.
func (h *harness) calls(t *testing.T) []store.LLMCall {
	t.Helper()
	rows, err := h.st.DB().Query(`SELECT task, provider, model, input_tokens, output_tokens, cost_usd, interactive, stream, attempt, status, error, day FROM llm_calls ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []store.LLMCall
	for rows.Next() {
		var c store.LLMCall
		if err := rows.Scan(&c.Task, &c.Provider, &c.Model, &c.InputTokens, &c.OutputTokens, &c.CostUSD, &c.Interactive, &c.Stream, &c.Attempt, &c.Status, &c.Error, &c.Day); err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// closedAddr is a loopback address nothing listens on: connections to it
// are refused, like a provider that is down.
func closedAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// backend is one fake of either API, configured as a provider.
type backend struct {
	kind     string // openai or anthropic
	url      string
	script   func(...llm.Turn)
	requests func() []llm.Request
	pending  func() int
}

func newBackend(t testing.TB, kind string) backend {
	if kind == "anthropic" {
		f := llm.NewAnthropic(t)
		return backend{kind: kind, url: f.URL, script: f.Script, requests: f.Requests, pending: f.Pending}
	}
	f := llm.NewOpenAI(t)
	return backend{kind: kind, url: f.URL, script: f.Script, requests: f.Requests, pending: f.Pending}
}

// defaultCfg routes everything to one backend as the default provider.
func (b backend) defaultCfg() config.LLM {
	return config.LLM{Provider: b.kind, BaseURL: b.url, APIKey: "key", Model: b.kind + "-model"}
}

// provider is b as a named provider.
func (b backend) provider(name string) config.Provider {
	return config.Provider{Name: name, Type: b.kind, BaseURL: b.url, APIKey: "key", Model: name + "-model"}
}

var kinds = []string{"openai", "anthropic"}

// collect gathers streamed text honouring Reset, and counts the resets.
type collect struct {
	text   strings.Builder
	resets int
	deltas int
}

func (c *collect) onDelta(d router.Delta) {
	if d.Reset {
		c.resets++
		c.text.Reset()
		return
	}
	c.deltas++
	c.text.WriteString(d.Text)
}

func userReq(task router.Task, text string) router.Request {
	return router.Request{Task: task, Messages: []router.Message{
		{Role: router.RoleSystem, Content: "You are omnibrain."},
		{Role: router.RoleUser, Content: text},
	}}
}
