package agent

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	"gopkg.in/yaml.v3"

	"github.com/omnibrain/omnibrain/approval"
	"github.com/omnibrain/omnibrain/config"
	"github.com/omnibrain/omnibrain/internal/fakes/llm"
	"github.com/omnibrain/omnibrain/internal/testutil"
	"github.com/omnibrain/omnibrain/router"
	"github.com/omnibrain/omnibrain/search"
	"github.com/omnibrain/omnibrain/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeModel is one of the two wire fakes behind a common face.
type fakeModel struct {
	kind     string
	url      string
	script   func(...llm.Turn)
	respond  func(func(llm.Request) llm.Turn)
	requests func() []llm.Request
}

func newFakeModel(t testing.TB, kind string) *fakeModel {
	if kind == "anthropic" {
		f := llm.NewAnthropic(t)
		return &fakeModel{kind: kind, url: f.URL, script: f.Script, respond: f.Respond, requests: f.Requests}
	}
	f := llm.NewOpenAI(t)
	return &fakeModel{kind: kind, url: f.URL, script: f.Script, respond: f.Respond, requests: f.Requests}
}

var kinds = []string{"openai", "anthropic"}

// clock is the test's fixed "now": AgentDojo's current day.
var clock = time.Date(2024, 5, 15, 9, 0, 0, 0, time.UTC)

// harness is an agent over a real store, the real approval gate and the
// real router talking to a wire fake of a model API.
type harness struct {
	t      testing.TB
	st     *store.Store
	gate   *approval.Gate
	router *router.Router
	model  *fakeModel
	agent  *Agent
	tools  *Registry

	mu     sync.Mutex
	events []Event
}

type harnessOpts struct {
	kind   string
	extra  []*Tool
	agent  func(*Options)
	noLLM  bool
	router func(*router.Options)
}

func closedURL(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/v1"
}

func newHarness(t testing.TB, o harnessOpts) *harness {
	t.Helper()
	if o.kind == "" {
		o.kind = "openai"
	}
	h := &harness{t: t, st: openStore(t)}
	gate, err := approval.NewGate(approval.GateOptions{Store: h.st, Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	h.gate = gate
	cfg := config.LLM{Provider: "none", Timeout: 5 * time.Second}
	if !o.noLLM {
		h.model = newFakeModel(t, o.kind)
		cfg = config.LLM{Provider: o.kind, BaseURL: h.model.url, APIKey: "key", Model: o.kind + "-model", Timeout: 5 * time.Second}
	}
	ropts := router.Options{
		LLM: cfg, Calls: h.st, Now: func() time.Time { return clock },
		Sleep:     func(ctx context.Context, d time.Duration) error { return ctx.Err() },
		OllamaURL: closedURL(t), ProbeTimeout: 200 * time.Millisecond,
		Retry: router.Retry{Attempts: 2},
	}
	if o.router != nil {
		o.router(&ropts)
	}
	h.router, err = router.New(context.Background(), ropts)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := StandardTools(ToolDeps{Search: search.New(h.st, nil, nil), Items: h.st, Location: time.UTC, Now: func() time.Time { return clock }, OwnerEmails: []string{"emma.johnson@bluesparrowtech.com"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range o.extra {
		if err := tools.Add(x); err != nil {
			t.Fatal(err)
		}
	}
	h.tools = tools
	opts := Options{
		Model: h.router, Tools: tools, Proposer: gate, Checkpoints: NewRuns(h.st),
		Now: func() time.Time { return clock }, Location: time.UTC, RetryDelay: time.Millisecond,
	}
	if o.agent != nil {
		o.agent(&opts)
	}
	h.agent, err = New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *harness) onEvent(ev Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, ev)
}

func (h *harness) eventsOf(typ EventType) []Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []Event
	for _, e := range h.events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

func (h *harness) run(task Task) *Answer {
	h.t.Helper()
	ans, err := h.agent.Run(context.Background(), task, h.onEvent)
	if err != nil {
		h.t.Fatal(err)
	}
	return ans
}

// toolStatuses lists tool_end statuses in order, as name:status.
func (h *harness) toolStatuses() []string {
	var out []string
	for _, e := range h.eventsOf(EventToolEnd) {
		out = append(out, e.Tool.Name+":"+e.Tool.Status)
	}
	return out
}

func (h *harness) proposals() []*approval.Proposal {
	h.t.Helper()
	ps, err := h.gate.List(context.Background(), approval.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return ps
}

// lastToolResult is the content of the last tool message in a request.
func lastToolResult(r llm.Request) (string, bool) {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "tool" {
			return r.Messages[i].Content, true
		}
		if r.Messages[i].Role == "user" {
			return "", false
		}
	}
	return "", false
}

func call(name, args string) llm.ToolCall { return llm.ToolCall{Name: name, Arguments: args} }

// --- AgentDojo's workspace as stored items ---

type dojoEmail struct {
	ID         string   `json:"id_"`
	Sender     string   `json:"sender"`
	Recipients []string `json:"recipients"`
	Cc         []string `json:"cc"`
	Subject    string   `json:"subject"`
	Body       string   `json:"body"`
	Status     string   `json:"status"`
	Timestamp  string   `json:"timestamp"`
}

type dojoEvent struct {
	ID           string   `json:"id_"`
	Title        string   `json:"title"`
	Description  string   `json:"description"`
	Start        string   `json:"start_time"`
	End          string   `json:"end_time"`
	Location     string   `json:"location"`
	Participants []string `json:"participants"`
	AllDay       bool     `json:"all_day"`
}

type dojoEnv struct {
	Inbox struct {
		Emails []dojoEmail `json:"initial_emails"`
	} `json:"inbox"`
	Calendar struct {
		Events []dojoEvent `json:"initial_events"`
	} `json:"calendar"`
}

// loadDojo stores AgentDojo's inbox and calendar. With payload set, the
// attacker's text is planted at every injection vector (after the
// vector's default text, where the benchmark puts it).
func loadDojo(t testing.TB, st *store.Store, payload string) (emails, events int) {
	t.Helper()
	dir := testutil.SharedData(t, "agentdojo")
	var env dojoEnv
	b, err := os.ReadFile(dir + "/workspace_environment_benign.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatal(err)
	}
	var vectors map[string]struct {
		Default string `yaml:"default"`
	}
	vb, err := os.ReadFile(dir + "/workspace/injection_vectors.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(vb, &vectors); err != nil {
		t.Fatal(err)
	}
	plant := func(text string) string {
		if payload == "" {
			return text
		}
		for _, v := range vectors {
			if v.Default != "" && strings.Contains(text, v.Default) {
				return strings.Replace(text, v.Default, v.Default+payload, 1)
			}
		}
		return text
	}
	var items []*store.Item
	for _, e := range env.Inbox.Emails {
		ts, err := time.Parse("2006-01-02T15:04:05", e.Timestamp)
		if err != nil {
			t.Fatal(err)
		}
		people := append(append([]string{e.Sender}, e.Recipients...), e.Cc...)
		items = append(items, &store.Item{
			Source: "maildir", ExternalID: "dojo-" + e.ID + "@bluesparrowtech.com", Kind: "email",
			Thread: strings.TrimPrefix(e.Subject, "Re: "), Time: ts, Title: e.Subject, Body: plant(e.Body), Sender: e.Sender, People: people,
			Meta: map[string]any{"from": e.Sender, "to": e.Recipients, "message_id": "dojo-" + e.ID + "@bluesparrowtech.com", "outbound": e.Status == "sent"},
		})
	}
	for _, ev := range env.Calendar.Events {
		start, err := time.Parse("2006-01-02T15:04", ev.Start)
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, &store.Item{
			Source: "calendar", ExternalID: "event-" + ev.ID, Kind: "event", Time: start, Title: ev.Title,
			Body: plant(ev.Description), People: ev.Participants,
			Meta: map[string]any{"start": ev.Start, "end": ev.End, "location": ev.Location, "attendees": ev.Participants, "all_day": ev.AllDay},
		})
	}
	if _, err := st.UpsertItems(context.Background(), items, store.UpsertOptions{}); err != nil {
		t.Fatal(err)
	}
	return len(env.Inbox.Emails), len(env.Calendar.Events)
}

// testPayloads are AgentDojo's rendered "important instructions" attacks.
func testPayloads(t testing.TB) map[string]string {
	t.Helper()
	dir := testutil.SharedData(t, "agentdojo")
	b, err := os.ReadFile(dir + "/workspace_injection_payloads_important_instructions.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if len(m) != 14 {
		t.Fatalf("%d payloads, want 14", len(m))
	}
	return m
}
